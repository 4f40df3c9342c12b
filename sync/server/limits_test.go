package server_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// flooder is a raw connection that sends one frame over and over, as fast
// as its socket takes it, and reads everything the server sends.
type flooder struct {
	ws      *websocket.Conn
	replies atomic.Int64
	// ended receives the read side's error: a *websocket.CloseError if
	// the server closed the connection with a close frame.
	ended chan error
	stop  chan struct{}
	wg    sync.WaitGroup
}

// dialFlooder joins doc as member over a raw socket and returns once the
// welcome arrived, with the documents of the join's frames (by decision).
func dialFlooder(t *testing.T, ts *testServer, doc, member string, decisions int) (*flooder, map[string][]byte) {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(docURL(ts.url, doc, member), nil)
	if err != nil {
		t.Fatalf("dial as %s: %v", member, err)
	}
	f := &flooder{ws: ws, ended: make(chan error, 1), stop: make(chan struct{})}
	t.Cleanup(f.close)
	if err := ws.WriteMessage(websocket.BinaryMessage, mustEncode(t, &wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version})); err != nil {
		t.Fatal(err)
	}
	docs := map[string][]byte{}
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for welcomed := false; !welcomed || len(docs) < decisions; {
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("%s's join: %v", member, err)
		}
		m, err := wire.DecodeServerFrame(data, wire.Binary)
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case *wire.Welcome:
			welcomed = true
		case *wire.Doc:
			docs[m.ID] = m.Doc
		}
	}
	ws.SetReadDeadline(time.Time{})
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				f.ended <- err
				return
			}
			if m, err := wire.DecodeServerFrame(data, wire.Binary); err == nil {
				if _, ok := m.(*wire.Reply); ok {
					f.replies.Add(1)
				}
			}
		}
	}()
	return f, docs
}

// flood sends frame n times (n < 0: until the flooder is closed or its
// socket fails).
func (f *flooder) flood(frame []byte, n int) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for i := 0; n < 0 || i < n; i++ {
			select {
			case <-f.stop:
				return
			default:
			}
			if err := f.ws.WriteMessage(websocket.BinaryMessage, frame); err != nil {
				return
			}
		}
	}()
}

// closed returns the read side's error once it ended, nil while it runs.
func (f *flooder) closed() error {
	select {
	case err := <-f.ended:
		f.ended <- err
		return err
	default:
		return nil
	}
}

// close stops the flooder's goroutines and waits for them.
func (f *flooder) close() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	f.ws.Close()
	f.wg.Wait()
}

// closedFor reports whether err is a close frame for a rate limit with
// the reason want.
func closedFor(err error, want string) bool {
	var ce *websocket.CloseError
	return errors.As(err, &ce) && ce.Code == websocket.ClosePolicyViolation && ce.Text == want
}

