package server_test

// Integration tests: the real server on 127.0.0.1, real WebSockets, the
// replica client, rogue raw peers, and the bbolt store read back from
// disk. They poll with deadlines; nothing sleeps.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/crdt/crdttest"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// setup adjusts a server started by startWith.
type setup struct {
	path string                          // bbolt file; "" is a fresh one
	tune func(*server.Options)           // adjusts the options
	wrap func(net.Listener) net.Listener // wraps the 127.0.0.1 listener
	log  func(r slog.Record)             // receives the server's log records
}

// startWith starts a server on a bbolt file, like startServer, with the
// default outbox unless su.tune says otherwise. It stops (gracefully,
// checking the file) at the end of the test.
func startWith(t testing.TB, su setup) *testServer {
	t.Helper()
	if su.path == "" {
		su.path = t.TempDir() + "/accord.db"
	}
	st, err := boltstore.Open(su.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := server.Options{Store: st, Authorize: authorize}
	if su.log != nil {
		opts.Logger = slog.New(recordHandler(su.log))
	}
	if su.tune != nil {
		su.tune(&opts)
	}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv)
	if su.wrap != nil {
		hs.Listener = su.wrap(hs.Listener)
	}
	hs.Start()
	ts := &testServer{t: t, url: "ws" + strings.TrimPrefix(hs.URL, "http"), srv: srv, hs: hs, path: su.path, store: st}
	t.Cleanup(ts.stop)
	return ts
}

// recordHandler is a slog.Handler handing every record to a function.
type recordHandler func(r slog.Record)

func (h recordHandler) Enabled(context.Context, slog.Level) bool      { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error { h(r); return nil }
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h recordHandler) WithGroup(string) slog.Handler                 { return h }

// docURL is the WebSocket URL of a document for a member.
func docURL(base, doc, member string) string {
	return base + "/?" + url.Values{"doc": {doc}, "member": {member}}.Encode()
}

