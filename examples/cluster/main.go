// Command cluster starts three Accord nodes on this machine, each with its
// own embedded NATS server, the three forming one JetStream cluster: every
// document is stored in a three-replica stream, each document is decided
// by the one node holding its lease, and a client may dial any node.
//
//	go run ./cluster            # the example's page, three nodes on 127.0.0.1:8081, :8082, :8083
//	go run ./cluster -bare      # bare sync nodes on 127.0.0.1:8181, :8182, :8183 (/sync)
//	go run ./cluster -demo      # bare nodes, and two clients on two nodes saving one decision at once
//
// Run from the examples folder: the page nodes are the example server
// (./server, built into the data folder) in cluster mode, one process
// each; they share the cluster's session key and MCP token (the first to
// start stores its own there), so any node's sign-in link and token work
// on all. Each prints its page's address, its sign-in links and the MCP
// token, and what to try next follows once all three serve. The sync endpoint of bare node i is
// ws://127.0.0.1:818i/sync?doc=<id>&member=<login> (the Go client in
// sync/replica dials it). A connection to a node that does not own the
// document is forwarded to the owner. Data lives in -data (a temp folder
// by default). See docs/SCALING.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/accord-crdt/accord/persist/jetstream"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/cluster"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

const nodes = 3

func run() error {
	data := flag.String("data", "", "data folder (a temp folder if empty)")
	demo := flag.Bool("demo", false, "run two clients on two bare nodes saving one decision at once, then exit")
	bare := flag.Bool("bare", false, "start bare sync nodes instead of the example's page")
	level := flag.String("log", "warn", "log level")
	flag.Parse()
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	if *data == "" {
		dir, err := os.MkdirTemp("", "accord-cluster-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*data = dir
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var routes []*url.URL
	for i := range nodes {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: "127.0.0.1:" + strconv.Itoa(6231+i)})
	}
	var ns []*natsserver.Server
	for i := range nodes {
		s, err := natsserver.NewServer(&natsserver.Options{
			ServerName: "nats-" + strconv.Itoa(i+1),
			Host:       "127.0.0.1", Port: 4231 + i,
			JetStream: true, StoreDir: filepath.Join(*data, "nats-"+strconv.Itoa(i+1)),
			Cluster: natsserver.ClusterOpts{Name: "accord", Host: "127.0.0.1", Port: 6231 + i},
			Routes:  routes, NoSigs: true, NoLog: true,
		})
		if err != nil {
			return err
		}
		go s.Start()
		defer s.Shutdown()
		ns = append(ns, s)
	}
	for _, s := range ns {
		if !s.ReadyForConnections(30 * time.Second) {
			return errors.New("NATS did not start")
		}
	}

	var natsURLs []string
	for i := range nodes {
		natsURLs = append(natsURLs, ns[i].ClientURL())
	}
	all := strings.Join(natsURLs, ",")
	if !*bare && !*demo {
		var addrs []string
		for i := range nodes {
			addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(8081+i))
		}
		return runPages(ctx, pagesOptions{Data: *data, NATS: all, Level: *level, Addrs: addrs, Out: os.Stdout})
	}
	for i := range nodes {
		n, err := startNode(ctx, i+1, ns[i].ClientURL(), log)
		if err != nil {
			return fmt.Errorf("node %d: %w", i+1, err)
		}
		defer n.stop()
		fmt.Printf("node %d: ws://%s/sync?doc=<id>&member=<login>  metrics http://%s/metrics  (NATS %s)\n", i+1, n.addr, n.addr, ns[i].ClientURL())
	}
	if *demo {
		return runDemo(ctx)
	}
	fmt.Printf(`
Three nodes share one JetStream cluster; a client may dial any node, and
each document is decided by the node holding its lease.

NATS: %s

Next, from the examples folder:
  go run ./cluster -demo        two clients on two nodes save one decision at once
  go run ./cluster              the example's page on three nodes instead
  go run ./load -nodes 3        the load test against three nodes of its own
See docs/OPERATIONS.md and docs/SCALING.md. Ctrl-C stops everything.
`, all)
	<-ctx.Done()
	return nil
}

type node struct {
	addr   string
	hs     *http.Server
	srv    *server.Server
	router *cluster.Router
	nc     *nats.Conn
}

