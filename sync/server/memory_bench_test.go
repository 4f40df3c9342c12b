//go:build linux

package server_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/cmem"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
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

// Many documents with a few members each, as the peers' W5 load runs
// them: the server is this process, the members live in a child process
// (this test binary re-executed, TestMemoryClientsChild), so that what the
// server holds is measured apart from the members' replicas.

// memClientsEnv selects TestMemoryClientsChild in a re-executed test
// binary; its value is a memClients as JSON.
const memClientsEnv = "ACCORD_TEST_MEMORY_CLIENTS"

// memClients is what the child connects: members of each document, each
// writing writes times (a mark and its own line of a written answer, one
// edit, as a W5 member writes).
type memClients struct {
	URL     string
	Docs    []string // document names
	IDs     []string // the decision of each document
	Members int
	Writes  int
}

// peersCard is a decision of the peers' shape: a 10 × 5 matrix "marks"
// and 19 written questions p0…p18.
func peersCard(key string) question.CreateRequest {
	card := matrixCard(key, 10, 5, false, false)
	card.Definition.Questions[0].ID = "marks"
	for q := range 19 {
		card.Definition.Questions = append(card.Definition.Questions, question.Question{ID: "p" + strconv.Itoa(q), Text: "Lines", Response: question.Text, Options: []question.Option{}})
	}
	return question.CreateRequest{Key: key, Origin: question.FromPerson, Definition: card.Definition}
}