// TestFloodingClientIsThrottled: a member floods a document with edits
// (one valid edit, sent again as fast as the socket takes it) while 8
// others edit it through the replica client. The flood is throttled (or
// closed with code 1008 if it lasts), the others' edits are all
// acknowledged and reach every member, and the document's inbox never
// holds much more than the flood's burst: the flooding connection is
// simply not read while it waits for its rate.
func TestFloodingClientIsThrottled(t *testing.T) {
	reg := prometheus.NewRegistry()
	const burst, members, edits = 40, 8, 10
	ts := startWith(t, setup{tune: func(o *server.Options) {
		o.Registerer = reg
		o.FrameRate, o.FrameBurst = 20, burst
	}})
	ctx := testCtx(t, 60*time.Second)
	clients := make([]*replica.Client, members)
	for i := range clients {
		clients[i] = join(t, ts.url, "plan-f", "m"+strconv.Itoa(i), wire.Format(i%2), nil)
	}
	id := create(t, clients[0], matrixCard("flood", members, 5, true, false))
	for _, c := range clients {
		hasReplica(t, c, id)
	}

	// The inbox is sampled from the start of the flood to its end.
	var peak atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak.Store(max(peak.Load(), int64(server.InboxLen(ts.srv, "plan-f"))))
			select {
			case <-tick.C:
			case <-stopSampling:
				return
			}
		}
	}()

	f, docs := dialFlooder(t, ts, "plan-f", "flo", 1)
	edit := chooseEdit(t, docs[id], id)
	f.flood(edit, -1)
	testutil.EventuallyWithin(t, 20*time.Second, "the flood to be throttled", func() (bool, string) { return ts.srv.Stats().Throttled > 0, "" })

	// Each member marks the cells of its own row, waiting for each edit's
	// acknowledgement.
	errs := make(chan error, members)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range edits {
				if err := c.SetMark(id, "q1", "o"+strconv.Itoa(i), "c"+strconv.Itoa(k%5), marks.All[(i+k)%3]); err != nil {
					errs <- fmt.Errorf("member %d, edit %d: %w", i, k, err)
					return
				}
				if err := c.Flush(ctx, id); err != nil {
					errs <- fmt.Errorf("member %d, edit %d not acknowledged: %w", i, k, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	end := f.closed()
	replies := f.replies.Load()
	f.close()
	close(stopSampling)
	<-sampled
	// Once its connection ended, nothing counts the flood any more.
	testutil.Eventually(t, "the flooder's connection to end", func() bool { return ts.srv.Stats().Connections == members })

	st := ts.srv.Stats()
	t.Logf("flood: %d replies, %d frames throttled, inbox peak %d, closed: %v", replies, st.Throttled, peak.Load(), end)
	if end != nil && !closedFor(end, "rate limit: more than 20 frames/s") {
		t.Fatalf("the flooder's connection ended with %v, want close code 1008 for its rate", end)
	}
	if st.RateCloses > 1 {
		t.Fatalf("%d connections closed for their rate; only the flooder may be", st.RateCloses)
	}
	if got := gather(t, reg)["accord_sync_throttled_frames_total"]; got != float64(st.Throttled) {
		t.Fatalf("accord_sync_throttled_frames_total %v, Stats.Throttled %d", got, st.Throttled)
	}
	// Each member has at most one edit in flight; the flooder, its burst
	// and what its rate lets in while a group commits.
	if p := peak.Load(); p > burst+2*members+20 {
		t.Fatalf("the document's inbox held %d ops at once, with a flood burst of %d", p, burst)
	}

	late := join(t, ts.url, "plan-f", "late", wire.Text, nil)
	hasReplica(t, late, id)
	want, heads := draftOf(t, late, id)
	all := append(clients, late)
	if err := poll(ctx, 20*time.Second, func() bool { return converged(all, id, want, heads) }); err != nil {
		t.Fatalf("the members did not converge on the server's draft at %v", heads)
	}
	for i := range members {
		for k := edits - 5; k < edits; k++ {
			cell := "o" + strconv.Itoa(i) + "/c" + strconv.Itoa(k%5)
			if got := want.Questions["q1"].Marks[cell]; got != marks.All[(i+k)%3] {
				t.Errorf("cell %s holds %q, want member %d's last mark %q", cell, got, i, marks.All[(i+k)%3])
			}
		}
	}
}

// TestRateLimitCloses: a connection that stays over its frame or byte
// rate for longer than MaxThrottle is closed with close code 1008 and the
// limit as the reason, which its client reads; one over its rate with
// MaxThrottle negative is only slowed, and every frame it sent is
// answered. Another member of the document is not disturbed.
func TestRateLimitCloses(t *testing.T) {
	// Edits of a decision that does not exist: decoded, handed to the
	// document and refused as not_found, one reply each.
	edit := func(size int) []byte {
		return mustEncode(t, &wire.Edit{Header: wire.Header{Kind: wire.KindEdit, RID: "x"}, ID: "missing", Changes: make([]byte, size)})
	}
	for _, tc := range []struct {
		name   string
		tune   func(*server.Options)
		frame  []byte
		n      int    // frames sent; < 0: until the connection ends
		reason string // the close's reason; "": not closed
		limit  string // the rate_closes_total label
	}{
		{
			name: "frames",
			tune: func(o *server.Options) {
				o.FrameRate, o.FrameBurst, o.ByteRate, o.MaxThrottle = 10, 5, -1, 300*time.Millisecond
			},
			frame:  edit(1),
			n:      -1,
			reason: "rate limit: more than 10 frames/s",
			limit:  "frames",
		},
		{
			name: "bytes",
			tune: func(o *server.Options) {
				o.ReadLimit, o.FrameRate, o.ByteRate, o.ByteBurst, o.MaxThrottle = 8192, -1, 4096, 8192, 300*time.Millisecond
			},
			frame:  edit(3000),
			n:      -1,
			reason: "rate limit: more than 4096 bytes/s",
			limit:  "bytes",
		},
		{
			name:  "slowed only",
			tune:  func(o *server.Options) { o.FrameRate, o.FrameBurst, o.MaxThrottle = 20, 5, -1 },
			frame: edit(1),
			n:     30,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			ts := startWith(t, setup{tune: func(o *server.Options) { o.Registerer = reg; tc.tune(o) }})
			ana := dial(t, ts, "ana", wire.Binary)
			f, _ := dialFlooder(t, ts, "plan-1", "flo", 0)
			f.flood(tc.frame, tc.n)
			if tc.reason == "" {
				testutil.EventuallyWithin(t, 30*time.Second, "every frame to be answered", func() (bool, string) { return f.replies.Load() == int64(tc.n), "" })
				if err := f.closed(); err != nil {
					t.Fatalf("the slowed connection ended: %v", err)
				}
				if st := ts.srv.Stats(); st.Throttled == 0 || st.RateCloses != 0 {
					t.Fatalf("%d frames throttled, %d rate closes; want some and none", st.Throttled, st.RateCloses)
				}
			} else {
				var end error
				testutil.EventuallyWithin(t, 30*time.Second, "the connection to be closed", func() (bool, string) { end = f.closed(); return end != nil, "" })
				if !closedFor(end, tc.reason) {
					t.Fatalf("the connection ended with %v, want close code 1008 and reason %q", end, tc.reason)
				}
				st := ts.srv.Stats()
				if st.RateCloses != 1 || st.Throttled == 0 {
					t.Fatalf("%d rate closes, %d frames throttled; want 1 and some", st.RateCloses, st.Throttled)
				}
				m := gather(t, reg)
				if got := m["accord_sync_rate_closes_total{limit="+tc.limit+"}"]; got != 1 {
					t.Fatalf("accord_sync_rate_closes_total{limit=%s} = %v, want 1", tc.limit, got)
				}
				testutil.Eventually(t, "the closed connection to end", func() bool { return ts.srv.Stats().Connections == 1 })
			}
			// The other member's connection carries on.
			ana.create("after")
		})
	}
}

// TestFloodIsClosedOnABusyCPU: at the default limits, a raw client that
// floods a document with edits is closed with code 1008 for its frame
// rate while the host's CPU is kept busy. The busy CPU pauses the
// server's reader now and then, so some frames of the flood pass without
// waiting; they must not forgive it.
func TestFloodIsClosedOnABusyCPU(t *testing.T) {
	ts := startWith(t, setup{})
	c := join(t, ts.url, "plan-b", "ana", wire.Binary, nil)
	id := create(t, c, matrixCard("busy", 3, 2, true, false))
	f, docs := dialFlooder(t, ts, "plan-b", "flo", 1)
	edit := chooseEdit(t, docs[id], id)

	// Twice as many busy loops as the process has threads running Go.
	stop := make(chan struct{})
	var spinning sync.WaitGroup
	defer func() { close(stop); spinning.Wait() }()
	for range 2 * runtime.GOMAXPROCS(0) {
		spinning.Add(1)
		go func() {
			defer spinning.Done()
			for n := 0; ; n++ {
				if n%1024 == 0 {
					select {
					case <-stop:
						return
					default:
					}
				}
			}
		}()
	}

	began := time.Now()
	f.flood(edit, -1)
	var end error
	select {
	case end = <-f.ended:
		f.ended <- end
	case <-time.After(60 * time.Second):
		st := ts.srv.Stats()
		t.Fatalf("the flood still connected after 60 s: %d frames throttled, %d replies, %d rate closes", st.Throttled, f.replies.Load(), st.RateCloses)
	}
	st := ts.srv.Stats()
	t.Logf("closed after %v: %d frames throttled, %d replies", time.Since(began), st.Throttled, f.replies.Load())
	if !closedFor(end, "rate limit: more than 50 frames/s") {
		t.Fatalf("the flood's connection ended with %v, want close code 1008 for its frame rate", end)
	}
	if st.RateCloses != 1 {
		t.Fatalf("%d rate closes, want 1", st.RateCloses)
	}
}

// TestConnectionCaps: the connection past MaxMemberConnections is refused
// with 429 and the one past MaxDocumentConnections with 503, before the
// upgrade; closing a connection frees its slot.
func TestConnectionCaps(t *testing.T) {
	type dialing struct {
		doc, member string
		status      int // 0: upgraded
	}
	for _, tc := range []struct {
		name  string
		tune  func(*server.Options)
		dials []dialing
		limit string // the refused_upgrades_total label
		free  int    // the dial whose connection is closed, then the refused one is dialled again
		again dialing
	}{
		{
			name: "member",
			tune: func(o *server.Options) { o.MaxMemberConnections = 2 },
			dials: []dialing{
				{"plan-1", "ana", 0},
				{"plan-2", "ana", 0},
				{"plan-3", "ana", http.StatusTooManyRequests},
				{"plan-1", "ANA", http.StatusTooManyRequests}, // logins compare case-insensitively
				{"plan-1", "ben", 0},
			},
			limit: "member_connections",
			free:  1,
			again: dialing{"plan-3", "ana", 0},
		},
		{
			name: "document",
			tune: func(o *server.Options) { o.MaxDocumentConnections = 2 },
			dials: []dialing{
				{"plan-1", "ana", 0},
				{"plan-1", "ben", 0},
				{"plan-1", "cara", http.StatusServiceUnavailable},
				{"plan-2", "cara", 0},
			},
			limit: "document_connections",
			free:  0,
			again: dialing{"plan-1", "cara", 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			ts := startWith(t, setup{tune: func(o *server.Options) { o.Registerer = reg; tc.tune(o) }})
			open := map[int]*websocket.Conn{}
			dialNow := func(d dialing) *websocket.Conn {
				t.Helper()
				ws, resp, err := websocket.DefaultDialer.Dial(docURL(ts.url, d.doc, d.member), nil)
				if d.status == 0 {
					if err != nil {
						t.Fatalf("dial %s as %s: %v", d.doc, d.member, err)
					}
					t.Cleanup(func() { ws.Close() })
					return ws
				}
				if err == nil {
					ws.Close()
					t.Fatalf("dial %s as %s was upgraded, want %d", d.doc, d.member, d.status)
				}
				if resp == nil || resp.StatusCode != d.status {
					t.Fatalf("dial %s as %s: %v, want status %d", d.doc, d.member, err, d.status)
				}
				body, _ := io.ReadAll(resp.Body)
				if !strings.Contains(string(body), "too many connections") {
					t.Fatalf("refusal message %q", body)
				}
				return nil
			}
			refused := 0
			for i, d := range tc.dials {
				if ws := dialNow(d); ws != nil {
					open[i] = ws
				} else {
					refused++
				}
			}
			if st := ts.srv.Stats(); st.RefusedUpgrades != uint64(refused) || st.Connections != len(open) {
				t.Fatalf("stats %+v, want %d refused upgrades and %d connections", st, refused, len(open))
			}
			if got := gather(t, reg)["accord_sync_refused_upgrades_total{limit="+tc.limit+"}"]; got != float64(refused) {
				t.Fatalf("accord_sync_refused_upgrades_total{limit=%s} = %v, want %d", tc.limit, got, refused)
			}
			open[tc.free].Close()
			testutil.Eventually(t, "the closed connection to end", func() bool { return ts.srv.Stats().Connections == len(open)-1 })
			dialNow(tc.again)
		})
	}
}

// chooseEdit is the encoded question:edit that chooses option o0 of q1 in
// decision id, whose document is doc: a frame a flood repeats.
func chooseEdit(t *testing.T, doc []byte, id string) []byte {
	t.Helper()
	d, err := crdt.Load(doc, nil, crdt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := d.Heads()
	if err := d.Choose("q1", "o0", true); err != nil {
		t.Fatal(err)
	}
	ch, err := d.ChangesSince(h)
	if err != nil {
		t.Fatal(err)
	}
	return mustEncode(t, &wire.Edit{Header: wire.Header{Kind: wire.KindEdit, RID: "f"}, ID: id, Changes: ch})
}
