package cluster

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// Defaults for the zero fields of Options.
const (
	DefaultBucket       = "ACCORD_OWNERS"
	DefaultLeaseTTL     = 2 * time.Second
	DefaultReleaseAfter = 45 * time.Second
)

// Options configure New. Conn, Node and URL are required.
type Options struct {
	// Conn reaches the NATS cluster that holds the leases.
	Conn *nats.Conn
	// Node names this node, uniquely in the cluster.
	Node string
	// URL is where the other nodes reach this node's Router (the same
	// handler, e.g. "http://10.0.0.7:8080/sync"), for the connections they
	// forward.
	URL string
	// Bucket is the KV bucket of the leases (DefaultBucket if empty) and
	// Replicas its replication factor (1 if zero; 3 in production).
	Bucket   string
	Replicas int
	// LeaseTTL is how long a lease lives without renewal
	// (DefaultLeaseTTL if zero): how long a dead owner's documents wait
	// before another node takes them.
	LeaseTTL time.Duration
	// ReleaseAfter is how long a document with no connection keeps its
	// lease (DefaultReleaseAfter if zero). It must exceed the local
	// server's IdleUnload, so that the lease outlives the loaded state.
	ReleaseAfter time.Duration
	// Lost, if set, is called (from the Router's goroutine; it must not
	// block) when the lease of a document this node served is lost or
	// released: the host closes the document there, FencedStore.Forget
	// and sync/server's Server.CloseDocument, so that a commit still in
	// flight is fenced and a later owner's turn here starts from the
	// stored state (see docs/SCALING.md).
	Lost func(doc string)
	// Acquired, if set, is called (from the goroutine that took the lease;
	// it must not block) when this node takes a document's lease: the host
	// starts the document's background work there, e.g. the Planner's
	// answer delivery (Driver.Watch and Poke), which must run where the
	// document is decided (see OwnerOnly).
	Acquired func(doc string)
	// HandOff, if set, is called by Close for each document this node
	// holds, before its lease is released: the host commits what the
	// document accepted here and closes its connections (sync/server's
	// Server.HandOff), so that the next owner loads everything this node
	// acknowledged and its clients redial to it at once. ctx bounds it
	// (handOffTimeout; the lease is renewed meanwhile).
	HandOff func(ctx context.Context, doc string) error
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// ErrStopping is returned by Owner once Close has begun: a stopping node
// takes no more leases.
var ErrStopping = errors.New("cluster: node stopping")

// Router serves the sync protocol of a cluster node: a connection for a
// document this node holds the lease of goes to the local handler (a
// sync/server.Server on a FencedStore); one for a document another node
// holds is forwarded to that node, WebSocket and all; one for a document
// nobody holds takes its lease first. Leases live in a JetStream KV bucket:
// created only if absent, renewed by compare-and-set on their revision
// every LeaseTTL/3, expired by the bucket's TTL when their owner stops.
type Router struct {
	local http.Handler
	kv    natsjs.KeyValue
	o     Options
	self  []byte
	run   string // this run's owner.Run
	log   *slog.Logger

	mu     sync.Mutex
	leases map[string]*lease
	closed bool
	stats  routerCounts
	// waits are the lease changes connections are held for (see
	// awaitMove), one poller per lease revision however many wait.
	waits map[leaseAt]chan struct{}

	transport http.RoundTripper // to the owners
	stop      chan struct{}
	done      chan struct{}
	workers   sync.WaitGroup // renewals and lease pollers
}

// New opens (or creates) the lease bucket, waits until it answers reads
// (at most 10 seconds; a replicated bucket just created answers none for
// a moment) and starts the renewal loop. Close stops it.
func New(ctx context.Context, local http.Handler, o Options) (*Router, error) {
	if o.Conn == nil || o.Node == "" || o.URL == "" || local == nil {
		return nil, errors.New("cluster: New needs a local handler, Options.Conn, Node and URL")
	}
	if _, err := url.Parse(o.URL); err != nil {
		return nil, fmt.Errorf("cluster: Options.URL: %w", err)
	}
	if o.Bucket == "" {
		o.Bucket = DefaultBucket
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.ReleaseAfter == 0 {
		o.ReleaseAfter = DefaultReleaseAfter
	}
	if o.LeaseTTL < time.Second || o.ReleaseAfter < 0 {
		return nil, errors.New("cluster: Options.LeaseTTL must be at least 1s and ReleaseAfter not negative")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	js, err := natsjs.New(o.Conn)
	if err != nil {
		return nil, err
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, natsjs.KeyValueConfig{
		Bucket:      o.Bucket,
		Description: "Accord: which node decides for each document",
		History:     1,
		TTL:         o.LeaseTTL,
		Replicas:    o.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: lease bucket %s: %w", o.Bucket, err)
	}
	if err := awaitReads(ctx, kv); err != nil {
		return nil, fmt.Errorf("cluster: lease bucket %s: %w", o.Bucket, err)
	}
	run := rand.Text()
	self, _ := json.Marshal(owner{Node: o.Node, URL: o.URL, Run: run})
	// A dead owner's machine may not refuse the connection but never
	// answer it: the dial gives up well within the time a held
	// connection waits (see ServeHTTP).
	transport := forwardTransport()
	transport.DialContext = (&net.Dialer{Timeout: o.LeaseTTL / 4, KeepAlive: 30 * time.Second}).DialContext
	r := &Router{
		local:     local,
		kv:        kv,
		o:         o,
		self:      self,
		run:       run,
		log:       o.Logger,
		leases:    make(map[string]*lease),
		waits:     make(map[leaseAt]chan struct{}),
		transport: transport,
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	go r.renewLoop()
	return r, nil
}

// ServeHTTP routes one sync connection (?doc=<id>) to the node that owns
// the document.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	doc := req.URL.Query().Get("doc")
	if doc == "" || len(doc) > 256 {
		http.Error(w, "missing or overlong ?doc= parameter", http.StatusBadRequest)
		return
	}
	if to := req.Header.Get(headerForwarded); to != "" {
		// Forwarded here: serve only while the lease is still ours.
		if to != r.o.Node || !r.enter(doc) {
			w.Header().Set(headerMoved, r.o.Node)
			r.refuse(w, "document moved; reconnect", 0)
			return
		}
		defer r.leave(doc)
		r.local.ServeHTTP(&hijackWriter{ResponseWriter: w, r: r, doc: doc}, req)
		return
	}
	// A connection whose owner is gone (dead, or handing the document
	// off) is held rather than refused, until the lease expires or is
	// released and this node or another takes it: a refused client would
	// back off, and its backoff, not the lease, would set how long it
	// waits. The hold ends within the lease's TTL (plus this bound's
	// margin), which is when a dead owner's lease has expired.
	deadline := time.Now().Add(r.o.LeaseTTL * 3 / 2)
	for {
		// Bounded, so that a node cut off from NATS answers 503 within
		// half a lease, and the client tries another node, rather than
		// hanging.
		octx, ocancel := context.WithTimeout(req.Context(), r.o.LeaseTTL/2)
		node, target, rev, err := r.owner(octx, doc)
		ocancel()
		if errors.Is(err, errEarlierRun) && r.awaitMove(req.Context(), doc, rev, deadline) {
			continue
		}
		if errors.Is(err, ErrStopping) {
			// Another node serves the document at once.
			r.refuse(w, "node stopping; reconnect", 0)
			return
		}
		if err != nil {
			r.log.Warn("cluster: no owner", "doc", doc, "err", err)
			r.refuse(w, "document unavailable; retry", r.o.LeaseTTL/4)
			return
		}
		if node == r.o.Node {
			if !r.enter(doc) {
				r.refuse(w, "document moved; reconnect", 0)
				return
			}
			defer r.leave(doc)
			r.local.ServeHTTP(&hijackWriter{ResponseWriter: w, r: r, doc: doc}, req)
			return
		}
		gone := r.forward(w, req, doc, node, target)
		if gone == nil {
			return
		}
		if errors.Is(gone, syscall.ECONNREFUSED) {
			r.breakLease(doc, node, rev)
		}
		if !r.awaitMove(req.Context(), doc, rev, deadline) {
			r.log.Warn("cluster: owner gone and its lease not released", "doc", doc, "owner", node, "err", gone)
			r.count(func(c *routerCounts) { c.forwardFailed++ })
			r.refuse(w, "owner unreachable; retry", r.o.LeaseTTL/4)
			return
		}
	}
}

// refuse answers 503, saying when the client may try again.
func (r *Router) refuse(w http.ResponseWriter, msg string, retry time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int((retry+time.Second-1)/time.Second)))
	http.Error(w, msg, http.StatusServiceUnavailable)
}

// enter counts a connection of doc served here, if the lease is held.
func (r *Router) enter(doc string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.leases[doc]
	if !ok || l.leaving {
		return false
	}
	l.conns++
	return true
}

func (r *Router) leave(doc string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, ok := r.leases[doc]; ok {
		l.conns--
		l.lastConn = time.Now()
	}
}

// hijackWriter records the connection the local handler takes over (the
// WebSocket upgrade), so that losing the lease can close it.
type hijackWriter struct {
	http.ResponseWriter
	r   *Router
	doc string
}

func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("cluster: the response cannot be hijacked")
	}
	c, rw, err := h.Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.r.mu.Lock()
	l, held := w.r.leases[w.doc]
	if held {
		l.hijacked[c] = struct{}{}
	}
	w.r.mu.Unlock()
	if !held {
		// Lost between the check and the upgrade.
		c.Close()
		return nil, nil, errors.New("cluster: document moved")
	}
	return &trackedConn{Conn: c, forget: func() {
		w.r.mu.Lock()
		if l, ok := w.r.leases[w.doc]; ok {
			delete(l.hijacked, c)
		}
		w.r.mu.Unlock()
	}}, rw, nil
}

