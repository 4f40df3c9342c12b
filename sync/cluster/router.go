package cluster

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
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

// headerForwarded marks a request a node forwarded to the owner it found:
// the owner serves it only while it still holds the lease, and never
// forwards it again.
const headerForwarded = "Accord-Forwarded-To"

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

// owner is a lease's value.
type owner struct {
	Node string `json:"node"`
	URL  string `json:"url"`
	// Run tells this run of the node from an earlier one, whose lease
	// must expire rather than be trusted (see Owner).
	Run string `json:"run,omitempty"`
}

type lease struct {
	// hijacked are the connections being served for the document here,
	// closed when the lease goes, so that their clients redial and reach
	// the new owner instead of staying on an authority that no longer is.
	hijacked map[net.Conn]struct{}
	rev      uint64
	renewed  time.Time // when the renewal that succeeded was sent
	conns    int       // connections being served for the document
	lastConn time.Time // when the last one ended
	// leaving is set while the lease is handed off (Close): no new
	// connection is served; it is renewed until released.
	leaving bool
	// renewing is set while a renewal of the lease is under way, so that
	// a slow one is not started again beside itself.
	renewing bool
	// releasing is set once the handoff is about to release the lease:
	// no renewal starts, since one would move the revision the release
	// is made at.
	releasing bool
}

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

