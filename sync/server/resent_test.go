package server_test

// Outcomes of a resent request: a connection lost before the server
// read a request, after it committed and before its reply arrived, or
// right after the reply, must never make a client report a request as
// refused that took effect, nor as done one that did not.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/wire"
)

// Where a cutDialer's connection is cut.
const (
	cutNone        int32 = iota
	cutBeforeRead        // the next request is never written: the server never reads it
	cutBeforeReply       // the next reply is dropped: the server committed, the client never hears
	cutAfterReply        // the next reply arrives, then the connection fails
	cutKinds
)

var cutNames = [cutKinds]string{"none", "before the server reads", "after the commit, before the reply", "after the reply"}

// cutDialer dials real WebSockets whose connections fail once, where
// the test says, at the next request or reply.
type cutDialer struct {
	cut     atomic.Int32
	cuts    atomic.Int64 // connections cut
	current atomic.Pointer[cutConn]
	mu      sync.Mutex
	gate    chan struct{} // non-nil: dials wait until it is closed
}

// up reports whether the dialer's latest connection is up, as far as
// the test's cuts go.
func (d *cutDialer) up() bool {
	c := d.current.Load()
	return c != nil && !c.killed.Load()
}

// hold makes dials wait until gate is closed.
func (d *cutDialer) hold(gate chan struct{}) {
	d.mu.Lock()
	d.gate = gate
	d.mu.Unlock()
}

func (d *cutDialer) dial(ctx context.Context, url string, header http.Header) (replica.Conn, error) {
	d.mu.Lock()
	gate := d.gate
	d.mu.Unlock()
	ws, err := dialAfter(ctx, gate, url, header)
	if err != nil {
		return nil, err
	}
	c := &cutConn{ws: ws, d: d}
	d.current.Store(c)
	return c, nil
}

// dialAfter dials a WebSocket once gate is closed (at once if gate is
// nil), unless ctx ends first: a client whose redial a test holds back.
func dialAfter(ctx context.Context, gate <-chan struct{}, url string, header http.Header) (*websocket.Conn, error) {
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, url, header)
	return ws, err
}

// cutConn is one connection of a cutDialer.
type cutConn struct {
	ws     *websocket.Conn
	d      *cutDialer
	killed atomic.Bool
}

var errCut = errors.New("connection cut by the test")

func (c *cutConn) kill() {
	c.killed.Store(true)
	c.d.cuts.Add(1)
	c.ws.Close()
}

func (c *cutConn) ReadMessage() (int, []byte, error) {
	typ, data, err := c.ws.ReadMessage()
	if err != nil {
		return typ, data, err
	}
	if _, ok := decodeFrame(typ, data).(*wire.Reply); ok {
		switch {
		case c.d.cut.CompareAndSwap(cutBeforeReply, cutNone):
			c.kill()
			return 0, nil, errCut
		case c.d.cut.CompareAndSwap(cutAfterReply, cutNone):
			c.kill() // the reply is handed on; the next read fails
		}
	}
	return typ, data, nil
}

func (c *cutConn) WriteMessage(typ int, data []byte) error {
	m := decodeFrame(typ, data)
	if m != nil && m.FrameKind() != wire.KindHello && m.FrameKind() != wire.KindPresence &&
		c.d.cut.CompareAndSwap(cutBeforeRead, cutNone) {
		c.kill()
		return errCut
	}
	return c.ws.WriteMessage(typ, data)
}

func (c *cutConn) Close() error { return c.ws.Close() }

// decodeFrame decodes a frame either way it travels, nil if it does not.
func decodeFrame(typ int, data []byte) wire.Message {
	f := wire.Binary
	if typ == websocket.TextMessage {
		f = wire.Text
	}
	if m, err := wire.DecodeServerFrame(data, f); err == nil {
		return m
	}
	if m, err := wire.Decode(data, f); err == nil {
		return m
	}
	return nil
}

