package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// fanOutRuns measures fan-out latency, one writer every 20 ms, for each
// client count, and the server's memory with the most connections (base
// is its memory before).
func fanOutRuns(srv *child, clientCounts []int, latencyWrites int, base float64) error {
	for _, n := range clientCounts {
		var mu sync.Mutex
		sent := map[string]time.Time{}
		last := map[string]time.Time{}
		count := map[string]int{}
		seen := func(c *client, heads string, at time.Time) {
			mu.Lock()
			if at.After(last[heads]) {
				last[heads] = at
			}
			count[heads]++
			mu.Unlock()
		}
		cs, err := connectAll(srv, n, seen)
		if err != nil {
			return err
		}
		w := cs[0]
		for i := range latencyWrites {
			mu.Lock()
			t0 := time.Now()
			mu.Unlock()
			key, err := w.write(i, 10*time.Second)
			if err != nil {
				return err
			}
			mu.Lock()
			sent[key] = t0
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
		var lat []time.Duration
		incomplete := 0
		mu.Lock()
		for key, t0 := range sent {
			if count[key] < n-1 {
				incomplete++
				continue
			}
			lat = append(lat, last[key].Sub(t0))
		}
		mu.Unlock()
		rc, rd := redialled(cs)
		fmt.Printf("| fan-out, %d clients: p50 / p99 / max | %s / %s / %s (%d writes, %d not seen by all; %d clients dropped and reconnected, %d redials) |\n",
			n, ms(pct(lat, .5)), ms(pct(lat, .99)), ms(pct(lat, 1)), len(sent), incomplete, rc, rd)
		if n == clientCounts[len(clientCounts)-1] {
			fmt.Printf("| server memory with %d connections | %.1f MB (%.1f MB before; %.1f KB per connection) |\n",
				n, srv.rssMB(), base, (srv.rssMB()-base)*1024/float64(n))
		}
		closeAll(cs)
		release()
	}
	time.Sleep(200 * time.Millisecond)
	fmt.Printf("| server memory after the fan-out runs | %.1f MB |\n", srv.rssMB())
	return nil
}

// throughputRuns measures writes per second to convergence: every writer
// at once until all converge, each writer count on a document of its own,
// so that its replicas hold only its own history, and the writers in driver
// processes of their own (procs.go), so that the clients' cost is not this
// process's.
func throughputRuns(srv *child, writerCounts []int, writes, procs int) error {
	for _, n := range writerCounts {
		srv.doc = fmt.Sprintf("writers-%d", n)
		if _, err := setup(srv); err != nil {
			return err
		}
		per := writes / n
		p := procs
		if p <= 0 {
			p = (n + 63) / 64
		}
		cpu0, sys0 := srv.usage()
		res, err := throughputIn(srv, n, per, min(p, n))
		if err != nil {
			return err
		}
		cpu1, sys1 := srv.usage()
		status := "converged"
		if !res.converged {
			status = "DID NOT CONVERGE"
		}
		fmt.Printf("| writes/s to convergence, %d writers, %d writes | %.0f (%s in %s; %d writers dropped and reconnected, %d redials; clients' peak memory %.0f MB in %d processes, %.1f MB a writer; server CPU %.0f µs, %.1f write syscalls and %.1f frames to clients per write) |\n",
			n, per*n, float64(per*n)/res.elapsed.Seconds(), status, ms(res.elapsed), res.dropped, res.redials, res.peakMB, min(p, n), res.peakMB/float64(n),
			float64((cpu1-cpu0).Microseconds())/float64(per*n), float64(sys1-sys0)/float64(per*n), float64(res.frames)/float64(per*n))
	}
	srv.doc = ""
	return nil
}

// catchUp measures a client's catch-up after missed writes.
func catchUp(srv *child, missed int) error {
	cs, err := connectAll(srv, 2, nil)
	if err != nil {
		return err
	}
	away := cs[1]
	have := map[string][]string{away.id: strings.Split(away.heads(), ",")}
	oldDoc := away.doc
	away.close()
	for i := range missed {
		if _, err := cs[0].write(i, 10*time.Second); err != nil {
			return err
		}
	}
	want := cs[0].heads()
	start := time.Now()
	back, err := dialWith(srv, "back", have, oldDoc, cs[0].id, nil)
	if err != nil {
		return err
	}
	for back.heads() != want {
		if time.Since(start) > 30*time.Second {
			return fmt.Errorf("catch-up did not finish")
		}
		time.Sleep(100 * time.Microsecond)
	}
	fmt.Printf("| catch-up after %d missed writes | %s, %.1f KB |\n", missed, ms(time.Since(start)), float64(back.bytes.Load())/1024)
	back.close()
	closeAll(cs[:1])
	return nil
}

// docMemory measures the server's memory per open document.
func docMemory(srv *child) error {
	before := srv.rssMB()
	const docs = 100
	var cs []*client
	for i := range docs {
		ws, _, err := websocket.DefaultDialer.Dial(fmt.Sprintf("ws://%s/sync?doc=extra-%d&member=m", srv.addr, i), nil)
		if err != nil {
			return err
		}
		cl := &client{name: "extra", srv: srv, ws: ws, replies: make(chan *wire.Reply, 16), ready: make(chan struct{}), done: make(chan struct{})}
		cl.noRedial.Store(true) // its url is not plan-1's
		go cl.read()
		cl.send(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version})
		cl.send(&wire.Create{Header: wire.Header{Kind: wire.KindCreate, RID: "c"}, Cards: []wire.Card{{Key: "k", Definition: question.Definition{Questions: []question.Question{{Text: "Q?", Options: []question.Option{{ID: "a", Label: "A"}}}}}}}})
		if _, err := cl.reply(10 * time.Second); err != nil {
			return err
		}
		cs = append(cs, cl)
	}
	fmt.Printf("| server memory per open document | %.1f KB (%d documents) |\n", (srv.rssMB()-before)*1024/docs, docs)
	closeAll(cs)
	return nil
}

