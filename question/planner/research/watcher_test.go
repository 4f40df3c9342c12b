package research_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/question/planner/memhost"
	"github.com/accord-crdt/accord/question/planner/research"
)

var (
	ctx = context.Background()
	ana = question.Member{Login: "ana", Write: true}
)

// fakeHost holds work by (document, ref).
type fakeHost struct {
	mu   sync.Mutex
	work map[string]question.Work
}

func (h *fakeHost) set(doc, ref string, w question.Work) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.work[doc+"/"+ref] = w
}

func (h *fakeHost) Work(_ context.Context, doc string, _ question.FindingKind, ref string) (question.Work, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w, ok := h.work[doc+"/"+ref]
	if !ok {
		return question.Work{}, &question.Refusal{Reason: question.NotFound, Message: "no such work in this document"}
	}
	return w, nil
}

func (h *fakeHost) Cancel(c context.Context, doc string, k question.FindingKind, ref string) (question.Work, error) {
	w, err := h.Work(c, doc, k, ref)
	if err == nil && w.Status == question.WorkRunning {
		w = question.Work{Status: question.WorkCancelled}
		h.set(doc, ref, w)
	}
	return w, err
}

type rig struct {
	store *memstore.Store
	auths *planner.Local
	host  *fakeHost
	chat  *memhost.Chat
	w     *research.Watcher
	id    string // the decision
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{store: memstore.New(), host: &fakeHost{work: map[string]question.Work{}}, chat: memhost.NewChat()}
	n := 0
	r.auths = planner.NewLocal(func(ctx context.Context, doc string) (*question.Authority, error) {
		return question.NewAuthority(ctx, question.Options{Store: r.store, Doc: doc,
			NewID: func() string { n++; return fmt.Sprintf("id%d", n) }})
	})
	w, err := research.New(research.Options{Authorities: r.auths, Host: r.host, Chat: r.chat, RetryAfter: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	r.w = w
	must(t, r.auths.Do(ctx, "plan", func(a *question.Authority) error {
		out, err := a.Create(ctx, ana, []question.CreateRequest{{Key: "k", Origin: question.FromPlanner, Definition: question.Definition{
			Questions: []question.Question{{Text: "Which reset flow?", Options: []question.Option{{ID: "email", Label: "Email"}}}}}}})
		if err == nil {
			r.id = out[0].Record.ID
		}
		return err
	}))
	return r
}

func (r *rig) explore(t *testing.T, ref string, kind question.FindingKind) question.Finding {
	t.Helper()
	var f question.Finding
	must(t, r.auths.Do(ctx, "plan", func(a *question.Authority) error {
		res, err := a.Explore(ctx, ana, question.ExploreRequest{ID: r.id, Kind: kind, Ref: ref}, r.w.Check("plan"))
		f = res.Finding
		return err
	}))
	return f
}

func (r *rig) finding(t *testing.T, id string) question.Finding {
	t.Helper()
	var f question.Finding
	must(t, r.auths.Do(ctx, "plan", func(a *question.Authority) error {
		rec, _ := a.Record(r.id)
		for _, x := range rec.Findings {
			if x.ID == id {
				f = x
			}
		}
		return nil
	}))
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestAnEventSettlesAndNotifiesOnce(t *testing.T) {
	r := newRig(t)
	r.host.set("plan", "r1", question.Work{Status: question.WorkRunning})
	f := r.explore(t, "r1", question.FindingResearch)
	ready := question.Work{Status: question.WorkReady, Title: "Costs", Summary: "Email is free."}
	r.host.set("plan", "r1", ready)
	r.w.Changed("plan", question.FindingResearch, "r1", ready)
	testutil.Eventually(t, "the finding is ready", func() bool { return r.finding(t, f.ID).Status == question.FindingReady })
	testutil.Eventually(t, "its notice is posted", func() bool { return len(r.chat.Notices("plan")) == 1 })
	// More events and sweeps post nothing more.
	r.w.Changed("plan", question.FindingResearch, "r1", ready)
	r.w.Poke("plan")
	must(t, r.w.Sweep(ctx, "plan"))
	n := r.chat.Notices("plan")
	if len(n) != 1 || n[0].Text != "Research for “Which reset flow?” is ready: Costs" || n[0].Quiet {
		t.Fatalf("notices: %+v", n)
	}
	if got := r.finding(t, f.ID); got.NoticeDue() {
		t.Fatalf("still owes a notice: %+v", got)
	}
}

func TestASweepSettlesWhatAMissedEventLeft(t *testing.T) {
	r := newRig(t)
	r.host.set("plan", "spike", question.Work{Status: question.WorkRunning})
	r.host.set("plan", "bad", question.Work{Status: question.WorkRunning})
	r.host.set("plan", "gone", question.Work{Status: question.WorkRunning})
	spike := r.explore(t, "spike", question.FindingSpike)
	bad := r.explore(t, "bad", question.FindingResearch)
	gone := r.explore(t, "gone", question.FindingResearch)
	// The work ends; no event arrives.
	r.host.set("plan", "spike", question.Work{Status: question.WorkFinished, Branch: "spike/reset"})
	r.host.set("plan", "bad", question.Work{Status: question.WorkFailed, Summary: "The search service timed out.\nTrace: …"})
	r.host.mu.Lock()
	delete(r.host.work, "plan/gone")
	r.host.mu.Unlock()
	r.w.Poke("plan") // the document (re)opens
	testutil.Eventually(t, "the sweep settled all three", func() bool {
		return r.finding(t, spike.ID).Status == question.FindingReady && r.finding(t, bad.ID).Status == question.FindingFailed &&
			r.finding(t, gone.ID).Status == question.FindingStopped
	})
	testutil.Eventually(t, "two notices", func() bool { return len(r.chat.Notices("plan")) == 2 })
	quiet := 0
	for _, n := range r.chat.Notices("plan") {
		if n.Quiet {
			quiet++
			if !strings.HasSuffix(n.Text, "failed: The search service timed out.") {
				t.Errorf("the failed request's notice %q does not give its reason, in one line", n.Text)
			}
		}
	}
	if quiet != 1 {
		t.Fatalf("the failed request's notice should be the one quiet notice: %+v", r.chat.Notices("plan"))
	}
}

func TestAFailedSettleIsRetried(t *testing.T) {
	r := newRig(t)
	r.host.set("plan", "r1", question.Work{Status: question.WorkRunning})
	f := r.explore(t, "r1", question.FindingResearch)
	r.store.FailNextCommit(errors.New("disk full"))
	ready := question.Work{Status: question.WorkReady}
	r.host.set("plan", "r1", ready)
	r.w.Changed("plan", question.FindingResearch, "r1", ready)
	testutil.Eventually(t, "the retried sweep settles it", func() bool { return r.finding(t, f.ID).Status == question.FindingReady })
	testutil.Eventually(t, "one notice", func() bool { return len(r.chat.Notices("plan")) == 1 })
}

func TestAnAskPostsANoticeNamingThem(t *testing.T) {
	r := newRig(t)
	must(t, r.auths.Do(ctx, "plan", func(a *question.Authority) error {
		_, err := a.Ask(ctx, ana, question.AskRequest{ID: r.id, Member: "sam"})
		return err
	}))
	r.w.Poke("plan")
	testutil.Eventually(t, "the ask's notice", func() bool { return len(r.chat.Notices("plan")) == 1 })
	if n := r.chat.Notices("plan")[0]; n.Text != "@ana asked @sam about “Which reset flow?”" {
		t.Fatalf("notice %q", n.Text)
	}
}

func TestCheckRefusesWorkOfAnotherDocument(t *testing.T) {
	r := newRig(t)
	r.host.set("other", "r1", question.Work{Status: question.WorkRunning})
	err := r.auths.Do(ctx, "plan", func(a *question.Authority) error {
		_, err := a.Explore(ctx, ana, question.ExploreRequest{ID: r.id, Kind: question.FindingResearch, Ref: "r1"}, r.w.Check("plan"))
		return err
	})
	if question.ReasonOf(err) != question.NotFound {
		t.Fatalf("attaching another document's work: %v", err)
	}
}