// resentMember is one member's client and the cuts it suffers. While a
// request of theirs is held (their connection cut and its redial held
// back), the others go on.
type resentMember struct {
	login string
	c     *replica.Client
	d     *cutDialer
	// held, while a request of theirs is held, is closed when it has
	// finished; release lets their client redial.
	held    chan struct{}
	release func()
}

// resentRun drives one decision through random requests, checking each
// outcome against the authority's record and document at the end. The
// request functions may run on a goroutine of their own (a held
// request): they draw nothing and record failures in errs.
type resentRun struct {
	ts      *testServer
	doc, id string
	members []*resentMember

	mu     sync.Mutex
	n      int // requests made, for unique texts and keys
	checks []func(rec question.Record, doc *crdt.Doc) error
	errs   []error
	// whys holds, per generation, the text of the last why reported set.
	whys map[uint64]string
}

func (r *resentRun) next() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	return r.n
}

func (r *resentRun) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Errorf(format, args...))
}

// check records what the server must show for an outcome.
func (r *resentRun) check(what string, ok func(rec question.Record, doc *crdt.Doc) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checks = append(r.checks, func(rec question.Record, doc *crdt.Doc) error {
		if !ok(rec, doc) {
			return errors.New(what)
		}
		return nil
	})
}

// expect records what the server must show for a request's outcome:
// took holds once it took effect, so it must hold if the request was
// reported done and must not if it was reported refused.
func (r *resentRun) expect(what string, err error, took func(rec question.Record, doc *crdt.Doc) bool) {
	switch done, refused := r.outcome(what, err); {
	case done:
		r.check(what+" was reported done, yet it did not take effect", took)
	case refused:
		r.check(what+" was reported refused, yet it took effect", func(rec question.Record, doc *crdt.Doc) bool { return !took(rec, doc) })
	}
}

func requestCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// outcome sorts a request's error: nil (done) or a refusal; anything else
// is recorded as a failure, and done is false as well as refused.
func (r *resentRun) outcome(what string, err error) (done, refused bool) {
	var ref *question.Refusal
	switch {
	case err == nil:
		return true, false
	case errors.As(err, &ref) && ref.Reason != question.Unavailable:
		return false, true
	}
	r.fail("%s: %v", what, err)
	return false, false
}

// quiesce waits until every member not held shows the same revision and
// record: what one request did has reached them before the next.
func (r *resentRun) quiesce() error {
	same := func() bool {
		first := ""
		for _, m := range r.members {
			if m.held != nil {
				continue
			}
			_, heads, err := m.c.Draft(r.id)
			rec, _ := m.c.Record(r.id)
			if err != nil {
				return false
			}
			at := fmt.Sprintf("%s %s %d %d", heads, rec.Status, rec.Generation, len(rec.History))
			if first == "" {
				first = at
			} else if at != first {
				return false
			}
		}
		return true
	}
	if err := poll(context.Background(), 30*time.Second, same); err != nil {
		return fmt.Errorf("the members' replicas never agreed: %v", err)
	}
	return nil
}

// Which edit an edit request makes.
const (
	editText = iota
	editChoice
	editMark
)

func (r *resentRun) edit(m *resentMember, kind, pick int) {
	n := r.next()
	var err error
	switch kind {
	case editText:
		err = m.c.SpliceText(r.id, "note", 0, 0, fmt.Sprintf("[%s%d]", m.login, n))
	case editChoice:
		err = m.c.Choose(r.id, "q1", fmt.Sprintf("o%d", pick%2), true)
	default:
		// Appended options are options too: mark the first criterion of
		// one of them.
		rec, _ := m.c.Record(r.id)
		opts := rec.Definition.Questions[0].Options
		err = m.c.SetMark(r.id, "q1", opts[pick%len(opts)].ID, "c0", marks.Yes)
	}
	if _, refused := r.outcome("a local edit", err); refused || err != nil {
		return // refused by the replica itself (a settled decision): nothing sent
	}
	_, heads, err := m.c.Draft(r.id)
	if err != nil {
		r.fail("draft: %v", err)
		return
	}
	ctx, cancel := requestCtx()
	defer cancel()
	r.expect(fmt.Sprintf("%s's edit #%d", m.login, n), m.c.Flush(ctx, r.id),
		func(_ question.Record, doc *crdt.Doc) bool { return doc.Has(heads) })
}

