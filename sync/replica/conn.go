package replica

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/sync/wire"
)

// connect dials and exchanges hello and welcome, within the handshake
// timeout.
func (c *Client) connect(ctx context.Context) (Conn, *wire.Welcome, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.HandshakeTimeout)
	defer cancel()
	conn, err := c.opts.Dialer(ctx, c.url, c.opts.Header.Clone())
	if err != nil {
		return nil, nil, fmt.Errorf("replica: dial: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	w, err := c.handshake(conn)
	if !stop() && err == nil {
		err = ctx.Err() // the connection was closed under the handshake
	}
	if err != nil {
		conn.Close()
		if ctx.Err() != nil {
			err = fmt.Errorf("replica: handshake: %w", ctx.Err())
		}
		return nil, nil, err
	}
	return conn, w, nil
}

// handshake sends the hello, listing the accepted heads of every replica,
// and reads the welcome.
func (c *Client) handshake(conn Conn) (*wire.Welcome, error) {
	c.mu.Lock()
	have := map[string][]string{}
	for id, rep := range c.reps {
		if len(rep.accepted) > 0 {
			have[id] = wireHeads(rep.accepted)
		}
	}
	c.mu.Unlock()
	b, err := wire.Encode(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version, Have: have, Deflate: true}, c.opts.Format)
	if err != nil {
		return nil, err
	}
	if err := conn.WriteMessage(c.msgType(), b); err != nil {
		return nil, fmt.Errorf("replica: hello: %w", err)
	}
	for {
		typ, data, err := conn.ReadMessage()
		if err != nil {
			return nil, fmt.Errorf("replica: welcome: %w", err)
		}
		f, ok := formatOf(typ)
		if !ok {
			continue
		}
		m, err := wire.DecodeServerFrame(data, f)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrProtocol, err)
		}
		switch m := m.(type) {
		case *wire.Welcome:
			if m.V != wire.Version {
				return nil, fmt.Errorf("%w: server speaks version %d, not %d", ErrProtocol, m.V, wire.Version)
			}
			return m, nil
		case *wire.Error:
			return nil, fmt.Errorf("%w: server refused the hello: %s: %s", ErrProtocol, m.Reason, m.Message)
		default:
			return nil, fmt.Errorf("%w: %s before the welcome", ErrProtocol, m.FrameKind())
		}
	}
}

func (c *Client) msgType() int {
	if c.opts.Format == wire.Text {
		return websocket.TextMessage
	}
	return websocket.BinaryMessage
}

func formatOf(messageType int) (wire.Format, bool) {
	switch messageType {
	case websocket.BinaryMessage:
		return wire.Binary, true
	case websocket.TextMessage:
		return wire.Text, true
	}
	return 0, false
}

// begin makes a welcomed connection the current session and adopts the
// welcome's records.
func (c *Client) begin(conn Conn, w *wire.Welcome) *session {
	s := &session{
		conn: conn, msgType: c.msgType(),
		pending: map[string]*request{}, known: map[string]bool{}, synced: map[string]bool{},
		quit: make(chan struct{}),
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.member, c.readOnly = w.Member, !w.Write
	// A new connection: the others' presence starts afresh, and ours is
	// due again.
	c.others, c.self = map[string]wire.Presence{}, ""
	c.presence.due = c.presence.latest != nil
	if c.presence.due {
		c.kickPresence()
	}
	order := make([]string, 0, len(w.Records))
	for _, r := range w.Records {
		s.known[r.ID] = true
		c.adoptRecord(r)
		order = append(order, r.ID)
	}
	for _, id := range c.order {
		if !s.known[id] {
			order = append(order, id)
		}
	}
	c.order = order
	c.sess = s
	c.notify()
	return s
}

// run owns the connection's lifecycle: it serves each connection (reading
// its frames itself, with one writer goroutine beside it), and after a
// loss backs off and redials, until Close. It is the only goroutine that
// emits events.
func (c *Client) run(s *session) {
	defer close(c.done)
	defer close(c.events)
	attempt := 0
	lost := s == nil // whether "reconnecting" was announced
	for {
		if s == nil {
			conn, w, err := c.connect(c.ctx)
			if err != nil {
				if c.ctx.Err() != nil {
					return
				}
				c.log.Info("cannot connect", "url", c.url, "attempt", attempt+1, "err", err)
				if !lost {
					c.emit(Event{Kind: KindReconnecting, Err: err})
					lost = true
				}
				if !c.sleep(c.redialWait(attempt, err)) {
					return
				}
				attempt++
				continue
			}
			s = c.begin(conn, w)
		}
		lost = false
		start := time.Now()
		err := c.serve(s)
		s = nil
		if c.ctx.Err() != nil {
			return
		}
		c.log.Info("connection lost", "url", c.url, "err", err)
		c.emit(Event{Kind: KindReconnecting, Err: err})
		lost = true
		// A connection that served for a while ends the run of failed
		// attempts before it: its server crashed or moved on, and a
		// cluster's other nodes hold the redial until the document is
		// served again, so waiting out a grown backoff would only add
		// to the outage. One that ended at once keeps the backoff
		// growing, against a server that accepts and drops.
		if time.Since(start) >= min(c.opts.MaxBackoff, stableConnections*c.opts.MinBackoff) || movedAway(err) {
			attempt = 0
		}
		if !c.sleep(c.backoff(attempt)) {
			return
		}
		attempt++
	}
}

// stableConnections is how long, in MinBackoffs (and at most
// MaxBackoff), a connection must have lasted for its loss to restart the
// backoff from MinBackoff: a server that accepts and drops is redialled
// at most about twice a second.
const stableConnections = 10

// movedAway reports whether the server closed the connection because the
// document moved (a cluster node handing it off, 1012) or its commit
// failed (1013): the document is served again at once, by its owner, so
// the redial starts from the shortest backoff whatever came before.
func movedAway(err error) bool {
	var ce *websocket.CloseError
	return errors.As(err, &ce) && (ce.Code == websocket.CloseServiceRestart || ce.Code == websocket.CloseTryAgainLater)
}

// backoff is the jittered wait before redial attempt n (from 0):
// between half and all of MinBackoff·2ⁿ, capped at MaxBackoff.
func (c *Client) backoff(n int) time.Duration {
	d := c.opts.MaxBackoff
	if n < 30 {
		if e := c.opts.MinBackoff << n; e > 0 && e < d {
			d = e
		}
	}
	return d/2 + rand.N(d/2+1)
}

// redialWait is the wait before redial attempt n after the dial error
// err: the backoff, or longer when the server asked for it (Retry-After),
// up to MaxBackoff.
func (c *Client) redialWait(n int, err error) time.Duration {
	d := c.backoff(n)
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		d = max(d, min(ra.RetryAfter(), c.opts.MaxBackoff))
	}
	return d
}