// leaseAt names one revision of a document's lease.
type leaseAt struct {
	doc string
	rev uint64
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

func leaseKey(doc string) string { return base64.RawURLEncoding.EncodeToString([]byte(doc)) }

// Owner returns the node that holds doc's lease, taking it for this node
// if nobody does.
func (r *Router) Owner(ctx context.Context, doc string) (node, url string, err error) {
	node, url, _, err = r.owner(ctx, doc)
	return node, url, err
}

// errEarlierRun is owner's error for a lease held by this node's previous
// run, which must expire (its revision is returned beside it).
var errEarlierRun = errors.New("cluster: the lease is held by this node's previous run")

// owner is Owner, with the revision of the lease when another node (or an
// earlier run of this one) holds it.
func (r *Router) owner(ctx context.Context, doc string) (node, url string, rev uint64, err error) {
	r.mu.Lock()
	if l, ok := r.leases[doc]; ok {
		leaving := l.leaving
		r.mu.Unlock()
		if leaving {
			return "", "", 0, fmt.Errorf("cluster: %q is being handed off: %w", doc, ErrStopping)
		}
		return r.o.Node, r.o.URL, 0, nil
	}
	stopping := r.closed
	r.mu.Unlock()
	key := leaseKey(doc)
	// uncertain is when the first attempt whose answer was lost was sent:
	// it may have taken the lease, which then counts from no earlier.
	var uncertain time.Time
	took := func(rev uint64, sent time.Time) (string, string, uint64, error) {
		r.mu.Lock()
		r.leases[doc] = &lease{rev: rev, renewed: sent, lastConn: time.Now(), hijacked: make(map[net.Conn]struct{})}
		r.stats.taken++
		r.mu.Unlock()
		r.log.Info("cluster: lease taken", "doc", doc, "node", r.o.Node)
		if r.o.Acquired != nil {
			r.o.Acquired(doc)
		}
		return r.o.Node, r.o.URL, 0, nil
	}
	for attempt := 0; attempt < 20; attempt++ {
		sent := time.Now()
		var rev uint64
		var err error = natsjs.ErrKeyExists
		if !stopping {
			rev, err = r.kv.Create(ctx, key, r.self)
		}
		if err == nil {
			return took(rev, sent)
		}
		if transient(err) && ctx.Err() == nil {
			// A bucket whose stream is electing a leader (just created,
			// or a server gone) answers nothing for a moment.
			if uncertain.IsZero() {
				uncertain = sent
			}
			if err := pause(ctx, time.Duration(attempt+1)*20*time.Millisecond); err != nil {
				return "", "", 0, err
			}
			continue
		}
		if !takenMeanwhile(err) {
			return "", "", 0, fmt.Errorf("cluster: take lease of %q: %w", doc, err)
		}
		e, err := r.kv.Get(ctx, key)
		if errors.Is(err, natsjs.ErrKeyNotFound) && stopping {
			return "", "", 0, fmt.Errorf("cluster: %q has no owner: %w", doc, ErrStopping)
		}
		if errors.Is(err, natsjs.ErrKeyNotFound) {
			// Expired or released meanwhile, or read from a replica that
			// has not seen the lease yet (KV reads may go to any replica):
			// try again.
			if err := pause(ctx, time.Duration(attempt+1)*5*time.Millisecond); err != nil {
				return "", "", 0, err
			}
			continue
		}
		if transient(err) && ctx.Err() == nil {
			// The bucket's replicas answer reads once they are caught up:
			// none may yet, just after the bucket was created or a server
			// came back.
			if err := pause(ctx, time.Duration(attempt+1)*20*time.Millisecond); err != nil {
				return "", "", 0, err
			}
			continue
		}
		if err != nil {
			return "", "", 0, fmt.Errorf("cluster: read lease of %q: %w", doc, err)
		}
		var o owner
		if err := json.Unmarshal(e.Value(), &o); err != nil {
			return "", "", 0, fmt.Errorf("cluster: lease of %q holds %q: %w", doc, e.Value(), err)
		}
		// A replica that lags may show an older owner: forwarding to it
		// gets a 503 from that node, and the client redials.
		if o.Node == r.o.Node {
			if stopping {
				return "", "", 0, fmt.Errorf("cluster: %q: %w", doc, ErrStopping)
			}
			if o.Run == r.run && !uncertain.IsZero() {
				// An attempt of this run whose answer was lost took it.
				return took(e.Revision(), uncertain)
			}
			// A lease of this node's from before a restart: its state is
			// gone, so wait for it to expire rather than trust it.
			return "", "", e.Revision(), fmt.Errorf("cluster: %q: %w", doc, errEarlierRun)
		}
		return o.Node, o.URL, e.Revision(), nil
	}
	return "", "", 0, fmt.Errorf("cluster: lease of %q keeps changing hands", doc)
}

// takenMeanwhile reports whether a Create of a lease failed because the
// key holds a lease: it existed, or, released, another node took it
// between the Create's two steps (a replicated bucket then answers
// "wrong last sequence", code 10164, which Create does not translate).
func takenMeanwhile(err error) bool {
	if errors.Is(err, natsjs.ErrKeyExists) || errors.Is(err, natsjs.ErrKeyRevisionMismatch) {
		return true
	}
	var api *natsjs.APIError
	return errors.As(err, &api) &&
		(api.ErrorCode == natsjs.JSErrCodeStreamWrongLastSequence || api.ErrorCode == natsjs.JSErrCodeStreamWrongLastSequenceConstant)
}

// transient reports whether err is JetStream not answering for a moment
// (a stream electing its leader), after which the same request may work.
func transient(err error) bool {
	return errors.Is(err, natsjs.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
}

// readyWait bounds how long New waits for a lease bucket to answer reads.
const readyWait = 10 * time.Second

// awaitReads returns once kv answers a read. A bucket's replicas answer
// reads (KV reads go to any of them) only once they are caught up with
// its leader, a moment after the bucket was created: a node that served
// requests before then would refuse its first clients for no reason.
func awaitReads(ctx context.Context, kv natsjs.KeyValue) error {
	ctx, cancel := context.WithTimeout(ctx, readyWait)
	defer cancel()
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		_, err := kv.Get(ctx, "ready")
		if err == nil || errors.Is(err, natsjs.ErrKeyNotFound) {
			return nil
		}
		if !transient(err) || pause(ctx, wait) != nil {
			return fmt.Errorf("no answer to a read: %w", err)
		}
	}
}

// pause waits d, or returns ctx's error if ctx ends first.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// Owns reports whether this node holds doc's lease, and is not handing
// it off.
func (r *Router) Owns(doc string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.leases[doc]
	return ok && !l.leaving
}

// holds reports whether this node holds doc's lease, handing it off
// included: the handoff commits under it.
func (r *Router) holds(doc string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.leases[doc]
	return ok
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

// breakLease deletes doc's lease at revision rev, held by node, whose
// address refused a connection: nothing listens there, so the owner's
// process is gone (a stopping node hands its leases off before it closes
// its listener), and waiting out the lease's TTL would only prolong the
// outage. The delete is a compare-and-set on rev: a lease renewed since
// (its owner alive after all) or already taken stays. Safety does not
// rest on this guess: an owner that was alive finds its lease moved at
// its next renewal, and its commits meanwhile are fenced by the store.
func (r *Router) breakLease(doc, node string, rev uint64) {
	if rev == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.o.LeaseTTL/4)
	defer cancel()
	if err := r.kv.Delete(ctx, leaseKey(doc), natsjs.LastRevision(rev)); err != nil {
		r.log.Debug("cluster: lease of a refused owner not broken", "doc", doc, "owner", node, "err", err)
		return
	}
	r.count(func(c *routerCounts) { c.broken++ })
	r.log.Info("cluster: lease of an owner that refuses connections broken", "doc", doc, "owner", node)
}

// errOwnerMoved is a forwarded connection the owner refused because the
// document is no longer its (handed off, or its lease lost).
var errOwnerMoved = errors.New("cluster: the owner no longer serves the document")

// forward proxies req to the owner node at target. It returns nil once the
// owner answered (the request is done), or why the owner could not serve
// it (unreachable, or no longer the owner) with nothing written to w, so
// that the caller may route the request again.
func (r *Router) forward(w http.ResponseWriter, req *http.Request, doc, node, target string) error {
	u, err := url.Parse(target)
	if err != nil {
		http.Error(w, "bad owner address", http.StatusBadGateway)
		return nil
	}
	r.count(func(c *routerCounts) { c.forwarded++ })
	var gone error
	tw := &touchedWriter{ResponseWriter: w}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.URL.Path = u.Path
			pr.Out.URL.RawQuery = req.URL.RawQuery
			pr.Out.Host = req.Host // the owner checks Origin against it
			pr.Out.Header.Set(headerForwarded, node)
		},
		Transport: r.transport,
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get(headerMoved) != "" {
				return errOwnerMoved
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			if !tw.touched && req.Context().Err() == nil {
				gone = err
				return
			}
			r.log.Warn("cluster: forward failed", "doc", doc, "owner", node, "err", err)
			r.count(func(c *routerCounts) { c.forwardFailed++ })
			http.Error(w, "owner unreachable; retry", http.StatusBadGateway)
		},
	}
	proxy.ServeHTTP(tw, req)
	return gone
}

