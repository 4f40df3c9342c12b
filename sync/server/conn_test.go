package server_test

import (
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// bufferedListener makes every accepted connection's send buffer small, so
// a peer that stops reading fills it after a few frames instead of
// megabytes.
type bufferedListener struct{ net.Listener }

func (l bufferedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

// TestSlowReaderIsDroppedWithoutDelayingOthers: a peer that joins and then
// never reads fills its socket and its outbox (16 frames) and is dropped;
// meanwhile every write reaches the other members promptly (DC3, and the
// protocol's "a slow client never slows the others").
func TestSlowReaderIsDroppedWithoutDelayingOthers(t *testing.T) {
	var drops atomic.Int32
	ts := startWith(t, setup{
		tune: func(o *server.Options) { o.Outbox = 16 },
		wrap: func(l net.Listener) net.Listener { return bufferedListener{l} },
		log: func(r slog.Record) {
			if r.Level >= slog.LevelWarn && strings.Contains(r.Message, "slow") {
				drops.Add(1)
			}
		},
	})
	ctx := testCtx(t, 40*time.Second)
	ana := join(t, ts.url, "plan-1", "ana", wire.Binary, nil)

	// The slow peer joins and never reads.
	slow, _, err := websocket.DefaultDialer.Dial(docURL(ts.url, "plan-1", "slow"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	hello, _ := wire.Encode(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version}, wire.Binary)
	if err := slow.WriteMessage(websocket.BinaryMessage, hello); err != nil {
		t.Fatal(err)
	}

	// Three members who read; each records when it first receives each
	// write.
	type reader struct {
		c    *replica.Client
		mu   sync.Mutex
		seen map[string]time.Time
	}
	var readers []*reader
	for i, f := range []wire.Format{wire.Binary, wire.Text, wire.Binary} {
		r := &reader{c: join(t, ts.url, "plan-1", "r"+strconv.Itoa(i), f, nil), seen: map[string]time.Time{}}
		readers = append(readers, r)
		go func() {
			for ev := range r.c.Events() {
				if ev.Kind == wire.KindCreated && ev.Record != nil {
					r.mu.Lock()
					r.seen[ev.Record.Key] = time.Now()
					r.mu.Unlock()
				}
			}
		}()
	}

	// Each write opens a decision of some 20 KiB, so that a handful of
	// broadcasts fill the slow peer's socket; the outbox then fills.
	const writes = 40
	rng := rand.New(rand.NewPCG(3, 4))
	sent := map[string]time.Time{}
	droppedAt := -1
	for k := range writes {
		key := "big-" + strconv.Itoa(k)
		card := bigCard(key, rng)
		sent[key] = time.Now()
		if _, err := ana.Create(ctx, card); err != nil {
			t.Fatalf("write %d: %v", k, err)
		}
		if droppedAt < 0 && drops.Load() > 0 {
			droppedAt = k
		}
	}
	for _, r := range readers {
		testutil.Eventually(t, "every reader to receive every write", func() bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			return len(r.seen) == writes
		})
	}
	var worst time.Duration
	for _, r := range readers {
		r.mu.Lock()
		for key, at := range r.seen {
			worst = max(worst, at.Sub(sent[key]))
		}
		r.mu.Unlock()
	}
	t.Logf("the slow peer was dropped around write %d; slowest fan-out %v", droppedAt, worst)
	// A broadcast that waited for the slow peer would stall for the write
	// timeout (10 s) or for good. Unloaded, the slowest is a few hundred
	// milliseconds with -race on two cores; the bound leaves room for a
	// machine busy with other tests.
	const bound = 3 * time.Second
	if worst > bound {
		t.Fatalf("a write took %v to reach another member; the bound is %v", worst, bound)
	}

	// Now the slow peer reads: it gets what was queued for it, then the
	// server's close, long before all the writes.
	slow.SetReadDeadline(time.Now().Add(15 * time.Second))
	created := 0
	for {
		_, data, err := slow.ReadMessage()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the server never closed the slow connection (%d creations read)", created)
			}
			break
		}
		if m, err := wire.DecodeServerFrame(data, wire.Binary); err == nil && m.FrameKind() == wire.KindCreated {
			created++
		}
	}
	if created >= writes {
		t.Fatalf("the slow peer read all %d writes; it was never dropped", created)
	}
	if drops.Load() == 0 {
		t.Errorf("the server logged no dropped connection")
	}
}

// TestWriteTimeoutStillDropsTheSlowPeer: with an outbox too large to
// fill, a peer that stops reading is dropped by the write timeout alone
// (a corked batch's socket write keeps WriteWait); a member who reads
// gets every creation, in order.
func TestWriteTimeoutStillDropsTheSlowPeer(t *testing.T) {
	var timedOut atomic.Int32
	ts := startWith(t, setup{
		tune: func(o *server.Options) { o.Outbox = 4096; o.WriteWait = 500 * time.Millisecond },
		wrap: func(l net.Listener) net.Listener { return bufferedListener{l} },
		log: func(r slog.Record) {
			if strings.Contains(r.Message, "write timed out") {
				timedOut.Add(1)
			}
		},
	})
	ana := dial(t, ts, "ana", wire.Binary)
	slow := stalledPeer(t, ts, "plan-1", "slow")
	rng := rand.New(rand.NewPCG(7, 8))
	var ids []string
	for i := 0; ts.srv.Stats().SlowDrops == 0; i++ {
		if i == 400 {
			t.Fatal("the slow peer was never dropped")
		}
		ids = append(ids, createVia(t, ts, "plan-1", bigCard("k"+strconv.Itoa(i), rng)))
	}
	if timedOut.Load() == 0 {
		t.Fatal("the drop was not logged as a write timeout")
	}
	t.Logf("dropped after %d creations", len(ids))
	for i, id := range ids {
		if ev := ana.expect(wire.KindCreated).(*wire.Event); ev.ID != id {
			t.Fatalf("ana's creation %d is %s, want %s", i, ev.ID, id)
		}
	}
	// The slow peer reads what reached its socket, then the end.
	slow.SetReadDeadline(time.Now().Add(15 * time.Second))
	for {
		if _, _, err := slow.ReadMessage(); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the dropped connection stayed open")
			}
			break
		}
	}
}
