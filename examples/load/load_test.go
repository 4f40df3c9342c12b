package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/server"
)

// cutter is a TCP proxy in front of the server whose connections a test
// can cut, as the server does when it drops a slow consumer.
type cutter struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newCutter(t *testing.T, target string) *cutter {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutter{l: l, target: target}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); io.Copy(out, in); out.Close() }()
			go func() { defer p.wg.Done(); io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

// serve starts a sync server with opts on an in-memory store, where
// members are who the URL's member parameter says, and returns its
// address.
func serve(t *testing.T, opts server.Options) string {
	t.Helper()
	opts.Store = memstore.New()
	opts.Authorize = func(r *http.Request, doc string) (question.Member, error) {
		return question.Member{Login: r.URL.Query().Get("member"), Write: true}, nil
	}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return strings.TrimPrefix(hs.URL, "http://")
}

func (p *cutter) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestClientsReconnectAfterDrop: clients whose connections are cut redial,
// the writer's edit awaiting its reply is sent again and acknowledged, and
// every client converges; the redials are counted.
func TestClientsReconnectAfterDrop(t *testing.T) {
	p := newCutter(t, serve(t, server.Options{}))
	c := &child{addr: p.l.Addr().String()}
	if _, err := setup(c); err != nil {
		t.Fatal(err)
	}
	cs, err := connectAll(c, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(cs)
	const writes = 40
	for i := range writes {
		if i == writes/2 {
			p.cut() // the edit just sent may or may not have reached the server
		}
		if _, err := cs[0].mark(i); err != nil {
			t.Fatal(err)
		}
		if _, err := cs[0].reply(20 * time.Second); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	testutil.EventuallyWithin(t, 20*time.Second, "the clients to converge", func() (bool, string) {
		h := []string{cs[0].heads(), cs[1].heads(), cs[2].heads()}
		return h[1] == h[0] && h[2] == h[0], strings.Join(h, " / ")
	})
	if clients, redials := redialled(cs); clients != 3 || redials < 3 || c.reconnects.Load() != redials {
		t.Fatalf("%d clients reconnected with %d redials (%d counted by the server child), want all 3", clients, redials, c.reconnects.Load())
	}
}

// TestSlowConsumerReconnects: a client that stops reading while others
// write is dropped by the server as a slow consumer (its outbox fills),
// reconnects when it reads again, and catches up; the writer never
// notices.
func TestSlowConsumerReconnects(t *testing.T) {
	var dropped atomic.Bool
	c := &child{addr: serve(t, server.Options{
		Outbox: 4,
		Logger: slog.New(dropWatch{&dropped}),
		// The writer writes as fast as its replies come until the slow
		// client is dropped: thousands of frames, which the default rate
		// limit would slow and then close, as the load command's server
		// does not either.
		FrameRate: -1, ByteRate: -1,
	})}
	if _, err := setup(c); err != nil {
		t.Fatal(err)
	}
	cs, err := connectAll(c, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(cs)
	w, slow := cs[0], cs[1]
	slow.mu.Lock() // its reader blocks before applying the next frame
	blocked := true
	defer func() { // a failure below must not leave closeAll waiting for it
		if blocked {
			slow.mu.Unlock()
		}
	}()
	// Write until the socket's buffers and the outbox are full and the
	// server drops the slow client.
	for i := 0; !dropped.Load(); i++ {
		if i == 20000 {
			t.Fatal("the server never dropped the client that stopped reading")
		}
		if _, err := w.mark(i); err != nil {
			t.Fatal(err)
		}
		if _, err := w.reply(20 * time.Second); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	slow.mu.Unlock()
	blocked = false
	testutil.EventuallyWithin(t, 20*time.Second, "the slow client to catch up", func() (bool, string) {
		s, h := slow.heads(), w.heads()
		return s == h, s + " / " + h
	})
	if slow.redials.Load() == 0 || w.redials.Load() != 0 {
		t.Fatalf("redials: slow %d, writer %d; want the slow client's only", slow.redials.Load(), w.redials.Load())
	}
}

// dropWatch is a slog handler that notes the server's slow-consumer drop.
type dropWatch struct{ dropped *atomic.Bool }

func (h dropWatch) Enabled(context.Context, slog.Level) bool { return true }
func (h dropWatch) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "slow") {
		h.dropped.Store(true)
	}
	return nil
}
func (h dropWatch) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h dropWatch) WithGroup(string) slog.Handler      { return h }

// TestWritersThroughRebases: writers that overwrite the matrix's cells far
// past the decision's rebase threshold have edits in flight refused as
// stale when the server rebases; each makes its write again on the
// rebased document; every client, a reader too, takes the rebased
// document in place of its own (never merging the history the rebase
// dropped back in), and all end with the same heads and draft. The load command's throughput runs are
// this, with more writers.
func TestWritersThroughRebases(t *testing.T) {
	c := &child{addr: serve(t, server.Options{})}
	if _, err := setup(c); err != nil {
		t.Fatal(err)
	}
	cs, err := connectAll(c, 5, nil) // four writers and a reader
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(cs)
	const per = 400 // 1,600 marks on 50 cells: more than a thousand overwritten
	if err := writeEach(cs[:4], 0, per); err != nil {
		t.Fatal(err)
	}
	if !waitSame(cs, 20*time.Second) {
		t.Fatalf("no convergence: %s / %s / %s / %s / %s", cs[0].heads(), cs[1].heads(), cs[2].heads(), cs[3].heads(), cs[4].heads())
	}
	for _, cl := range cs {
		cl.mu.Lock()
		n := cl.doc.Budget().Changes
		cl.mu.Unlock()
		if n >= 4*per {
			t.Fatalf("%s's history holds %d changes after %d writes: no rebase, or its history merged back", cl.name, n, 4*per)
		}
	}
	d0 := cs[0].draft()
	for _, cl := range cs[1:] {
		if !cl.draft().Equal(d0) {
			t.Fatalf("%s's draft differs from %s's", cl.name, cs[0].name)
		}
	}
}

// TestMain lets the test binary stand in for the load command's driver
// processes and its server child: throughputIn and w5Run start this same
// executable with -drive, and w5Run with -serve.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "-drive" || os.Args[1] == "-serve") {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestThroughputInDrivers: a throughput run whose writers are spread over
// driver processes (this test binary, as -drive) writes every write,
// crosses the decision's rebases, sees every writer reach the heads the
// server holds, and sums what the drivers report.
func TestThroughputInDrivers(t *testing.T) {
	c := &child{addr: serve(t, server.Options{}), doc: "drivers"}
	if _, err := setup(c); err != nil {
		t.Fatal(err)
	}
	const writers, per = 6, 250 // 1,500 marks on 50 cells: past a rebase
	res, err := throughputIn(c, writers, per, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !res.converged {
		t.Fatal("the writers did not converge")
	}
	if res.frames == 0 || res.peakMB <= 0 {
		t.Fatalf("the drivers reported %d frames and %.1f MB", res.frames, res.peakMB)
	}
	// What the writers converged on is what the server holds.
	cl, err := dialClient(c, "reader", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.close()
	<-cl.ready
	if h := cl.heads(); h != res.heads {
		t.Fatalf("a fresh client holds %s; the writers converged on %s", h, res.heads)
	}
	cl.mu.Lock()
	n := cl.doc.Budget().Changes
	cl.mu.Unlock()
	if n >= writers*per {
		t.Fatalf("the history holds %d changes after %d writes: no rebase happened", n, writers*per)
	}
}

// TestW5 runs W5 tiny, end to end: a server child on bbolt, two
// documents of three members in two driver processes (this test binary),
// two seconds of writing. Every write made is seen by every other member
// of its document, and the figures are there and sane.
func TestW5(t *testing.T) {
	res, err := w5Run(t.TempDir(), w5Config{Docs: 2, Members: 3, Seconds: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", strings.Join(res.rows(), "\n"))
	if !res.finished || res.made == 0 || res.seenAll != res.made || res.failed != 0 {
		t.Fatalf("%d writes made (%d failed), %d seen by every other member, finished %v; want all seen", res.made, res.failed, res.seenAll, res.finished)
	}
	// Each member writes about once a second: 2 documents × 3 members × 2 s.
	if res.planned != 12 || res.made < 6 || res.made > 24 {
		t.Fatalf("%d writes made, %d planned", res.made, res.planned)
	}
	if res.pairs != int64(2*res.made) {
		t.Fatalf("%d (write, other member) pairs observed for %d writes of 3 members", res.pairs, res.made)
	}
	if res.p50 <= 0 || res.p50 > res.p99 || res.p99 > res.max || res.max > 10*time.Second {
		t.Fatalf("fan-out p50 / p99 / max %v / %v / %v", res.p50, res.p99, res.max)
	}
	if res.serverCPU <= 0 || res.clientCPU <= 0 || res.phase < 2*time.Second {
		t.Fatalf("server CPU %v, clients' CPU %v over %v", res.serverCPU, res.clientCPU, res.phase)
	}
	if res.rssBefore <= 0 || res.rssConn <= 0 || res.peakRSS < res.rssConn || res.peakRSS < res.rssAfter {
		t.Fatalf("server RSS: %.1f MB before, %.1f MB connected, %.1f MB after, %.1f MB peak", res.rssBefore, res.rssConn, res.rssAfter, res.peakRSS)
	}
	if res.loadStart == ([3]float64{}) && res.loadEnd == ([3]float64{}) {
		t.Fatal("no load average read")
	}
	rows := strings.Join(res.rows(), "\n")
	for _, want := range []string{"fan-out p50 / p99 / max", "writes seen by every other member / planned", "server CPU per write", "server RSS peak", "client CPU per received change", "load average"} {
		if !strings.Contains(rows, want) {
			t.Fatalf("no %q in\n%s", want, rows)
		}
	}
}
