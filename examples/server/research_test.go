package main

// Tests of the demo's research host, personas and pages without a
// browser: real bbolt files, the sync server in-process, the host's HTTP
// routes through httptest.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
)

func TestResearchResults(t *testing.T) {
	cases := []struct {
		kind   question.FindingKind
		focus  string
		status question.WorkStatus
		title  string
		branch string
	}{
		{question.FindingResearch, "", question.WorkReady, "What the web says about “this decision”", ""},
		{question.FindingResearch, "Passkeys after a lost phone", question.WorkReady, "Passkeys for account recovery", ""},
		{question.FindingResearch, "what does SMS cost", question.WorkReady, "SMS codes as a recovery channel", ""},
		{question.FindingResearch, "please FAIL", question.WorkFailed, "", ""},
		{question.FindingSpike, "Invite flow", question.WorkFinished, "Investigation: Invite flow", "spike/invite-flow"},
		{question.FindingSpike, "", question.WorkFinished, "Investigation: how the code does it today", "spike/work-7"},
		{question.FindingSpike, "  ¿Qué? ", question.WorkFinished, "Investigation: ¿Qué?", "spike/qu"},
		{question.FindingSpike, "fail on purpose", question.WorkFailed, "", ""},
	}
	// The question asked picks the topic when the focus does not.
	for q, title := range map[string]string{
		"How should onboarding work?":                   "First-run onboarding from an invitation",
		"What should we tell existing users?":           "Moving existing users to a new sign-in",
		"Which recovery channel should we build first?": "Account recovery paths",
		"Which colour should the button be?":            "What the web says about “Which colour should the button be?”",
	} {
		if w := result(&job{ID: "work-8", Kind: question.FindingResearch, Question: q}); w.Title != title {
			t.Errorf("research on %q: %q, want %q", q, w.Title, title)
		}
	}
	for _, c := range cases {
		w := result(&job{ID: "work-7", Kind: c.kind, Focus: c.focus})
		if w.Status != c.status || w.Title != c.title || w.Branch != c.branch {
			t.Errorf("%s %q: %+v, want %s %q %q", c.kind, c.focus, w, c.status, c.title, c.branch)
		}
		if c.kind == question.FindingResearch && c.status == question.WorkReady && (w.Summary == "" || len(w.Sources) == 0 || w.SourceCount <= len(w.Sources)) {
			t.Errorf("%q: ready research without summary or sources: %+v", c.focus, w)
		}
		if c.status == question.WorkFailed && !strings.HasPrefix(w.Summary, "The ") {
			t.Errorf("%s %q: failed without saying why: %+v", c.kind, c.focus, w)
		}
		if again := result(&job{ID: "work-7", Kind: c.kind, Focus: c.focus}); again.Title != w.Title || again.Summary != w.Summary {
			t.Errorf("%q: not deterministic", c.focus)
		}
	}
	if s := slug(strings.Repeat("abc ", 30)); len(s) > 40 || strings.HasSuffix(s, "-") {
		t.Errorf("slug %q", s)
	}
}