func (r *resentRun) save(m *resentMember) {
	n := r.next()
	// Every edit was flushed by its own request: the save claims the
	// heads the replica displays now, which its answer records.
	_, heads, err := m.c.Draft(r.id)
	if err != nil {
		r.fail("draft: %v", err)
		return
	}
	ctx, cancel := requestCtx()
	defer cancel()
	res, err := m.c.Submit(ctx, r.id)
	if err == nil && !res[0].OK {
		err = &question.Refusal{Reason: res[0].Reason, Message: res[0].Message}
	}
	saved := func(rec question.Record) bool {
		mine := func(a question.Answer) bool { return a.Heads == heads.String() && a.By == m.login }
		if rec.Answer != nil && mine(*rec.Answer) {
			return true
		}
		for _, h := range rec.History {
			if mine(h.Answer) {
				return true
			}
		}
		return false
	}
	r.expect(fmt.Sprintf("%s's save #%d", m.login, n), err, func(rec question.Record, _ *crdt.Doc) bool { return saved(rec) })
}

func (r *resentRun) reopen(m *resentMember) {
	n := r.next()
	held, _ := m.c.Record(r.id)
	if held.Status != question.Settled {
		return
	}
	g := held.Generation
	ctx, cancel := requestCtx()
	defer cancel()
	_, err := m.c.Reopen(ctx, r.id)
	reopened := func(rec question.Record) bool {
		for _, h := range rec.History {
			if h.Generation == g {
				return h.ReopenedBy == m.login
			}
		}
		return false
	}
	r.expect(fmt.Sprintf("%s's reopen #%d of generation %d", m.login, n, g), err, func(rec question.Record, _ *crdt.Doc) bool { return reopened(rec) })
}

// why sets a why; it is never held, so that the whys reported set follow
// the order they were committed in.
func (r *resentRun) why(m *resentMember) {
	n := r.next()
	held, _ := m.c.Record(r.id)
	if held.Status != question.Settled {
		return
	}
	g := held.Generation
	text := fmt.Sprintf("Because %s said so (%d).", m.login, n)
	ctx, cancel := requestCtx()
	defer cancel()
	_, err := m.c.SetWhy(ctx, r.id, text)
	what := fmt.Sprintf("%s's why #%d of generation %d", m.login, n, g)
	done, refused := r.outcome(what, err)
	if done {
		r.whys[g] = text
		r.check(what+" was reported set, yet the server shows another", func(rec question.Record, _ *crdt.Doc) bool {
			got, by := whyOf(rec, g)
			return r.whys[g] != text || got == text && by == m.login
		})
	}
	if refused {
		r.check(what+" was reported refused, yet the server shows it", func(rec question.Record, _ *crdt.Doc) bool {
			got, _ := whyOf(rec, g)
			return got != text
		})
	}
}

// whyOf returns the why of generation g's answer and who set it.
func whyOf(rec question.Record, g uint64) (string, string) {
	if rec.Answer != nil && rec.Answer.Generation == g {
		return rec.Why, rec.WhyBy
	}
	for _, h := range rec.History {
		if h.Generation == g {
			return h.Why, h.WhyBy
		}
	}
	return "", ""
}

func (r *resentRun) appendOption(m *resentMember) {
	n := r.next()
	key := fmt.Sprintf("k%d", n)
	label := fmt.Sprintf("Option from %s %d", m.login, n)
	ctx, cancel := requestCtx()
	defer cancel()
	opt, _, _, err := m.c.AppendOption(ctx, r.id, "q1", key, label)
	r.expect(fmt.Sprintf("%s's option %q", m.login, key), err, func(rec question.Record, _ *crdt.Doc) bool {
		a, ok := rec.Appended[key]
		if !ok || err == nil && a.ID != opt.ID {
			return false
		}
		for _, o := range rec.Definition.Questions[0].Options {
			if o.ID == a.ID {
				return o.Label == label
			}
		}
		return false
	})
}

