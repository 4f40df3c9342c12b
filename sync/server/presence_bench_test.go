//go:build linux

package server_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// BenchmarkPresenceOverhead: 4 writers edit one decision (one edit in
// flight each) over real sockets with 64 more connections joined, with
// and without those 64 publishing presence at the server's maximum rate
// (Options.PresenceRate, 10 a second each: about 40,000 relayed frames
// a second). An op is one accepted edit. It reports the mean time from an
// edit's send to its reply, and the process's CPU per edit (server and
// clients together; the clients only read their frames, undecoded).
//
//	go test -run '^$' -bench PresenceOverhead -benchtime 2000x ./sync/server/
func BenchmarkPresenceOverhead(b *testing.B) {
	for _, presence := range []bool{false, true} {
		b.Run(fmt.Sprintf("presence=%v", presence), func(b *testing.B) { benchPresence(b, presence) })
	}
}

func benchPresence(b *testing.B, presence bool) {
	const writers, readers = 4, 64
	ts := startWith(b, setup{})
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
	hello := func(ws *websocket.Conn, have map[string][]string) {
		m, _ := wire.Encode(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version, Have: have}, wire.Binary)
		if err := ws.WriteMessage(websocket.BinaryMessage, m); err != nil {
			b.Fatal(err)
		}
	}
	var socks []*websocket.Conn
	var ws []*fanWriter
	for i := range writers {
		conn, _, err := websocket.DefaultDialer.Dial(docURL(ts.url, "fan", "w"+strconv.Itoa(i)), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		w := &fanWriter{ws: conn, id: id, replies: make(chan *wire.Reply, 16)}
		w.load(saved)
		hello(conn, map[string][]string{id: hexHeads(w.doc.Heads())})
		go w.read()
		ws = append(ws, w)
	}
	for i := range readers {
		conn, _, err := websocket.DefaultDialer.Dial(docURL(ts.url, "fan", "r"+strconv.Itoa(i)), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		hello(conn, nil)
		go func() {
			for {
				if _, _, err := conn.ReadMessage(); err != nil {
					return
				}
			}
		}()
		socks = append(socks, conn)
	}
	for i, w := range ws {
		if err := w.run(i, 1); err != nil {
			b.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var pubs sync.WaitGroup
	if presence {
		for i, s := range socks {
			pubs.Add(1)
			go func() {
				defer pubs.Done()
				t := time.NewTicker(100 * time.Millisecond)
				defer t.Stop()
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					case <-t.C:
					}
					m, _ := wire.Encode(&wire.Presence{Header: wire.Header{Kind: wire.KindPresence}, State: &wire.PresenceState{
						Decision: id, Question: "q1", Field: "o" + strconv.Itoa(n%10) + "/c" + strconv.Itoa(i%5), Editing: true}}, wire.Binary)
					if err := s.WriteMessage(websocket.BinaryMessage, m); err != nil {
						return
					}
				}
			}()
		}
		time.Sleep(300 * time.Millisecond) // every publisher under way
	}
	per := max(1, b.N/writers)
	dropped0, cpu0 := ts.srv.Stats().PresenceDropped, cpuTime(b)
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
	close(stop)
	pubs.Wait()
	edits := float64(per * writers)
	cpu := cpuTime(b) - cpu0
	// Each writer has one edit in flight: its mean latency is the time
	// its edits took, divided by their number.
	b.ReportMetric(float64(elapsed.Microseconds())/float64(per), "µs-latency/edit")
	b.ReportMetric(float64(cpu.Microseconds())/edits, "cpu-µs/edit")
	b.ReportMetric(edits/elapsed.Seconds(), "edits/s")
	b.ReportMetric(float64(ts.srv.Stats().PresenceDropped-dropped0), "presence-dropped")
}