// headerMoved marks a 503 that says the document is no longer served by
// the node that answered: the node that forwarded the request holds it
// and routes it again once the lease moved.
const headerMoved = "Accord-Moved"

// refuse answers 503, saying when the client may try again.
func (r *Router) refuse(w http.ResponseWriter, msg string, retry time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int((retry+time.Second-1)/time.Second)))
	http.Error(w, msg, http.StatusServiceUnavailable)
}

// touchedWriter records whether anything was written to the client (or
// the connection taken over), after which a request cannot be routed
// again.
type touchedWriter struct {
	http.ResponseWriter
	touched bool
}

func (w *touchedWriter) WriteHeader(code int) { w.touched = true; w.ResponseWriter.WriteHeader(code) }
func (w *touchedWriter) Write(p []byte) (int, error) {
	w.touched = true
	return w.ResponseWriter.Write(p)
}
func (w *touchedWriter) Flush() {
	w.touched = true
	http.NewResponseController(w.ResponseWriter).Flush()
}
func (w *touchedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.touched = true
	return http.NewResponseController(w.ResponseWriter).Hijack()
}
func (w *touchedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// awaitMove waits until doc's lease is no longer at revision rev (it
// expired, was released or was taken), and reports whether it moved
// before deadline. Waiters of one revision share one poller.
func (r *Router) awaitMove(ctx context.Context, doc string, rev uint64, deadline time.Time) bool {
	if rev == 0 || !time.Now().Before(deadline) {
		return false
	}
	at := leaseAt{doc, rev}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return false
	}
	moved, ok := r.waits[at]
	if !ok {
		moved = make(chan struct{})
		r.waits[at] = moved
		r.workers.Add(1)
		go r.pollLease(at, moved)
	}
	r.mu.Unlock()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-moved:
		return time.Now().Before(deadline)
	case <-t.C:
	case <-ctx.Done():
	case <-r.stop:
	}
	return false
}

