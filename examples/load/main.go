// Command load measures the collaboration server under load: fan-out
// latency, writes per second until every client converges, reconnect
// catch-up, memory, cold load, and acknowledged writes kept across a
// SIGKILL. It starts the server as a child process (this same binary with
// -serve) on a fresh bbolt file, so its memory is measured alone, and
// drives it from clients over loopback: in this process for latency, and
// for throughput in driver processes (this binary with -drive, one per 64
// writers unless -procs says otherwise; procs.go).
//
// The workload: one document with one choice decision of 10 options × 5
// criteria; for latency one writer sets a mark every 20 ms; for throughput
// every client writes at once, each writer count on a document of its
// own. A client the server drops (a slow consumer whose outbox filled)
// reconnects as the page does, and the runs report how many did.
//
//	go run ./load                      # the default runs
//	go run ./load -clients 2,16 -writes 512
//	go run ./load -writers 256 -procs 4   # 256 writers in 4 driver processes
//	go run ./load -nodes 3             # 3 nodes on JetStream R3 beside 1 bbolt node (cluster.go)
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

func main() {
	serve := flag.Bool("serve", false, "run as the server child")
	addr := flag.String("addr", "", "server address (with -serve)")
	data := flag.String("data", "", "data folder (with -serve)")
	clients := flag.String("clients", "2,16,64,256", "client counts for the fan-out runs")
	latencyWrites := flag.Int("latency-writes", 200, "writes per fan-out run")
	writes := flag.Int("writes", 2048, "writes per throughput run")
	writers := flag.String("writers", "64,256", "writer counts for the throughput runs")
	missed := flag.Int("missed", 1000, "writes a client misses before reconnecting")
	kill := flag.Int("kill-writes", 2000, "writes acknowledged before the SIGKILL")
	nodes := flag.Int("nodes", 0, "run the cluster figures with this many nodes instead (cluster.go)")
	natsURLs := flag.String("nats", "", "NATS URLs (with -serve: run a cluster node)")
	node := flag.String("node", "", "node name (with -serve -nats)")
	lease := flag.Duration("lease", 2*time.Second, "lease TTL of the cluster nodes")
	failClients := flag.Int("fail-clients", 16, "clients connected during the failover run")
	procs := flag.Int("procs", 0, "driver processes the throughput runs' writers are spread over (0: one per 64 writers)")
	driveFlag := flag.Bool("drive", false, "run as a driver child of a throughput run (procs.go)")
	doc := flag.String("doc", "", "document (with -drive)")
	first := flag.Int("first", 0, "index of the first writer (with -drive)")
	flag.Parse()
	if *driveFlag {
		if err := drive(*addr, *doc, *first, parseInts(*writers)[0], *writes); err != nil {
			fmt.Fprintln(os.Stderr, "driver:", err)
			os.Exit(1)
		}
		return
	}
	if *serve && *natsURLs != "" {
		if err := runNode(*addr, *natsURLs, *node, *lease); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *nodes > 0 {
		if err := runCluster(*nodes, parseInts(*clients), *latencyWrites, parseInts(*writers)[0], *writes, *failClients, *lease); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		return
	}
	if *serve {
		if err := runServer(*addr, *data); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if path := os.Getenv("LOAD_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(parseInts(*clients), *latencyWrites, parseInts(*writers), *writes, *missed, *kill, *procs); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func parseInts(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// child is the server process.
type child struct {
	cmd  *exec.Cmd
	addr string
	dir  string
	// doc is the document clients dialled from now on join.
	doc string
	// reconnects counts the redials of its clients that the server had
	// dropped (as slow consumers, mostly).
	reconnects atomic.Int64
	// frames and bytes count what its clients received.
	frames, bytes atomic.Int64
}

func startChild(dir string) (*child, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	return startChildAt(addr, dir)
}

// startChildAt starts the server on addr and dir (a restart keeps both).
func startChildAt(addr, dir string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-serve", "-addr", addr, "-data", dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, addr: addr, dir: dir}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			return c, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	return nil, fmt.Errorf("server did not start on %s", addr)
}

// url is where member joins the child's current document (plan-1 unless
// a run set doc).
func (c *child) url(member string) string {
	doc := c.doc
	if doc == "" {
		doc = "plan-1"
	}
	return "ws://" + c.addr + "/sync?doc=" + doc + "&member=" + member
}

// peakMB reads this process's peak resident memory (its clients').
func peakMB() float64 {
	return statusMB("/proc/self/status", "VmHWM:")
}

// rssMB reads the child's resident memory.
func (c *child) rssMB() float64 {
	return statusMB(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid), "VmRSS:")
}

// usage reads the child's CPU time so far (user and system) and its count
// of write system calls (/proc/<pid>/io syscw: write, writev, sendmsg and
// the like), or zeros where /proc does not tell.
func (c *child) usage() (cpu time.Duration, writes int64) {
	pid := c.cmd.Process.Pid
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// Fields after the command's closing parenthesis; utime and stime
		// are the 12th and 13th of them, in USER_HZ (100 a second).
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 12 {
				u, _ := strconv.ParseInt(f[11], 10, 64)
				s, _ := strconv.ParseInt(f[12], 10, 64)
				cpu = time.Duration(u+s) * 10 * time.Millisecond
			}
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "syscw: "); ok {
				writes, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return cpu, writes
}

func statusMB(path, field string) float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field) {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return -1
}

func (c *child) stop(sig syscall.Signal) {
	c.cmd.Process.Signal(sig)
	c.cmd.Wait()
}

// client is a minimal protocol client holding one decision's replica.
// When the server drops it (a slow consumer's outbox filled), it redials
// with backoff, as the page does: its hello names the server heads it
// holds, and the edit whose reply it was waiting for is sent again.
type client struct {
	name    string
	srv     *child
	url     string        // where it dialled, and redials
	alt     func() string // if set, where it redials instead (another node)
	mu      sync.Mutex    // guards ws, doc, id, known, pending and writes
	ws      *websocket.Conn
	doc     *crdt.Doc
	id      string
	known   []string   // heads of the server's last doc or changes frame, all applied
	pending *wire.Edit // the edit awaiting its reply
	replies chan *wire.Reply
	seen    func(c *client, heads string, at time.Time)
	bytes   atomic.Int64
	applied atomic.Int64
	redials atomic.Int64
	// wait is the backoff before the next redial; it grows while
	// connections keep failing early and is reset by one that lasted.
	wait      time.Duration
	connected time.Time
	closing   bool          // set by close, under mu
	noRedial  atomic.Bool   // a lost connection ends the client
	ready     chan struct{} // closed when the first document or changes arrived
	readyOne  sync.Once
	done      chan struct{}
}

func dialClient(c *child, name string, have map[string][]string, seen func(*client, string, time.Time)) (*client, error) {
	return dialWith(c, name, have, nil, "", seen)
}

// dialWith connects a client that already holds doc (the replica of
// decision id), as a client returning after a disconnect does.
func dialWith(c *child, name string, have map[string][]string, doc *crdt.Doc, id string, seen func(*client, string, time.Time)) (*client, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 16384, WriteBufferSize: 16384}
	url := c.url(name)
	ws, _, err := d.Dial(url, nil)
	if err != nil {
		return nil, err
	}
	cl := &client{name: name, srv: c, url: url, ws: ws, replies: make(chan *wire.Reply, 16), seen: seen, ready: make(chan struct{}), done: make(chan struct{}), doc: doc, id: id}
	if h, ok := have[id]; ok && doc != nil {
		cl.known = h
	}
	go cl.read()
	if err := cl.send(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version, Have: have}); err != nil {
		return nil, err
	}
	return cl, nil
}

