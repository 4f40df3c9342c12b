package main

// The cluster runs (-nodes N): the same workload against N Accord nodes
// sharing documents through an embedded three-server JetStream cluster
// (R3 stream, R3 lease bucket), each node a child process of its own, and
// against one bbolt node in the same run, for the figures side by side.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/persist/jetstream"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/cluster"
	"github.com/accord-crdt/accord/sync/server"
)

// runNode is a cluster node child: the sync server on a FencedStore over
// the R3 stream, behind the lease Router.
func runNode(addr, natsURLs, name string, lease time.Duration) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("node", name)
	nc, err := nats.Connect(natsURLs, nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx := context.Background()
	var js *jetstream.Store
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if js, err = jetstream.Open(ctx, nc, &jetstream.Options{Replicas: 3}); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return err
	}
	store := cluster.NewFencedStore(js)
	defer store.Close()
	srv, err := server.New(server.Options{
		Store: store, Logger: log,
		Authorize: func(r *http.Request, doc string) (question.Member, error) {
			return question.Member{Login: r.URL.Query().Get("member"), Write: true}, nil
		},
		// The runs measure the server, not its abuse limits: a writer
		// sends as fast as its replies come back, and the memory run
		// opens 100 connections as one member.
		FrameRate: -1, ByteRate: -1, MaxMemberConnections: -1,
	})
	if err != nil {
		return err
	}
	router, err := cluster.New(ctx, srv, cluster.Options{
		Conn: nc, Node: name, URL: "http://" + addr + "/sync", Replicas: 3,
		LeaseTTL: lease, Lost: func(doc string) { store.Forget(doc); srv.CloseDocument(doc) }, Logger: log,
	})
	if err != nil {
		return err
	}
	store.RequireLease(router)
	mux := http.NewServeMux()
	mux.Handle("/sync", router)
	hs := &http.Server{Addr: addr, Handler: mux}
	sctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-sctx.Done()
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(c)
		router.Close()
		hs.Shutdown(c)
	}()
	if err := hs.ListenAndServe(); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// startNATS runs n clustered JetStream servers in this process on random
// loopback ports and returns their client URLs.
func startNATS(root string, n int) (string, func(), error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return "", nil, err
	}
	var routes []*url.URL
	for i := range n {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: "127.0.0.1:" + strconv.Itoa(ports[n+i])})
	}
	var servers []*natsserver.Server
	stop := func() {
		for _, s := range servers {
			s.Shutdown()
		}
	}
	var urls []string
	for i := range n {
		s, err := natsserver.NewServer(&natsserver.Options{
			ServerName: "nats-" + strconv.Itoa(i), Host: "127.0.0.1", Port: ports[i],
			JetStream: true, StoreDir: filepath.Join(root, "nats-"+strconv.Itoa(i)),
			Cluster: natsserver.ClusterOpts{Name: "load", Host: "127.0.0.1", Port: ports[n+i]},
			Routes:  routes, NoSigs: true, NoLog: true,
		})
		if err != nil {
			stop()
			return "", nil, err
		}
		go s.Start()
		servers = append(servers, s)
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	for _, s := range servers {
		if !s.ReadyForConnections(30 * time.Second) {
			stop()
			return "", nil, errors.New("NATS did not start")
		}
	}
	return strings.Join(urls, ","), stop, nil
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// startNode starts a cluster node child and waits until it listens (it
// opens its store first).
func startNode(natsURLs, name string, lease time.Duration) (*child, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-serve", "-addr", addr, "-nats", natsURLs, "-node", name, "-lease", lease.String())
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, addr: addr}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			return c, nil
		}
	}
	cmd.Process.Kill()
	return nil, fmt.Errorf("node %s did not start on %s", name, addr)
}

