package main

// Joining a cluster (docs/SCALING.md): with -nats URL (ACCORD_NATS) the
// server keeps its decisions in a replicated JetStream stream shared with
// the other nodes instead of its own bbolt file, and every request about a
// document (the sync socket, the API, MCP) is served by the node holding
// the document's lease, forwarded there by whichever node received it.
// Without -nats nothing here runs: bbolt under -data, as before.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/persist/jetstream"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/sync/cluster"
	"github.com/accord-crdt/accord/sync/server"
)

// clusterOptions configure a cluster node; an empty NATS means none.
type clusterOptions struct {
	// NATS is the NATS cluster's URLs, comma-separated (-nats, ACCORD_NATS).
	NATS string
	// Node names this node uniquely (-node, ACCORD_NODE; default host:port).
	Node string
	// URL is where the other nodes reach this one (-node-url,
	// ACCORD_NODE_URL; default http://<listen address>).
	URL string
	// Replicas of the stream and the lease bucket (-nats-replicas,
	// ACCORD_NATS_REPLICAS; default 3, 1 for a single NATS server).
	Replicas int
	// LeaseTTL is how long a stopped node's leases outlive it
	// (-lease-ttl, ACCORD_LEASE_TTL; default cluster.DefaultLeaseTTL).
	LeaseTTL time.Duration
}

// clusterFlags registers the cluster flags; call before flag.Parse.
func clusterFlags() *clusterOptions {
	o := &clusterOptions{}
	flag.StringVar(&o.NATS, "nats", env("ACCORD_NATS", ""), "NATS URLs: join a cluster of nodes sharing decisions through JetStream (default: none, bbolt under -data)")
	flag.StringVar(&o.Node, "node", env("ACCORD_NODE", ""), "this node's name in the cluster (default host:port)")
	flag.StringVar(&o.URL, "node-url", env("ACCORD_NODE_URL", ""), "where the other nodes reach this one (default http://<listen address>)")
	replicas, _ := strconv.Atoi(env("ACCORD_NATS_REPLICAS", "3"))
	flag.IntVar(&o.Replicas, "nats-replicas", replicas, "replicas of the JetStream stream and lease bucket")
	ttl, _ := time.ParseDuration(env("ACCORD_LEASE_TTL", "0s"))
	flag.DurationVar(&o.LeaseTTL, "lease-ttl", ttl, "how long a crashed node's documents wait for another node (default 2s; see docs/SCALING.md)")
	return o
}

// nodeStore is where a server keeps its decisions: its own bbolt file, or
// the cluster's stream.
type nodeStore struct {
	persist.Store
	bolt *boltstore.Store // alone
	// In a cluster:
	nc     *nats.Conn
	fenced *cluster.FencedStore
	opts   clusterOptions
	router atomic.Pointer[cluster.Router] // from route on
	host   *hostState                     // the plans, Chat and Planner runs
}

// openStore opens the PostgreSQL store of ACCORD_POSTGRES_URL (store.go),
// the bbolt file under demo.Dir, or joins the cluster of demo.Cluster.
func openStore(ctx context.Context, demo demoOptions, ln net.Listener, log *slog.Logger) (*nodeStore, error) {
	o := demo.Cluster
	if err := os.MkdirAll(demo.Dir, 0o755); err != nil { // the demo's research keeps its work there
		return nil, err
	}
	if url := os.Getenv("ACCORD_POSTGRES_URL"); url != "" { // store.go
		return openPostgres(ctx, url, demo, log)
	}
	if o.NATS == "" {
		// ACCORD_UNSAFE_NOSYNC=1 is for measuring what durability costs
		// per write (docs/BENCHMARKS.md); bbolt then logs a warning.
		noSync := os.Getenv("ACCORD_UNSAFE_NOSYNC") == "1"
		b, err := boltstore.Open(filepath.Join(demo.Dir, "accord.db"), &boltstore.Options{Logger: log, NoSync: noSync})
		if err != nil {
			return nil, err
		}
		return &nodeStore{Store: b, bolt: b}, nil
	}
	if o.URL == "" {
		o.URL = "http://" + ln.Addr().String()
	}
	if o.Node == "" {
		host, _ := os.Hostname()
		o.Node = host + ":" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	}
	if o.Replicas <= 0 {
		return nil, fmt.Errorf("cluster: -nats-replicas %d: at least 1", o.Replicas)
	}
	nc, err := nats.Connect(o.NATS, nats.Name("accord "+o.Node), nats.MaxReconnects(-1))
	if err != nil {
		return nil, fmt.Errorf("cluster: connect to NATS %s: %w", o.NATS, err)
	}
	var js *jetstream.Store
	err = whileClusterStarts(ctx, func() (err error) {
		js, err = jetstream.Open(ctx, nc, &jetstream.Options{Replicas: o.Replicas, Logger: log})
		return err
	})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("cluster: open the JetStream store: %w", err)
	}
	var host *hostState
	err = whileClusterStarts(ctx, func() (err error) {
		host, err = openHostState(ctx, nc, o.Replicas)
		return err
	})
	if err != nil {
		js.Close()
		nc.Close()
		return nil, err
	}
	f := cluster.NewFencedStore(js)
	log.Info("joined a cluster", "node", o.Node, "url", o.URL, "nats", o.NATS, "replicas", o.Replicas)
	return &nodeStore{Store: f, nc: nc, fenced: f, opts: o, host: host}, nil
}