// send writes a frame. A failed write closes the connection, so that the
// reader notices the loss and redials; the edit awaiting a reply is sent
// again then.
func (cl *client) send(m wire.Message) error {
	b, err := wire.Encode(m, wire.Binary)
	if err != nil {
		return err
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if err := cl.ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
		cl.ws.Close()
		if cl.noRedial.Load() {
			return err
		}
	}
	return nil
}

// redial replaces a lost connection, with jittered exponential backoff
// (50 ms doubling to 2 s) for up to a minute: a connection that fails
// within seconds of its dial counts as a failed attempt, so that a server
// dropping clients is not met by a storm of redials. It reports whether
// the client is connected again.
func (cl *client) redial() bool {
	start := time.Now()
	if cl.wait == 0 || time.Since(cl.connected) > 5*time.Second {
		cl.wait = 50 * time.Millisecond
	}
	var last error
	for attempt := 0; ; attempt++ {
		if attempt > 0 || cl.redials.Load() > 0 {
			time.Sleep(cl.wait/2 + time.Duration(rand.Int64N(int64(cl.wait/2)+1)))
			cl.wait = min(2*cl.wait, 2*time.Second)
		}
		cl.mu.Lock()
		closing := cl.closing
		cl.mu.Unlock()
		if closing {
			return false
		}
		if time.Since(start) > time.Minute {
			fmt.Fprintf(os.Stderr, "%s: could not reconnect in a minute: %v\n", cl.name, last)
			return false
		}
		d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 16384, WriteBufferSize: 16384}
		u := cl.url
		if cl.alt != nil && attempt > 0 {
			u = cl.alt()
		}
		ws, _, err := d.Dial(u, nil)
		if err != nil {
			last = err
			continue
		}
		cl.mu.Lock()
		if cl.closing {
			cl.mu.Unlock()
			ws.Close()
			return false
		}
		cl.ws = ws
		var have map[string][]string
		if cl.id != "" && cl.known != nil {
			have = map[string][]string{cl.id: cl.known}
		}
		pending := cl.pending
		cl.mu.Unlock()
		cl.send(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version, Have: have})
		if pending != nil {
			cl.send(pending)
		}
		cl.connected = time.Now()
		cl.redials.Add(1)
		cl.srv.reconnects.Add(1)
		return true
	}
}