// hold runs a request of m's on a goroutine with m's connection cut at
// the given point and its redial held back until release; it returns
// once the cut happened (or the request ended without reaching it).
func (r *resentRun) hold(m *resentMember, cut int32, request func()) error {
	// A request made while the client is still redialling would wait
	// for the held dial and never reach its cut.
	if err := poll(context.Background(), 30*time.Second, func() bool { return m.d.up() && m.c.Connected() }); err != nil {
		return fmt.Errorf("%s never reconnected: %v", m.login, err)
	}
	gate := make(chan struct{})
	m.d.hold(gate)
	cuts := m.d.cuts.Load()
	m.d.cut.Store(cut)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		request()
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	select {
	case <-finished:
	case <-waitUntil(ctx, func() bool { return m.d.cuts.Load() > cuts }):
	}
	m.d.cut.Store(cutNone)
	m.held = make(chan struct{})
	go func(done chan struct{}) {
		<-finished
		close(done)
	}(m.held)
	m.release = func() { close(gate) }
	return nil
}

// waitUntil returns a channel closed once cond holds (polled), or ctx
// ends.
func waitUntil(ctx context.Context, cond func() bool) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		_ = poll(ctx, time.Minute, cond)
	}()
	return ch
}

// TestResentRequestsGetTheirOutcome: members edit, save, reopen, set
// whys and append options while their connections are cut at random
// points around the requests, some held off while the others go on;
// every outcome a client reports agrees with what the server committed.
func TestResentRequestsGetTheirOutcome(t *testing.T) {
	ts := startServer(t, "")
	var docs atomic.Int64
	var cuts [cutKinds]int
	rapid.Check(t, func(rt *rapid.T) {
		run := &resentRun{ts: ts, doc: fmt.Sprintf("plan-resent-%d", docs.Add(1)), whys: map[uint64]string{}}
		for _, login := range []string{"ana", "ben", "cleo"} {
			d := &cutDialer{}
			c := join(t, ts.url, run.doc, login, wire.Binary, func(o *replica.Options) { o.Dialer = d.dial })
			rt.Cleanup(func() { c.Close() })
			run.members = append(run.members, &resentMember{login: login, c: c, d: d})
		}
		run.id = create(t, run.members[0].c, matrixCard("resent", 2, 1, false, true))
		for _, m := range run.members {
			hasReplica(t, m.c, run.id)
		}
		finish := func(m *resentMember) {
			m.release()
			<-m.held
			m.held, m.release = nil, nil
		}
		defer func() {
			for _, m := range run.members {
				if m.held != nil {
					finish(m)
				}
			}
		}()
		settle := func() {
			if err := run.quiesce(); err != nil {
				rt.Fatal(err)
			}
			if len(run.errs) > 0 {
				rt.Fatal(errors.Join(run.errs...))
			}
		}
		began := time.Now()
		for range rapid.IntRange(4, 30).Draw(rt, "steps") {
			rt.Logf("at %v", time.Since(began))
			m := run.members[rapid.IntRange(0, len(run.members)-1).Draw(rt, "member")]
			if m.held != nil {
				rt.Logf("step: %s's held request let go", m.login)
				finish(m)
				settle()
				continue
			}
			var request func()
			canHold := true
			switch rapid.IntRange(0, 9).Draw(rt, "request") {
			case 0, 1, 2, 3:
				kind, pick := rapid.IntRange(editText, editMark).Draw(rt, "edit"), rapid.IntRange(0, 9).Draw(rt, "pick")
				request = func() { run.edit(m, kind, pick) }
			case 4, 5:
				request = func() { run.save(m) }
			case 6:
				request = func() { run.reopen(m) }
			case 7:
				request, canHold = func() { run.why(m) }, false
			default:
				request = func() { run.appendOption(m) }
			}
			cut := rapid.Int32Range(cutNone, cutKinds-1).Draw(rt, "cut")
			cuts[cut]++
			if cut != cutNone && canHold && rapid.Bool().Draw(rt, "hold") {
				rt.Logf("step: %s's request held, cut %s", m.login, cutNames[cut])
				if err := run.hold(m, cut, request); err != nil {
					rt.Fatal(err)
				}
			} else {
				m.d.cut.Store(cut)
				request()
				m.d.cut.Store(cutNone) // a cut the request did not reach is not carried on
			}
			settle()
		}
		for _, m := range run.members {
			if m.held != nil {
				finish(m)
			}
		}
		settle()
		var rec question.Record
		var doc *crdt.Doc
		ctx, cancel := requestCtx()
		defer cancel()
		err := ts.srv.Do(ctx, run.doc, func(a *question.Authority) error {
			var ok bool
			if rec, ok = a.Record(run.id); !ok {
				return errors.New("the decision is gone")
			}
			saved, err := a.Save(run.id)
			if err == nil {
				doc, err = crdt.Load(saved, nil, crdt.Options{})
			}
			return err
		})
		if err != nil {
			rt.Fatal(err)
		}
		for _, c := range run.checks {
			if err := c(rec, doc); err != nil {
				rt.Fatalf("%v\nrecord: status %s, generation %d, answer %+v, %d in the history", err, rec.Status, rec.Generation, rec.Answer, len(rec.History))
			}
		}
	})
	var desc []string
	for k, n := range cuts {
		desc = append(desc, fmt.Sprintf("%s: %d", cutNames[k], n))
	}
	t.Logf("requests by cut: %s", strings.Join(desc, ", "))
}