// spread dials n clients of doc, client i on nodes[i % len(nodes)]; a
// client whose node is gone redials the others in turn.
func spread(nodes []*child, doc string, n int, seen func(*client, string, time.Time)) ([]*client, error) {
	out := make([]*client, n)
	for i := range out {
		home := nodes[i%len(nodes)]
		home.doc = doc
		cl, err := dialClient(home, fmt.Sprintf("m%d", i), nil, seen)
		if err != nil {
			return nil, err
		}
		next := i
		cl.alt = func() string {
			next++
			return nodes[next%len(nodes)].url(cl.name)
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

// fanOut has writer set a mark every 20 ms, writes times, and returns for
// each write how long until every other client of cs had it.
func fanOut(cs []*client, writer *client, writes int, seenMu *sync.Mutex, last map[string]time.Time, count map[string]int) ([]time.Duration, int, error) {
	sent := map[string]time.Time{}
	for i := range writes {
		t0 := time.Now()
		key, err := writer.write(i, 10*time.Second)
		if err != nil {
			return nil, 0, err
		}
		sent[key] = t0
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	var lat []time.Duration
	incomplete := 0
	seenMu.Lock()
	defer seenMu.Unlock()
	for key, t0 := range sent {
		if count[key] < len(cs)-1 {
			incomplete++
			continue
		}
		lat = append(lat, last[key].Sub(t0))
	}
	return lat, incomplete, nil
}

// throughput has every client write per marks at once and returns the
// writes per second until all hold the same heads.
func throughput(cs []*client, per int) (float64, error) {
	start := time.Now()
	if err := writeEach(cs, 0, per); err != nil {
		return 0, err
	}
	if !waitSame(cs, 60*time.Second) {
		return 0, errors.New("the writers did not converge")
	}
	return float64(per*len(cs)) / time.Since(start).Seconds(), nil
}

// writeEach has every client make per marks at once, each waiting for its
// reply before the next; cs[i] writes as the first+i-th writer of the run.
func writeEach(cs []*client, first, per int) error {
	var wg sync.WaitGroup
	errc := make(chan error, len(cs))
	for wi, cl := range cs {
		wg.Go(func() {
			for i := range per {
				if _, err := cl.write((first+wi)*7+i, 60*time.Second); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

func waitSame(cs []*client, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if sameHeads(cs) != "" {
			return true
		}
	}
	return false
}

// recovery kills victim with SIGKILL, calls restart (which may bring a
// process back), and measures until a mark writer makes after the kill
// is acknowledged, and until every client holds it.
func recovery(cs []*client, writer *client, victim *child, restart func() error) (acked, all time.Duration, err error) {
	victim.cmd.Process.Signal(syscall.SIGKILL)
	victim.cmd.Wait()
	killed := time.Now()
	if err := restart(); err != nil {
		return 0, 0, err
	}
	var key string
	for i := 0; ; i++ {
		if time.Since(killed) > time.Minute {
			return 0, 0, errors.New("no write acknowledged within a minute of the kill")
		}
		k, err := writer.mark(100_000 + i)
		if err != nil {
			return 0, 0, err
		}
		if _, err := writer.reply(30 * time.Second); err == nil {
			key = k
			break
		}
	}
	h, err := crdt.ParseHeads(key)
	if err != nil {
		return 0, 0, err
	}
	acked = time.Since(killed)
	for _, cl := range cs {
		for {
			cl.mu.Lock()
			ok := cl.doc != nil && cl.doc.Has(h)
			cl.mu.Unlock()
			if ok {
				break
			}
			if time.Since(killed) > time.Minute {
				return 0, 0, fmt.Errorf("%s did not converge within a minute of the kill", cl.name)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return acked, time.Since(killed), nil
}

// runCluster prints the cluster figures beside one node's.
func runCluster(nodes int, clientCounts []int, latencyWrites int, writers, writes, failClients int, lease time.Duration) error {
	root, err := os.MkdirTemp("", "accord-load-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	natsURLs, stopNATS, err := startNATS(root, 3)
	if err != nil {
		return err
	}
	defer stopNATS()
	var cnodes []*child
	for i := range nodes {
		n, err := startNode(natsURLs, "node-"+strconv.Itoa(i), lease)
		if err != nil {
			return err
		}
		defer func() { n.stop(syscall.SIGTERM) }()
		cnodes = append(cnodes, n)
	}
	single, err := startChild(filepath.Join(root, "single"))
	if err != nil {
		return err
	}
	defer func() { single.stop(syscall.SIGTERM) }()
	var gcStop atomic.Bool
	go func() { // see run: the replicas' C memory is freed by finalizers
		for !gcStop.Load() {
			time.Sleep(250 * time.Millisecond)
			release()
		}
	}()
	defer gcStop.Store(true)

	fmt.Printf("| figure | 1 node, bbolt | %d nodes, JetStream R3 |\n|---|---|---|\n", nodes)
	for _, n := range clientCounts {
		var cells []string
		for _, sc := range []struct {
			nodes []*child
		}{{[]*child{single}}, {cnodes}} {
			doc := fmt.Sprintf("fanout-%d", n)
			var mu sync.Mutex
			last, count := map[string]time.Time{}, map[string]int{}
			seen := func(_ *client, heads string, at time.Time) {
				mu.Lock()
				if at.After(last[heads]) {
					last[heads] = at
				}
				count[heads]++
				mu.Unlock()
			}
			// The document's first client, on node 0, makes node 0 its
			// owner; the writer is on node 1, so that in the cluster every
			// write crosses nodes on its way in and on its way out.
			sc.nodes[0].doc = doc
			if _, err := setup(sc.nodes[0]); err != nil {
				return err
			}
			cs, err := spread(sc.nodes, doc, n, seen)
			if err != nil {
				return err
			}
			writer := cs[1%len(cs)]
			lat, incomplete, err := fanOut(cs, writer, latencyWrites, &mu, last, count)
			closeAll(cs)
			if err != nil {
				return err
			}
			note := ""
			if incomplete > 0 {
				note = fmt.Sprintf(", %d writes not seen by all", incomplete)
			}
			cells = append(cells, fmt.Sprintf("%s / %s%s", ms(pct(lat, .5)), ms(pct(lat, .99)), note))
		}
		fmt.Printf("| fan-out p50 / p99, %d clients (in the cluster spread over the nodes, the writer not on the owner) | %s | %s |\n", n, cells[0], cells[1])
	}

	var cells []string
	for _, nodes := range [][]*child{{single}, cnodes} {
		doc := fmt.Sprintf("writers-%d", writers)
		nodes[0].doc = doc
		if _, err := setup(nodes[0]); err != nil {
			return err
		}
		cs, err := spread(nodes, doc, writers, nil)
		if err != nil {
			return err
		}
		wps, err := throughput(cs, writes/writers)
		closeAll(cs)
		if err != nil {
			return err
		}
		cells = append(cells, fmt.Sprintf("%.0f", wps))
	}
	fmt.Printf("| writes/s to convergence, %d writers spread over the nodes, %d writes | %s | %s |\n", writers, writes/writers*writers, cells[0], cells[1])

	// Failover: SIGKILL the document's owner while clients are connected.
	// One node comes back only if something restarts it (here at once);
	// in the cluster the others take over once the lease expires.
	cells = nil
	for _, sc := range []struct {
		nodes   []*child
		victim  *child
		restart func(c *child) error
	}{
		{[]*child{single}, single, func(c *child) error {
			n, err := startChildAt(c.addr, c.dir)
			if err == nil {
				single = n
			}
			return err
		}},
		{cnodes, cnodes[0], func(*child) error { return nil }},
	} {
		doc := "failover"
		sc.nodes[0].doc = doc
		if _, err := setup(sc.nodes[0]); err != nil {
			return err
		}
		cs, err := spread(sc.nodes, doc, failClients, nil)
		if err != nil {
			return err
		}
		writer := cs[1%len(cs)]
		acked, all, err := recovery(cs, writer, sc.victim, func() error { return sc.restart(sc.victim) })
		closeAll(cs)
		if err != nil {
			return err
		}
		cells = append(cells, fmt.Sprintf("%s / %s", ms(acked), ms(all)))
	}
	fmt.Printf("| failover: SIGKILL of the owner → a new write acknowledged / held by all %d clients (redialling with backoff, 50 ms doubling to 2 s) | %s (restarted at once) | %s (lease TTL %v) |\n", failClients, cells[0], cells[1], lease)
	return nil
}