func (cl *client) read() {
	defer close(cl.done)
	for {
		cl.mu.Lock()
		ws := cl.ws
		cl.mu.Unlock()
		_, data, err := ws.ReadMessage()
		if err != nil {
			ws.Close()
			if cl.noRedial.Load() || !cl.redial() {
				return
			}
			continue
		}
		now := time.Now()
		cl.bytes.Add(int64(len(data)))
		cl.srv.frames.Add(1)
		cl.srv.bytes.Add(int64(len(data)))
		m, err := wire.DecodeServerFrame(data, wire.Binary)
		if err != nil {
			fmt.Fprintln(os.Stderr, "decode:", err)
			return
		}
		switch f := m.(type) {
		case *wire.Error:
			fmt.Fprintf(os.Stderr, "%s: server error %s: %s\n", cl.name, f.Reason, f.Message)
		case *wire.Reply:
			var reset *crdt.Doc
			if f.Reset && len(f.Doc) > 0 {
				if reset, err = crdt.Load(f.Doc, nil, crdt.Options{}); err != nil {
					fmt.Fprintln(os.Stderr, "load:", err)
					return
				}
			}
			cl.mu.Lock()
			if cl.pending != nil && cl.pending.RID == f.RID {
				cl.pending = nil
			}
			if reset != nil {
				// A refused edit comes back with the server's document:
				// the replica's own change is dropped with it.
				cl.doc = reset
				cl.noteKnown(f.Heads)
			}
			cl.mu.Unlock()
			cl.replies <- f
		case *wire.Doc:
			d, err := crdt.Load(f.Doc, nil, crdt.Options{})
			if err != nil {
				fmt.Fprintln(os.Stderr, "load:", err)
				return
			}
			cl.mu.Lock()
			cl.takeDoc(d, f.ID, f.Heads)
			cl.mu.Unlock()
			cl.readyOne.Do(func() { close(cl.ready) })
		case *wire.Changes:
			cl.mu.Lock()
			if cl.doc == nil {
				cl.mu.Unlock()
				continue
			}
			_, err := cl.doc.ApplyChanges(f.Changes)
			if err == nil {
				cl.noteKnown(f.Heads)
			}
			cl.mu.Unlock()
			if err != nil {
				// Changes the replica cannot apply (they build on what it
				// lacks): join again, as the page does, and the server
				// sends what is missing, or the whole document.
				fmt.Fprintf(os.Stderr, "%s: apply: %v; joining again\n", cl.name, err)
				ws.Close()
				continue
			}
			cl.applied.Add(1)
			if cl.seen != nil {
				cl.seen(cl, strings.Join(f.Heads, ","), now)
			}
			cl.readyOne.Do(func() { close(cl.ready) })
		}
	}
}

