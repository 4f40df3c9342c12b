// Command load measures the collaboration server under load: fan-out
// latency, writes per second until every client converges, reconnect
// catch-up, memory, cold load, and acknowledged writes kept across a
// SIGKILL. It starts the server as a child process (this same binary with
// -serve) on a fresh bbolt file, so its memory is measured alone, and
// drives it from N in-process clients over loopback.
//
// The workload: one document with one choice decision of 10 options × 5
// criteria; for latency one writer sets a mark every 20 ms; for throughput
// every client writes at once.
//
//	go run ./load                      # the default runs
//	go run ./load -clients 2,16 -writes 512
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
	flag.Parse()
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
	if err := run(parseInts(*clients), *latencyWrites, parseInts(*writers), *writes, *missed, *kill); err != nil {
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
}

func startChild(dir string) (*child, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
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

func (c *child) url(member string) string {
	return "ws://" + c.addr + "/sync?doc=plan-1&member=" + member
}

// rssMB reads the child's resident memory.
func (c *child) rssMB() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
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
type client struct {
	name     string
	ws       *websocket.Conn
	mu       sync.Mutex
	doc      *crdt.Doc
	id       string
	replies  chan *wire.Reply
	seen     func(c *client, heads string, at time.Time)
	bytes    atomic.Int64
	applied  atomic.Int64
	ready    chan struct{}
	readyOne sync.Once
	done     chan struct{}
}

func dialClient(c *child, name string, have map[string][]string, seen func(*client, string, time.Time)) (*client, error) {
	return dialWith(c, name, have, nil, "", seen)
}

// dialWith connects a client that already holds doc (the replica of
// decision id), as a client returning after a disconnect does.
func dialWith(c *child, name string, have map[string][]string, doc *crdt.Doc, id string, seen func(*client, string, time.Time)) (*client, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 16384, WriteBufferSize: 16384}
	ws, _, err := d.Dial(c.url(name), nil)
	if err != nil {
		return nil, err
	}
	cl := &client{name: name, ws: ws, replies: make(chan *wire.Reply, 16), seen: seen, ready: make(chan struct{}), done: make(chan struct{}), doc: doc, id: id}
	go cl.read()
	if err := cl.send(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version, Have: have}); err != nil {
		return nil, err
	}
	return cl, nil
}