func startNode(ctx context.Context, i int, natsURL string, log *slog.Logger) (*node, error) {
	log = log.With("node", i)
	nc, err := nats.Connect(natsURL, nats.MaxReconnects(-1))
	if err != nil {
		return nil, err
	}
	// The cluster elects its JetStream leaders in the first seconds.
	var js *jetstream.Store
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if js, err = jetstream.Open(ctx, nc, &jetstream.Options{Replicas: 3, Logger: log}); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	store := cluster.NewFencedStore(js)
	srv, err := server.New(server.Options{Store: store, Authorize: authorize, Logger: log})
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(8180+i)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	router, err := cluster.New(ctx, srv, cluster.Options{
		Conn: nc, Node: "node-" + strconv.Itoa(i), URL: "http://" + addr + "/sync",
		Replicas: 3, Lost: func(doc string) { store.Forget(doc); srv.CloseDocument(doc) }, Logger: log,
		HandOff: srv.HandOff,
	})
	if err != nil {
		return nil, err
	}
	store.RequireLease(router)
	mux := http.NewServeMux()
	mux.Handle("/sync", router)
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		st := router.Stats()
		fmt.Fprintf(w, "accord_cluster_leases %d\naccord_cluster_handoffs_total %d\naccord_cluster_leases_lost_total %d\n"+
			"accord_cluster_forwarded_total %d\naccord_cluster_fenced_commits_total %d\n",
			st.Leases, st.HandedOff, st.Lost, st.Forwarded, store.Fenced())
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	return &node{addr: addr, hs: hs, srv: srv, router: router, nc: nc}, nil
}

func (n *node) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = n.router.Close() // hands each document off: commit, release, reconnect
	_ = n.srv.Shutdown(ctx)
	_ = n.hs.Shutdown(ctx)
	n.nc.Close()
}

// authorize lets anyone named by ?member= write: a demo, not a service.
func authorize(r *http.Request, doc string) (question.Member, error) {
	m := r.URL.Query().Get("member")
	if m == "" {
		return question.Member{}, server.ErrUnauthorized
	}
	return question.Member{Login: m, Write: true}, nil
}

// runDemo has ana on node 1 and ben on node 2 save one decision at once:
// one save settles it, the other is refused as stale, and both see the
// same record.
func runDemo(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	dial := func(i int, member string) (*replica.Client, error) {
		u := fmt.Sprintf("ws://127.0.0.1:%d/sync?doc=demo&member=%s", 8180+i, member)
		return replica.Dial(ctx, u, replica.Options{})
	}
	ana, err := dial(1, "ana")
	if err != nil {
		return err
	}
	defer ana.Close()
	ben, err := dial(2, "ben")
	if err != nil {
		return err
	}
	defer ben.Close()
	q := question.Question{ID: "q1", Text: "Which storage engine?", Options: []question.Option{{ID: "bolt", Label: "bbolt"}, {ID: "js", Label: "JetStream"}}}
	recs, err := ana.Create(ctx, wire.Card{Key: "engine", Origin: question.FromPerson, Definition: question.Definition{Questions: []question.Question{q}}})
	if err != nil {
		return err
	}
	id := recs[0].ID
	for _, c := range []*replica.Client{ana, ben} {
		for {
			if _, _, err := c.Draft(id); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := ben.Choose(id, "q1", "js", true); err != nil {
		return err
	}
	if err := ben.Flush(ctx, id); err != nil {
		return err
	}
	for {
		_, h1, _ := ana.Draft(id)
		_, h2, _ := ben.Draft(id)
		if h1.Equal(h2) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	type result struct {
		who string
		r   []wire.SubmitResult
		err error
	}
	out := make(chan result, 2)
	for _, c := range []*replica.Client{ana, ben} {
		go func() {
			who, _ := c.Member()
			r, err := c.Submit(ctx, id)
			out <- result{who, r, err}
		}()
	}
	for range 2 {
		res := <-out
		switch {
		case res.err != nil:
			return res.err
		case res.r[0].OK:
			fmt.Printf("%s's save (node %s) settled the decision: %s\n", res.who, map[string]string{"ana": "1", "ben": "2"}[res.who], res.r[0].Record.Answer.By)
		default:
			fmt.Printf("%s's save was refused: %s (%s)\n", res.who, res.r[0].Reason, res.r[0].Message)
		}
	}
	return nil
}
