package research_test

// Settles and notices across crashes, measured. TestResearchCrash runs its
// own test binary as a child (TestResearchCrashChild, which acts only when
// researchCrashEnv is set). Before each cycle the parent moves the host's
// work on (running work ends ready, failed, finished or cancelled; some
// failed requests are retried to ready) and names new work to attach. The
// child opens the bbolt file, a Chat journal (one fsynced line per notice,
// Post idempotent by id) and a Watcher; it attaches the new work, sends the
// host's events for everything that ended, and sweeps in a loop. The
// parent SIGKILLs it at a random moment, or the child kills itself at a
// named point:
//
//	before-post  a settle committed; its notice is not posted yet
//	after-post   the notice is in the journal; it is not marked posted
//
// After every death the parent checks that no notice id is in the journal
// twice. At the end a last child sweeps once, as a document's opening does, and the parent checks that every finding follows its
// work's final state, that every notice a finding owed is in the journal
// exactly once, and that none is still owed.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/question/planner/research"
)

const researchCrashEnv = "ACCORD_RESEARCH_CRASH_CHILD"

type researchCrashConfig struct {
	File, Journal string
	Host          map[string]question.Work // ref → state, as the host has it now
	Attach        []string                 // refs to attach this cycle
	Decision      string                   // the decision key they attach to
	Point         string                   // "" (random kill), "before-post", "after-post", "finish"
}

const crashDoc = "plan"

// journalChat is a Chat that survives the process: each notice posted is
// one line, its id, of a testutil.Journal.
type journalChat struct {
	mu     sync.Mutex
	j      *testutil.Journal
	posted map[string]bool
	again  int // posts of an id already posted, ignored
	hook   func(string)
}

func openJournalChat(path string, hook func(string)) (*journalChat, error) {
	j, ids, err := testutil.OpenJournal(path)
	if err != nil {
		return nil, err
	}
	c := &journalChat{j: j, posted: map[string]bool{}, hook: hook}
	for _, id := range ids {
		c.posted[id] = true
	}
	return c, nil
}

func (c *journalChat) Post(_ context.Context, _ string, n planner.Notice) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.posted[n.ID] {
		c.again++
		return nil
	}
	c.hook("before-post")
	if err := c.j.Append(n.ID); err != nil {
		return err
	}
	c.posted[n.ID] = true
	c.hook("after-post")
	return nil
}

// staticHost answers from the state the parent wrote for this cycle.
type staticHost struct{ work map[string]question.Work }

func (h staticHost) Work(_ context.Context, doc string, _ question.FindingKind, ref string) (question.Work, error) {
	w, ok := h.work[ref]
	if !ok || doc != crashDoc {
		return question.Work{}, &question.Refusal{Reason: question.NotFound, Message: "no such work"}
	}
	return w, nil
}

func (h staticHost) Cancel(c context.Context, doc string, k question.FindingKind, ref string) (question.Work, error) {
	return h.Work(c, doc, k, ref)
}

// TestResearchCrashChild is the child of TestResearchCrash; without
// researchCrashEnv it does nothing.
func TestResearchCrashChild(t *testing.T) {
	var cfg researchCrashConfig
	testutil.ChildMain(researchCrashEnv, &cfg, func() error { return runResearchChild(cfg) })
}

