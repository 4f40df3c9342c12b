package planner_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/question/planner/memhost"
)

// fakeClock is a Clock whose time moves only by Advance.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	clock *fakeClock
	c     chan time.Time
	at    time.Time
	done  bool // guarded by clock.mu
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

var epoch = time.Date(2026, 10, 19, 9, 0, 0, 0, time.UTC)

func newFakeClock() *fakeClock { return &fakeClock{now: epoch} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) planner.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, c: make(chan time.Time, 1), at: c.now.Add(d)}
	if d <= 0 {
		t.done = true
		t.c <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves time on and fires the timers that fell due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	live := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.done:
		case !t.at.After(c.now):
			t.done = true
			t.c <- c.now
		default:
			live = append(live, t)
		}
	}
	c.timers = live
}

// Armed reports whether a live timer fires at exactly at.
func (c *fakeClock) Armed(at time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.ContainsFunc(c.timers, func(t *fakeTimer) bool { return !t.done && t.at.Equal(at) })
}

var (
	ana    = question.Member{Login: "ana", Write: true}
	ben    = question.Member{Login: "ben", Write: true}
	reader = question.Member{Login: "rita", Write: false}
	bg     = context.Background()
)

const doc = "plan-1"

// env is one host with one document, an authority store, a driver on a
// fake clock and the Planner's tools.
type env struct {
	t     tester
	store persist.Store
	host  *memhost.Host
	clock *fakeClock
	local *planner.Local
	d     *planner.Driver
	tools *planner.Tools
	ids   int
	turns int
}

// tester is what env needs of a *testing.T or a *rapid.T.
type tester interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := newEnvOn(t)
	t.Cleanup(func() { e.d.Close() })
	return e
}

// newEnvOn builds an env; the caller closes its driver.
func newEnvOn(t tester) *env {
	t.Helper()
	e := &env{t: t, store: memstore.New(), host: memhost.New(), clock: newFakeClock()}
	e.host.Docs.Set(doc,
		planner.Block{ID: "title", Kind: planner.Title, Text: "Launch plan"},
		planner.Block{ID: "intro", Kind: planner.Paragraph, Text: "We launch in spring."},
		planner.Block{ID: "h-onb", Kind: planner.Heading, Text: "Onboarding"},
		planner.Block{ID: "p-onb", Kind: planner.Paragraph, Text: "People sign up."},
		planner.Block{ID: "p-reset", Kind: planner.Paragraph, Text: "People reset passwords."},
		planner.Block{ID: "h-ops", Kind: planner.Heading, Text: "Operations"},
		planner.Block{ID: "p-ops", Kind: planner.Paragraph, Text: "We run it."},
	)
	for _, m := range []question.Member{ana, ben, reader} {
		e.host.Members.Add(doc, m)
	}
	e.host.Members.Capture("ana")
	e.host.Runtime.SetOwner(doc, "ana")
	e.start()
	return e
}

// start opens fresh authorities and a fresh driver over the same store and
// host: what a restart looks like.
func (e *env) start() {
	e.t.Helper()
	e.local = planner.NewLocal(func(ctx context.Context, d string) (*question.Authority, error) {
		return question.NewAuthority(ctx, question.Options{
			Store: e.store, Doc: d, Now: e.clock.Now,
			NewID: func() string { e.ids++; return fmt.Sprintf("d%d", e.ids) },
		})
	})
	opts := planner.Options{Authorities: e.local, Clock: e.clock, NewID: func() string { e.turns++; return fmt.Sprintf("turn-%d", e.turns) }}
	e.host.Wire(&opts)
	var err error
	if e.d, err = planner.New(opts); err != nil {
		e.t.Fatal(err)
	}
	if e.tools, err = planner.NewTools(planner.ToolsOptions{Authorities: e.local, Document: e.host.Docs, Editor: e.host.Docs, Turns: e.host.Chat}); err != nil {
		e.t.Fatal(err)
	}
}