// trackedConn forgets itself when closed.
type trackedConn struct {
	net.Conn
	once   sync.Once
	forget func()
}

func (c *trackedConn) Close() error {
	c.once.Do(c.forget)
	return c.Conn.Close()
}

// Close hands off every document this node holds, then stops. It takes no
// more leases from the moment it is called (Owner returns ErrStopping), and
// for each lease it holds, in parallel: serves no new connection for the
// document, has the host commit what the document accepted and close its
// connections (Options.HandOff), and releases the lease, so that another
// node takes the document at once and the clients, redialling, reach it.
// Without HandOff the leases are released without waiting. The local
// handler is the caller's to shut down afterwards.
func (r *Router) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	docs := make([]string, 0, len(r.leases))
	for doc, l := range r.leases {
		l.leaving = true
		docs = append(docs, doc)
	}
	r.mu.Unlock()
	var (
		wg   sync.WaitGroup
		emu  sync.Mutex
		errs []error
		sem  = make(chan struct{}, 16)
	)
	for _, doc := range docs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := r.handOff(doc); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(r.stop)
	<-r.done
	r.workers.Wait()
	// Leases taken while Close began (an Owner call already past its
	// check) are released too.
	r.mu.Lock()
	late := make([]string, 0, len(r.leases))
	for doc, l := range r.leases {
		l.leaving = true
		late = append(late, doc)
	}
	r.mu.Unlock()
	for _, doc := range late {
		if err := r.handOff(doc); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// routerCounts are the Router's counters (Stats), guarded by Router.mu.
type routerCounts struct {
	taken, handedOff, lost, forwarded, forwardFailed, broken uint64
	slowestRenewal                                           time.Duration
}

func (r *Router) count(f func(*routerCounts)) {
	r.mu.Lock()
	f(&r.stats)
	r.mu.Unlock()
}

// RouterStats are a Router's counts since it started.
type RouterStats struct {
	// Leases is how many documents this node holds the lease of now.
	Leases int
	// Taken counts leases taken; HandedOff those released by Close after
	// their document was committed; Lost those lost (not renewed in time,
	// or taken by another node after they expired).
	Taken, HandedOff, Lost uint64
	// Forwarded counts requests forwarded to another node, and
	// ForwardFailed those whose owner could not be reached (nor its
	// lease taken over while the request was held).
	Forwarded, ForwardFailed uint64
	// Broken counts leases of other nodes this node deleted because the
	// owner's address refused connections (its process is gone), so that
	// the document fails over at once rather than when the lease expires.
	Broken uint64
	// SlowestRenewal is the longest a successful lease renewal took:
	// against LeaseTTL/3, the margin left before a stall loses leases.
	SlowestRenewal time.Duration
}

// Stats returns the Router's counts.
func (r *Router) Stats() RouterStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return RouterStats{Leases: len(r.leases), Taken: r.stats.taken, HandedOff: r.stats.handedOff, Lost: r.stats.lost,
		Forwarded: r.stats.forwarded, ForwardFailed: r.stats.forwardFailed, Broken: r.stats.broken, SlowestRenewal: r.stats.slowestRenewal}
}