// TestEditAcceptedBeforeASaveIsReportedAccepted: Ana's edit is committed
// but her connection drops before the reply; Ben saves the decision with
// her words in it; Ana's client reconnects and sends the edit again. Her
// Flush reports it accepted, as it was, not refused as resolved.
func TestEditAcceptedBeforeASaveIsReportedAccepted(t *testing.T) {
	ts := startServer(t, "")
	d := &cutDialer{}
	ana := join(t, ts.url, "plan-1", "ana", wire.Binary, func(o *replica.Options) { o.Dialer = d.dial })
	ben := join(t, ts.url, "plan-1", "ben", wire.Binary, nil)
	id := create(t, ben, matrixCard("lost-reply", 2, 1, false, true))
	hasReplica(t, ana, id)
	if err := ben.Choose(id, "q1", "o0", true); err != nil {
		t.Fatal(err)
	}
	if err := ben.Flush(testCtx(t, 10*time.Second), id); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "Ana to see Ben's choice", func() bool {
		dr, _, _ := ana.Draft(id)
		return len(dr.Questions["q1"].Choices) == 1
	})

	gate := make(chan struct{})
	d.hold(gate)
	d.cut.Store(cutBeforeReply)
	if err := ana.SetText(id, "note", "Email links need no new device."); err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- ana.Flush(testCtx(t, 30*time.Second), id) }()
	testutil.Eventually(t, "the reply to Ana's edit to be lost", func() bool { return d.cuts.Load() == 1 })

	testutil.Eventually(t, "Ben to see Ana's words", func() bool {
		dr, _, _ := ben.Draft(id)
		return dr.Questions["note"].Text == "Email links need no new device."
	})
	res, err := ben.Submit(testCtx(t, 10*time.Second), id)
	if err != nil || !res[0].OK {
		t.Fatalf("Ben's save: %+v %v", res, err)
	}
	if got := res[0].Record.Answer.Answers; got[1].Text != "Email links need no new device." {
		t.Fatalf("the saved answer lacks Ana's words: %+v", got)
	}

	close(gate)
	if err := <-flushed; err != nil {
		t.Fatalf("Ana's accepted edit was reported as %v", err)
	}
}