// join dials the document with the replica client as member and closes the
// client at the end of the test.
func join(t *testing.T, base, doc, member string, f wire.Format, tune func(*replica.Options)) *replica.Client {
	t.Helper()
	opts := replica.Options{Format: f, MinBackoff: 5 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
	if tune != nil {
		tune(&opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := replica.Dial(ctx, docURL(base, doc, member), opts)
	if err != nil {
		t.Fatalf("dial as %s: %v", member, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// poll calls cond every few milliseconds until it holds, ctx ends or
// timeout passes. Safe to call from any goroutine.
func poll(ctx context.Context, timeout time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(3 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// matrixCard is a choice decision whose question q1 has a matrix of
// options o0… by criteria c0…, and, if withNote, a written question
// "note".
func matrixCard(key string, options, criteria int, multiple, withNote bool) wire.Card {
	q := question.Question{ID: "q1", Text: "Which storage engine?", Multiple: multiple}
	for i := range options {
		q.Options = append(q.Options, question.Option{ID: "o" + strconv.Itoa(i), Label: "Option " + strconv.Itoa(i)})
	}
	for i := range criteria {
		q.Criteria = append(q.Criteria, question.Criterion{ID: "c" + strconv.Itoa(i), Label: "Criterion " + strconv.Itoa(i)})
	}
	def := question.Definition{Questions: []question.Question{q}}
	if withNote {
		def.Questions = append(def.Questions, question.Question{ID: "note", Text: "Anything to add?", Response: question.Text, Options: []question.Option{}})
	}
	return wire.Card{Key: key, Origin: question.FromPerson, Definition: def}
}

func create(t *testing.T, c *replica.Client, card wire.Card) string {
	t.Helper()
	recs, err := c.Create(testCtx(t, 10*time.Second), card)
	if err != nil {
		t.Fatalf("create %s: %v", card.Key, err)
	}
	return recs[0].ID
}

// hasReplica waits until the client holds the decision's document.
func hasReplica(t *testing.T, c *replica.Client, id string) {
	t.Helper()
	testutil.Eventually(t, "the decision's document to arrive", func() bool {
		_, _, err := c.Draft(id)
		return err == nil
	})
}

func draftOf(t *testing.T, c *replica.Client, id string) (crdt.Draft, crdt.Heads) {
	t.Helper()
	d, h, err := c.Draft(id)
	if err != nil {
		t.Fatalf("draft of %s: %v", id, err)
	}
	return d, h
}

// converged reports whether every client displays want at heads and knows
// those heads are accepted.
func converged(clients []*replica.Client, id string, want crdt.Draft, heads crdt.Heads) bool {
	for _, c := range clients {
		d, h, err := c.Draft(id)
		if err != nil || !h.Equal(heads) || !d.Equal(want) {
			return false
		}
		acc, unsent, err := c.Accepted(id)
		if err != nil || unsent || !acc.Equal(heads) {
			return false
		}
	}
	return true
}

// stored reads a document's decisions back from a closed bbolt file,
// after checking the file's consistency.
func stored(t *testing.T, path, doc string) *question.Authority {
	t.Helper()
	st, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatalf("reopen the store: %v", err)
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		t.Fatalf("bbolt check: %v", err)
	}
	a, err := question.NewAuthority(context.Background(), question.Options{Store: st, Doc: doc})
	if err != nil {
		t.Fatalf("load %s from the store: %v", doc, err)
	}
	return a
}

// cellMark is one SetMark a writer made.
type cellMark struct {
	cell string
	mark marks.Mark // marks.Cleared clears
}

// markLog is one writer's history of marks on cells that no one else
// writes, and how many of them the server has acknowledged (a Flush
// returned nil after they were made). Safe for concurrent use.
type markLog struct {
	mu     sync.Mutex
	writes []cellMark
	acked  int
}

func (l *markLog) wrote(cell string, m marks.Mark) {
	l.mu.Lock()
	l.writes = append(l.writes, cellMark{cell, m})
	l.mu.Unlock()
}

// made is how many writes were made so far.
func (l *markLog) made() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.writes)
}

// ack records that the first n writes are acknowledged.
func (l *markLog) ack(n int) {
	l.mu.Lock()
	l.acked = max(l.acked, n)
	l.mu.Unlock()
}

func (l *markLog) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked
}

func (l *markLog) snapshot() ([]cellMark, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.writes), l.acked
}

// check says whether a matrix holds every acknowledged write: each cell
// holds the last acknowledged write to it, or a later write (one that may
// have been accepted without its acknowledgement arriving). A cell never
// written before an acknowledgement may also be unmarked.
func (l *markLog) check(got map[string]marks.Mark) error {
	writes, acked := l.snapshot()
	cells := map[string]bool{}
	for _, w := range writes {
		cells[w.cell] = true
	}
	for cell := range cells {
		last := -1
		for i := range acked {
			if writes[i].cell == cell {
				last = i
			}
		}
		allowed := map[marks.Mark]bool{}
		if last < 0 {
			allowed[marks.Cleared] = true
		}
		for j := max(last, 0); j < len(writes); j++ {
			if writes[j].cell == cell {
				allowed[writes[j].mark] = true
			}
		}
		if !allowed[got[cell]] {
			return fmt.Errorf("cell %s holds %q; its last acknowledged write (#%d of %d acknowledged) allows only %v",
				cell, got[cell], last, acked, slices.Sorted(maps.Keys(allowed)))
		}
	}
	return nil
}

var anyMark = [...]marks.Mark{marks.Yes, marks.Partly, marks.No, marks.Cleared}

// TestSixteenClientsConvergeOnOneMatrix: 16 replicas, half binary and half
// JSON, edit one 10×5 matrix at once (marks, clears, choices); after they
// flush, every replica and a late 17th client display the same draft at
// the server's heads, which are also the heads committed to bbolt (DC2,
// DC3, DC6, M2).
func TestSixteenClientsConvergeOnOneMatrix(t *testing.T) {
	ts := startWith(t, setup{})
	ctx := testCtx(t, 40*time.Second)
	const n, ops = 16, 40
	clients := make([]*replica.Client, n)
	for i := range clients {
		f := wire.Binary
		if i%2 == 1 {
			f = wire.Text
		}
		clients[i] = join(t, ts.url, "plan-m", fmt.Sprintf("m%02d", i), f, nil)
	}
	id := create(t, clients[0], matrixCard("matrix", 10, 5, true, false))
	for _, c := range clients {
		hasReplica(t, c, id)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	start := make(chan struct{})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			<-start
			for k := range ops {
				opt := "o" + strconv.Itoa(rng.IntN(10))
				var err error
				switch r := rng.IntN(10); {
				case r < 6:
					err = c.SetMark(id, "q1", opt, "c"+strconv.Itoa(rng.IntN(5)), marks.All[rng.IntN(3)])
				case r < 7:
					err = c.SetMark(id, "q1", opt, "c"+strconv.Itoa(rng.IntN(5)), marks.Cleared)
				default:
					err = c.Choose(id, "q1", opt, rng.IntN(3) > 0)
				}
				if err == nil && k%10 == 9 {
					err = c.Flush(ctx, id) // some clients wait for acceptance midway
				}
				if err != nil {
					errs <- fmt.Errorf("client %d, op %d: %w", i, k, err)
					return
				}
			}
			if err := c.Flush(ctx, id); err != nil {
				errs <- fmt.Errorf("client %d: flush: %w", i, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	late := join(t, ts.url, "plan-m", "late", wire.Text, nil)
	hasReplica(t, late, id)
	want, heads := draftOf(t, late, id)
	if len(want.Questions["q1"].Marks) == 0 {
		t.Fatalf("the late client sees no marks: %+v", want)
	}
	all := append(slices.Clone(clients), late)
	if err := poll(ctx, 15*time.Second, func() bool { return converged(all, id, want, heads) }); err != nil {
		for i, c := range all {
			d, h, _ := c.Draft(id)
			t.Logf("client %d: heads %v equal %v", i, h, d.Equal(want))
		}
		t.Fatalf("the replicas did not converge to the server's draft at %v", heads)
	}

	ts.stop()
	a := stored(t, ts.path, "plan-m")
	got, storedHeads, err := a.Draft(id)
	if err != nil {
		t.Fatal(err)
	}
	if !storedHeads.Equal(heads) || !got.Equal(want) {
		t.Fatalf("committed draft at %v differs from the replicas' at %v", storedHeads, heads)
	}
}

// TestConcurrentDoubleSave: two members display the same accepted draft and
// save it at the same moment; exactly one settles, the other is refused
// (L10, DC5). The second save's reason is logged.
func TestConcurrentDoubleSave(t *testing.T) {
	ts := startWith(t, setup{})
	ctx := testCtx(t, 30*time.Second)
	ana := join(t, ts.url, "plan-s", "ana", wire.Binary, nil)
	ben := join(t, ts.url, "plan-s", "ben", wire.Text, nil)
	id := create(t, ana, matrixCard("double", 3, 2, false, false))
	hasReplica(t, ana, id)
	hasReplica(t, ben, id)
	reasons := map[question.Reason]int{}
	const rounds = 5
	for round := range rounds {
		opt := "o" + strconv.Itoa(round%3)
		if err := ana.Choose(id, "q1", opt, true); err != nil {
			t.Fatal(err)
		}
		if err := ana.SetMark(id, "q1", opt, "c0", marks.Yes); err != nil {
			t.Fatal(err)
		}
		if err := ana.Flush(ctx, id); err != nil {
			t.Fatal(err)
		}
		want, heads := draftOf(t, ana, id)
		testutil.Eventually(t, "both to display the same accepted draft", func() bool {
			return converged([]*replica.Client{ana, ben}, id, want, heads)
		})

		type outcome struct {
			who string
			res []wire.SubmitResult
			err error
		}
		out := make(chan outcome, 2)
		start := make(chan struct{})
		for _, c := range []*replica.Client{ana, ben} {
			go func() {
				who, _ := c.Member()
				<-start
				res, err := c.Submit(ctx, id)
				out <- outcome{who, res, err}
			}()
		}
		close(start)
		oks := 0
		var settledBy string
		for range 2 {
			o := <-out
			if o.err != nil || len(o.res) != 1 {
				t.Fatalf("round %d: %s's save failed as a request: %+v %v", round, o.who, o.res, o.err)
			}
			r := o.res[0]
			switch {
			case r.OK:
				oks++
				settledBy = o.who
				if r.Record == nil || r.Record.Status != question.Settled || r.Record.Answer.By != o.who {
					t.Fatalf("round %d: accepted save without its settled record: %+v", round, r.Record)
				}
			case r.Reason == question.Stale: // the other displayed the decision as open
				reasons[r.Reason]++
				t.Logf("round %d: %s's concurrent save refused: %s (%s)", round, o.who, r.Reason, r.Message)
			default:
				t.Fatalf("round %d: %s's save refused as %q: %s", round, o.who, r.Reason, r.Message)
			}
		}
		if oks != 1 {
			t.Fatalf("round %d: %d saves settled, want exactly 1", round, oks)
		}
		testutil.Eventually(t, "both to hold the settled record", func() bool {
			for _, c := range []*replica.Client{ana, ben} {
				rec, ok := c.Record(id)
				if !ok || rec.Status != question.Settled || rec.Answer == nil || rec.Answer.By != settledBy {
					return false
				}
			}
			return true
		})
		rec, err := ben.Reopen(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "both to hold the reopened draft", func() bool {
			for _, c := range []*replica.Client{ana, ben} {
				d, _, err := c.Draft(id)
				if r, _ := c.Record(id); err != nil || d.Generation != rec.Generation || r.Status != question.Open {
					return false
				}
			}
			return true
		})
	}
	t.Logf("the concurrent second save was refused as: %v", reasons)
}

// TestRogueClientsCannotDisturbOthers: rogue peers send a mark on a cell
// the definition does not describe, a value that is not a mark, a crafted
// sync message, frames that do not decode, a second hello and an
// oversized frame. Each is refused (the oversized one closes only its own
// connection) while a well-behaved member's edits keep being accepted and
// broadcast (M2, DC3).
func TestRogueClientsCannotDisturbOthers(t *testing.T) {
	ts := startServer(t, "")
	ctx := testCtx(t, 40*time.Second)
	ana := join(t, ts.url, "plan-1", "ana", wire.Binary, nil)
	ben := join(t, ts.url, "plan-1", "ben", wire.Text, nil)
	id := create(t, ana, matrixCard("rogue", 10, 5, true, false))
	hasReplica(t, ana, id)
	hasReplica(t, ben, id)

	// ana edits without pause; ben counts the broadcasts he receives.
	var acked, seen atomic.Int64
	go func() {
		for ev := range ben.Events() {
			if ev.Kind == wire.KindChanges && ev.ID == id && ev.By == "ana" {
				seen.Add(1)
			}
		}
	}()
	stop := make(chan struct{})
	loopErr := make(chan error, 1)
	go func() {
		for k := 0; ; k++ {
			select {
			case <-stop:
				loopErr <- nil
				return
			default:
			}
			cell := "c" + strconv.Itoa(k%5)
			if err := ana.SetMark(id, "q1", "o"+strconv.Itoa(k/5%10), cell, marks.All[k%3]); err != nil {
				loopErr <- err
				return
			}
			if err := ana.Flush(ctx, id); err != nil {
				loopErr <- fmt.Errorf("edit %d: %w", k, err)
				return
			}
			acked.Add(1)
		}
	}()
	carriesOn := func(after string) {
		t.Helper()
		a, s := acked.Load(), seen.Load()
		testutil.Eventually(t, "ana's edits to be accepted and broadcast "+after, func() bool {
			return acked.Load() >= a+3 && seen.Load() >= s+3
		})
	}
	carriesOn("before any rogue frame")

	mallory := dial(t, ts, "mallory", wire.Binary)
	for {
		if d, ok := mallory.expect(wire.KindDoc).(*wire.Doc); ok && d.ID == id {
			break
		}
	}
	refusedWithReset := func(what string, r *wire.Reply) {
		t.Helper()
		if r.OK || r.Reason != question.Invalid || !r.Reset || len(r.Doc) == 0 {
			t.Fatalf("%s: got ok=%v reason=%q reset=%v doc=%d bytes", what, r.OK, r.Reason, r.Reset, len(r.Doc))
		}
		if _, err := crdt.Load(r.Doc, nil, crdt.Options{}); err != nil {
			t.Fatalf("%s: the accepted document in the refusal does not load: %v", what, err)
		}
	}

	// A mark on a cell the definition does not describe.
	raw, err := crdttest.RawChange(mallory.docs[id].Save(), []any{"drafts", "1", "q1", "marks", "o99/c0"}, "yes")
	if err != nil {
		t.Fatal(err)
	}
	e := &wire.Edit{Header: wire.Header{Kind: wire.KindEdit}, ID: id, Changes: raw}
	refusedWithReset("a mark on an undefined cell", mallory.request(e, &e.Header))
	carriesOn("after a mark on an undefined cell")

	// A mark that is not yes, partly, no or null.
	raw, err = crdttest.RawChange(mallory.docs[id].Save(), []any{"drafts", "1", "q1", "marks", "o0/c0"}, "maybe")
	if err != nil {
		t.Fatal(err)
	}
	e = &wire.Edit{Header: wire.Header{Kind: wire.KindEdit}, ID: id, Changes: raw}
	refusedWithReset("a bad mark value", mallory.request(e, &e.Header))
	carriesOn("after a bad mark value")

	// A sync message whose Bloom filter declares entries with zero bits.
	mallory.send(&wire.Sync{Header: wire.Header{Kind: wire.KindSync, RID: "s1"}, ID: id, Msg: []byte{0x42, 0, 0, 1, 0, 3, 1, 0, 7, 0}})
	if e := mallory.expect(wire.KindError).(*wire.Error); e.Reason != "invalid" || e.RID != "s1" {
		t.Fatalf("crafted sync message: %+v", e)
	}
	carriesOn("after a crafted sync message")

	// Frames that do not decode: bytes that are no msgpack value, a
	// request whose header reads but whose body breaks the checks, and the
	// same in the other encoding than the hello's; answers come in the
	// hello's encoding.
	if err := mallory.ws.WriteMessage(websocket.BinaryMessage, []byte{0xc1, 0xff, 0x00}); err != nil {
		t.Fatal(err)
	}
	if e := mallory.expect(wire.KindError).(*wire.Error); e.Reason != "invalid" {
		t.Fatalf("undecodable frame: %+v", e)
	}
	for i, frame := range []struct {
		typ  int
		data []byte
	}{
		{websocket.TextMessage, []byte(`{"kind":"question:edit","rid":"g1","id":"` + id + `","changes":""}`)},
		{websocket.BinaryMessage, mustEncode(t, &wire.Edit{Header: wire.Header{Kind: wire.KindEdit, RID: "g2"}, ID: id})},
	} {
		if err := mallory.ws.WriteMessage(frame.typ, frame.data); err != nil {
			t.Fatal(err)
		}
		want := "g" + strconv.Itoa(i+1)
		for {
			if r, ok := mallory.next().(*wire.Reply); ok {
				if r.RID != want || r.OK || r.Reason != question.Invalid {
					t.Fatalf("malformed request %s: %+v", want, r)
				}
				break
			}
		}
	}
	if err := mallory.ws.WriteMessage(websocket.TextMessage, []byte(`{"kind":"question:edit","rid":`)); err != nil {
		t.Fatal(err)
	}
	if e := mallory.expect(wire.KindError).(*wire.Error); e.Reason != "invalid" {
		t.Fatalf("truncated JSON: %+v", e)
	}
	carriesOn("after frames that do not decode")

	// A second hello.
	mallory.send(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version})
	if e := mallory.expect(wire.KindError).(*wire.Error); e.Reason != "invalid" {
		t.Fatalf("second hello: %+v", e)
	}
	carriesOn("after a second hello")

	// The rogue's connection survived its refusals: a proper edit of its
	// own is accepted.
	if r := mallory.edit(id, func(d *crdt.Doc) error { return d.Choose("q1", "o9", true) }); !r.OK {
		t.Fatalf("mallory's proper edit after the refusals: %s %s", r.Reason, r.Message)
	}

	// An oversized frame closes the rogue's connection, and only it.
	oscar := dial(t, ts, "oscar", wire.Binary)
	go oscar.ws.WriteMessage(websocket.BinaryMessage, make([]byte, wire.MaxFrameBytes+1))
	testutil.Eventually(t, "the oversized frame's connection to close", func() bool {
		for {
			select {
			case _, open := <-oscar.frames:
				if !open {
					return true
				}
				continue
			default:
			}
			return false
		}
	})
	carriesOn("after an oversized frame")

	close(stop)
	if err := <-loopErr; err != nil {
		t.Fatalf("ana's edits: %v", err)
	}
	want, heads := draftOf(t, ana, id)
	testutil.Eventually(t, "ben to converge on ana's accepted draft", func() bool {
		return converged([]*replica.Client{ana, ben}, id, want, heads)
	})
	if got := want.Questions["q1"].Marks; len(got) == 0 || got["o99/c0"] != "" {
		t.Fatalf("accepted marks %v", got)
	}
}

// mustEncode encodes a binary frame without the checks a receiver makes.
func mustEncode(t *testing.T, m wire.Message) []byte {
	t.Helper()
	b, err := wire.Encode(m, wire.Binary)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReaderReceivesButCannotWrite: a reader gets drafts and broadcasts;
// every write is refused as forbidden, and a reader's replica holding an
// edit made before the server said it only reads returns to the accepted
// draft (L2, M2).
func TestReaderReceivesButCannotWrite(t *testing.T) {
	ts := startServer(t, "")
	ctx := testCtx(t, 30*time.Second)
	ana := join(t, ts.url, "plan-1", "ana", wire.Binary, nil)
	id := create(t, ana, matrixCard("read", 4, 3, false, false))
	hasReplica(t, ana, id)
	rita := join(t, ts.url, "plan-1", "rita", wire.Text, nil)
	hasReplica(t, rita, id)
	if login, write := rita.Member(); login != "rita" || write {
		t.Fatalf("member %q write=%v", login, write)
	}
	if err := ana.SetMark(id, "q1", "o1", "c2", marks.Partly); err != nil {
		t.Fatal(err)
	}
	if err := ana.Flush(ctx, id); err != nil {
		t.Fatal(err)
	}
	want, heads := draftOf(t, ana, id)
	testutil.Eventually(t, "rita to receive ana's edit", func() bool {
		return converged([]*replica.Client{rita}, id, want, heads)
	})

	forbidden := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, question.ErrForbidden) {
			t.Fatalf("%s by a reader: %v, want forbidden", what, err)
		}
	}
	forbidden("a mark", rita.SetMark(id, "q1", "o0", "c0", marks.No))
	_, err := rita.Submit(ctx, id)
	forbidden("a save", err)
	_, _, _, err = rita.AppendCriterion(ctx, id, "q1", "k1", "Latency")
	forbidden("a criterion", err)
	_, _, _, err = rita.AppendOption(ctx, id, "q1", "k2", "Tape")
	forbidden("an option", err)
	_, err = rita.Discard(ctx, id)
	forbidden("a discard", err)
	_, err = rita.Create(ctx, matrixCard("rita's", 2, 1, false, false))
	forbidden("a create", err)
	if d, h := draftOf(t, rita, id); !d.Equal(want) || !h.Equal(heads) {
		t.Fatalf("rita's replica moved: %+v", d)
	}

	// The server refuses a reader's edit sent as a raw frame too.
	raw := dial(t, ts, "rita", wire.Binary)
	for {
		if d, ok := raw.expect(wire.KindDoc).(*wire.Doc); ok && d.ID == id {
			break
		}
	}
	if r := raw.edit(id, func(d *crdt.Doc) error { return d.SetMark("q1", "o3", "c0", marks.Yes) }); r.OK || r.Reason != question.Forbidden {
		t.Fatalf("a reader's raw edit: ok=%v reason=%q", r.OK, r.Reason)
	}

	// A replica that made an edit offline and then connects as a reader
	// (its Dir came from a writer's session): the edit is refused as
	// forbidden and the replica returns to the accepted draft.
	dir := t.TempDir()
	dora := join(t, ts.url, "plan-1", "dora", wire.Binary, func(o *replica.Options) { o.Dir = dir })
	hasReplica(t, dora, id)
	if err := dora.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	dora.Close()
	gate := make(chan struct{})
	offline, err := replica.Dial(ctx, docURL(ts.url, "plan-1", "rita"), replica.Options{
		Dir: dir, Background: true, MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		Dialer: func(ctx context.Context, u string, h http.Header) (replica.Conn, error) {
			ws, err := dialAfter(ctx, gate, u, h)
			if err != nil {
				return nil, err // never a typed nil in the interface
			}
			return ws, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer offline.Close()
	if err := offline.SetMark(id, "q1", "o0", "c0", marks.No); err != nil {
		t.Fatalf("offline edit: %v", err)
	}
	if d, _ := draftOf(t, offline, id); d.Questions["q1"].Marks["o0/c0"] != marks.No {
		t.Fatalf("the offline edit is not displayed: %+v", d)
	}
	close(gate)
	err = offline.Flush(ctx, id)
	var ref *question.Refusal
	if !errors.As(err, &ref) || ref.Reason != question.Forbidden || !ref.Reset {
		t.Fatalf("the reader's offline edit: %v, want a forbidden refusal with reset", err)
	}
	testutil.Eventually(t, "the reader's replica to return to the accepted draft", func() bool {
		return converged([]*replica.Client{offline}, id, want, heads)
	})

	// Broadcasts keep reaching readers: an appended criterion, an edit, a
	// save.
	crit, _, _, err := ana.AppendCriterion(ctx, id, "q1", "k-speed", "Speed")
	if err != nil {
		t.Fatal(err)
	}
	if err := ana.Choose(id, "q1", "o2", true); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "ana's replica to hold the new criterion", func() bool {
		return ana.SetMark(id, "q1", "o2", crit.ID, marks.Yes) == nil
	})
	res, err := ana.Submit(ctx, id)
	if err != nil || !res[0].OK {
		t.Fatalf("save: %+v %v", res, err)
	}
	for _, r := range []*replica.Client{rita, offline} {
		testutil.Eventually(t, "a reader to receive the criterion, the edit and the save", func() bool {
			rec, ok := r.Record(id)
			d, _, err := r.Draft(id)
			return ok && err == nil && len(rec.Definition.Questions[0].Criteria) == 4 &&
				rec.Status == question.Settled && d.Questions["q1"].Marks["o2/"+crit.ID] == marks.Yes
		})
	}
	_, err = rita.Reopen(ctx, id)
	forbidden("a reopen", err)
}

// bigCard is a decision of 50 options with long labels: its creation is
// broadcast as a record and a document of some 20 KiB together.
func bigCard(key string, rng *rand.Rand) wire.Card {
	c := matrixCard(key, 50, 5, false, false)
	label := make([]byte, question.MaxOptionLabel-4)
	for i := range c.Definition.Questions[0].Options {
		for j := range label {
			label[j] = 'a' + byte(rng.IntN(26))
		}
		c.Definition.Questions[0].Options[i].Label = fmt.Sprintf("%02d %s", i, label)
	}
	return c
}

// TestGracefulShutdownKeepsAcknowledgedEdits: members edit while the
// server shuts down; every edit acknowledged before or during Shutdown is
// in the store when it is reopened (L9, L10).
func TestGracefulShutdownKeepsAcknowledgedEdits(t *testing.T) {
	ts := startWith(t, setup{})
	setupCtx := testCtx(t, 30*time.Second)
	const writers = 3
	clients := make([]*replica.Client, writers)
	for i := range clients {
		clients[i] = join(t, ts.url, "plan-g", "w"+strconv.Itoa(i), wire.Format(i%2), nil)
	}
	id := create(t, clients[0], matrixCard("graceful", writers, 5, true, false))
	for _, c := range clients {
		hasReplica(t, c, id)
	}
	logs := make([]*markLog, writers)
	runCtx, stopRun := context.WithCancel(setupCtx)
	defer stopRun()
	var wg sync.WaitGroup
	for i, c := range clients {
		logs[i] = &markLog{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for runCtx.Err() == nil {
				for range 1 + rng.IntN(3) {
					cell, m := "c"+strconv.Itoa(rng.IntN(5)), anyMark[rng.IntN(4)]
					if c.SetMark(id, "q1", "o"+strconv.Itoa(i), cell, m) != nil {
						return // closed
					}
					logs[i].wrote("o"+strconv.Itoa(i)+"/"+cell, m)
				}
				n := logs[i].made()
				if c.Flush(runCtx, id) == nil {
					logs[i].ack(n)
				}
			}
		}()
	}
	testutil.Eventually(t, "every writer to have edits acknowledged", func() bool {
		for _, l := range logs {
			if l.ackedCount() < 10 {
				return false
			}
		}
		return true
	})
	ts.stop() // Shutdown while they edit, then bbolt's check
	stopRun()
	wg.Wait()

	a := stored(t, ts.path, "plan-g")
	d, _, err := a.Draft(id)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for i, l := range logs {
		if err := l.check(d.Questions["q1"].Marks); err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
		total += l.ackedCount()
	}
	t.Logf("%d acknowledged edits checked after shutdown", total)
}

// TestJoinWhileOthersEdit: members keep joining while another edits
// without pause; each gets its welcome first and catches up to the
// accepted draft (the protocol's handshake: welcome, then one frame per
// decision, then broadcasts).
func TestJoinWhileOthersEdit(t *testing.T) {
	ts := startWith(t, setup{})
	ctx := testCtx(t, 30*time.Second)
	ana := join(t, ts.url, "plan-j", "ana", wire.Binary, nil)
	id := create(t, ana, matrixCard("join", 10, 5, true, false))
	hasReplica(t, ana, id)
	stop := make(chan struct{})
	loopErr := make(chan error, 1)
	go func() {
		for k := 0; ; k++ {
			select {
			case <-stop:
				loopErr <- nil
				return
			default:
			}
			if err := ana.SetMark(id, "q1", "o"+strconv.Itoa(k%10), "c"+strconv.Itoa(k/10%5), marks.All[k%3]); err != nil {
				loopErr <- err
				return
			}
			if err := ana.Flush(ctx, id); err != nil {
				loopErr <- err
				return
			}
		}
	}()
	for i := range 20 {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := replica.Dial(dctx, docURL(ts.url, "plan-j", "j"+strconv.Itoa(i)), replica.Options{Format: wire.Format(i % 2)})
		cancel()
		if err != nil {
			close(stop)
			t.Fatalf("join %d while ana edits: %v", i, err)
		}
		hasReplica(t, c, id)
		c.Close()
	}
	close(stop)
	if err := <-loopErr; err != nil {
		t.Fatalf("ana's edits: %v", err)
	}
}
