package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

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

// leaseAt names one revision of a document's lease.
type leaseAt struct {
	doc string
	rev uint64
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