// leasePoll is how often a held connection's lease is read: the delay
// it adds to a failover or a handoff, against one read per interval per
// document whose owner is gone.
const leasePoll = 25 * time.Millisecond

// pollLease reads the lease of at.doc until it is no longer at at.rev,
// then closes moved. It gives up (closing moved too) after the lease's
// TTL and a half, by which the revision of an owner that stopped renewing
// has expired, or when the Router stops.
func (r *Router) pollLease(at leaseAt, moved chan struct{}) {
	defer r.workers.Done()
	defer func() {
		r.mu.Lock()
		delete(r.waits, at)
		r.mu.Unlock()
		close(moved)
	}()
	key := leaseKey(at.doc)
	give := time.NewTimer(r.o.LeaseTTL * 3 / 2)
	defer give.Stop()
	tick := time.NewTicker(leasePoll)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-give.C:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.o.LeaseTTL/4)
		e, err := r.kv.Get(ctx, key)
		cancel()
		if errors.Is(err, natsjs.ErrKeyNotFound) || (err == nil && e.Revision() != at.rev) {
			return
		}
	}
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

// renewLoop renews every lease each LeaseTTL/3, gives up those it cannot
// renew before they could have expired, and releases idle ones. Each
// lease is renewed on its own goroutine (at most renewers at once), so
// that one slow renewal delays no other.
func (r *Router) renewLoop() {
	defer close(r.done)
	tick := time.NewTicker(r.o.LeaseTTL / 3)
	defer tick.Stop()
	sem := make(chan struct{}, renewers)
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		r.mu.Lock()
		var due []string
		for doc, l := range r.leases {
			if !l.renewing && !l.releasing {
				l.renewing = true
				due = append(due, doc)
			}
		}
		r.mu.Unlock()
		for _, doc := range due {
			select {
			case sem <- struct{}{}:
			case <-r.stop:
				return
			}
			r.workers.Add(1)
			go func() {
				defer r.workers.Done()
				defer func() { <-sem }()
				r.renew(doc)
				r.mu.Lock()
				if l, ok := r.leases[doc]; ok {
					l.renewing = false
				}
				r.mu.Unlock()
			}()
		}
	}
}

// renewers bounds the renewals under way at once.
const renewers = 64