// R4 on the host's side: work that ends while the server is down is ended
// when the host loads, without an event (the watcher's sweep finds it);
// work still due resumes its timer; work of another document or kind is
// not found; cancelling reports the event.
func TestResearchHostRestart(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	h, err := newResearchHost(demoOptions{Dir: dir, ResearchDelay: 50 * time.Millisecond, InvestigationDelay: time.Hour}, log)
	if err != nil {
		t.Fatal(err)
	}
	h.run(nil)
	short, err := h.start(question.FindingResearch, demoDoc, "d1", "", "passkeys", "ana")
	if err != nil {
		t.Fatal(err)
	}
	long, err := h.start(question.FindingSpike, demoDoc, "d1", "", "invite", "ana")
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	time.Sleep(100 * time.Millisecond) // short ends while no host runs

	var mu sync.Mutex
	var events []string
	h2, err := newResearchHost(demoOptions{Dir: dir, ResearchDelay: time.Hour, InvestigationDelay: time.Hour}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	h2.run(func(doc string, kind question.FindingKind, ref string, w question.Work) {
		mu.Lock()
		events = append(events, ref+":"+string(w.Status))
		mu.Unlock()
	})
	ctx := context.Background()
	w, err := h2.Work(ctx, demoDoc, question.FindingResearch, short)
	if err != nil || w.Status != question.WorkReady || w.Title != "Passkeys for account recovery" {
		t.Fatalf("short after the restart: %+v, %v", w, err)
	}
	if w, err := h2.Work(ctx, demoDoc, question.FindingSpike, long); err != nil || w.Status != question.WorkRunning {
		t.Fatalf("long after the restart: %+v, %v", w, err)
	}
	for _, probe := range []struct {
		doc  string
		kind question.FindingKind
		ref  string
	}{{"plan-2", question.FindingResearch, short}, {demoDoc, question.FindingSpike, short}, {demoDoc, question.FindingResearch, "work-99"}} {
		_, err := h2.Work(ctx, probe.doc, probe.kind, probe.ref)
		var ref *question.Refusal
		if !errors.As(err, &ref) || ref.Reason != question.NotFound {
			t.Errorf("Work(%v): %v, want not_found", probe, err)
		}
	}
	if w, err := h2.Cancel(ctx, demoDoc, question.FindingSpike, long); err != nil || w.Status != question.WorkCancelled {
		t.Fatalf("cancel: %+v, %v", w, err)
	}
	if w, err := h2.Cancel(ctx, demoDoc, question.FindingResearch, short); err != nil || w.Status != question.WorkReady {
		t.Fatalf("cancelling ended work: %+v, %v", w, err)
	}
	mu.Lock()
	got := strings.Join(events, ",")
	mu.Unlock()
	if got != long+":cancelled" {
		t.Fatalf("events %q, want only the cancel", got)
	}
	// A third start continues the numbering: ids are never reused.
	id, err := h2.start(question.FindingResearch, demoDoc, "", "", "", "ben")
	if err != nil || id != "work-3" {
		t.Fatalf("third id %q, %v", id, err)
	}
}

// newTestApp runs the example's app on a fresh bbolt file.
func newTestApp(t *testing.T, demo demoOptions) *app {
	t.Helper()
	dir := t.TempDir()
	store, err := boltstore.Open(filepath.Join(dir, "accord.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	demo.Dir = dir
	a, err := newApp(store, slog.New(slog.DiscardHandler), demo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Let the answer delivery driver finish the round its last poke
		// started: planner.Driver.records reads its result after a Do
		// that Close cancelled, which the race detector reports.
		time.Sleep(150 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.shutdown(ctx); err != nil {
			t.Error(err)
		}
		store.Close()
	})
	return a
}

// The host's routes: only writers start work, an investigation needs a
// paired machine online (Ana has one, Ben none), and the roster lists the
// personas only when they are enabled.
func TestResearchRoutes(t *testing.T) {
	for _, personasOn := range []bool{true, false} {
		a := newTestApp(t, demoOptions{Personas: personasOn})
		mux := http.NewServeMux()
		a.routes(mux)
		hs := httptest.NewServer(mux)
		useSessions(t, strings.TrimPrefix(hs.URL, "http://"), a.sessions)
		post := func(path, member, body string) (int, map[string]string) {
			t.Helper()
			res, err := http.Post(hs.URL+path+"?member="+member, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			out := map[string]string{}
			json.NewDecoder(res.Body).Decode(&out)
			return res.StatusCode, out
		}
		cases := []struct {
			path, member, body string
			status             int
			reason             string
		}{
			{"/api/research", "ana", `{"doc":"plan-1","decision":"x","focus":"passkeys"}`, 200, ""},
			{"/api/investigations", "ana", `{"focus":"invite"}`, 200, ""},
			{"/api/investigations", "ben", `{"focus":"invite"}`, 409, "no_machine"},
			{"/api/research", "rita", `{}`, 403, "forbidden"},
			{"/api/research", "", `{}`, 401, "unauthorized"},
			{"/api/research", "ana", `not json`, 400, "invalid"},
			{"/api/research", "ana", `{"doc":"question:x"}`, 400, "invalid"},
			{"/api/research", "ana", `{"focus":"` + strings.Repeat("a", question.MaxFocus+1) + `"}`, 400, "invalid"},
		}
		for _, c := range cases {
			status, out := post(c.path, c.member, c.body)
			if status != c.status || out["reason"] != c.reason || (status == 200) != strings.HasPrefix(out["id"], "work-") {
				t.Errorf("POST %s as %q %.40s: %d %v, want %d %q", c.path, c.member, c.body, status, out, c.status, c.reason)
			}
		}
		if _, out := post("/api/investigations", "ben", `{}`); out["error"] != "Ben has no paired machine online" {
			t.Errorf("Ben's refusal says %q", out["error"])
		}
		res, err := http.Get(hs.URL + "/api/roster?member=ana")
		if err != nil {
			t.Fatal(err)
		}
		var roster struct {
			Members []struct {
				Login   string
				Machine bool
				Persona bool
			}
		}
		json.NewDecoder(res.Body).Decode(&roster)
		res.Body.Close()
		var logins []string
		for _, m := range roster.Members {
			logins = append(logins, m.Login)
			if m.Machine != (m.Login == "ana") || m.Persona != strings.HasPrefix(m.Login, "demo:") {
				t.Errorf("roster entry %+v", m)
			}
		}
		want := "ana,ben,rita"
		if personasOn {
			want += ",demo:lily,demo:omar"
		}
		if got := strings.Join(logins, ","); got != want {
			t.Errorf("personas %v: roster %s, want %s", personasOn, got, want)
		}
		h := appHost{a: a}
		if h.KnownMember(demoDoc, "Demo:Lily") != personasOn || !h.KnownMember(demoDoc, "BEN") || h.KnownMember(demoDoc, "sam") {
			t.Errorf("personas %v: KnownMember wrong", personasOn)
		}
		hs.Close()
	}
}

// R9: an asked persona answers as itself through Take, with its fixed
// reply and stance.
func TestPersonaAnswers(t *testing.T) {
	a := newTestApp(t, demoOptions{Personas: true, PersonaDelay: 20 * time.Millisecond})
	ctx := context.Background()
	opened, err := a.planner.start(ctx, demoDoc)
	if err != nil {
		t.Fatal(err)
	}
	id := opened[0].ID
	var ask question.Finding
	for _, login := range []string{"demo:omar", "ben"} {
		err := a.srv.Do(ctx, demoDoc, func(auth *question.Authority) error {
			res, err := auth.Ask(ctx, question.Member{Login: "ana", Write: true}, question.AskRequest{ID: id, Member: login})
			if login == "demo:omar" {
				ask = res.Finding
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	appHost{a: a}.FindingsChanged(demoDoc) // what the sync server calls after a member's ask
	testutil.EventuallyWithin(t, waitTime, "Omar's take", func() (bool, string) {
		var fs []question.Finding
		a.srv.Do(ctx, demoDoc, func(auth *question.Authority) error {
			r, _ := auth.Record(id)
			fs = r.Findings
			return nil
		})
		for _, f := range fs {
			if f.ID == ask.ID && f.Status == question.FindingReady {
				ok := f.Summary == fmt.Sprintf(demoRoster[1].Reply, "How should onboarding work?") && f.Stance == question.Objects
				return ok, f.Summary
			}
		}
		return false, "not answered"
	})
	// Ben, a person, is not answered for.
	a.srv.Do(ctx, demoDoc, func(auth *question.Authority) error {
		r, _ := auth.Record(id)
		for _, f := range r.Findings {
			if f.Ref == "ben" && f.Status != question.FindingRunning {
				t.Errorf("Ben's ask was answered: %+v", f)
			}
		}
		return nil
	})
}

// E1, E2: expanding creates the child document with its Notes once, also
// when repeated; the Notes are a written decision that stays open; a
// child's own decisions cannot open as pages.
func TestPageNotes(t *testing.T) {
	a := newTestApp(t, demoOptions{})
	ctx := context.Background()
	opened, err := a.planner.start(ctx, demoDoc)
	if err != nil {
		t.Fatal(err)
	}
	id := opened[0].ID
	ana := question.Member{Login: "ana", Write: true}
	for range 2 {
		err := a.srv.Do(ctx, demoDoc, func(auth *question.Authority) error {
			rec, err := auth.Expand(ctx, ana, id, func(ctx context.Context, ch string) error { return a.ensurePage(ctx, demoDoc, ch) })
			if err == nil && rec.ChildID != question.ChildChannel(id) {
				t.Errorf("childId %q", rec.ChildID)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// ensurePage again, as a retry after a lost reply would.
	if err := a.ensurePage(ctx, demoDoc, question.ChildChannel(id)); err != nil {
		t.Fatal(err)
	}
	err = a.srv.Do(ctx, question.ChildChannel(id), func(auth *question.Authority) error {
		recs := auth.Records()
		if len(recs) != 1 || recs[0].Key != notesKey || recs[0].Status != question.Open || !recs[0].Definition.Questions[0].Written() {
			t.Fatalf("child document: %+v", recs)
		}
		_, err := auth.Expand(ctx, ana, recs[0].ID, func(context.Context, string) error { return nil })
		var ref *question.Refusal
		if !errors.As(err, &ref) || ref.Reason != question.Invalid {
			t.Errorf("expanding the Notes: %v, want invalid", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// R2, R3 through the example's wiring: work of another document is not
// found; work of this one attaches as a running finding, which the
// watcher settles when the host's work is ready, with one Chat notice.
func TestResearchSettlesThroughWatcher(t *testing.T) {
	a := newTestApp(t, demoOptions{ResearchDelay: 100 * time.Millisecond})
	ctx := context.Background()
	opened, err := a.planner.start(ctx, demoDoc)
	if err != nil {
		t.Fatal(err)
	}
	id := opened[1].ID
	ana := question.Member{Login: "ana", Write: true}
	other, err := a.research.start(question.FindingResearch, "plan-2", "", "", "", "ana")
	if err != nil {
		t.Fatal(err)
	}
	mine, err := a.research.start(question.FindingResearch, demoDoc, id, "", "passkeys", "ana")
	if err != nil {
		t.Fatal(err)
	}
	explore := func(ref string) (question.FindingResult, error) {
		var res question.FindingResult
		err := a.srv.Do(ctx, demoDoc, func(auth *question.Authority) error {
			var err error
			res, err = auth.Explore(ctx, ana, question.ExploreRequest{ID: id, Kind: question.FindingResearch, Ref: ref, Focus: "passkeys"}, a.watcher.Check(demoDoc))
			return err
		})
		return res, err
	}
	var ref *question.Refusal
	if _, err := explore(other); !errors.As(err, &ref) || ref.Reason != question.NotFound {
		t.Fatalf("attaching another document's work: %v, want not_found", err)
	}
	res, err := explore(mine)
	if err != nil || res.Finding.Status != question.FindingRunning {
		t.Fatalf("attaching: %+v, %v", res.Finding, err)
	}
	testutil.EventuallyWithin(t, waitTime, "the settled finding and its notice", func() (bool, string) {
		var f question.Finding
		a.srv.Do(ctx, demoDoc, func(auth *question.Authority) error {
			r, _ := auth.Record(id)
			f = r.Findings[0]
			return nil
		})
		n := 0
		for _, x := range a.host.Chat.Notices(demoDoc) {
			if x.ID == f.NoticeID() {
				n++
			}
		}
		return f.Status == question.FindingReady && f.Title == "Passkeys for account recovery" && n == 1, fmt.Sprintf("%+v, %d notices", f, n)
	})
}