// takeDoc takes a decision's whole document from the server. One that
// holds the heads the replica knows the server to have is the same
// history, caught up: the replica's own change not yet accepted is merged
// in. One the replica already holds entirely is older news. Any other is
// a rebased history, which replaces the replica's document (merging would
// bring the history the rebase dropped back); the edit in flight against
// the old one is then refused as stale and made again (write). The caller
// holds cl.mu.
func (cl *client) takeDoc(d *crdt.Doc, id string, heads []string) {
	if cl.doc != nil && cl.id == id {
		if h, err := crdt.ParseHeads(strings.Join(heads, ",")); err == nil && cl.doc.Has(h) {
			return
		}
		if k, err := crdt.ParseHeads(strings.Join(cl.known, ",")); err == nil && len(k) > 0 && d.Has(k) {
			d.Merge(cl.doc)
		}
	}
	cl.doc, cl.id = d, id
	cl.noteKnown(heads)
}

// noteKnown records heads the server sent as heads the replica holds, for
// the hello of a redial. The caller holds cl.mu.
func (cl *client) noteKnown(heads []string) {
	if h, err := crdt.ParseHeads(strings.Join(heads, ",")); err == nil && len(h) > 0 && cl.doc.Has(h) {
		cl.known = heads
	}
}

// cellOf is the cell write i sets.
func cellOf(i int) marks.Cell {
	return marks.Cell{Option: fmt.Sprintf("o%d", i%10), Criterion: fmt.Sprintf("c%d", (i/10)%5)}
}

// mark sets one cell and sends the edit; it returns the heads after the
// change (the key other clients see it under) without waiting.
func (cl *client) mark(i int) (string, error) {
	cl.mu.Lock()
	before := cl.doc.Heads()
	cell := cellOf(i)
	err := cl.doc.SetMark("q1", cell.Option, cell.Criterion, marks.All[i%3])
	if err == nil && cl.doc.Heads().Equal(before) {
		// Setting the value a cell already holds is no change at all.
		err = cl.doc.SetMark("q1", cell.Option, cell.Criterion, marks.All[(i+1)%3])
	}
	var ch []byte
	var after crdt.Heads
	if err == nil {
		ch, err = cl.doc.ChangesSince(before)
		after = cl.doc.Heads()
	}
	var e *wire.Edit
	if err == nil {
		e = &wire.Edit{Header: wire.Header{Kind: wire.KindEdit, RID: after.String()[:16]}, ID: cl.id, Changes: ch}
		cl.pending = e
	}
	cl.mu.Unlock()
	if err != nil {
		return "", err
	}
	return after.String(), cl.send(e)
}

// write sets one cell (mark) and waits for the server to accept it,
// making it again on the new history when it was refused as stale because
// the server rebased the decision meanwhile. It returns the heads the
// accepted write is known by.
func (cl *client) write(i int, timeout time.Duration) (string, error) {
	for {
		key, err := cl.mark(i)
		if err != nil {
			return "", err
		}
		r, err := cl.reply(timeout)
		if r != nil && r.Reason == question.Stale {
			continue
		}
		return key, err
	}
}

func (cl *client) reply(timeout time.Duration) (*wire.Reply, error) {
	select {
	case r := <-cl.replies:
		if !r.OK {
			return r, fmt.Errorf("%s refused: %s %s", r.Kind, r.Reason, r.Message)
		}
		return r, nil
	case <-cl.done:
		return nil, fmt.Errorf("%s: connection closed", cl.name)
	case <-time.After(timeout):
		return nil, fmt.Errorf("%s: no reply in %v", cl.name, timeout)
	}
}

// draft reads the replica's current draft (empty when it cannot be read).
func (cl *client) draft() crdt.Draft {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.doc == nil {
		return crdt.Draft{}
	}
	d, _ := cl.doc.Draft()
	return d
}

func (cl *client) heads() string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.doc == nil {
		return ""
	}
	return cl.doc.Heads().String()
}

func (cl *client) close() {
	cl.mu.Lock()
	cl.closing = true
	cl.ws.Close()
	cl.mu.Unlock()
	<-cl.done
}

