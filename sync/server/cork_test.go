package server_test

import (
	"context"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// stalledPeer joins doc on a raw socket and reads only its welcome: until
// it reads again, what the server sends it fills the socket (with the
// server's send buffer made small by bufferedListener, after some
// 150 KiB: Linux's default receive buffer).
func stalledPeer(t *testing.T, ts *testServer, doc, member string) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(docURL(ts.url, doc, member), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	hello, _ := wire.Encode(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version}, wire.Binary)
	if err := ws.WriteMessage(websocket.BinaryMessage, hello); err != nil {
		t.Fatal(err)
	}
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if m, err := wire.DecodeServerFrame(data, wire.Binary); err == nil && m.FrameKind() == wire.KindWelcome {
			break
		}
	}
	ws.SetReadDeadline(time.Time{})
	return ws
}

// createVia opens a decision through Server.Do, which returns once the
// creation was announced (queued for every connection); big ones are
// broadcast as some 20 KiB.
func createVia(t *testing.T, ts *testServer, doc string, card wire.Card) string {
	t.Helper()
	var id string
	err := ts.srv.Do(testCtx(t, 30*time.Second), doc, func(a *question.Authority) error {
		out, err := a.Create(context.Background(), question.Member{Login: "planner", Write: true},
			[]question.CreateRequest{{Key: card.Key, Origin: question.FromPlanner, Definition: card.Definition}})
		if err != nil {
			return err
		}
		id = out[0].Record.ID
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestFramesQueuedDuringAStallArriveInOrder: a peer stops reading while
// 60 decisions, big (some 20 KiB) and small in turn, are created; its socket fills, the
// write pump blocks in the middle of a corked batch and the rest queues
// behind it. The peer then pings ten times, and reads: every creation's
// event and document arrive whole and in creation order, every document
// loads, and every ping is answered, in order, with its own payload.
func TestFramesQueuedDuringAStallArriveInOrder(t *testing.T) {
	ts := startWith(t, setup{
		tune: func(o *server.Options) { o.Outbox = 4096 },
		wrap: func(l net.Listener) net.Listener { return bufferedListener{l} },
	})
	ws := stalledPeer(t, ts, "plan-1", "sid")
	before := ts.srv.Stats().FramesOut
	var mu sync.Mutex
	var pongs []string
	ws.SetPongHandler(func(s string) error {
		mu.Lock()
		pongs = append(pongs, s)
		mu.Unlock()
		return nil
	})

	const n = 60
	rng := rand.New(rand.NewPCG(5, 6))
	var ids []string
	for i := range n {
		key := "k" + strconv.Itoa(i)
		card := matrixCard(key, 3, 2, false, false)
		if i%2 == 0 {
			card = bigCard(key, rng)
		}
		ids = append(ids, createVia(t, ts, "plan-1", card))
	}
	st := ts.srv.Stats()
	if st.SlowDrops != 0 {
		t.Fatalf("%d connections dropped", st.SlowDrops)
	}
	if st.FramesOut-before == 2*n {
		t.Fatal("every frame was written: the socket never filled, and nothing queued behind a blocked write")
	}
	const pings = 10
	for i := range pings {
		if err := ws.WriteControl(websocket.PingMessage, []byte("p"+strconv.Itoa(i)), time.Now().Add(5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}

	// What the peer reads: for creation i, its event, then its document.
	frames := make(chan wire.Message, 4*n)
	readErr := make(chan error, 1)
	go func() {
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				readErr <- err
				return
			}
			m, err := wire.DecodeServerFrame(data, wire.Binary)
			if err != nil {
				readErr <- err
				return
			}
			frames <- m
		}
	}()
	next := func() wire.Message {
		t.Helper()
		select {
		case m := <-frames:
			return m
		case err := <-readErr:
			t.Fatalf("reading: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("no frame within 10 s")
		}
		return nil
	}
	for i, id := range ids {
		ev, ok := next().(*wire.Event)
		if !ok || ev.Kind != wire.KindCreated || ev.ID != id || ev.Record == nil || ev.Record.Key != "k"+strconv.Itoa(i) {
			t.Fatalf("creation %d: got %+v, want its event", i, ev)
		}
		doc, ok := next().(*wire.Doc)
		if !ok || doc.ID != id {
			t.Fatalf("creation %d: got %+v, want its document", i, doc)
		}
		if _, err := crdt.Load(doc.Doc, nil, crdt.Options{}); err != nil {
			t.Fatalf("creation %d: the document does not load: %v", i, err)
		}
	}
	testutil.Eventually(t, "every ping to be answered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(pongs) >= pings
	})
	mu.Lock()
	defer mu.Unlock()
	for i, p := range pongs {
		if p != "p"+strconv.Itoa(i) {
			t.Fatalf("pongs %v", pongs)
		}
	}
	if st := ts.srv.Stats(); st.SlowDrops != 0 {
		t.Fatalf("%d connections dropped", st.SlowDrops)
	}
}