// TestSaveClaimsTheRevisionShownWhenCalled: Ana saves while her
// connection is down with an edit of hers not yet sent; Ben changes the
// draft meanwhile. When Ana's client reconnects it receives Ben's change
// before her edit's reply, but her save claims what she saw when she
// saved, so it is refused as stale rather than saving Ben's change she
// never saw.
func TestSaveClaimsTheRevisionShownWhenCalled(t *testing.T) {
	ts := startServer(t, "")
	d := &cutDialer{}
	ana := join(t, ts.url, "plan-1", "ana", wire.Binary, func(o *replica.Options) { o.Dialer = d.dial })
	ben := join(t, ts.url, "plan-1", "ben", wire.Binary, nil)
	id := create(t, ben, matrixCard("shown", 2, 1, false, true))
	hasReplica(t, ana, id)

	gate := make(chan struct{})
	d.hold(gate)
	d.cut.Store(cutBeforeRead)
	if err := ana.Choose(id, "q1", "o0", true); err != nil {
		t.Fatal(err)
	}
	if err := ana.SetText(id, "note", "Passkeys."); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "Ana's connection to be cut", func() bool { return d.cuts.Load() == 1 })
	_, shown, err := ana.Draft(id)
	if err != nil {
		t.Fatal(err)
	}
	type saved struct {
		res []wire.SubmitResult
		err error
	}
	done := make(chan saved, 1)
	go func() {
		res, err := ana.Submit(testCtx(t, 30*time.Second), id)
		done <- saved{res, err}
	}()

	if err := ben.SetText(id, "note", "Email links."); err != nil {
		t.Fatal(err)
	}
	if err := ben.Flush(testCtx(t, 10*time.Second), id); err != nil {
		t.Fatal(err)
	}
	close(gate)
	got := <-done
	if got.err != nil {
		t.Fatalf("Ana's save: %v", got.err)
	}
	if got.res[0].OK || got.res[0].Reason != question.Stale {
		rec, _ := ana.Record(id)
		t.Fatalf("Ana's save, shown %s, was %+v (answer %+v); want refused as stale", shown, got.res[0], rec.Answer)
	}
}

// TestResentWhyLeavesANewerWhy: Ana's why is committed but her reply is
// lost; Ben, who sees it, sets his own; Ana's client reconnects and sends
// her why again. It must not overwrite Ben's: it is refused as stale and
// both members show Ben's why.
func TestResentWhyLeavesANewerWhy(t *testing.T) {
	ts := startServer(t, "")
	d := &cutDialer{}
	ana := join(t, ts.url, "plan-1", "ana", wire.Binary, func(o *replica.Options) { o.Dialer = d.dial })
	ben := join(t, ts.url, "plan-1", "ben", wire.Binary, nil)
	id := create(t, ben, matrixCard("why", 2, 1, false, false))
	hasReplica(t, ana, id)
	if err := ben.Choose(id, "q1", "o0", true); err != nil {
		t.Fatal(err)
	}
	if res, err := ben.Submit(testCtx(t, 10*time.Second), id); err != nil || !res[0].OK {
		t.Fatalf("Ben's save: %+v %v", res, err)
	}
	testutil.Eventually(t, "Ana to see the saved answer", func() bool {
		rec, _ := ana.Record(id)
		return rec.Status == question.Settled
	})

	gate := make(chan struct{})
	d.hold(gate)
	d.cut.Store(cutBeforeReply)
	set := make(chan error, 1)
	go func() {
		_, err := ana.SetWhy(testCtx(t, 30*time.Second), id, "It is the cheapest.")
		set <- err
	}()
	testutil.Eventually(t, "the reply to Ana's why to be lost", func() bool { return d.cuts.Load() == 1 })
	testutil.Eventually(t, "Ben to see Ana's why", func() bool {
		rec, _ := ben.Record(id)
		return rec.Why == "It is the cheapest."
	})
	if _, err := ben.SetWhy(testCtx(t, 10*time.Second), id, "Phones need it."); err != nil {
		t.Fatalf("Ben's why: %v", err)
	}
	close(gate)
	if err := <-set; !errors.Is(err, question.ErrStale) {
		t.Fatalf("Ana's resent why was reported %v; want refused as stale", err)
	}
	for _, m := range []*replica.Client{ana, ben} {
		testutil.Eventually(t, "Ben's why to stay", func() bool {
			rec, _ := m.Record(id)
			return rec.Why == "Phones need it." && rec.WhyBy == "ben"
		})
	}
}