// restart closes the driver and starts again from the store.
func (e *env) restart() {
	e.t.Helper()
	e.d.Close()
	e.start()
}

func (e *env) do(fn func(a *question.Authority) error) {
	e.t.Helper()
	if err := e.local.Do(bg, doc, fn); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) record(id string) question.Record {
	e.t.Helper()
	var rec question.Record
	e.do(func(a *question.Authority) error {
		var ok bool
		if rec, ok = a.Record(id); !ok {
			return fmt.Errorf("no record %s", id)
		}
		return nil
	})
	return rec
}

func (e *env) rows() []question.AnswerRow {
	var rows []question.AnswerRow
	e.do(func(a *question.Authority) error { rows = a.AnswerRows(); return nil })
	return rows
}

var call = planner.Call{Doc: doc}

// open opens one card through open_decisions: a written card, or a choice
// between email and sms judged on "Cheap", related to the given blocks.
func (e *env) open(key string, choice bool, blocks ...string) string {
	e.t.Helper()
	c := planner.CardInput{Revision: e.host.Docs.Revision(doc), Key: key, Blocks: blocks, Question: "What about " + key + "?", Response: "text", Options: []planner.Label{}}
	if choice {
		c.Response = ""
		c.Options = []planner.Label{{Label: "Email link"}, {Label: "SMS code"}}
		c.Criteria = []planner.Label{{Label: "Cheap"}, {Label: "Easy reset"}}
	}
	out, err := e.tools.OpenDecisions(bg, call, []planner.CardInput{c})
	if err != nil {
		e.t.Fatal(err)
	}
	return out[0].ID
}

// save makes who edit the draft (written text, or the option labelled
// answer, marked yes on the first criterion) and save it.
func (e *env) save(who question.Member, id, answer string) {
	e.t.Helper()
	if err := e.trySave(who, id, answer); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) trySave(who question.Member, id, answer string) error {
	return e.local.Do(bg, doc, func(a *question.Authority) error { return saveOn(a, who, id, answer) })
}

func saveOn(a *question.Authority, who question.Member, id, answer string) error {
	rec, ok := a.Record(id)
	if !ok {
		return fmt.Errorf("no record %s", id)
	}
	saved, err := a.Save(id)
	if err != nil {
		return err
	}
	r, err := crdt.Load(saved, nil, crdt.Options{})
	if err != nil {
		return err
	}
	h := r.Heads()
	q := rec.Definition.Questions[0]
	if q.Written() {
		err = r.SetText(q.ID, answer)
	} else {
		opt := ""
		for _, o := range q.Options {
			if o.Label == answer {
				opt = o.ID
			}
		}
		if err = r.Choose(q.ID, opt, true); err == nil && len(q.Criteria) > 0 {
			err = r.SetMark(q.ID, opt, q.Criteria[0].ID, marks.Yes)
		}
	}
	if err != nil {
		return err
	}
	ch, err := r.ChangesSince(h)
	if err != nil {
		return err
	}
	if _, err := a.Edit(bg, who, id, ch); err != nil {
		return err
	}
	_, heads, err := a.Draft(id)
	if err != nil {
		return err
	}
	out, err := a.Submit(bg, who, []question.SubmitRequest{{ID: id, Heads: heads}})
	if err != nil {
		return err
	}
	return out[0].Err
}

func (e *env) reopen(id string) {
	e.t.Helper()
	e.do(func(a *question.Authority) error { _, err := a.Reopen(bg, ben, id, 0); return err })
}

func (e *env) step() planner.Plan {
	e.t.Helper()
	p, err := e.d.Step(bg, doc)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) jobs() planner.JobReport {
	e.t.Helper()
	r, err := e.d.RunJobs(bg, doc)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *env) turnsRun() []planner.Turn { return e.host.Chat.Turns(doc) }

func reason(t *testing.T, err error, want question.Reason) {
	t.Helper()
	if got := question.ReasonOf(err); got != want {
		t.Fatalf("got %v, want refusal %q", err, want)
	}
}
