package server

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/accord-crdt/accord/sync/wire"
)

// presenceHub relays one document's presence frames between its
// connections. It is apart from the document goroutine on purpose:
// presence never waits for a commit group, never reaches the authority
// or the store, and a busy document's presence costs its edits only the
// relaying. Read pumps publish; the document goroutine adds a connection
// as it queues its welcome (add).
//
// Relaying is batched: what connections publish within presenceFlush
// goes out as one frame holding the latest entry of each, encoded once
// for every connection. Sixty-four connections at the maximum rate then
// cost each connection a frame every presenceFlush, not 640 a second
// (BenchmarkPresenceOverhead).
type presenceHub struct {
	rate    rate.Limit
	silence time.Duration

	mu      sync.Mutex
	next    uint64
	conns   map[*conn]*presenceEntry
	pending map[string]wire.Presence // by connection id, since the last batch
	flushAt *time.Timer              // armed while pending is not empty
}

// presenceFlush is how long presence waits to be batched.
const presenceFlush = 100 * time.Millisecond

// presenceBurst lets a connection publish a few frames at once (a click
// that moves focus and selection) before its rate applies.
const presenceBurst = 3

// presenceEntry is one joined connection's presence.
type presenceEntry struct {
	id     string
	member string
	limit  *rate.Limiter
	last   time.Time           // when its last frame was taken
	state  *wire.PresenceState // nil: nothing published, or silent since
	quiet  *time.Timer         // fires after silence without a frame
}

func newPresenceHub(o *Options) *presenceHub {
	return &presenceHub{rate: rate.Limit(o.PresenceRate), silence: o.PresenceSilence,
		conns: map[*conn]*presenceEntry{}, pending: map[string]wire.Presence{}}
}

// maxPresenceQueued bounds the presence frames waiting in one outbox:
// beyond it a connection misses presence rather than being dropped as
// slow. Presence is ephemeral: a state it missed reaches it with the
// member's next frame (clients publish a standing state again now and
// then), or in full when it reconnects.
const maxPresenceQueued = 16

func presenceFrame(m wire.Presence) *encoded {
	m.Header = wire.Header{Kind: wire.KindPresence}
	return &encoded{msg: &m}
}

// add queues a joining connection's welcome (welcome) and makes the
// connection a recipient, sent everyone's standing state in one batch
// after it. Both happen under the hub's lock, so presence never precedes
// the welcome, and a frame the connection publishes as soon as it is
// welcomed (a replica publishes its state again after a reconnect) finds
// it joined rather than being dropped. A document where nobody publishes
// sends nothing more.
func (h *presenceHub) add(c *conn, welcome func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	welcome()
	if _, ok := h.conns[c]; ok {
		return
	}
	h.next++
	e := &presenceEntry{id: "p" + strconv.FormatUint(h.next, 10), member: c.login().Login,
		limit: rate.NewLimiter(h.rate, presenceBurst)}
	h.conns[c] = e
	var standing []wire.Presence
	for _, o := range h.conns {
		if o.state != nil {
			standing = append(standing, wire.Presence{Conn: o.id, Member: o.member, State: o.state})
		}
	}
	if len(standing) > 0 {
		sortPresence(standing)
		c.sendPresence(presenceFrame(wire.Presence{All: standing}))
	}
}

// publish takes a connection's state, to relay with the connection's id
// and member, and reports whether it did: a frame over the connection's
// rate, or from a connection not yet joined, is dropped.
func (h *presenceHub) publish(c *conn, m *wire.Presence, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.conns[c]
	if e == nil || !e.limit.AllowN(now, 1) {
		return false
	}
	if e.last.IsZero() {
		// Its first frame: tell it its id before any batch holds it.
		c.sendPresence(presenceFrame(wire.Presence{Conn: e.id, Member: e.member, You: true}))
	}
	e.last = now
	e.state = m.State
	if e.state == nil {
		e.state = &wire.PresenceState{}
	}
	if e.quiet == nil {
		e.quiet = time.AfterFunc(h.silence, func() { h.silent(c) })
	} else {
		e.quiet.Reset(h.silence)
	}
	h.queue(wire.Presence{Conn: e.id, Member: e.member, State: e.state})
	return true
}

// silent tells the others that a connection stopped publishing.
func (h *presenceHub) silent(c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.conns[c]
	if e == nil || e.state == nil || time.Since(e.last) < h.silence {
		return
	}
	e.state = nil
	h.queue(wire.Presence{Conn: e.id, Member: e.member, Silent: true})
}

// remove forgets a connection that left, telling the others if it had
// published a state.
func (h *presenceHub) remove(c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.conns[c]
	if e == nil {
		return
	}
	delete(h.conns, c)
	if e.quiet != nil {
		e.quiet.Stop()
	}
	if e.state != nil {
		h.queue(wire.Presence{Conn: e.id, Member: e.member, Left: true})
	}
}

// queue holds p for the next batch, replacing what its connection
// published since the last. The caller holds h.mu.
func (h *presenceHub) queue(p wire.Presence) {
	h.pending[p.Conn] = p
	if h.flushAt == nil {
		h.flushAt = time.AfterFunc(presenceFlush, h.flush)
	}
}

// flush sends the pending presence to every connection as one batch.
func (h *presenceHub) flush() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.flushAt = nil
	if len(h.pending) == 0 {
		return
	}
	batch := make([]wire.Presence, 0, len(h.pending))
	for _, p := range h.pending {
		batch = append(batch, p)
	}
	clear(h.pending)
	sortPresence(batch)
	enc := presenceFrame(wire.Presence{All: batch})
	for c := range h.conns {
		c.sendPresence(enc)
	}
}

func sortPresence(ps []wire.Presence) {
	slices.SortFunc(ps, func(a, b wire.Presence) int {
		if len(a.Conn) != len(b.Conn) {
			return len(a.Conn) - len(b.Conn)
		}
		return strings.Compare(a.Conn, b.Conn)
	})
}

// sendPresence queues a presence frame unless the outbox already holds
// maxPresenceQueued of them; it never drops the connection.
func (c *conn) sendPresence(e *encoded) {
	f, err := e.frame(c.format)
	if err != nil {
		return
	}
	c.qmu.Lock()
	if c.closed() || c.presence >= maxPresenceQueued {
		c.qmu.Unlock()
		return
	}
	c.presence++
	c.queue = append(c.queue, queued{frame: f, presence: true})
	c.qmu.Unlock()
	c.signal()
}