// killAndReload counts the acknowledged writes kept across a SIGKILL of a
// server of its own, then times the cold load of the document after the
// restart.
func killAndReload(root string, killWrites int) error {
	kdir := filepath.Join(root, "kill")
	k, err := startChild(kdir)
	if err != nil {
		return err
	}
	if _, err := setup(k); err != nil {
		return err
	}
	cs, err := connectAll(k, 1, nil)
	if err != nil {
		return err
	}
	cs[0].noRedial.Store(true) // the kill ends it
	// The writer overwrites the matrix's cells many times over (so the
	// server rebases the decision's history on the way): a write is
	// kept when its cell shows it, or the last acknowledged write to
	// that cell (or the one in flight at the kill, which may or may not
	// have committed).
	var acked, inflight crdt.Draft
	writesTo := map[string]int{} // acknowledged writes per cell
	for i := 0; ; i++ {
		if _, err := cs[0].mark(i); err != nil {
			break
		}
		if i == killWrites {
			inflight = cs[0].draft()
			k.cmd.Process.Signal(syscall.SIGKILL) // mid-flight: this write is not acknowledged
			k.cmd.Wait()
			break
		}
		r, err := cs[0].reply(10 * time.Second)
		if r != nil && r.Reason == question.Stale {
			i-- // the history was rebased meanwhile: again, on the new one
			continue
		}
		if err != nil {
			break
		}
		acked = cs[0].draft()
		writesTo[cellOf(i).Key()]++
	}
	cs[0].close()
	k2, err := startChild(kdir)
	if err != nil {
		return err
	}
	start := time.Now()
	cl, err := dialClient(k2, "after", nil, nil)
	if err != nil {
		return err
	}
	<-cl.ready
	cold := time.Since(start)
	after := cl.draft()
	kept, writes := 0, 0
	for cell, n := range writesTo {
		writes += n
		got := after.Questions["q1"].Marks[cell]
		if got == acked.Questions["q1"].Marks[cell] || got == inflight.Questions["q1"].Marks[cell] {
			kept += n
		}
	}
	fmt.Printf("| acknowledged writes kept after SIGKILL | %d of %d |\n", kept, writes)
	fmt.Printf("| cold load of the document after restart (connect to document) | %s |\n", ms(cold))
	cl.close()
	k2.stop(syscall.SIGTERM)
	return nil
}
