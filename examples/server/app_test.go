package main

// Tests of the example's HTTP API and its demo Planner (app.go), on a real
// bbolt file and real sockets; the page's side of the same behaviour is in
// the browser tests.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

// testApp is the example's app behind a real HTTP listener, on a bbolt
// file in a temporary folder.
func testApp(t *testing.T) (*app, *httptest.Server) {
	t.Helper()
	dir := t.TempDir()
	store, err := boltstore.Open(filepath.Join(dir, "accord.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(&testLogWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := newApp(store, log, demoOptions{Dir: dir})
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	hs := httptest.NewServer(a.handler())
	useSessions(t, strings.TrimPrefix(hs.URL, "http://"), a.sessions)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		hs.Close()
		store.Close()
	})
	return a, hs
}

func postStart(t *testing.T, hs *httptest.Server, query string) (int, map[string]any) {
	t.Helper()
	res, err := http.Post(hs.URL+"/api/demo/start"+query, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatalf("POST /api/demo/start%s: %v", query, err)
	}
	return res.StatusCode, body
}

func recordCount(t *testing.T, a *app) int {
	t.Helper()
	n := 0
	err := a.srv.Do(context.Background(), demoDoc, func(auth *question.Authority) error {
		n = len(auth.Records())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A reader (or nobody) cannot start the demo: starting it opens
// decisions, a write. The server refuses with a reason word and opens
// nothing; a writer starts it.
func TestDemoStartRefusesReaders(t *testing.T) {
	a, hs := testApp(t)
	for _, c := range []struct {
		query  string
		code   int
		reason string
	}{
		{"?member=rita", http.StatusForbidden, "forbidden"},
		{"?member=RITA", http.StatusForbidden, "forbidden"},
		{"", http.StatusUnauthorized, "unauthorized"},
		{"?member=mallory", http.StatusUnauthorized, "unauthorized"},
	} {
		code, body := postStart(t, hs, c.query)
		if code != c.code || body["reason"] != c.reason || body["error"] == "" {
			t.Errorf("start%s: %d %v, want %d with reason %s", c.query, code, body, c.code, c.reason)
		}
		if n := recordCount(t, a); n != 0 {
			t.Fatalf("start%s opened %d decisions", c.query, n)
		}
	}
	code, body := postStart(t, hs, "?member=ben")
	if code != http.StatusOK {
		t.Fatalf("Ben's start: %d %v", code, body)
	}
	if opened, _ := body["opened"].([]any); len(opened) != 3 {
		t.Fatalf("Ben's start opened %v, want the 3 planned decisions", body["opened"])
	}
}

func chatTexts(a *app) []string {
	var out []string
	for _, n := range a.host.Chat.Notices(demoDoc) {
		out = append(out, n.Text)
	}
	return out
}

func waitChat(t *testing.T, a *app, want string) {
	t.Helper()
	testutil.EventuallyWithin(t, waitTime, "Chat notice "+want, func() (bool, string) {
		got := chatTexts(a)
		for _, s := range got {
			if s == want {
				return true, ""
			}
		}
		return false, fmt.Sprintf("Chat: %q", got)
	})
}

// The turn's acknowledgement counts answers in proper English.
func TestDemoTurnNoticeCountsAnswers(t *testing.T) {
	a, _ := testApp(t)
	ans := func(id string) planner.TurnAnswer {
		return planner.TurnAnswer{Decision: id, Generation: 1, By: "ana",
			Questions: []planner.AnsweredQuestion{{Question: "How?", Written: true, Answer: "Like this."}}}
	}
	a.planner.onTurn(demoDoc, planner.Turn{ID: "t1", Doc: demoDoc, Answers: []planner.TurnAnswer{ans("d1")}})
	waitChat(t, a, "Planner: thanks, I am updating the plan with 1 answer.")
	a.planner.onTurn(demoDoc, planner.Turn{ID: "t2", Doc: demoDoc, Answers: []planner.TurnAnswer{ans("d2"), ans("d3")}})
	waitChat(t, a, "Planner: thanks, I am updating the plan with 2 answers.")
	for _, s := range chatTexts(a) {
		if strings.Contains(s, "(s)") {
			t.Errorf("Chat notice %q", s)
		}
	}
}

// planText is the plan's text, block by block.
func planText(a *app) string {
	var b strings.Builder
	for _, bl := range a.host.Docs.Blocks(demoDoc) {
		fmt.Fprintf(&b, "%s: %s\n", bl.ID, bl.Text)
	}
	return b.String()
}

// Choosing "Start a new run" on the demo's ask and saving it starts a new
// run visibly: a Chat notice and a line in the plan. The answer comes back
// through ask while the ask waits, and as a turn after a reopen, when the
// ask no longer waits; each saved answer starts one run, once.
func TestDemoStartNewRun(t *testing.T) {
	a, hs := testApp(t)
	if code, body := postStart(t, hs, "?member=ana"); code != http.StatusOK {
		t.Fatalf("start: %d %v", code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := dialAs(t, ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/sync?doc="+demoDoc+"&member=ana")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// The ask is opened by its own goroutine: wait for its card.
	var ask question.Record
	testutil.EventuallyWithin(t, waitTime, "the demo's ask", func() (bool, string) {
		for _, r := range c.Records() {
			if r.Key == "planner:ask:"+askKey {
				ask = r
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d records", len(c.Records()))
	})
	q := ask.Definition.Questions[0]
	if q.Text != askQuestion || len(q.Options) != 2 || q.Options[0].Label != startRunLabel {
		t.Fatalf("the ask: %+v", q)
	}
	// A save right after the ask's document arrives can race with its
	// catch-up (the replica's concern, not this test's): retry until one
	// save goes through.
	choose := func() {
		t.Helper()
		testutil.EventuallyWithin(t, waitTime, "saving "+startRunLabel, func() (bool, string) {
			if err := c.Choose(ask.ID, q.ID, q.Options[0].ID, true); err != nil {
				return false, err.Error()
			}
			res, err := c.Submit(ctx, ask.ID)
			if err != nil || len(res) != 1 || !res[0].OK {
				return false, fmt.Sprintf("save: %+v %v", res, err)
			}
			return true, ""
		})
	}
	choose()
	waitChat(t, a, "Planner: starting run 2, as Ana chose.")
	testutil.EventuallyWithin(t, waitTime, "the plan says run 2 started", func() (bool, string) {
		p := planText(a)
		return strings.Contains(p, "run-2: Run 2 started: Ana chose to start a new run"), p
	})

	// The same answer again (a repeated turn) starts nothing.
	ans, ok := planner.AnswerOf(recordOf(t, a, ask.ID))
	if !ok {
		t.Fatal("the ask has no saved answer")
	}
	a.planner.onTurn(demoDoc, planner.Turn{ID: "again", Doc: demoDoc, Answers: []planner.TurnAnswer{ans}})
	waitTurnFinished(t, a)
	if strings.Contains(planText(a), "run-3") {
		t.Fatalf("a repeated answer started another run:\n%s", planText(a))
	}

	// Reopened and saved again: ask has returned, so the answer reaches the
	// Planner as a turn (after the driver's quiet period), and starts run 3.
	if _, err := c.Reopen(ctx, ask.ID); err != nil {
		t.Fatal(err)
	}
	choose()
	waitChat(t, a, "Planner: starting run 3, as Ana chose.")
	if p := planText(a); !strings.Contains(p, "run-3: Run 3 started") {
		t.Fatalf("the plan after the second run:\n%s", p)
	}
	for _, s := range chatTexts(a) {
		if strings.Contains(s, "updating the plan with") {
			t.Errorf("the ask's answer was acknowledged as an ordinary answer: %q", s)
		}
	}
}

func recordOf(t *testing.T, a *app, id string) question.Record {
	t.Helper()
	var rec question.Record
	err := a.srv.Do(context.Background(), demoDoc, func(auth *question.Authority) error {
		r, ok := auth.Record(id)
		if !ok {
			return errors.New("no record " + id)
		}
		rec = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func waitTurnFinished(t *testing.T, a *app) {
	t.Helper()
	testutil.EventuallyWithin(t, waitTime, "the turn to finish", func() (bool, string) {
		n := a.host.Chat.Running(demoDoc)
		return n == 0, fmt.Sprintf("%d running", n)
	})
}

// oneSentence mirrors Y1's rules for a why: one plain sentence, no
// Markdown, no line breaks, no second sentence with or without a space
// after the end mark.
var secondSentence = regexp.MustCompile(`[.!?]\s*\p{Lu}`)

func checkOneSentence(s string) error {
	switch {
	case s == "" || utf8.RuneCountInString(s) > question.MaxWhy:
		return fmt.Errorf("%d characters", utf8.RuneCountInString(s))
	case strings.ContainsAny(s, "\n\r\t*_`<>[]~#"):
		return errors.New("markup or a line break")
	case secondSentence.MatchString(strings.TrimSuffix(s, ".")):
		return errors.New("a second sentence")
	case !strings.HasSuffix(s, "."):
		return errors.New("no full stop")
	case !unicode.IsUpper([]rune(s)[0]):
		return errors.New("starts lowercase")
	}
	return nil
}

// The demo's why drafts are one plain sentence that quotes the option or
// the written answer, instead of pasting it into the sentence ("The team
// chose The invitation email…").
func TestDemoWhyDraftIsOnePlainSentence(t *testing.T) {
	opt := func(labels ...string) planner.AnsweredQuestion {
		q := planner.AnsweredQuestion{Question: "Which?"}
		for _, l := range labels {
			q.Chosen = append(q.Chosen, question.Option{ID: "o", Label: l})
		}
		return q
	}
	text := func(s string) planner.AnsweredQuestion {
		return planner.AnsweredQuestion{Question: "How?", Written: true, Answer: s}
	}
	for _, c := range []struct {
		name string
		qs   []planner.AnsweredQuestion
		want string
	}{
		{"one option", []planner.AnsweredQuestion{opt("Email link")},
			"The team chose “Email link”."},
		{"several options", []planner.AnsweredQuestion{opt("Email", "Chat", "Phone")},
			"The team chose “Email”, “Chat” and “Phone”."},
		{"written answer", []planner.AnsweredQuestion{text("The invitation email carries a one-time link")},
			"The team settled on “The invitation email carries a one-time link”."},
		{"written, several sentences", []planner.AnsweredQuestion{text("Send the invitation email. Then ask for a name! Done?")},
			"The team settled on “Send the invitation email…”."},
		{"written, no space after the end mark", []planner.AnsweredQuestion{text("It is cheap.It is fast.")},
			"The team settled on “It is cheap…”."},
		{"ordinary punctuation kept", []planner.AnsweredQuestion{text("Use Node.js 3.5 for the e-mail job")},
			"The team settled on “Use Node.js 3.5 for the e-mail job”."},
		{"markdown and quotes", []planner.AnsweredQuestion{text("**Bold** and _emphasis_ with `code` and \"quotes\"\nand a line")},
			"The team settled on “Bold and emphasis with code and 'quotes' and a line”."},
		{"long", []planner.AnsweredQuestion{text(strings.Repeat("word ", 60))},
			"The team settled on “" + strings.TrimSpace(strings.Repeat("word ", 20)) + "…”."},
		{"two questions", []planner.AnsweredQuestion{opt("Passkey"), text("Email first")},
			"The team chose “Passkey” and settled on “Email first”."},
		{"nothing chosen", []planner.AnsweredQuestion{opt(), text("  ")},
			"The team saved this answer."},
		{"an option with its marks", []planner.AnsweredQuestion{{Question: "Which?", Chosen: []question.Option{{ID: "p", Label: "Passkey"}},
			Criteria: []planner.CriterionMark{{Criterion: "New device", Option: "Passkey", Mark: marks.Yes}, {Criterion: "Easy reset", Option: "Passkey", Mark: marks.Partly},
				{Criterion: "No new storage", Option: "Passkey", Mark: marks.Yes}, {Criterion: "Cheap", Option: "Passkey", Mark: marks.No}, {Criterion: "Fast", Option: "Passkey"}}}},
			"The team chose “Passkey”, which meets “New device” and “No new storage”, and partly meets “Easy reset”."},
	} {
		got := demoWhy(planner.TurnAnswer{By: "ana", Questions: c.qs})
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
		if err := checkOneSentence(got); err != nil {
			t.Errorf("%s: %q is not one plain sentence: %v", c.name, got, err)
		}
	}
	// The app drafts its whys with it.
	a, _ := testApp(t)
	got, err := a.host.Runtime.DraftWhy(context.Background(), demoDoc, planner.WhyRequest{Doc: demoDoc,
		Answer: planner.TurnAnswer{Questions: []planner.AnsweredQuestion{text("The invitation email")}}})
	if err != nil || got != "The team settled on “The invitation email”." {
		t.Fatalf("the app's why draft: %q, %v", got, err)
	}
}
