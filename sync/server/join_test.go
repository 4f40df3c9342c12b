package server_test

// Joining a large document over real sockets: the join is paced by the
// connection's own drain, so a reader that keeps reading gets every
// decision on its first connection, while one that stops reading is
// still dropped as slow.

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// bigDocument creates n small choice decisions in doc through Server.Do,
// ten per Create, in one group, and returns their ids in creation order.
func bigDocument(t testing.TB, srv *server.Server, doc string, n int) []string {
	t.Helper()
	planner := question.Member{Login: "planner", Write: true}
	var ids []string
	err := srv.Do(testCtx(t, 2*time.Minute), doc, func(a *question.Authority) error {
		for start := 0; start < n; start += 10 {
			var reqs []question.CreateRequest
			for i := start; i < min(n, start+10); i++ {
				card := matrixCard("big-"+strconv.Itoa(i), 3, 2, false, false)
				reqs = append(reqs, question.CreateRequest{Key: card.Key, Origin: question.FromPlanner, Definition: card.Definition})
			}
			out, err := a.Create(context.Background(), planner, reqs)
			if err != nil {
				return err
			}
			for _, o := range out {
				ids = append(ids, o.Record.ID)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// rawEditor is a writer on a raw socket: it edits one decision, reading
// (and discarding) everything else the server sends it.
type rawEditor struct {
	ws      *websocket.Conn
	id      string
	doc     *crdt.Doc
	replies chan *wire.Reply
}

func newRawEditor(t *testing.T, ts *testServer, doc, login, id string) *rawEditor {
	t.Helper()
	var saved []byte
	if err := ts.srv.Do(testCtx(t, time.Minute), doc, func(a *question.Authority) (err error) {
		saved, err = a.Save(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	d, err := crdt.Load(saved, nil, crdt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws, _, err := websocket.DefaultDialer.Dial(docURL(ts.url, doc, login), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	e := &rawEditor{ws: ws, id: id, doc: d, replies: make(chan *wire.Reply, 16)}
	hello, _ := wire.Encode(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version,
		Have: map[string][]string{id: hexHeads(d.Heads())}}, wire.Binary)
	if err := ws.WriteMessage(websocket.BinaryMessage, hello); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(e.replies)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if m, err := wire.DecodeServerFrame(data, wire.Binary); err == nil {
				if r, ok := m.(*wire.Reply); ok {
					e.replies <- r
				}
			}
		}
	}()
	return e
}

// run edits until stop closes, one edit in flight at a time; it returns
// the number of edits accepted.
func (e *rawEditor) run(stop <-chan struct{}) (int, error) {
	vals := []marks.Mark{marks.Yes, marks.Partly, marks.No}
	for n := 0; ; n++ {
		select {
		case <-stop:
			return n, nil
		default:
		}
		before := e.doc.Heads()
		// Six cells, each set to a value other than its last one.
		if err := e.doc.SetMark("q1", "o"+strconv.Itoa(n%3), "c"+strconv.Itoa(n/3%2), vals[n/6%len(vals)]); err != nil {
			return n, err
		}
		ch, err := e.doc.ChangesSince(before)
		if err != nil {
			return n, err
		}
		rid := "e" + strconv.Itoa(n)
		b, err := wire.Encode(&wire.Edit{Header: wire.Header{Kind: wire.KindEdit, RID: rid}, ID: e.id, Changes: ch}, wire.Binary)
		if err != nil {
			return n, err
		}
		if err := e.ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
			return n, err
		}
		select {
		case r, ok := <-e.replies:
			if !ok {
				return n, fmt.Errorf("connection closed awaiting edit %d", n)
			}
			if r.RID != rid || !r.OK {
				return n, fmt.Errorf("edit %d: %+v", n, r)
			}
		case <-time.After(30 * time.Second):
			return n, fmt.Errorf("no reply to edit %d", n)
		}
	}
}

// freshJoin dials doc as a new replica with no local state, waits until
// it holds every decision of ids, and reports how many times it dialled.
func freshJoin(t *testing.T, ts *testServer, doc string, ids []string) (*replica.Client, int, time.Duration) {
	t.Helper()
	var dials atomic.Int32
	start := time.Now()
	ctx := testCtx(t, 2*time.Minute)
	c, err := replica.Dial(ctx, docURL(ts.url, doc, "nina"), replica.Options{
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, EventBuffer: 16,
		Dialer: func(ctx context.Context, u string, h http.Header) (replica.Conn, error) {
			dials.Add(1)
			ws, _, err := websocket.DefaultDialer.DialContext(ctx, u, h)
			if err != nil {
				return nil, err
			}
			return ws, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	testutil.EventuallyWithin(t, 2*time.Minute, "every decision to arrive", func() (bool, string) {
		for ; next < len(ids); next++ {
			if _, _, err := c.Accepted(ids[next]); err != nil {
				return false, ""
			}
		}
		return true, ""
	})
	return c, int(dials.Load()), time.Since(start)
}

// rawJoin joins doc on a raw socket as a fresh peer and reads until every
// decision of ids has arrived. It holds the documents of the decisions in
// watch, applying the changes broadcast to them, and fails on a
// question:changes frame for a decision whose document it has not
// received: the order the protocol promises.
func rawJoin(t testing.TB, ts *testServer, doc string, ids []string, watch []string) (*rawJoiner, time.Duration) {
	t.Helper()
	start := time.Now()
	ws, _, err := websocket.DefaultDialer.Dial(docURL(ts.url, doc, "nina"), nil)
	if err != nil {
		t.Fatal(err)
	}
	j := &rawJoiner{ws: ws, docs: map[string]*crdt.Doc{}, seen: map[string]bool{}, all: make(chan struct{}), failed: make(chan error, 1)}
	for _, id := range watch {
		j.docs[id] = nil
	}
	hello, _ := wire.Encode(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version}, wire.Binary)
	if err := ws.WriteMessage(websocket.BinaryMessage, hello); err != nil {
		t.Fatal(err)
	}
	go j.read(len(ids))
	select {
	case <-j.all:
	case err := <-j.failed:
		t.Fatalf("joining: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("not every decision arrived within 2 minutes")
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, id := range ids {
		if !j.seen[id] {
			t.Fatalf("decision %s never arrived", id)
		}
	}
	return j, time.Since(start)
}

type rawJoiner struct {
	ws     *websocket.Conn
	mu     sync.Mutex
	docs   map[string]*crdt.Doc // the watched decisions
	seen   map[string]bool
	all    chan struct{}
	failed chan error
}

func (j *rawJoiner) read(n int) {
	fail := func(err error) {
		select {
		case j.failed <- err:
		default:
		}
	}
	for {
		_, data, err := j.ws.ReadMessage()
		if err != nil {
			fail(err)
			return
		}
		m, err := wire.DecodeServerFrame(data, wire.Binary)
		if err != nil {
			fail(err)
			return
		}
		j.mu.Lock()
		switch f := m.(type) {
		case *wire.Doc:
			if _, ok := j.docs[f.ID]; ok {
				if j.docs[f.ID], err = crdt.Load(f.Doc, nil, crdt.Options{}); err != nil {
					fail(err)
				}
			}
			j.arrive(f.ID, n)
		case *wire.Changes:
			if !j.seen[f.ID] {
				fail(fmt.Errorf("changes of %s before its document", f.ID))
			}
			if d := j.docs[f.ID]; d != nil {
				if _, err := d.ApplyChanges(f.Changes); err != nil {
					fail(fmt.Errorf("changes of %s do not apply: %v", f.ID, err))
				}
			}
		}
		j.mu.Unlock()
	}
}

func (j *rawJoiner) arrive(id string, n int) {
	if !j.seen[id] {
		j.seen[id] = true
		if len(j.seen) == n {
			close(j.all)
		}
	}
}

func (j *rawJoiner) heads(id string) crdt.Heads {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.docs[id].Heads()
}

// TestLargeDocumentJoinsInOneConnection: a document of 3,000 decisions is
// joined ten times in a row by a fresh peer, and every time every
// decision arrives on that one connection (no slow-consumer drop), and
// once more by a fresh replica client that never redials; then all the
// same while eight writers edit decisions spread over the document, after
// which the joiners hold every edited decision at the server's heads, and
// no joiner ever received changes for a decision it had not loaded
// (joining never trips the slow-consumer guard).
func TestLargeDocumentJoinsInOneConnection(t *testing.T) {
	if testing.Short() {
		t.Skip("3,000 decisions, 22 joins")
	}
	const n, joins, writers = 3000, 10, 8
	var drops atomic.Int32
	ts := startWith(t, setup{log: func(r slog.Record) {
		if strings.Contains(r.Message, "slow") {
			drops.Add(1)
		}
	}})
	ids := bigDocument(t, ts.srv, "big", n)
	accepted := func(id string) crdt.Heads {
		var h crdt.Heads
		if err := ts.srv.Do(testCtx(t, time.Minute), "big", func(a *question.Authority) (err error) {
			_, h, err = a.Draft(id)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return h
	}

	rounds := func(t *testing.T, watch []string) ([]*rawJoiner, *replica.Client) {
		var js []*rawJoiner
		for i := range joins {
			j, took := rawJoin(t, ts, "big", ids, watch)
			t.Logf("raw join %d: %d decisions in %v", i, n, took.Round(time.Millisecond))
			js = append(js, j)
		}
		c, dials, took := freshJoin(t, ts, "big", ids)
		t.Logf("replica join: %d decisions in %v, %d dial(s)", n, took.Round(time.Millisecond), dials)
		if dials != 1 {
			t.Errorf("the replica dialled %d times", dials)
		}
		return js, c
	}

	t.Run("idle", func(t *testing.T) {
		js, c := rounds(t, nil)
		for _, j := range js {
			j.ws.Close()
		}
		c.Close()
	})

	t.Run("eight writers", func(t *testing.T) {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, writers)
		counts := make([]int, writers)
		edited := make([]string, writers)
		for w := range writers {
			edited[w] = ids[w*n/writers+n/(2*writers)]
			e := newRawEditor(t, ts, "big", "writer"+strconv.Itoa(w), edited[w])
			wg.Add(1)
			go func() {
				defer wg.Done()
				counts[w], errs[w] = e.run(stop)
			}()
		}
		js, c := rounds(t, edited)
		close(stop)
		wg.Wait()
		total := 0
		for w := range writers {
			if errs[w] != nil {
				t.Errorf("writer %d: %v", w, errs[w])
			}
			total += counts[w]
		}
		t.Logf("%d edits accepted during the joins", total)
		if total < writers {
			t.Errorf("only %d edits were accepted while joining", total)
		}
		for _, id := range edited {
			want := accepted(id)
			for i, j := range js {
				testutil.EventuallyWithin(t, 30*time.Second, fmt.Sprintf("raw joiner %d to converge on %s", i, id), func() (bool, string) {
					return j.heads(id).Equal(want), ""
				})
			}
			testutil.EventuallyWithin(t, 30*time.Second, "the replica to converge on "+id, func() (bool, string) {
				acc, _, err := c.Accepted(id)
				return err == nil && acc.Equal(want), ""
			})
		}
		for _, j := range js {
			select {
			case err := <-j.failed:
				t.Errorf("a joiner failed: %v", err)
			default:
			}
			j.ws.Close()
		}
		c.Close()
	})
	if drops.Load() != 0 {
		t.Errorf("the server dropped %d connections as slow", drops.Load())
	}
}

// TestJoinerThatStopsReadingIsDropped: a raw peer sends its hello to the
// 3,000-decision document and never reads; as a writer keeps editing a
// decision of its first join window, its outbox fills and the server
// drops it, while the writer's edits go on being accepted.
func TestJoinerThatStopsReadingIsDropped(t *testing.T) {
	var drops atomic.Int32
	ts := startWith(t, setup{
		tune: func(o *server.Options) { o.Outbox = 16; o.WriteWait = 2 * time.Second },
		wrap: func(l net.Listener) net.Listener { return bufferedListener{l} },
		log: func(r slog.Record) {
			if strings.Contains(r.Message, "slow") {
				drops.Add(1)
			}
		},
	})
	ids := bigDocument(t, ts.srv, "big", 3000)
	// A small receive buffer, so that the silent peer's kernel does not
	// swallow the whole join.
	dialer := websocket.Dialer{NetDial: func(network, addr string) (net.Conn, error) {
		c, err := net.Dial(network, addr)
		if tc, ok := c.(*net.TCPConn); ok && err == nil {
			tc.SetReadBuffer(4 << 10)
		}
		return c, err
	}}
	ws, _, err := dialer.Dial(docURL(ts.url, "big", "sid"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	hello, _ := wire.Encode(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version}, wire.Binary)
	if err := ws.WriteMessage(websocket.BinaryMessage, hello); err != nil {
		t.Fatal(err)
	}
	e := newRawEditor(t, ts, "big", "writer", ids[0])
	stop := make(chan struct{})
	done := make(chan error, 1)
	var edits int
	go func() {
		var err error
		edits, err = e.run(stop)
		done <- err
	}()
	testutil.EventuallyWithin(t, time.Minute, "the silent joiner to be dropped", func() (bool, string) { return ts.srv.Stats().SlowDrops > 0, "" })
	if drops.Load() == 0 {
		t.Error("the drop was not logged")
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("writer: %v", err)
	}
	t.Logf("dropped after %d edits", edits)
	// The dropped joiner's socket ends: reading what was buffered, then
	// the close.
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the dropped joiner's connection stayed open")
			}
			break
		}
	}
}