// TestMemoryClientsChild is the members' process of
// BenchmarkOpenDocumentsMemory: it dials every member (the replica
// client, which asks for compressed documents as the page does), has each
// write, waits until every document's members agree and hold their edits
// accepted, prints READY, and keeps the connections open until its stdin
// closes. It does nothing in an ordinary run.
func TestMemoryClientsChild(t *testing.T) {
	spec := os.Getenv(memClientsEnv)
	if spec == "" {
		t.Skip("the members' process of BenchmarkOpenDocumentsMemory; runs only when it starts it")
	}
	var mc memClients
	if err := json.Unmarshal([]byte(spec), &mc); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 10*time.Minute)
	members := make([][]*replica.Client, len(mc.Docs))
	for d := range members {
		members[d] = make([]*replica.Client, mc.Members)
	}
	// each runs f for every member, at most 32 at once.
	each := func(f func(d, k int) error) error {
		sem := make(chan struct{}, 32)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var first error
		for d := range members {
			for k := range members[d] {
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer func() { <-sem; wg.Done() }()
					if err := f(d, k); err != nil {
						mu.Lock()
						first = cmp.Or(first, err)
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
		return first
	}
	err := each(func(d, k int) (err error) {
		members[d][k], err = replica.Dial(ctx, docURL(mc.URL, mc.Docs[d], fmt.Sprintf("d%dm%d", d, k)), replica.Options{Format: wire.Binary})
		return err
	})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	fmt.Println("CONNECTED")
	ms := []marks.Mark{marks.Yes, marks.Partly, marks.No}
	err = each(func(d, k int) error {
		c, id := members[d][k], mc.IDs[d]
		for w := range mc.Writes {
			cell := k*mc.Writes + w
			if err := c.SetMark(id, "marks", "o"+strconv.Itoa(cell%10), "c"+strconv.Itoa(cell/10%5), ms[cell%3]); err != nil {
				return err
			}
			if err := c.SetText(id, "p"+strconv.Itoa(k%19), fmt.Sprintf("%d:%d\n", k, w+1)); err != nil {
				return err
			}
			if err := c.Flush(ctx, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	for d, cs := range members {
		if err := poll(ctx, time.Minute, func() bool {
			_, h, err := cs[0].Draft(mc.IDs[d])
			if err != nil {
				return false
			}
			for _, c := range cs {
				_, hc, err := c.Draft(mc.IDs[d])
				acc, unsent, err2 := c.Accepted(mc.IDs[d])
				if err != nil || err2 != nil || unsent || !hc.Equal(h) || !acc.Equal(h) {
					return false
				}
			}
			return true
		}); err != nil {
			t.Fatalf("document %s did not converge: %v", mc.Docs[d], err)
		}
	}
	fmt.Println("READY")
	io.Copy(io.Discard, os.Stdin) // the parent holds stdin open while it measures
	for _, cs := range members {
		for _, c := range cs {
			c.Close()
		}
	}
}

// startMemoryClients runs TestMemoryClientsChild for mc and waits for
// its READY; closing the returned stdin ends it.
func startMemoryClients(b *testing.B, mc memClients) (stdin io.Closer, wait func()) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	spec, _ := json.Marshal(mc)
	out := &lockedBuffer{}
	cmd := exec.Command(exe, "-test.run=^TestMemoryClientsChild$", "-test.count=1", "-test.timeout=15m")
	cmd.Env = append(os.Environ(), memClientsEnv+"="+string(spec))
	cmd.Stdout, cmd.Stderr = out, out
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(out.String(), "READY\n") {
		select {
		case err := <-exited:
			b.Fatalf("the members' process ended before it was ready: %v\n%s", err, out)
		case <-tick.C:
		}
	}
	return in, func() {
		if err := <-exited; err != nil {
			b.Errorf("the members' process: %v\n%s", err, out)
		}
	}
}

// memFigures are the server process's memory figures at one point.
type memFigures struct {
	rss, heap, stack, c, cFree int64
	goroutines                 int
}

func (m memFigures) String() string {
	mb := func(x int64) float64 { return float64(x) / (1 << 20) }
	return fmt.Sprintf("RSS %.1f MB, Go heap %.1f MB, stacks %.1f MB (%d goroutines), C heap %.1f MB (%.1f MB free)",
		mb(m.rss), mb(m.heap), mb(m.stack), m.goroutines, mb(m.c), mb(m.cFree))
}

func memNow(b *testing.B) memFigures {
	all, _ := rss(b)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c, free := cmem.Stats()
	return memFigures{rss: all, heap: int64(ms.HeapInuse), stack: int64(ms.StackInuse), c: c, cFree: free, goroutines: runtime.NumGoroutine()}
}

// peakRSS returns the process's peak resident set (VmHWM) since
// resetPeak.
func peakRSS(b *testing.B) int64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}

func resetPeak(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Logf("cannot reset the peak resident set: %v", err)
	}
}

// BenchmarkOpenDocumentsMemory: what the server holds for open documents
// with 5 members each, as in the peers' W5 (a decision of the peers'
// shape per document, every member on its own WebSocket, each writing 3
// times), over a bbolt file. Per document: the process's resident set
// (RSS), Go heap, goroutine stacks and C heap (automerge) after the
// members wrote and converged, less what the fresh server held, with
// every decision live (KB/doc, …) and once the documents' decisions were
// parked while their members stay connected (parked…, what
// Options.ParkIdle does to a document nobody edits); per connection, the
// resident set divided by 5 × docs, as W5 reports it. The peak resident
// set covers the whole run. ACCORD_MEMPROFILE=<file> writes the server's
// heap profile (inuse_space) once the members wrote, and <file>.parked
// once the decisions were parked.
func BenchmarkOpenDocumentsMemory(b *testing.B) {
	for _, docs := range []int{100, 400} {
		b.Run("docs="+strconv.Itoa(docs), func(b *testing.B) {
			for b.Loop() {
				openDocumentsMemory(b, docs, 5, 3)
			}
		})
	}
}

// heapProfile writes the heap profile to $ACCORD_MEMPROFILE+suffix, if
// that is set.
func heapProfile(b *testing.B, suffix string) {
	path := os.Getenv("ACCORD_MEMPROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path + suffix)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

func openDocumentsMemory(b *testing.B, docs, members, writes int) {
	if path := os.Getenv("ACCORD_MEMPROFILE"); path != "" {
		runtime.MemProfileRate = 4096
		defer func() { runtime.MemProfileRate = 512 * 1024 }()
	}
	crdt.LimitAllocatorArenas(2) // as the example server does
	// Parked on demand below, so that how long the members take to write
	// does not decide which decisions are live when measured.
	ts := startWith(b, setup{tune: func(o *server.Options) { o.IdleUnload, o.ParkIdle = time.Hour, -1 }})
	base := memNow(b)
	resetPeak(b)
	mc := memClients{URL: ts.url, Members: members, Writes: writes}
	planner := question.Member{Login: "planner", Write: true}
	for d := range docs {
		name := "w5-" + strconv.Itoa(d)
		err := ts.srv.Do(testCtx(b, time.Minute), name, func(a *question.Authority) error {
			out, err := a.Create(context.Background(), planner, []question.CreateRequest{peersCard("k")})
			if err == nil {
				mc.IDs = append(mc.IDs, out[0].Record.ID)
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		mc.Docs = append(mc.Docs, name)
	}
	opened := memNow(b)
	stdin, wait := startMemoryClients(b, mc)
	joined := memNow(b)
	heapProfile(b, "")
	reclaims := ts.srv.Stats().Reclaims
	for _, name := range mc.Docs {
		if err := server.Park(testCtx(b, time.Minute), ts.srv, name); err != nil {
			b.Fatal(err)
		}
	}
	if err := poll(testCtx(b, time.Minute), time.Minute, func() bool {
		st := ts.srv.Stats()
		return st.LiveDecisions == 0 && st.Reclaims > reclaims
	}); err != nil {
		b.Fatalf("the decisions were not parked and their memory reclaimed: %v (%+v)", err, ts.srv.Stats())
	}
	parked := memNow(b)
	heapProfile(b, ".parked")
	peak := peakRSS(b)
	stdin.Close()
	wait()
	b.Logf("fresh server: %v\n%d documents open: %v\n%d members joined and wrote: %v\ndecisions parked: %v",
		base, docs, opened, docs*members, joined, parked)
	conns := float64(docs * members)
	kb := func(x int64, per float64) float64 { return float64(x) / per / 1024 }
	b.ReportMetric(kb(joined.rss-base.rss, float64(docs)), "KB/doc")
	b.ReportMetric(kb(joined.heap-base.heap, float64(docs)), "heapKB/doc")
	b.ReportMetric(kb(joined.stack-base.stack, float64(docs)), "stackKB/doc")
	b.ReportMetric(kb(joined.c-base.c, float64(docs)), "cKB/doc")
	b.ReportMetric(kb(joined.rss-base.rss, conns), "KB/conn")
	b.ReportMetric(kb(parked.rss-base.rss, float64(docs)), "parkedKB/doc")
	b.ReportMetric(kb(parked.heap-base.heap, float64(docs)), "parkedHeapKB/doc")
	b.ReportMetric(kb(parked.c-base.c, float64(docs)), "parkedCKB/doc")
	b.ReportMetric(float64(peak)/(1<<20), "peakMB")
	ts.stop()
}
