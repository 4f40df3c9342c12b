package question_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
)

// host is a fake of the work a host owns: research requests and
// investigations by id, and which decisions have an implementation running.
type host struct {
	work        map[string]question.Work
	implemented map[string]bool
	cancels     int
	ids         int // ids minted, across restarts
}

func newHost() *host {
	return &host{work: map[string]question.Work{}, implemented: map[string]bool{}}
}

func (h *host) check(_ context.Context, _ question.FindingKind, ref string) (question.Work, error) {
	w, ok := h.work[ref]
	if !ok {
		return question.Work{}, errors.New("no such work")
	}
	return w, nil
}

func (h *host) cancel(_ context.Context, _ question.FindingKind, ref string) (question.Work, error) {
	h.cancels++
	w := h.work[ref]
	if w.Status == question.WorkRunning {
		w = question.Work{Status: question.WorkCancelled}
		h.work[ref] = w
	}
	return w, nil
}

func newFindingsAuthority(t *testing.T, store *memstore.Store, doc string, h *host) *question.Authority {
	t.Helper()
	now := time.Date(2026, 10, 19, 9, 0, 0, 0, time.UTC)
	a, err := question.NewAuthority(ctx, question.Options{
		Store: store, Doc: doc,
		Now:                  func() time.Time { now = now.Add(time.Second); return now },
		NewID:                func() string { h.ids++; return fmt.Sprintf("id%d", h.ids) },
		ImplementationActive: func(id string) bool { return h.implemented[id] },
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func createOne(t *testing.T, a *question.Authority, key string) question.Record {
	t.Helper()
	out, err := a.Create(ctx, ana, []question.CreateRequest{{Key: key, Origin: question.FromPlanner, Definition: choiceDef()}})
	if err != nil {
		t.Fatal(err)
	}
	return out[0].Record
}

func TestExploreAttachesAndSettles(t *testing.T) {
	h := newHost()
	store := memstore.New()
	a := newFindingsAuthority(t, store, "plan-1", h)
	rec := createOne(t, a, "k")
	h.work["r1"] = question.Work{Status: question.WorkRunning}

	_, err := a.Explore(ctx, ana, question.ExploreRequest{ID: rec.ID, Kind: question.FindingResearch, Ref: "nope"}, h.check)
	mustReason(t, err, question.NotFound)
	_, err = a.Explore(ctx, reader, question.ExploreRequest{ID: rec.ID, Kind: question.FindingResearch, Ref: "r1"}, h.check)
	mustReason(t, err, question.Forbidden)
	_, err = a.Explore(ctx, ana, question.ExploreRequest{ID: rec.ID, Kind: question.FindingAsk, Ref: "r1"}, h.check)
	mustReason(t, err, question.Invalid)

	got, err := a.Explore(ctx, ana, question.ExploreRequest{ID: rec.ID, Kind: question.FindingResearch, Ref: "r1", Focus: "  costs  "}, h.check)
	must(t, err)
	f := got.Finding
	if f.Status != question.FindingRunning || f.By != "ana" || f.Focus != "costs" || f.Ref != "r1" || f.ID == "" || f.At.IsZero() {
		t.Fatalf("running finding: %+v", f)
	}
	again, err := a.Explore(ctx, ben, question.ExploreRequest{ID: rec.ID, Kind: question.FindingResearch, Ref: "r1"}, h.check)
	must(t, err)
	if !again.Repeated || again.Finding.ID != f.ID || len(again.Record.Findings) != 1 {
		t.Fatalf("attaching again: %+v", again)
	}
	if w := a.WorkToCheck(); len(w) != 1 || w[0].Ref != "r1" {
		t.Fatalf("running work %v", w)
	}

	// Durable: a fresh authority over the same store sees the finding.
	if r, _ := newFindingsAuthority(t, store, "plan-1", h).Record(rec.ID); len(r.Findings) != 1 || r.Findings[0].Status != question.FindingRunning {
		t.Fatalf("after reload: %+v", r.Findings)
	}

	ready := question.Work{Status: question.WorkReady, Title: "Costs", Summary: "Email is cheapest.",
		Sources: []question.Source{{Title: "A", URL: "https://example.org/a"}, {URL: "  "}}, SourceCount: 7}
	settled, err := a.Settle(ctx, question.FindingResearch, "r1", ready)
	must(t, err)
	if len(settled) != 1 || settled[0].Before != question.FindingRunning || settled[0].Finding.Status != question.FindingReady {
		t.Fatalf("settled %+v", settled)
	}
	sf := settled[0].Finding
	if sf.Title != "Costs" || sf.Summary != "Email is cheapest." || len(sf.Sources) != 1 || sf.SourceCount != 7 {
		t.Fatalf("result not kept: %+v", sf)
	}
	if again, err := a.Settle(ctx, question.FindingResearch, "r1", ready); err != nil || len(again) != 0 {
		t.Fatalf("settling twice changed %v (%v)", again, err)
	}
	if w := a.WorkToCheck(); len(w) != 0 {
		t.Fatalf("running work after settle %v", w)
	}
}

func TestAttachingEndedWorkSettlesAtOnce(t *testing.T) {
	h := newHost()
	a := newFindingsAuthority(t, memstore.New(), "plan-1", h)
	rec := createOne(t, a, "k")
	h.work["done"] = question.Work{Status: question.WorkFinished, Branch: "spike/reset", Summary: "SMS needs a provider."}
	h.work["bad"] = question.Work{Status: question.WorkFailed, Summary: " The search service timed out. "}
	got, err := a.Explore(ctx, ana, question.ExploreRequest{ID: rec.ID, Kind: question.FindingSpike, Ref: "done"}, h.check)
	must(t, err)
	if got.Finding.Status != question.FindingReady || got.Finding.Branch != "spike/reset" {
		t.Fatalf("ended investigation: %+v", got.Finding)
	}
	got, err = a.Explore(ctx, ana, question.ExploreRequest{ID: rec.ID, Kind: question.FindingResearch, Ref: "bad"}, h.check)
	must(t, err)
	// A failed finding keeps the host's reason.
	if got.Finding.Status != question.FindingFailed || got.Finding.Summary != "The search service timed out." {
		t.Fatalf("failed request: %+v", got.Finding)
	}
	// A failed request retried to ready updates its failed finding.
	settled, err := a.Settle(ctx, question.FindingResearch, "bad", question.Work{Status: question.WorkReady, Summary: "Second try."})
	must(t, err)
	if len(settled) != 1 || settled[0].Before != question.FindingFailed || settled[0].Finding.Summary != "Second try." {
		t.Fatalf("retried: %+v", settled)
	}
}

func TestExploreStopRules(t *testing.T) {
	h := newHost()
	a := newFindingsAuthority(t, memstore.New(), "plan-1", h)
	rec := createOne(t, a, "k")
	for _, ref := range []string{"run", "ended", "failing"} {
		h.work[ref] = question.Work{Status: question.WorkRunning}
	}
	start := func(ref string) question.Finding {
		got, err := a.Explore(ctx, ana, question.ExploreRequest{ID: rec.ID, Kind: question.FindingResearch, Ref: ref}, h.check)
		must(t, err)
		return got.Finding
	}
	run, ended, failing := start("run"), start("ended"), start("failing")

	_, err := a.ExploreStop(ctx, ben, rec.ID, run.ID, h.cancel)
	mustReason(t, err, question.Forbidden)
	if h.cancels != 0 {
		t.Fatal("a non-starter's stop reached the work")
	}
	h.implemented[rec.ID] = true
	_, err = a.ExploreStop(ctx, ana, rec.ID, run.ID, h.cancel)
	mustReason(t, err, question.Implementation)
	h.implemented[rec.ID] = false
	_, err = a.ExploreStop(ctx, ana, rec.ID, "missing", h.cancel)
	mustReason(t, err, question.NotFound)

	_, err = a.ExploreStop(ctx, question.Member{Login: "ana"}, rec.ID, run.ID, h.cancel)
	mustReason(t, err, question.Forbidden) // without write access

	got, err := a.ExploreStop(ctx, question.Member{Login: "ANA", Write: true}, rec.ID, run.ID, h.cancel)
	must(t, err)
	if got.Finding.Status != question.FindingStopped {
		t.Fatalf("stopped: %+v", got.Finding)
	}
	// Work that ended before the stop settles as its result or failure.
	h.work["ended"] = question.Work{Status: question.WorkReady, Summary: "Done anyway."}
	got, err = a.ExploreStop(ctx, ana, rec.ID, ended.ID, h.cancel)
	must(t, err)
	if got.Finding.Status != question.FindingReady || got.Finding.Summary != "Done anyway." {
		t.Fatalf("ended work: %+v", got.Finding)
	}
	h.work["failing"] = question.Work{Status: question.WorkFailed}
	got, err = a.ExploreStop(ctx, ana, rec.ID, failing.ID, h.cancel)
	must(t, err)
	if got.Finding.Status != question.FindingFailed {
		t.Fatalf("failed work: %+v", got.Finding)
	}
	// Work that refuses to cancel is stopped all the same.
	h.work["stuck"] = question.Work{Status: question.WorkRunning}
	stuck := start("stuck")
	refuses := func(context.Context, question.FindingKind, string) (question.Work, error) {
		return question.Work{Status: question.WorkRunning}, nil
	}
	got, err = a.ExploreStop(ctx, ana, rec.ID, stuck.ID, refuses)
	must(t, err)
	if got.Finding.Status != question.FindingStopped {
		t.Fatalf("uncancellable work: %+v", got.Finding)
	}
	again, err := a.ExploreStop(ctx, ana, rec.ID, stuck.ID, refuses)
	must(t, err)
	if !again.Repeated {
		t.Fatal("stopping a settled finding changed it")
	}
}

func TestAskAndTake(t *testing.T) {
	h := newHost()
	a := newFindingsAuthority(t, memstore.New(), "plan-1", h)
	rec := createOne(t, a, "k")

	_, err := a.Ask(ctx, ana, question.AskRequest{ID: rec.ID, Member: "Ana"})
	mustReason(t, err, question.Invalid) // not yourself
	asked, err := a.Ask(ctx, ana, question.AskRequest{ID: rec.ID, Member: "Sam"})
	must(t, err)
	f := asked.Finding
	if f.Kind != question.FindingAsk || f.Status != question.FindingRunning || f.Ref != "Sam" || f.By != "ana" {
		t.Fatalf("ask: %+v", f)
	}
	if again, err := a.Ask(ctx, ben, question.AskRequest{ID: rec.ID, Member: "sam"}); err != nil || !again.Repeated || again.Finding.ID != f.ID {
		t.Fatalf("asking sam again: %+v %v", again, err)
	}
	sam := question.Member{Login: "sam", Write: true}
	take := func(who question.Member, reply string, st question.Stance) (question.FindingResult, error) {
		return a.Take(ctx, who, question.TakeRequest{ID: rec.ID, Finding: f.ID, Reply: reply, Stance: st})
	}
	_, err = take(ben, "Not asked.", "")
	mustReason(t, err, question.Forbidden)
	_, err = take(sam, "Sure.", "maybe")
	mustReason(t, err, question.Invalid)
	_, err = take(sam, "   ", "")
	mustReason(t, err, question.Invalid)
	_, err = take(sam, strings.Repeat("x", question.MaxTake+1), "")
	mustReason(t, err, question.Invalid)
	h.implemented[rec.ID] = true
	_, err = take(sam, "Later.", "")
	mustReason(t, err, question.Implementation)
	h.implemented[rec.ID] = false

	got, err := take(question.Member{Login: "SAM"}, "SMS costs money per reset.", question.Objects)
	must(t, err)
	if got.Finding.Status != question.FindingReady || got.Finding.Summary != "SMS costs money per reset." || got.Finding.Stance != question.Objects {
		t.Fatalf("take: %+v", got.Finding)
	}
	_, err = take(sam, "Again.", "")
	mustReason(t, err, question.Invalid) // the ask no longer runs

	// Only the asker stops an ask.
	asked, err = a.Ask(ctx, ana, question.AskRequest{ID: rec.ID, Member: "ben"})
	must(t, err)
	_, err = a.ExploreStop(ctx, ben, rec.ID, asked.Finding.ID, h.cancel)
	mustReason(t, err, question.Forbidden)
	stopped, err := a.ExploreStop(ctx, ana, rec.ID, asked.Finding.ID, h.cancel)
	must(t, err)
	if stopped.Finding.Status != question.FindingStopped || h.cancels != 0 {
		t.Fatalf("stopped ask: %+v, cancels %d", stopped.Finding, h.cancels)
	}

	// A take needs an open decision.
	asked, err = a.Ask(ctx, ana, question.AskRequest{ID: rec.ID, Member: "sam"})
	must(t, err)
	f = asked.Finding
	if _, err := a.Discard(ctx, ana, rec.ID); err != nil {
		t.Fatal(err)
	}
	_, err = take(sam, "Too late.", "")
	mustReason(t, err, question.Resolved)
	_, err = a.Ask(ctx, ana, question.AskRequest{ID: rec.ID, Member: "lily"})
	mustReason(t, err, question.Resolved)
}

func TestFindingsOnlyInTopLevelDocuments(t *testing.T) {
	h := newHost()
	a := newFindingsAuthority(t, memstore.New(), "question:abc", h)
	rec := createOne(t, a, "k")
	h.work["r"] = question.Work{Status: question.WorkRunning}
	_, err := a.Explore(ctx, ana, question.ExploreRequest{ID: rec.ID, Kind: question.FindingResearch, Ref: "r"}, h.check)
	mustReason(t, err, question.Invalid)
	_, err = a.Ask(ctx, ana, question.AskRequest{ID: rec.ID, Member: "ben"})
	mustReason(t, err, question.Invalid)
}

func TestExpandRefusedWhileImplementing(t *testing.T) {
	h := newHost()
	a := newFindingsAuthority(t, memstore.New(), "plan-1", h)
	rec := createOne(t, a, "k")
	h.implemented[rec.ID] = true
	_, err := a.Expand(ctx, ana, rec.ID, func(context.Context, string) error { return nil })
	mustReason(t, err, question.Implementation)
}

func TestTwentyFindingsMakeRoom(t *testing.T) {
	h := newHost()
	a := newFindingsAuthority(t, memstore.New(), "plan-1", h)
	rec := createOne(t, a, "k")
	explore := func(ref string, st question.WorkStatus) (question.FindingResult, error) {
		h.work[ref] = question.Work{Status: st}
		return a.Explore(ctx, ana, question.ExploreRequest{ID: rec.ID, Kind: question.FindingResearch, Ref: ref}, h.check)
	}
	// Two settled research findings first, then asks and running work.
	_, err := explore("old1", question.WorkReady)
	must(t, err)
	_, err = explore("old2", question.WorkFailed)
	must(t, err)
	for i := 0; i < 9; i++ {
		_, err := a.Ask(ctx, ana, question.AskRequest{ID: rec.ID, Member: fmt.Sprintf("m%d", i)})
		must(t, err)
		_, err = explore(fmt.Sprintf("run%d", i), question.WorkRunning)
		must(t, err)
	}
	r, _ := a.Record(rec.ID)
	if len(r.Findings) != question.MaxFindings {
		t.Fatalf("%d findings", len(r.Findings))
	}
	got, err := explore("new1", question.WorkRunning)
	must(t, err)
	if n := len(got.Record.Findings); n != question.MaxFindings || got.Record.Findings[0].Ref != "old2" {
		t.Fatalf("the oldest settled research should have made room: %d, first %q", n, got.Record.Findings[0].Ref)
	}
	_, err = explore("new2", question.WorkRunning)
	must(t, err)
	_, err = explore("new3", question.WorkRunning)
	mustReason(t, err, question.Full)
	_, err = a.Ask(ctx, ana, question.AskRequest{ID: rec.ID, Member: "late"})
	mustReason(t, err, question.Full)
}

// findingsModel is the plain model the authority's findings are checked
// against: per finding, its kind, status, starter and ref, in order.
type findingsModel struct {
	findings []question.Finding
}

func (m *findingsModel) room() bool {
	if len(m.findings) < question.MaxFindings {
		return true
	}
	for i, f := range m.findings {
		if f.Kind != question.FindingAsk && f.Status != question.FindingRunning {
			m.findings = append(m.findings[:i], m.findings[i+1:]...)
			return true
		}
	}
	return false
}

func statusOf(w question.WorkStatus) question.FindingStatus {
	switch w {
	case question.WorkReady, question.WorkFinished:
		return question.FindingReady
	case question.WorkFailed:
		return question.FindingFailed
	case question.WorkCancelled:
		return question.FindingStopped
	}
	return question.FindingRunning
}

// TestFindingsMatchModel runs random findings commands against the
// authority and a model, restarting the authority now and then, and checks
// after every step that both hold the same findings.
func TestFindingsMatchModel(t *testing.T) {
	members := []question.Member{ana, ben, {Login: "sam", Write: true}}
	statuses := []question.WorkStatus{question.WorkRunning, question.WorkReady, question.WorkFinished, question.WorkFailed, question.WorkCancelled}
	rapid.Check(t, func(rt *rapid.T) {
		h := newHost()
		store := memstore.New()
		a := newFindingsAuthority(t, store, "plan-1", h)
		rec := createOne(t, a, "k")
		m := &findingsModel{}
		refs := []string{"r0", "r1", "r2", "r3", "r4", "r5"}
		for _, r := range refs {
			h.work[r] = question.Work{Status: question.WorkRunning}
		}
		for step := 0; step < 40; step++ {
			who := rapid.SampledFrom(members).Draw(rt, "who")
			switch rapid.IntRange(0, 5).Draw(rt, "op") {
			case 0: // explore
				ref := rapid.SampledFrom(refs).Draw(rt, "ref") + fmt.Sprint(rapid.IntRange(0, 4).Draw(rt, "n"))
				if _, ok := h.work[ref]; !ok {
					h.work[ref] = question.Work{Status: rapid.SampledFrom(statuses).Draw(rt, "start")}
				}
				got, err := a.Explore(ctx, who, question.ExploreRequest{ID: rec.ID, Kind: question.FindingResearch, Ref: ref}, h.check)
				exists := false
				for _, f := range m.findings {
					exists = exists || f.Ref == ref && f.Kind == question.FindingResearch
				}
				switch {
				case exists:
					if err != nil || !got.Repeated {
						rt.Fatalf("re-attach %s: %v %+v", ref, err, got)
					}
				case !m.room():
					if question.ReasonOf(err) != question.Full {
						rt.Fatalf("explore at capacity: %v", err)
					}
				default:
					if err != nil {
						rt.Fatalf("explore %s: %v", ref, err)
					}
					m.findings = append(m.findings, question.Finding{ID: got.Finding.ID, Kind: question.FindingResearch, Ref: ref, By: who.Login, Status: statusOf(h.work[ref].Status)})
				}
			case 1: // ask
				asked := rapid.SampledFrom(members).Draw(rt, "asked")
				got, err := a.Ask(ctx, who, question.AskRequest{ID: rec.ID, Member: asked.Login})
				running := false
				for _, f := range m.findings {
					running = running || f.Kind == question.FindingAsk && f.Status == question.FindingRunning && f.Ref == asked.Login
				}
				switch {
				case asked.Login == who.Login:
					if question.ReasonOf(err) != question.Invalid {
						rt.Fatalf("asking oneself: %v", err)
					}
				case running:
					if err != nil || !got.Repeated {
						rt.Fatalf("asking again: %v", err)
					}
				case !m.room():
					if question.ReasonOf(err) != question.Full {
						rt.Fatalf("ask at capacity: %v", err)
					}
				default:
					if err != nil {
						rt.Fatalf("ask: %v", err)
					}
					m.findings = append(m.findings, question.Finding{ID: got.Finding.ID, Kind: question.FindingAsk, Ref: asked.Login, By: who.Login, Status: question.FindingRunning})
				}
			case 2: // take
				if len(m.findings) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(m.findings)-1).Draw(rt, "i")
				f := m.findings[i]
				_, err := a.Take(ctx, who, question.TakeRequest{ID: rec.ID, Finding: f.ID, Reply: "My take."})
				// Every take here replies "My take.": one to an ask this
				// member already answered is that take resent, and answers
				// as it did.
				ok := f.Kind == question.FindingAsk && f.Ref == who.Login &&
					(f.Status == question.FindingRunning || f.Status == question.FindingReady)
				if ok != (err == nil) {
					rt.Fatalf("take of %+v by %s: %v", f, who.Login, err)
				}
				if ok {
					m.findings[i].Status = question.FindingReady
				}
			case 3: // stop
				if len(m.findings) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(m.findings)-1).Draw(rt, "i")
				f := m.findings[i]
				_, err := a.ExploreStop(ctx, who, rec.ID, f.ID, h.cancel)
				switch {
				case f.Status != question.FindingRunning:
					if err != nil {
						rt.Fatalf("stopping a settled finding: %v", err)
					}
				case f.By != who.Login:
					if question.ReasonOf(err) != question.Forbidden {
						rt.Fatalf("stop by a non-starter: %v", err)
					}
				default:
					if err != nil {
						rt.Fatalf("stop: %v", err)
					}
					if f.Kind == question.FindingAsk {
						m.findings[i].Status = question.FindingStopped
					} else {
						m.findings[i].Status = statusOf(h.work[f.Ref].Status)
						if m.findings[i].Status == question.FindingRunning {
							m.findings[i].Status = question.FindingStopped
						}
					}
				}
			case 4: // the work ends, and the host's event arrives (or is missed)
				var running []string
				for r, w := range h.work {
					if w.Status == question.WorkRunning || w.Status == question.WorkFailed {
						running = append(running, r)
					}
				}
				if len(running) == 0 {
					continue
				}
				ref := rapid.SampledFrom(sortedStrings(running)).Draw(rt, "ended")
				st := rapid.SampledFrom(statuses[1:]).Draw(rt, "to")
				h.work[ref] = question.Work{Status: st}
				if rapid.Bool().Draw(rt, "missed") {
					continue
				}
				settle(rt, a, m, ref, h.work[ref])
			case 5: // restart, then sweep as a document open does
				a = newFindingsAuthority(t, store, "plan-1", h)
				for _, w := range a.WorkToCheck() {
					if work := h.work[w.Ref]; work.Status.Terminal() {
						settle(rt, a, m, w.Ref, work)
					}
				}
			}
			got, _ := a.Record(rec.ID)
			if len(got.Findings) != len(m.findings) {
				rt.Fatalf("step %d: %d findings, model %d", step, len(got.Findings), len(m.findings))
			}
			for i, f := range got.Findings {
				w := m.findings[i]
				if f.ID != w.ID || f.Status != w.Status || f.Ref != w.Ref || f.Kind != w.Kind {
					rt.Fatalf("step %d finding %d: %+v, model %+v", step, i, f, w)
				}
			}
		}
	})
}

// settle applies a host event to the authority and the model, checking
// that exactly the findings the model expects changed.
func settle(rt *rapid.T, a *question.Authority, m *findingsModel, ref string, w question.Work) {
	changed, err := a.Settle(ctx, question.FindingResearch, ref, w)
	if err != nil {
		rt.Fatalf("settle %s: %v", ref, err)
	}
	want := 0
	for i, f := range m.findings {
		if f.Kind != question.FindingResearch || f.Ref != ref {
			continue
		}
		to := statusOf(w.Status)
		if f.Status == question.FindingRunning || f.Status == question.FindingFailed && to == question.FindingReady {
			m.findings[i].Status = to
			want++
		}
	}
	if len(changed) != want {
		rt.Fatalf("settle %s changed %d findings, model %d", ref, len(changed), want)
	}
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestFindingNoticesAreDueOncePerStatus(t *testing.T) {
	h := newHost()
	store := memstore.New()
	a := newFindingsAuthority(t, store, "plan-1", h)
	rec := createOne(t, a, "k")
	h.work["r"] = question.Work{Status: question.WorkRunning}
	got, err := a.Explore(ctx, ana, question.ExploreRequest{ID: rec.ID, Kind: question.FindingResearch, Ref: "r"}, h.check)
	must(t, err)
	if n := a.PendingNotices(); len(n) != 0 {
		t.Fatalf("running research owes no notice: %+v", n)
	}
	asked, err := a.Ask(ctx, ana, question.AskRequest{ID: rec.ID, Member: "sam"})
	must(t, err)
	if _, err := a.Settle(ctx, question.FindingResearch, "r", question.Work{Status: question.WorkFailed}); err != nil {
		t.Fatal(err)
	}
	due := a.PendingNotices()
	if len(due) != 2 || due[0].Finding.ID != got.Finding.ID || due[1].Finding.ID != asked.Finding.ID {
		t.Fatalf("due: %+v", due)
	}
	failedID := due[0].Finding.NoticeID()
	must(t, a.MarkNoticed(ctx, rec.ID, got.Finding.ID, question.FindingFailed))
	must(t, a.MarkNoticed(ctx, rec.ID, asked.Finding.ID, question.FindingRunning))
	// Marked durably: a restart owes nothing.
	a = newFindingsAuthority(t, store, "plan-1", h)
	if n := a.PendingNotices(); len(n) != 0 {
		t.Fatalf("after marking: %+v", n)
	}
	// A retried request that turns ready owes a new notice, under a new id.
	if _, err := a.Settle(ctx, question.FindingResearch, "r", question.Work{Status: question.WorkReady}); err != nil {
		t.Fatal(err)
	}
	due = a.PendingNotices()
	if len(due) != 1 || due[0].Finding.NoticeID() == failedID {
		t.Fatalf("after the retry: %+v", due)
	}
	// Marking a status the finding has left changes nothing.
	must(t, a.MarkNoticed(ctx, rec.ID, got.Finding.ID, question.FindingFailed))
	if len(a.PendingNotices()) != 1 {
		t.Fatal("a stale mark cleared the due notice")
	}
	// A take posts none.
	if _, err := a.Take(ctx, question.Member{Login: "sam"}, question.TakeRequest{ID: rec.ID, Finding: asked.Finding.ID, Reply: "Fine by me."}); err != nil {
		t.Fatal(err)
	}
	if len(a.PendingNotices()) != 1 {
		t.Fatal("a take owes a notice")
	}
}

// TestAskOwesOneNotice: an ask owes the notice of the asking once, also
// when the asked member took it before the notice went out (a quick
// answer must not leave Chat without word of the ask), and under one id
// whatever its status, so a repost after a crash is the same notice.
func TestAskOwesOneNotice(t *testing.T) {
	for _, tc := range []struct {
		status, noticed question.FindingStatus
		due             bool
	}{
		{question.FindingRunning, "", true},
		{question.FindingReady, "", true}, // taken before the notice went out
		{question.FindingStopped, "", false},
		{question.FindingReady, question.FindingRunning, false},
		{question.FindingReady, question.FindingReady, false},
	} {
		f := question.Finding{ID: "f1", Kind: question.FindingAsk, Status: tc.status, Noticed: tc.noticed}
		if got := f.NoticeDue(); got != tc.due {
			t.Errorf("ask %s, noticed %q: due %v, want %v", tc.status, tc.noticed, got, tc.due)
		}
		if id := f.NoticeID(); id != "finding:f1:running" {
			t.Errorf("ask %s: notice id %q", tc.status, id)
		}
	}
}

// TestTakeBeforeTheAskIsNoticed: an ask answered before its notice went
// out still owes that one notice (of the asking), and owes nothing more
// once it is posted: a take must not count as the notice, or Chat would
// never hear of an ask answered quickly.
func TestTakeBeforeTheAskIsNoticed(t *testing.T) {
	a := newFindingsAuthority(t, memstore.New(), "plan-1", newHost())
	rec := createOne(t, a, "k")
	ask, err := a.Ask(ctx, ana, question.AskRequest{ID: rec.ID, Member: "ben"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Take(ctx, ben, question.TakeRequest{ID: rec.ID, Finding: ask.Finding.ID, Reply: "Email it is."}); err != nil {
		t.Fatal(err)
	}
	due := a.PendingNotices()
	if len(due) != 1 || due[0].Finding.ID != ask.Finding.ID || due[0].Finding.NoticeID() != "finding:"+ask.Finding.ID+":running" {
		t.Fatalf("notices due after a quick take: %+v", due)
	}
	if err := a.MarkNoticed(ctx, rec.ID, ask.Finding.ID, question.FindingReady); err != nil {
		t.Fatal(err)
	}
	if due := a.PendingNotices(); len(due) != 0 {
		t.Fatalf("notices due once posted: %+v", due)
	}
}
