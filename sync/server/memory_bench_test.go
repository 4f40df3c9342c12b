//go:build linux

package server_test

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/sync/wire"
)

// rss returns the process's resident set, after a GC that hands freed
// memory back, so deltas include automerge's Rust heap.
func rss(tb testing.TB) int64 {
	runtime.GC()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// BenchmarkOpenDocumentMemory: what the server holds for an open document
// of 2,000 small decisions with one client joined (its catch-up frames
// cached), per decision; and for idle connections, per connection.
func BenchmarkOpenDocumentMemory(b *testing.B) {
	for b.Loop() {
		ts := startWith(b, setup{})
		before := rss(b)
		ids := bigDocument(b, ts.srv, "mem", 2000)
		j, _ := rawJoin(b, ts, "mem", ids, nil)
		j.ws.Close()
		perDecision := float64(rss(b)-before) / 2000
		beforeConns := rss(b)
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
		perConn := float64(rss(b)-beforeConns) / 200
		for _, ws := range conns {
			ws.Close()
		}
		b.ReportMetric(perDecision/1024, "KB/decision")
		b.ReportMetric(perConn/1024, "KB/conn-both-ends")
		ts.stop()
	}
}