func (cl *client) send(m wire.Message) error {
	b, err := wire.Encode(m, wire.Binary)
	if err != nil {
		return err
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.ws.WriteMessage(websocket.BinaryMessage, b)
}

func (cl *client) read() {
	defer close(cl.done)
	for {
		_, data, err := cl.ws.ReadMessage()
		if err != nil {
			return
		}
		now := time.Now()
		cl.bytes.Add(int64(len(data)))
		m, err := wire.DecodeServerFrame(data, wire.Binary)
		if err != nil {
			fmt.Fprintln(os.Stderr, "decode:", err)
			return
		}
		switch f := m.(type) {
		case *wire.Error:
			fmt.Fprintf(os.Stderr, "%s: server error %s: %s\n", cl.name, f.Reason, f.Message)
		case *wire.Reply:
			cl.replies <- f
		case *wire.Doc:
			d, err := crdt.Load(f.Doc, nil, crdt.Options{})
			if err != nil {
				fmt.Fprintln(os.Stderr, "load:", err)
				return
			}
			cl.mu.Lock()
			if cl.doc != nil {
				d.Merge(cl.doc)
			}
			cl.doc, cl.id = d, f.ID
			cl.mu.Unlock()
			cl.readyOne.Do(func() { close(cl.ready) })
		case *wire.Changes:
			cl.mu.Lock()
			if cl.doc == nil {
				cl.mu.Unlock()
				continue
			}
			_, err := cl.doc.ApplyChanges(f.Changes)
			cl.mu.Unlock()
			if err != nil {
				fmt.Fprintln(os.Stderr, "apply:", err)
				return
			}
			cl.applied.Add(1)
			if cl.seen != nil {
				cl.seen(cl, strings.Join(f.Heads, ","), now)
			}
			cl.readyOne.Do(func() { close(cl.ready) })
		}
	}
}

// mark sets one cell and sends the edit; it returns the heads after the
// change (the key other clients see it under) without waiting.
func (cl *client) mark(i int) (string, error) {
	cl.mu.Lock()
	before := cl.doc.Heads()
	opt := fmt.Sprintf("o%d", i%10)
	crit := fmt.Sprintf("c%d", (i/10)%5)
	err := cl.doc.SetMark("q1", opt, crit, marks.All[i%3])
	if err == nil && cl.doc.Heads().Equal(before) {
		// Setting the value a cell already holds is no change at all.
		err = cl.doc.SetMark("q1", opt, crit, marks.All[(i+1)%3])
	}
	var ch []byte
	var after crdt.Heads
	if err == nil {
		ch, err = cl.doc.ChangesSince(before)
		after = cl.doc.Heads()
	}
	cl.mu.Unlock()
	if err != nil {
		return "", err
	}
	key := after.String()
	return key, cl.send(&wire.Edit{Header: wire.Header{Kind: wire.KindEdit, RID: key[:16]}, ID: cl.id, Changes: ch})
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

func (cl *client) heads() string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.doc == nil {
		return ""
	}
	return cl.doc.Heads().String()
}

func (cl *client) close() { cl.ws.Close(); <-cl.done }

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

func run(clientCounts []int, latencyWrites int, writerCounts []int, writes, missed, killWrites int) error {
	root, err := os.MkdirTemp("", "accord-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	fmt.Println("| figure | result |")
	fmt.Println("|---|---|")

	srv, err := startChild(filepath.Join(root, "main"))
	if err != nil {
		return err
	}
	defer srv.stop(syscall.SIGTERM)
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
			key, err := w.mark(i)
			if err != nil {
				return err
			}
			mu.Lock()
			sent[key] = t0
			mu.Unlock()
			if _, err := w.reply(10 * time.Second); err != nil {
				return err
			}
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
		fmt.Printf("| fan-out, %d clients: p50 / p99 / max | %s / %s / %s (%d writes, %d not seen by all) |\n",
			n, ms(pct(lat, .5)), ms(pct(lat, .99)), ms(pct(lat, 1)), len(sent), incomplete)
		if n == clientCounts[len(clientCounts)-1] {
			fmt.Printf("| server memory with %d connections | %.1f MB (%.1f MB before; %.1f KB per connection) |\n",
				n, srv.rssMB(), base, (srv.rssMB()-base)*1024/float64(n))
		}
		closeAll(cs)
	}
	time.Sleep(200 * time.Millisecond)
	fmt.Printf("| server memory after the fan-out runs | %.1f MB |\n", srv.rssMB())

	// Throughput: every writer at once until all converge.
	for _, n := range writerCounts {
		cs, err := connectAll(srv, n, nil)
		if err != nil {
			return err
		}
		per := writes / n
		start := time.Now()
		var wg sync.WaitGroup
		errc := make(chan error, n)
		for wi, cl := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range per {
					if _, err := cl.mark(wi*7 + i); err != nil {
						errc <- err
						return
					}
					if _, err := cl.reply(60 * time.Second); err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		select {
		case err := <-errc:
			return err
		default:
		}
		converged := false
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			h := cs[0].heads()
			same := true
			for _, cl := range cs[1:] {
				if cl.heads() != h {
					same = false
					break
				}
			}
			if same {
				converged = true
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		el := time.Since(start)
		status := "converged"
		if !converged {
			status = "DID NOT CONVERGE"
		}
		fmt.Printf("| writes/s to convergence, %d writers, %d writes | %.0f (%s in %s) |\n", n, per*n, float64(per*n)/el.Seconds(), status, ms(el))
		closeAll(cs)
	}

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
			if _, err := cs[0].mark(i); err != nil {
				return err
			}
			if _, err := cs[0].reply(10 * time.Second); err != nil {
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
			cl := &client{name: "extra", ws: ws, replies: make(chan *wire.Reply, 16), ready: make(chan struct{}), done: make(chan struct{})}
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
		var acked []string
		killAt := killWrites
		for i := 0; ; i++ {
			key, err := cs[0].mark(i)
			if err != nil {
				break
			}
			if i == killAt {
				k.cmd.Process.Signal(syscall.SIGKILL) // mid-flight: this write is not acknowledged
				k.cmd.Wait()
				break
			}
			if _, err := cs[0].reply(10 * time.Second); err != nil {
				break
			}
			acked = append(acked, key)
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
		kept := 0
		for _, key := range acked {
			h, err := crdt.ParseHeads(key)
			if err == nil && cl.doc.Has(h) {
				kept++
			}
		}
		fmt.Printf("| acknowledged writes kept after SIGKILL | %d of %d |\n", kept, len(acked))
		fmt.Printf("| cold load of the document after restart (connect to document) | %s |\n", ms(cold))
		cl.close()
		k2.stop(syscall.SIGTERM)
	}
	return nil
}

var _ = context.Background
