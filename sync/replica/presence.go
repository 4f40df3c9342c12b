package replica

import (
	"fmt"
	"time"

	"github.com/accord-crdt/accord/sync/wire"
)

// PresenceInterval is the least time between two presence frames the
// client sends: the server's default rate (sync/server
// Options.PresenceRate, 10 a second). SetPresence may be called at any
// rate; states set meanwhile fold into the latest, which always goes out.
const PresenceInterval = 100 * time.Millisecond

// presenceRefresh is how often an unchanged state is published again, so
// the server (Options.PresenceSilence, 30 s by default) does not report
// a member who is still there as silent.
const presenceRefresh = 20 * time.Second

// SetPresence publishes this connection's presence to the document's
// other connections: which decision and field it is in, a selection, and
// whether it is editing. It never blocks: the latest state is sent at most
// once per PresenceInterval, again after a reconnect, and again now and
// then while it stands. Presence is ephemeral: the server relays it and
// forgets it. Members who may only read may publish. A state the server
// would refuse is refused here, and nothing is sent.
func (c *Client) SetPresence(st wire.PresenceState) error {
	m := &wire.Presence{Header: wire.Header{Kind: wire.KindPresence}, State: &st}
	b, err := wire.Encode(m, c.opts.Format)
	if err == nil {
		_, err = wire.Decode(b, c.opts.Format)
	}
	if err != nil {
		return fmt.Errorf("replica: presence: %w", err)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.presence.latest, c.presence.due = b, true
	c.mu.Unlock()
	c.kickPresence()
	return nil
}

// presenceOut is the presence this client publishes. Guarded by Client.mu.
type presenceOut struct {
	latest []byte    // the encoded latest state; nil: none set
	due    bool      // latest has not been sent on this connection
	sent   time.Time // when a presence frame last went out
	timer  *time.Timer
}

func (c *Client) kickPresence() {
	select {
	case c.presenceKick <- struct{}{}:
	default:
	}
}

// pushPresence sends the latest state if it is due and the interval since
// the last has passed; otherwise it arms a timer for when it will have.
// The writer goroutine calls it.
func (c *Client) pushPresence(s *session) error {
	c.mu.Lock()
	p := &c.presence
	if p.latest == nil || !p.due && time.Since(p.sent) < presenceRefresh {
		c.mu.Unlock()
		return nil
	}
	if wait := PresenceInterval - time.Since(p.sent); wait > 0 {
		if p.timer == nil {
			p.timer = time.AfterFunc(wait, func() {
				c.mu.Lock()
				c.presence.timer = nil
				c.mu.Unlock()
				c.kickPresence()
			})
		}
		c.mu.Unlock()
		return nil
	}
	b := p.latest
	p.due, p.sent = false, time.Now()
	c.mu.Unlock()
	return s.conn.WriteMessage(s.msgType, b)
}

// applyPresence takes a presence frame: this connection's own id, or a
// batch whose entries (but this connection's own) it reports as events
// and keeps for Others. The caller holds c.mu.
func (c *Client) applyPresence(m *wire.Presence) {
	switch {
	case m.You:
		c.self = m.Conn
	case len(m.All) > 0:
		for i := range m.All {
			if m.All[i].Conn != c.self {
				c.applyOne(&m.All[i])
			}
		}
	default:
		c.applyOne(m)
	}
}

func (c *Client) applyOne(m *wire.Presence) {
	if m.Left || m.Silent || m.State == nil {
		delete(c.others, m.Conn)
	} else {
		c.others[m.Conn] = *m
	}
	e := Event{Kind: wire.KindPresence, By: m.Member, Presence: m}
	if m.State != nil {
		e.ID = m.State.Decision
	}
	c.emit(e)
}

// Others returns the presence of the document's other connections, as
// last heard: one entry per connection that published a state and has
// neither left nor gone silent since.
func (c *Client) Others() []wire.Presence {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]wire.Presence, 0, len(c.others))
	for _, p := range c.others {
		out = append(out, p)
	}
	return out
}
