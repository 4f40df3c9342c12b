//go:build linux

package server_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// countingListener counts the Write calls made to the connections it
// accepts: the server's socket writes, one write(2) each.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, writes: l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// fanWriter edits one shared decision on a raw socket, one edit in flight
// at a time, and reads everything the server sends it. It never applies
// the others' changes, so its own cost stays small; when the server
// rebases the decision it carries on from the document it is sent.
type fanWriter struct {
	ws      *websocket.Conn
	id      string
	mu      sync.Mutex
	doc     *crdt.Doc
	replies chan *wire.Reply
}

func (w *fanWriter) read() {
	defer close(w.replies)
	for {
		_, data, err := w.ws.ReadMessage()
		if err != nil {
			return
		}
		m, err := wire.DecodeServerFrame(data, wire.Binary)
		if err != nil {
			return
		}
		switch f := m.(type) {
		case *wire.Reply:
			w.replies <- f
		case *wire.Doc:
			if f.ID == w.id {
				w.load(f.Doc)
			}
		}
	}
}

func (w *fanWriter) load(saved []byte) {
	d, err := crdt.Load(saved, nil, crdt.Options{})
	if err != nil {
		return
	}
	w.mu.Lock()
	w.doc = d
	w.mu.Unlock()
}

// edit sets one cell to a new value and returns the encoded edit.
func (w *fanWriter) edit(n int, rid string) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	before := w.doc.Heads()
	opt, crit := "o"+strconv.Itoa(n%10), "c"+strconv.Itoa(n/10%5)
	err := w.doc.SetMark("q1", opt, crit, marks.All[n%3])
	if err == nil && w.doc.Heads().Equal(before) {
		err = w.doc.SetMark("q1", opt, crit, marks.All[(n+1)%3])
	}
	if err != nil {
		return nil, err
	}
	ch, err := w.doc.ChangesSince(before)
	if err != nil {
		return nil, err
	}
	return wire.Encode(&wire.Edit{Header: wire.Header{Kind: wire.KindEdit, RID: rid}, ID: w.id, Changes: ch}, wire.Binary)
}

// run makes n accepted edits; a refused one (stale across a rebase) is
// made again from the document the refusal carries.
func (w *fanWriter) run(seed, n int) error {
	refused := 0
	for i := 0; i < n; {
		rid := "e" + strconv.Itoa(i)
		b, err := w.edit(seed*7+i+refused, rid)
		if err != nil {
			return err
		}
		if err := w.ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
			return err
		}
		select {
		case r, ok := <-w.replies:
			if !ok {
				return fmt.Errorf("connection closed awaiting edit %d", i)
			}
			if r.RID != rid {
				return fmt.Errorf("reply %+v, want %s", r, rid)
			}
			if !r.OK {
				if refused++; refused > 100 || len(r.Doc) == 0 {
					return fmt.Errorf("edit %d refused: %s %s", i, r.Reason, r.Message)
				}
				w.load(r.Doc)
				continue
			}
			i++
		case <-time.After(30 * time.Second):
			return fmt.Errorf("no reply to edit %d", i)
		}
	}
	return nil
}

// cpuTime is the process's user and system CPU so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeSyscalls is the process's count of write system calls
// (/proc/self/io syscw: write, writev, sendmsg and the like).
func writeSyscalls(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		tb.Skip("no /proc/self/io:", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	tb.Fatal("no syscw in /proc/self/io")
	return 0
}

// BenchmarkFanOutWrites: writers edit one decision at once, each with one
// edit in flight, over real sockets, while readers only receive; every
// connection gets every broadcast. An op is one accepted edit. It
// reports the server's socket writes and the frames it sent per edit,
// and the process's write system calls and CPU per edit (server and
// clients together: the clients only read, decode and make one small
// change each).
//
//	go test -run '^$' -bench FanOutWrites -benchtime 2048x ./sync/server/
func BenchmarkFanOutWrites(b *testing.B) {
	for _, c := range []struct{ writers, readers int }{{16, 0}, {16, 48}} {
		b.Run(fmt.Sprintf("writers=%d/readers=%d", c.writers, c.readers), func(b *testing.B) {
			benchFanOut(b, c.writers, c.readers)
		})
	}
}

func benchFanOut(b *testing.B, writers, readers int) {
	var sockWrites atomic.Int64
	ts := startWith(b, setup{wrap: func(l net.Listener) net.Listener { return countingListener{Listener: l, writes: &sockWrites} }})
	card := matrixCard("fan", 10, 5, false, false)
	var id string
	var saved []byte
	err := ts.srv.Do(testCtx(b, time.Minute), "fan", func(a *question.Authority) error {
		out, err := a.Create(context.Background(), question.Member{Login: "ana", Write: true},
			[]question.CreateRequest{{Key: card.Key, Origin: question.FromPerson, Definition: card.Definition}})
		if err != nil {
			return err
		}
		id = out[0].Record.ID
		saved, err = a.Save(id)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}

	welcomed := func(ws *websocket.Conn, have map[string][]string) {
		hello, _ := wire.Encode(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version, Have: have}, wire.Binary)
		if err := ws.WriteMessage(websocket.BinaryMessage, hello); err != nil {
			b.Fatal(err)
		}
	}
	var ws []*fanWriter
	for i := range writers {
		conn, _, err := websocket.DefaultDialer.Dial(docURL(ts.url, "fan", "w"+strconv.Itoa(i)), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		w := &fanWriter{ws: conn, id: id, replies: make(chan *wire.Reply, 16)}
		w.load(saved)
		welcomed(conn, map[string][]string{id: hexHeads(w.doc.Heads())})
		go w.read()
		ws = append(ws, w)
	}
	var received atomic.Int64
	for i := range readers {
		conn, _, err := websocket.DefaultDialer.Dial(docURL(ts.url, "fan", "r"+strconv.Itoa(i)), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		welcomed(conn, nil)
		go func() {
			for {
				if _, _, err := conn.ReadMessage(); err != nil {
					return
				}
				received.Add(1)
			}
		}()
	}
	// One edit each first, so that every connection is joined.
	for i, w := range ws {
		if err := w.run(i, 1); err != nil {
			b.Fatal(err)
		}
	}

	per := max(1, b.N/writers)
	frames0, sock0, sys0, cpu0 := ts.srv.Stats().FramesOut, sockWrites.Load(), writeSyscalls(b), cpuTime(b)
	b.ResetTimer()
	start := time.Now()
	errs := make(chan error, writers)
	for i, w := range ws {
		go func() { errs <- w.run(i+1000, per) }()
	}
	for range ws {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	edits := float64(per * writers)
	cpu, sys := cpuTime(b)-cpu0, writeSyscalls(b)-sys0
	b.ReportMetric(edits/elapsed.Seconds(), "edits/s")
	b.ReportMetric(float64(cpu.Microseconds())/edits, "cpu-µs/edit")
	b.ReportMetric(float64(sockWrites.Load()-sock0)/edits, "sock-writes/edit")
	b.ReportMetric(float64(ts.srv.Stats().FramesOut-frames0)/edits, "frames/edit")
	b.ReportMetric(float64(sys)/edits, "syscw/edit")
}