func (c *Client) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// serve runs one connection until it fails or the client closes: this
// goroutine reads and applies frames; a writer goroutine owns every write.
// When the read loop ends, the connection is closed, the writer is waited
// for, and requests awaiting replies fail with ErrDisconnected.
func (c *Client) serve(s *session) error {
	stop := context.AfterFunc(c.ctx, func() { s.conn.Close() })
	defer stop()
	c.emit(Event{Kind: KindConnected, By: c.memberLogin()})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.writeLoop(s)
	}()
	err := c.readLoop(s)
	s.conn.Close()
	close(s.quit)
	wg.Wait()

	c.mu.Lock()
	defer c.mu.Unlock()
	c.sess = nil
	for rid, r := range s.pending {
		r.reply <- result{err: ErrDisconnected}
		delete(s.pending, rid)
	}
	for _, rep := range c.reps {
		rep.inflight, rep.sent, rep.held, rep.orphan = "", nil, nil, ""
	}
	c.notify()
	return err
}

func (c *Client) memberLogin() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.member
}

// maxFrameBatch bounds the frames handled in one go (readLoop).
const maxFrameBatch = 256

// readLoop handles frames until the connection fails or a frame shows the
// replica out of step. Its reader goroutine, which ends with the
// connection (s.quit), decodes frames as they come; the loop takes every
// frame that has arrived meanwhile in one go, so that a decision's
// question:changes frames that arrive together are applied in one call
// (handleAll): automerge's cost is mostly per call, not per change.
func (c *Client) readLoop(s *session) error {
	frames := make(chan wire.Message, maxFrameBatch)
	failed := make(chan error, 1)
	go func() {
		defer close(frames)
		for {
			typ, data, err := s.conn.ReadMessage()
			if err != nil {
				failed <- err
				return
			}
			f, ok := formatOf(typ)
			if !ok {
				continue
			}
			m, err := wire.DecodeServerFrame(data, f)
			if err != nil {
				c.log.Warn("ignoring a frame that does not decode", "err", err)
				continue
			}
			select {
			case frames <- m:
			case <-s.quit:
				return
			}
		}
	}()
	batch := make([]wire.Message, 0, maxFrameBatch)
	for {
		m, ok := <-frames
		if !ok {
			return <-failed
		}
		batch = append(batch[:0], m)
	more:
		for len(batch) < maxFrameBatch {
			select {
			case m, ok := <-frames:
				if !ok {
					break more
				}
				batch = append(batch, m)
			default:
				break more
			}
		}
		if err := c.handleAll(s, batch); err != nil {
			return err
		}
	}
}

// writeLoop owns every write to the session's connection: the edits that
// local changes call for, queued requests and pings. A failed write
// closes the connection, which ends the read loop.
func (c *Client) writeLoop(s *session) {
	var tick <-chan time.Time
	p, canPing := s.conn.(interface{ Ping() error })
	if canPing && c.opts.PingInterval > 0 {
		t := time.NewTicker(c.opts.PingInterval)
		defer t.Stop()
		tick = t.C
	}
	refresh := time.NewTicker(presenceRefresh)
	defer refresh.Stop()
	for {
		var err error
		select {
		case <-s.quit:
			return
		case <-c.kick:
			err = c.pushEdits(s)
		case <-c.presenceKick:
			err = c.pushPresence(s)
		case <-refresh.C:
			err = c.pushPresence(s)
		case r := <-c.out:
			err = c.writeRequest(s, r)
		case <-tick:
			err = p.Ping()
		}
		if err != nil {
			c.log.Info("write failed", "err", err)
			s.conn.Close()
			return
		}
	}
}

func (c *Client) writeRequest(s *session, r *request) error {
	if r.ctx.Err() != nil {
		return nil // its caller has gone
	}
	c.mu.Lock()
	s.pending[r.rid] = r
	c.mu.Unlock()
	if err := s.conn.WriteMessage(s.msgType, r.data); err != nil {
		c.mu.Lock()
		delete(s.pending, r.rid)
		c.mu.Unlock()
		r.reply <- result{err: fmt.Errorf("%w: %v", ErrDisconnected, err)}
		return err
	}
	return nil
}