// setup creates the decision on a fresh server.
func setup(c *child) (string, error) {
	cl, err := dialClient(c, "setup", nil, nil)
	if err != nil {
		return "", err
	}
	defer cl.close()
	q := question.Question{Text: "Which storage?"}
	for i := range 10 {
		q.Options = append(q.Options, question.Option{ID: fmt.Sprintf("o%d", i), Label: fmt.Sprintf("Option %d", i)})
	}
	for i := range 5 {
		q.Criteria = append(q.Criteria, question.Criterion{ID: fmt.Sprintf("c%d", i), Label: fmt.Sprintf("Criterion %d", i)})
	}
	if err := cl.send(&wire.Create{Header: wire.Header{Kind: wire.KindCreate, RID: "c"}, Cards: []wire.Card{{Key: "load", Definition: question.Definition{Questions: []question.Question{q}}}}}); err != nil {
		return "", err
	}
	r, err := cl.reply(10 * time.Second)
	if err != nil {
		return "", err
	}
	return r.Records[0].ID, nil
}

func connectAll(c *child, n int, seen func(*client, string, time.Time)) ([]*client, error) {
	out := make([]*client, n)
	for i := range out {
		cl, err := dialClient(c, fmt.Sprintf("m%d", i), nil, seen)
		if err != nil {
			return nil, err
		}
		out[i] = cl
	}
	for _, cl := range out {
		select {
		case <-cl.ready:
		case <-time.After(30 * time.Second):
			return nil, fmt.Errorf("%s got no document", cl.name)
		}
	}
	return out, nil
}

// redialled returns how many of cs reconnected after a drop, and how
// many redials they made in all.
func redialled(cs []*client) (clients, redials int64) {
	for _, c := range cs {
		if n := c.redials.Load(); n > 0 {
			clients++
			redials += n
		}
	}
	return clients, redials
}

// release runs the collector twice after closing a run's clients: their
// replicas' automerge memory is C memory freed by finalizers, which a
// small Go heap would otherwise leave for a long time (hundreds of
// replicas are gigabytes).
func release() {
	runtime.GC()
	runtime.GC()
}

func closeAll(cs []*client) {
	for _, c := range cs {
		c.close()
	}
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p)
	return s[i]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func run(clientCounts []int, latencyWrites int, writerCounts []int, writes, missed, killWrites, procs int) error {
	root, err := os.MkdirTemp("", "accord-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	var traced atomic.Pointer[child] // the server whose clients memtrace counts
	var memtrace func()
	if os.Getenv("LOAD_MEMTRACE") != "" {
		memtrace = func() {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			var frames, bytes int64
			if c := traced.Load(); c != nil {
				frames, bytes = c.frames.Load(), c.bytes.Load()
			}
			// automerge's results are freed by finalizers: a queue that
			// grows holds C memory the heap figure does not show.
			fin := []metrics.Sample{{Name: "/gc/finalizers/queued:finalizers"}, {Name: "/gc/finalizers/executed:finalizers"}}
			metrics.Read(fin)
			fmt.Fprintf(os.Stderr, "memtrace rss %.0f MB heap %.0f MB gcs %d finalizers waiting %d goroutines %d frames received %d (%.1f MB)\n",
				statusMB("/proc/self/status", "VmRSS:"), float64(ms.HeapInuse)/(1<<20), ms.NumGC, int64(fin[0].Value.Uint64()-fin[1].Value.Uint64()),
				runtime.NumGoroutine(), frames, float64(bytes)/(1<<20))
		}
	}
	gcCtx, stopGC := context.WithCancel(context.Background())
	gcDone := make(chan struct{})
	go func() {
		defer close(gcDone)
		collectGarbage(gcCtx, memtrace)
	}()
	defer func() { stopGC(); <-gcDone }()
	fmt.Println("| figure | result |")
	fmt.Println("|---|---|")

	srv, err := startChild(filepath.Join(root, "main"))
	if err != nil {
		return err
	}
	defer srv.stop(syscall.SIGTERM)
	traced.Store(srv)
	if _, err := setup(srv); err != nil {
		return err
	}
	base := srv.rssMB()

	// Fan-out latency: one writer every 20 ms.
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

	// Throughput: every writer at once until all converge, each writer
	// count on a document of its own, so that its replicas hold only its
	// own history, and the writers in driver processes of their own
	// (procs.go), so that the clients' cost is not this process's.
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

	// Catch-up after missed writes.
	{
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
	}

	// Memory per open document.
	{
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
	}

	// Acknowledged writes across SIGKILL, then cold load.
	{
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
	}
	return nil
}