// renew renews doc's lease, or releases it if idle. A renewal that fails
// without an answer saying the lease moved is tried again, every
// LeaseTTL/20, until the lease could have expired on the server: 2/3 of
// the TTL after the last good renewal was sent. So one lost or slow
// request costs no lease; only NATS out of reach for that long does.
func (r *Router) renew(doc string) {
	r.mu.Lock()
	l, ok := r.leases[doc]
	if !ok {
		r.mu.Unlock()
		return
	}
	// A lease being handed off is renewed, not released here: the
	// handoff releases it once the document is committed.
	rev, idle := l.rev, !l.leaving && l.conns == 0 && time.Since(l.lastConn) > r.o.ReleaseAfter
	renewed := l.renewed
	r.mu.Unlock()
	key := leaseKey(doc)
	if idle {
		ctx, cancel := context.WithTimeout(context.Background(), r.o.LeaseTTL/3)
		err := r.kv.Delete(ctx, key, natsjs.LastRevision(rev))
		cancel()
		r.drop(doc, "released", err)
		return
	}
	giveUp := renewed.Add(r.o.LeaseTTL * 2 / 3)
	for {
		sent := time.Now()
		ctx, cancel := context.WithDeadline(context.Background(), giveUp)
		next, err := r.kv.Update(ctx, key, r.self, rev)
		cancel()
		took := time.Since(sent)
		if err == nil {
			r.mu.Lock()
			if l, ok := r.leases[doc]; ok && l.rev == rev {
				l.rev, l.renewed = next, sent
			}
			if took > r.stats.slowestRenewal {
				r.stats.slowestRenewal = took
			}
			r.mu.Unlock()
			if took > r.o.LeaseTTL/6 {
				r.log.Warn("cluster: slow lease renewal", "doc", doc, "took", took)
			}
			return
		}
		// A wrong revision means the lease expired and someone else took
		// it. Otherwise NATS is out of reach: keep trying while the lease
		// may still be ours, and give it up before it could have expired
		// on the server (measured from when the last good renewal was
		// sent).
		if errors.Is(err, natsjs.ErrKeyRevisionMismatch) || !time.Now().Add(r.o.LeaseTTL/20).Before(giveUp) {
			r.count(func(c *routerCounts) { c.lost++ })
			r.drop(doc, "lost", err)
			return
		}
		r.log.Warn("cluster: lease renewal failed; trying again", "doc", doc, "err", err)
		select {
		case <-r.stop:
			return
		case <-time.After(r.o.LeaseTTL / 20):
		}
		r.mu.Lock()
		l, ok := r.leases[doc]
		stillOurs := ok && l.rev == rev
		r.mu.Unlock()
		if !stillOurs {
			return
		}
	}
}

func (r *Router) drop(doc, why string, err error) {
	r.mu.Lock()
	l, ok := r.leases[doc]
	delete(r.leases, doc)
	r.mu.Unlock()
	if !ok {
		return
	}
	for c := range l.hijacked {
		_ = c.Close()
	}
	r.log.Info("cluster: lease "+why, "doc", doc, "node", r.o.Node, "err", err)
	if r.o.Lost != nil {
		r.o.Lost(doc)
	}
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

// handOffTimeout bounds Options.HandOff for one document. The lease is
// renewed meanwhile, so a slow commit is waited for rather than cut off.
const handOffTimeout = 5 * time.Second

// handOff commits doc here (Options.HandOff) and releases its lease.
func (r *Router) handOff(doc string) error {
	var errs []error
	if r.o.HandOff != nil {
		ctx, cancel := context.WithTimeout(context.Background(), handOffTimeout)
		if err := r.o.HandOff(ctx, doc); err != nil {
			errs = append(errs, fmt.Errorf("cluster: hand off %q: %w", doc, err))
		}
		cancel()
	}
	var rev uint64
	for {
		r.mu.Lock()
		l, ok := r.leases[doc]
		if ok {
			l.releasing = true
			rev = l.rev
		}
		renewing := ok && l.renewing
		r.mu.Unlock()
		if !renewing {
			break
		}
		time.Sleep(5 * time.Millisecond) // a renewal ends by its deadline
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.o.LeaseTTL/3)
	err := r.kv.Delete(ctx, leaseKey(doc), natsjs.LastRevision(rev))
	cancel()
	if err != nil {
		errs = append(errs, fmt.Errorf("cluster: release %q: %w", doc, err))
	} else {
		r.count(func(c *routerCounts) { c.handedOff++ })
	}
	r.drop(doc, "handed off", err)
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

// forwardTransport is the transport a Router forwards with: a clone of
// http.DefaultTransport's settings when it is the standard one, or the
// same defaults when the host replaced it (a test wrapping it, say).
func forwardTransport() *http.Transport {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		return t.Clone()
	}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}
