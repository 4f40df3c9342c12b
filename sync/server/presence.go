package server

import (
	"strconv"
	"sync"
	"time"

	"github.com/accord-crdt/accord/sync/wire"
)

// presenceHub relays one document's presence frames between its
// connections. It is apart from the document goroutine on purpose:
// presence never waits for a commit group, never reaches the authority
// or the store, and a busy document's presence costs its edits nothing
// but the relaying. Read pumps publish; the document goroutine adds a
// connection once its welcome is queued, so presence never precedes it.
type presenceHub struct {
	rate    time.Duration // least time between two relayed frames of one conn
	silence time.Duration

	mu    sync.Mutex
	next  uint64
	conns map[*conn]*presenceEntry
}

// presenceEntry is one joined connection's presence.
type presenceEntry struct {
	id    string
	last  time.Time           // when its last frame was relayed
	state *wire.PresenceState // nil: nothing published, or silent since
	quiet *time.Timer         // fires after silence without a frame
}

func newPresenceHub(o *Options) *presenceHub {
	return &presenceHub{rate: time.Duration(float64(time.Second) / o.PresenceRate), silence: o.PresenceSilence,
		conns: map[*conn]*presenceEntry{}}
}

// maxPresenceQueued bounds the presence frames waiting in one outbox:
// beyond it a connection misses presence rather than being dropped as
// slow; presence is ephemeral and the next frame says it again.
const maxPresenceQueued = 64

// add makes a joined connection a recipient, and sends it everyone's
// current state.
func (h *presenceHub) add(c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.conns[c]; ok {
		return
	}
	h.next++
	h.conns[c] = &presenceEntry{id: "p" + strconv.FormatUint(h.next, 10)}
	for o, e := range h.conns {
		if o != c && e.state != nil {
			c.sendPresence(&encoded{msg: &wire.Presence{Header: wire.Header{Kind: wire.KindPresence}, Conn: e.id, Member: o.login().Login, State: e.state}})
		}
	}
}

// publish relays a connection's state to the others, with the
// connection's id and member, and reports whether it did: a frame sooner
// than the rate allows after the last, or from a connection not yet
// joined, is dropped.
func (h *presenceHub) publish(c *conn, m *wire.Presence, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.conns[c]
	if e == nil || !e.last.IsZero() && now.Sub(e.last) < h.rate {
		return false
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
	h.relay(c, &wire.Presence{Header: wire.Header{Kind: wire.KindPresence}, Conn: e.id, Member: c.login().Login, State: e.state})
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
	h.relay(c, &wire.Presence{Header: wire.Header{Kind: wire.KindPresence}, Conn: e.id, Member: c.login().Login, Silent: true})
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
		h.relay(c, &wire.Presence{Header: wire.Header{Kind: wire.KindPresence}, Conn: e.id, Member: c.login().Login, Left: true})
	}
}

// relay sends m to every connection but from. The caller holds h.mu.
func (h *presenceHub) relay(from *conn, m *wire.Presence) {
	enc := &encoded{msg: m}
	for o := range h.conns {
		if o != from {
			o.sendPresence(enc)
		}
	}
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
