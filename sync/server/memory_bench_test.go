//go:build linux

package server_test

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/internal/cmem"
	"github.com/accord-crdt/accord/sync/wire"
)

// rss returns the process's resident set (VmRSS) and its anonymous part
// (RssAnon: without the pages of the bbolt file it maps), after
// collections that run the finalizers freeing dropped automerge documents
// (the first only queues them) and hand freed memory back, so deltas
// include automerge's Rust heap, which Go's statistics do not see.
func rss(tb testing.TB) (all, anon int64) {
	for range 3 {
		runtime.GC()
		time.Sleep(20 * time.Millisecond) // finalizers run on their own goroutine
	}
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			all = kb << 10
		case "RssAnon:":
			anon = kb << 10
		}
	}
	if all == 0 || anon == 0 {
		tb.Fatal("no VmRSS or RssAnon in /proc/self/status")
	}
	return all, anon
}

// heapInuse returns the Go heap in use (read after rss collected).
func heapInuse() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// BenchmarkOpenDocumentMemory: what the server holds for an open document
// of 2,000 small decisions with one client joined (its catch-up frames
// cached), per decision; and for idle connections, per connection.
func BenchmarkOpenDocumentMemory(b *testing.B) {
	for b.Loop() {
		ts := startWith(b, setup{})
		before, anonBefore := rss(b)
		heapBefore := heapInuse()
		cBefore, _ := cmem.Stats()
		ids := bigDocument(b, ts.srv, "mem", 2000)
		j, _ := rawJoin(b, ts, "mem", ids, nil)
		j.ws.Close()
		after, anonAfter := rss(b)
		perDecision := float64(after-before) / 2000
		anonPerDecision := float64(anonAfter-anonBefore) / 2000
		heapPerDecision := float64(heapInuse()-heapBefore) / 2000
		cAfter, _ := cmem.Stats()
		cPerDecision := float64(cAfter-cBefore) / 2000
		beforeConns, _ := rss(b)
		var conns []*websocket.Conn
		hello, _ := wire.Encode(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version}, wire.Binary)
		for i := range 200 {
			ws, _, err := websocket.DefaultDialer.Dial(ts.url+"?doc=idle&member=m"+strconv.Itoa(i), nil)
			if err != nil {
				b.Fatal(err)
			}
			ws.WriteMessage(websocket.BinaryMessage, hello)
			ws.ReadMessage() // the welcome
			conns = append(conns, ws)
		}
		afterConns, _ := rss(b)
		perConn := float64(afterConns-beforeConns) / 200
		for _, ws := range conns {
			ws.Close()
		}
		b.ReportMetric(perDecision/1024, "KB/decision")
		b.ReportMetric(anonPerDecision/1024, "anonKB/decision")
		b.ReportMetric(heapPerDecision/1024, "heapKB/decision")
		b.ReportMetric(cPerDecision/1024, "cKB/decision")
		b.ReportMetric(perConn/1024, "KB/conn-both-ends")
		ts.stop()
	}
}