// forApp is the store newApp works on: the store itself alone (bbolt's
// file's folder, or the data folder, also keeps the plan), the node's
// store in a cluster.
func (s *nodeStore) forApp() persist.Store {
	if s.fenced == nil {
		return s.Store
	}
	return s
}

// backup serves POST /admin/backup: bbolt's hot copy alone; a cluster's
// stream is backed up with NATS's own tools.
func (s *nodeStore) backup(token string, log *slog.Logger) http.Handler {
	if s.bolt != nil {
		return backupHandler(s.bolt, token, log)
	}
	if _, ok := s.Store.(pgStore); ok {
		return pgBackup()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "this node keeps its decisions in JetStream: back up the stream with NATS's tools (nats stream backup ACCORD)", http.StatusNotFound)
	})
}

// route returns h as this node serves it. Alone that is h. In a cluster,
// /sync goes through the lease Router (forwarded to the document's owner
// unless this node is it), and so does every other request about a
// document (the API and MCP, ?doc=, plan-1 by default), so that the
// document's Planner work runs where it is decided; the page itself,
// /metrics, /healthz and /admin are this node's.
func (s *nodeStore) route(ctx context.Context, a *app, h http.Handler, log *slog.Logger) (http.Handler, error) {
	if s.fenced == nil {
		return h, nil
	}
	opts := cluster.Options{
		Conn: s.nc, Node: s.opts.Node, URL: s.opts.URL + "/sync", Replicas: s.opts.Replicas,
		Lost: func(doc string) { s.fenced.Forget(doc); a.srv.CloseDocument(doc) }, Logger: log,
		// The plan, Chat and Planner runs its last owner stored come
		// first; then the answer driver watches the document and
		// delivers what that owner left claimed.
		Acquired: func(doc string) {
			if err := a.takeOver(context.Background(), doc); err != nil {
				log.Error("cluster: loading the document's plan and Chat", "doc", doc, "err", err)
			}
			a.driver.Watch(doc)
			a.driver.Poke(doc)
		},
		// A planned stop: commit, then release the lease.
		HandOff:  a.srv.HandOff,
		LeaseTTL: s.opts.LeaseTTL,
	}
	var r *cluster.Router
	err := whileClusterStarts(ctx, func() (err error) {
		r, err = cluster.New(ctx, a.srv, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.router.Store(r)
	s.fenced.RequireLease(r)
	registerClusterMetrics(a.metrics, r, s.fenced)
	mux := http.NewServeMux()
	mux.Handle("/sync", r)
	mux.Handle("/", r.Handler(func(req *http.Request) string {
		if strings.HasPrefix(req.URL.Path, "/api/") || req.URL.Path == "/mcp" {
			return docParam(req)
		}
		return ""
	}, h))
	return mux, nil
}

// clusterStartup bounds how long a node waits for its NATS cluster at
// start: a cluster that has just started elects its JetStream leaders in
// its first seconds, and on a busy machine creating a replicated stream or
// bucket can outlast one JetStream API timeout.
const clusterStartup = 30 * time.Second

// whileClusterStarts calls open until it succeeds, ctx ends or
// clusterStartup has passed, and returns open's last error.
func whileClusterStarts(ctx context.Context, open func() error) error {
	deadline := time.Now().Add(clusterStartup)
	for {
		err := open()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// handOff, in a cluster, hands every document this node holds to the
// next owner (cluster.Router.Close: commit, release the lease, close the
// connections, which redial there), while the node still serves its
// other requests: a planned stop costs its clients a redial, not a lease
// expiry.
func (s *nodeStore) handOff() error {
	if r := s.router.Load(); r != nil {
		return r.Close()
	}
	return nil
}

// cut drops the node's NATS connection, as a crash would (the tests'
// stand-in for SIGKILL): its leases expire rather than being released.
func (s *nodeStore) cut() {
	if s.nc != nil {
		s.nc.Close()
	}
}

// close releases the leases (after the server committed what it
// accepted), then closes the store.
func (s *nodeStore) close() error {
	var errs []error
	if r := s.router.Load(); r != nil {
		errs = append(errs, r.Close())
	}
	errs = append(errs, s.Store.Close())
	if s.nc != nil {
		s.nc.Close()
	}
	return errors.Join(errs...)
}

// authoritiesFor is what the answer driver works through: the sync server
// alone; in a cluster, the sync server for the documents this node holds
// the lease of (cluster.OwnerOnly), so that the driver of a node that is
// not a document's owner leaves its answers to the owner's.
func authoritiesFor(store persist.Store, srv *server.Server) planner.Authorities {
	s, ok := store.(*nodeStore)
	if !ok || s.fenced == nil {
		return srv
	}
	return ownerDoer{s: s, srv: srv}
}

type ownerDoer struct {
	s   *nodeStore
	srv *server.Server
}

func (o ownerDoer) Do(ctx context.Context, doc string, fn func(a *question.Authority) error) error {
	r := o.s.router.Load()
	if r == nil { // starting: no lease is held yet
		if planner.FromDriver(ctx) {
			return nil
		}
		return cluster.ErrNotOwner
	}
	owned := cluster.NewOwnerOnly(r, o.srv)
	owned.Skip = planner.FromDriver // the driver's polls pass over documents held elsewhere
	return owned.Do(ctx, doc, fn)
}

// registerClusterMetrics shows on /metrics what the node does for the
// cluster: the leases it holds, the documents it handed off or lost, the
// requests it forwarded to other owners and its commits refused as fenced.
func registerClusterMetrics(reg prometheus.Registerer, r *cluster.Router, f *cluster.FencedStore) {
	counter := func(name, help string, v func(cluster.RouterStats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v(r.Stats())) })
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "accord_cluster_leases", Help: "Documents whose lease this node holds."},
			func() float64 { return float64(r.Stats().Leases) }),
		counter("accord_cluster_leases_taken_total", "Leases this node took.", func(s cluster.RouterStats) uint64 { return s.Taken }),
		counter("accord_cluster_handoffs_total", "Documents handed off to the next owner on a planned stop (committed, lease released).", func(s cluster.RouterStats) uint64 { return s.HandedOff }),
		counter("accord_cluster_leases_lost_total", "Leases lost: not renewed in time, or taken by another node after they expired.", func(s cluster.RouterStats) uint64 { return s.Lost }),
		counter("accord_cluster_forwarded_total", "Requests forwarded to the node owning their document.", func(s cluster.RouterStats) uint64 { return s.Forwarded }),
		counter("accord_cluster_forward_failures_total", "Forwarded requests whose owner could not be reached.", func(s cluster.RouterStats) uint64 { return s.ForwardFailed }),
		counter("accord_cluster_leases_broken_total", "Leases of owners whose address refused connections (their process gone), deleted by this node so their documents fail over at once.", func(s cluster.RouterStats) uint64 { return s.Broken }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "accord_cluster_fenced_commits_total", Help: "Commits refused because another node committed to the document since this one loaded it."},
			func() float64 { return float64(f.Fenced()) }),
	)
}