func runResearchChild(cfg researchCrashConfig) error {
	hook := func(point string) {
		if point == cfg.Point {
			testutil.KillSelf(point)
		}
	}
	st, err := boltstore.Open(cfg.File, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	chat, err := openJournalChat(cfg.Journal, hook)
	if err != nil {
		return err
	}
	auths := planner.NewLocal(func(ctx context.Context, doc string) (*question.Authority, error) {
		return question.NewAuthority(ctx, question.Options{Store: st, Doc: doc})
	})
	host := staticHost{cfg.Host}
	w, err := research.New(research.Options{Authorities: auths, Host: host, Chat: chat, RetryAfter: time.Millisecond})
	if err != nil {
		return err
	}
	defer w.Close()
	fmt.Println("READY")
	err = auths.Do(ctx, crashDoc, func(a *question.Authority) error {
		id, ok := a.Lookup(cfg.Decision)
		if !ok {
			out, err := a.Create(ctx, ana, []question.CreateRequest{{Key: cfg.Decision, Origin: question.FromPlanner,
				Definition: question.Definition{Questions: []question.Question{{Text: "Which reset flow " + cfg.Decision + "?",
					Options: []question.Option{{ID: "email", Label: "Email"}}}}}}})
			if err != nil {
				return err
			}
			id = out[0].Record.ID
		}
		for _, ref := range cfg.Attach {
			kind := question.FindingResearch
			if strings.HasPrefix(ref, "s") {
				kind = question.FindingSpike
			}
			if _, err := a.Explore(ctx, ana, question.ExploreRequest{ID: id, Kind: kind, Ref: ref}, w.Check(crashDoc)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if cfg.Point == "finish" { // one sweep, as a document's opening runs
		if err := w.Sweep(ctx, crashDoc); err != nil {
			return err
		}
		fmt.Printf("AGAIN %d\n", chat.again)
		return nil
	}
	for ref, work := range cfg.Host {
		if work.Status.Terminal() {
			w.Changed(crashDoc, kindOf(ref), ref, work)
		}
	}
	for { // until killed
		w.Poke(crashDoc)
		time.Sleep(time.Millisecond)
	}
}

func kindOf(ref string) question.FindingKind {
	if strings.HasPrefix(ref, "s") {
		return question.FindingSpike
	}
	return question.FindingResearch
}

// TestResearchCrash kills the child over many cycles and checks that
// settles and notices stay exact.
func TestResearchCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crash cycles take a while; run without -short")
	}
	dir := t.TempDir()
	file, journal := filepath.Join(dir, "accord.db"), filepath.Join(dir, "chat.journal")
	rng := rand.New(rand.NewPCG(7, 11))
	host := map[string]question.Work{}
	const cycles = 120
	points := []string{"", "", "before-post", "after-post"}
	killed, selfKilled := 0, 0
	next := 0
	for cycle := 0; cycle < cycles; cycle++ {
		// The host's work moves on.
		for ref, w := range host {
			switch {
			case w.Status == question.WorkRunning && rng.IntN(3) == 0:
				host[ref] = question.Work{Status: []question.WorkStatus{question.WorkReady, question.WorkFailed, question.WorkCancelled, question.WorkFinished}[rng.IntN(4)],
					Summary: "result of " + ref}
			case w.Status == question.WorkFailed && rng.IntN(4) == 0:
				host[ref] = question.Work{Status: question.WorkReady, Summary: "retried " + ref}
			}
		}
		var attach []string
		for range 3 {
			prefix := "r"
			if rng.IntN(3) == 0 {
				prefix = "s"
			}
			ref := fmt.Sprintf("%s%d", prefix, next)
			next++
			host[ref] = question.Work{Status: question.WorkRunning}
			if rng.IntN(4) == 0 { // attached after it ended
				host[ref] = question.Work{Status: question.WorkFailed}
			}
			attach = append(attach, ref)
		}
		cfg := researchCrashConfig{File: file, Journal: journal, Host: cloneWork(host), Attach: attach,
			Decision: fmt.Sprintf("d%d", cycle/5), Point: points[rng.IntN(len(points))]}
		kill := time.Duration(1+rng.IntN(25)) * time.Millisecond
		if cfg.Point != "" {
			kill = 150 * time.Millisecond // in case the named point does not come up
		}
		child := testutil.RunChildConfig(t, "TestResearchCrashChild", researchCrashEnv, cfg, kill, fmt.Sprintf("cycle %d", cycle))
		if bad := child.Bad(); len(bad) > 0 {
			t.Fatalf("cycle %d: %s\n%s", cycle, bad[0], child.Stderr)
		}
		for _, l := range child.Lines {
			if strings.HasPrefix(l, "KILL") {
				selfKilled++
			}
		}
		if !child.Killed {
			t.Fatalf("cycle %d: the child was not killed\n%s", cycle, child.Stderr)
		}
		killed++
		checkJournal(t, journal, cycle)
	}
	// The last child runs to completion.
	cfg := researchCrashConfig{File: file, Journal: journal, Host: cloneWork(host), Decision: "d-final", Point: "finish"}
	child := testutil.RunChildConfig(t, "TestResearchCrashChild", researchCrashEnv, cfg, 0, "final")
	if bad := child.Bad(); len(bad) > 0 {
		t.Fatalf("final: %s\n%s", bad[0], child.Stderr)
	}
	again := ""
	for _, l := range child.Lines {
		if strings.HasPrefix(l, "AGAIN") {
			again = strings.TrimPrefix(l, "AGAIN ")
		}
	}
	ids := checkJournal(t, journal, cycles)
	posted := map[string]bool{}
	for _, id := range ids {
		posted[id] = true
	}
	st, err := boltstore.Open(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := question.NewAuthority(ctx, question.Options{Store: st, Doc: crashDoc})
	if err != nil {
		t.Fatal(err)
	}
	settled, findings := 0, 0
	for _, rec := range a.Records() {
		for _, f := range rec.Findings {
			findings++
			w := host[f.Ref]
			want := map[question.WorkStatus]question.FindingStatus{question.WorkRunning: question.FindingRunning,
				question.WorkReady: question.FindingReady, question.WorkFinished: question.FindingReady,
				question.WorkFailed: question.FindingFailed, question.WorkCancelled: question.FindingStopped}[w.Status]
			if f.Status != want {
				t.Errorf("finding %s (%s) is %s; its work is %s", f.ID, f.Ref, f.Status, w.Status)
			}
			if f.Settled() {
				settled++
			}
			if f.NoticeDue() {
				t.Errorf("finding %s still owes its %s notice", f.ID, f.Status)
			}
			if (f.Status == question.FindingReady || f.Status == question.FindingFailed) && !posted[f.NoticeID()] {
				t.Errorf("finding %s: its %s notice is lost", f.ID, f.Status)
			}
		}
	}
	t.Logf("%d cycles (%d killed, %d at a named point), %d findings, %d settled, %d notices, %d re-posts ignored by id in the last run, 0 duplicates",
		cycles, killed, selfKilled, findings, settled, len(ids), atoi(again))
}

// checkJournal fails on a notice id posted twice and returns the ids.
func checkJournal(t *testing.T, path string, cycle int) []string {
	t.Helper()
	ids, err := testutil.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("after cycle %d: notice %s posted twice", cycle, id)
		}
		seen[id] = true
	}
	return ids
}

func cloneWork(m map[string]question.Work) map[string]question.Work {
	out := make(map[string]question.Work, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func atoi(s string) int {
	n := 0
	fmt.Sscan(s, &n)
	return n
}
