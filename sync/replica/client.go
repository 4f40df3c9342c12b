package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// Client is a member's connection to one document's decisions, with a
// local replica of each decision's CRDT document. Every exported method is
// safe for concurrent use.
type Client struct {
	opts   Options
	url    string
	log    *slog.Logger
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	done   chan struct{} // closed when run has returned
	once   sync.Once

	out  chan *request // requests waiting for the writer
	kick chan struct{} // capacity 1: local changes wait to be pushed
	// presenceKick (capacity 1): a presence state may be due (presence.go).
	presenceKick chan struct{}
	events       chan Event
	dropped      atomic.Uint64
	rid          atomic.Uint64

	mu       sync.Mutex
	closed   bool
	reps     map[string]*replica
	toPush   map[string]bool // decisions whose local changes may be pushable
	records  map[string]*question.Record
	order    []string // record ids, the server's order first
	sess     *session // nil while disconnected
	member   string
	readOnly bool
	changed  chan struct{} // closed and replaced whenever waiters should look again
	presence presenceOut
	// others holds the other connections' presence, by connection; self
	// is this connection's id, as the server named it.
	others map[string]wire.Presence
	self   string
}

// replica is one decision's local document and what the server is known
// to have accepted of it. Guarded by Client.mu.
type replica struct {
	doc *crdt.Doc
	// accepted are heads the server holds and the replica holds too: the
	// last accepted revision. Edits carry the changes since them; a hello
	// lists them. nil when unknown.
	accepted crdt.Heads
	// durable are heads the server is known to have stored: those of the
	// latest reply to this replica's own edit (sent after the commit) or
	// of the latest whole document received. accepted may run ahead of
	// them: other members' edits reach the replica before their commit
	// (early fan-out), so a server that crashed, or a cluster node that
	// took over, may never have stored them. Only a document lacking the
	// durable heads is a rebase (see isRebased). nil when unknown.
	durable  crdt.Heads
	inflight string     // rid of the edit awaiting its reply, "" if none
	sent     crdt.Heads // the replica's heads when that edit was made
	seq      uint64     // local changes made by this process
	// sentSeq is seq when the edit in flight was made. stored counts the
	// local changes the server is known to have stored: those of a reply
	// to this replica's own edit (sent after the commit) or held by a
	// whole document received. Accepted heads are not enough: another
	// holder's copy of a local change may come back as early changes
	// that the owner never commits. Flush waits for stored to reach seq.
	sentSeq uint64
	stored  uint64
	// held is the refusal of an edit refused without reset; the changes
	// wait for a new local change or connection.
	held error
	// orphan is the rid of the edit that was in flight when a rebase
	// replaced the document: its reply concerns the old history.
	orphan string
	// file is what Options.Dir holds of the replica.
	file fileState
	// rebases counts the rebased documents the replica took: one taken
	// after a reply holds that reply's effect, whatever its history.
	rebases uint64
	// reset is the refusal that last reset the replica, until a Flush
	// reports it; droppedAt is seq at that reset.
	reset     error
	droppedAt uint64
}

// session is one connection, from its welcome until it fails. Its maps
// are guarded by Client.mu.
type session struct {
	conn    Conn
	msgType int
	pending map[string]*request // requests written and awaiting replies
	known   map[string]bool     // decisions the server has named on this connection
	synced  map[string]bool     // decisions caught up on this connection
	quit    chan struct{}       // closed when the connection is over
}

type request struct {
	ctx   context.Context
	rid   string
	data  []byte
	reply chan result // capacity 1
}

type result struct {
	reply *wire.Reply
	err   error
	// rebases is the decision's replica's rebase count when the reply
	// arrived (see waitHeads).
	rebases uint64
}

// Dial starts a client of the document at url (the server's WebSocket
// URL with ?doc=<id>). It restores any replicas saved in opts.Dir, dials,
// and waits, bounded by ctx, for the server's welcome and then for the
// document (or catch-up changes) of every decision the welcome names, so
// that those decisions are ready to edit when Dial returns. If ctx ends
// first, Dial closes the client and returns the error. With
// opts.Background set it returns at once and connects in the background
// (Flush with no ids then waits for the same). From then on the client
// keeps the connection up, redialling with backoff, until Close.
func Dial(ctx context.Context, url string, opts Options) (*Client, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	c := &Client{
		opts:         opts,
		url:          url,
		log:          opts.Logger,
		done:         make(chan struct{}),
		out:          make(chan *request, requestQueue),
		kick:         make(chan struct{}, 1),
		presenceKick: make(chan struct{}, 1),
		others:       map[string]wire.Presence{},
		events:       make(chan Event, opts.EventBuffer),
		reps:         map[string]*replica{},
		toPush:       map[string]bool{},
		records:      map[string]*question.Record{},
		changed:      make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if err := c.restore(); err != nil {
		c.cancel()
		return nil, err
	}
	var s *session
	var welcomed []string
	if !opts.Background {
		conn, w, err := c.connect(ctx)
		if err != nil {
			c.cancel()
			return nil, err
		}
		s = c.begin(conn, w)
		for _, r := range w.Records {
			welcomed = append(welcomed, r.ID)
		}
	}
	go c.run(s)
	if len(welcomed) > 0 {
		if err := c.waitDocs(ctx, welcomed); err != nil {
			c.Close()
			return nil, fmt.Errorf("replica: waiting for the decisions' documents: %w", err)
		}
	}
	return c, nil
}

// waitDocs waits, bounded by ctx, until every listed decision's document
// has arrived and been caught up on the current connection. A connection
// lost meanwhile is redialled by run; the wait goes on across it.
func (c *Client) waitDocs(ctx context.Context, ids []string) error {
	return c.waitUntil(ctx, func() bool {
		if c.sess == nil {
			return false
		}
		for _, id := range ids {
			if c.reps[id] == nil || !c.sess.synced[id] {
				return false
			}
		}
		return true
	})
}

// waitUntil waits, bounded by ctx, until ready (called with c.mu held)
// reports true; it looks again whenever the client notifies a change.
func (c *Client) waitUntil(ctx context.Context, ready func() bool) error {
	for {
		c.mu.Lock()
		ok := ready()
		wait := c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.ctx.Done():
			return ErrClosed
		}
	}
}

// Close stops the client: it closes the connection, fails waiting
// requests with ErrClosed, waits for its goroutines to end and closes the
// Events channel. The replicas stay readable.
func (c *Client) Close() error {
	c.once.Do(c.cancel)
	<-c.done
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return nil
}

// Events returns the channel of events. It is buffered
// (Options.EventBuffer); when the reader falls behind, the oldest events
// are dropped (see Dropped). It is closed by Close.
func (c *Client) Events() <-chan Event { return c.events }

// Dropped returns how many events were dropped because Events was full.
func (c *Client) Dropped() uint64 { return c.dropped.Load() }

// Member returns who the server says the client is, and whether they may
// write. Both are zero before the first welcome.
func (c *Client) Member() (login string, write bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.member, c.member != "" && !c.readOnly
}

// Connected reports whether the client is connected and welcomed.
func (c *Client) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess != nil
}

func (c *Client) newRID() string { return strconv.FormatUint(c.rid.Add(1), 36) }

// notify wakes every waiter on c.changed. The caller holds c.mu.
func (c *Client) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// push marks a decision for the writer to look at (it may have local
// changes to send) and wakes the writer. Only marked decisions are looked
// at, so a frame for one decision costs nothing for the others. The
// caller holds c.mu.
func (c *Client) push(id string) {
	c.toPush[id] = true
	c.kickWriter()
}

// kickWriter asks the writer to push local changes.
func (c *Client) kickWriter() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

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

// handleAll handles frames in order, a decision's consecutive
// question:changes frames together: what they hold is one batch (within
// crdt.MaxChangesBytes), applied in one call, with the last frame's heads.
func (c *Client) handleAll(s *session, ms []wire.Message) error {
	for i := 0; i < len(ms); {
		j := i + 1
		if first, ok := ms[i].(*wire.Changes); ok {
			size := len(first.Changes)
			for ; j < len(ms); j++ {
				next, ok := ms[j].(*wire.Changes)
				if !ok || next.ID != first.ID || size+len(next.Changes) > crdt.MaxChangesBytes {
					break
				}
				size += len(next.Changes)
			}
		}
		var err error
		if j-i == 1 {
			err = c.handle(s, ms[i])
		} else {
			run := make([]*wire.Changes, 0, j-i)
			for _, m := range ms[i:j] {
				run = append(run, m.(*wire.Changes))
			}
			c.mu.Lock()
			err = c.applyChanges(s, run...)
			c.mu.Unlock()
		}
		if err != nil {
			return err
		}
		i = j
	}
	return nil
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

// pushEdits sends, for every marked (see push) caught-up decision with
// local changes and no edit in flight, one edit carrying every change
// since the accepted heads. Later changes wait for that edit's reply,
// which marks the decision again. A decision that cannot be pushed yet
// (not caught up, an edit in flight, changes held) stays marked.
func (c *Client) pushEdits(s *session) error {
	var frames [][]byte
	c.mu.Lock()
	for id := range c.toPush {
		rep := c.reps[id]
		if rep == nil {
			delete(c.toPush, id)
			continue
		}
		if !s.synced[id] || rep.inflight != "" || rep.held != nil {
			continue
		}
		heads := rep.doc.Heads()
		since := rep.accepted
		if heads.Equal(rep.accepted) {
			if rep.stored >= rep.seq {
				delete(c.toPush, id)
				continue
			}
			// Local changes the server has only as someone else's early
			// changes: send them again, so that the reply, which waits
			// for the commit, says they are stored.
			since = rep.durable
		}
		delete(c.toPush, id)
		changes, err := rep.doc.ChangesSince(since)
		if err != nil {
			c.log.Error("cannot encode local changes; sending the whole history", "id", id, "err", err)
			rep.accepted = nil
			if changes, err = rep.doc.ChangesSince(nil); err != nil {
				continue
			}
		}
		if len(changes) == 0 {
			rep.accepted = heads
			if since.Equal(rep.durable) {
				rep.stored = rep.seq
			}
			continue
		}
		rid := c.newRID()
		b, err := wire.Encode(&wire.Edit{Header: wire.Header{Kind: wire.KindEdit, RID: rid}, ID: id, Changes: changes}, c.opts.Format)
		if err != nil {
			c.log.Error("cannot encode an edit", "id", id, "err", err)
			continue
		}
		rep.inflight, rep.sent, rep.sentSeq = rid, heads, rep.seq
		frames = append(frames, b)
	}
	if len(frames) > 0 {
		c.notify()
	}
	c.mu.Unlock()
	for _, b := range frames {
		if err := s.conn.WriteMessage(s.msgType, b); err != nil {
			return err
		}
	}
	return nil
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

// handle applies one frame from the server.
func (c *Client) handle(s *session, m wire.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m := m.(type) {
	case *wire.Reply:
		c.applyReply(s, m)
	case *wire.Doc:
		c.applyDoc(s, m)
	case *wire.Changes:
		return c.applyChanges(s, m)
	case *wire.Event:
		c.applyEvent(s, m)
	case *wire.Presence:
		c.applyPresence(m)
	case *wire.Error:
		err := fmt.Errorf("replica: server error: %s: %s", m.Reason, m.Message)
		c.log.Warn("server reported an error", "reason", m.Reason, "message", m.Message)
		if r := s.pending[m.RID]; m.RID != "" && r != nil {
			delete(s.pending, m.RID)
			r.reply <- result{err: err}
		}
		c.emit(Event{Kind: wire.KindError, Err: err})
	default:
		c.log.Debug("ignoring a frame", "kind", m.FrameKind())
	}
	return nil
}

// applyDoc takes in a whole accepted document. Of the same history as the
// replica, it is merged, keeping local changes not yet accepted; a
// rebased one (see rebase.go) replaces the replica's document, and the
// local draft values not yet accepted are made again on it.
func (c *Client) applyDoc(s *session, m *wire.Doc) {
	saved := m.Doc
	if m.Deflated {
		var err error
		if saved, err = wire.InflateDoc(m.Doc, crdt.MaxDocumentBytes); err != nil {
			c.log.Error("cannot inflate a decision's document", "id", m.ID, "err", err)
			return
		}
	}
	srv, err := crdt.Load(saved, nil, crdt.Options{})
	if err != nil {
		c.log.Error("cannot load a decision's document", "id", m.ID, "err", err)
		return
	}
	accepted := srv.Heads()
	if h, err := parseWireHeads(m.Heads); err == nil && len(h) > 0 && srv.Has(h) {
		accepted = h
	}
	rep := c.reps[m.ID]
	switch {
	case rep == nil:
		c.reps[m.ID] = &replica{doc: srv, accepted: accepted, durable: accepted}
	case isRebased(rep, srv):
		c.rebase(m.ID, rep, srv, accepted)
	default:
		if err := rep.doc.Merge(srv); err != nil {
			c.log.Error("cannot merge the accepted document; local changes are dropped", "id", m.ID, "err", err)
			rep.doc = srv
		}
		rep.accepted, rep.durable = accepted, accepted
		if rep.doc.Heads().Equal(accepted) {
			rep.stored = rep.seq // the stored document holds them all
		}
	}
	s.known[m.ID], s.synced[m.ID] = true, true
	c.saveLogged(m.ID)
	c.notify()
	c.push(m.ID)
	c.emit(c.eventFor(wire.KindDoc, m.ID, ""))
}

// applyChanges applies accepted changes: the frames ms, all of one
// decision, as one batch, with the last frame's heads. Changes that do
// not apply mean the replica missed something; the connection is ended
// so that the reconnect's hello catches the replica up.
func (c *Client) applyChanges(s *session, ms ...*wire.Changes) error {
	last := ms[len(ms)-1]
	id := last.ID
	rep := c.reps[id]
	if rep == nil {
		c.log.Warn("changes for a decision without a replica", "id", id)
		return errResync
	}
	batch := last.Changes
	if len(ms) > 1 {
		batch = nil
		for _, m := range ms {
			batch = append(batch, m.Changes...)
		}
	}
	var before crdt.Heads
	if c.opts.Dir != "" {
		before = rep.doc.Heads()
	}
	fresh, err := rep.doc.ApplyChanges(batch)
	if err != nil {
		c.log.Warn("accepted changes do not apply", "id", id, "err", err)
		return fmt.Errorf("%w: %v", errResync, err)
	}
	if len(fresh) > 0 && before != nil && before.Equal(rep.file.saved) {
		rep.file.batch = batch // the log line needs nothing else
	}
	if h, err := parseWireHeads(last.Heads); err == nil && rep.doc.Has(h) {
		rep.accepted = h
	}
	first := !s.synced[id]
	s.known[id], s.synced[id] = true, true
	c.saveLogged(id)
	c.notify()
	if first || c.toPush[id] || !rep.doc.Heads().Equal(rep.accepted) || rep.stored < rep.seq {
		c.push(id) // local changes wait to go
	}
	for _, m := range ms {
		c.emit(c.eventFor(wire.KindChanges, id, m.By))
	}
	c.noticeOverwrites(id, ms)
	return nil
}

// noticeOverwrites reports each value this member had set that another
// member's accepted edit replaced, once: the cells travel only with the
// change as it is accepted, never with a catch-up.
func (c *Client) noticeOverwrites(id string, ms []*wire.Changes) {
	if c.member == "" {
		return
	}
	for _, m := range ms {
		for i := range m.Cells {
			cell := m.Cells[i]
			if strings.EqualFold(cell.WasBy, c.member) && !strings.EqualFold(cell.By, c.member) {
				e := c.eventFor(KindOverwritten, id, cell.By)
				e.Cell = &cell
				c.emit(e)
			}
		}
	}
}

func (c *Client) applyEvent(s *session, m *wire.Event) {
	if m.Record != nil {
		c.adoptRecord(*m.Record)
	}
	if m.Definition != nil {
		c.adoptDefinition(m.ID, *m.Definition)
	}
	if m.Kind == wire.KindCreated {
		s.known[m.ID] = true
	}
	c.saveLogged(m.ID)
	c.notify()
	e := c.eventFor(m.Kind, m.ID, m.By)
	e.Answer, e.Question, e.Option, e.Criterion = m.Answer, m.Question, m.Option, m.Criterion
	c.emit(e)
}

func (c *Client) applyReply(s *session, m *wire.Reply) {
	if m.Kind == wire.KindEdit {
		if rep := c.reps[m.ID]; rep != nil && rep.inflight == m.RID && m.RID != "" {
			c.editReply(m.ID, rep, m)
		} else {
			c.log.Warn("reply to an edit not in flight", "id", m.ID, "rid", m.RID)
		}
		return
	}
	if m.OK {
		if m.Record != nil {
			c.adoptRecord(*m.Record)
		}
		for _, r := range m.Records {
			c.adoptRecord(r)
			s.known[r.ID] = true
		}
		for _, res := range m.Results {
			if res.Record != nil {
				c.adoptRecord(*res.Record)
			}
		}
		if m.Definition != nil {
			c.adoptDefinition(m.ID, *m.Definition)
		}
		if m.ID != "" {
			c.saveLogged(m.ID)
		}
		c.notify()
	}
	if r := s.pending[m.RID]; r != nil {
		delete(s.pending, m.RID)
		res := result{reply: m}
		if rep := c.reps[m.ID]; rep != nil {
			res.rebases = rep.rebases
		}
		r.reply <- res
	}
}

// editReply settles the edit in flight: accepted, its changes become the
// accepted heads; refused with reset, the replica returns to the accepted
// document the reply carries (refused as stale with a rebased document,
// it takes that document and carries its values over instead); refused
// otherwise, the changes are kept and wait for the next local change or
// connection.
func (c *Client) editReply(id string, rep *replica, m *wire.Reply) {
	sent, sentSeq := rep.sent, rep.sentSeq
	orphan := rep.orphan == m.RID
	rep.inflight, rep.sent, rep.orphan = "", nil, ""
	defer func() {
		c.saveLogged(id)
		c.notify()
		c.push(id)
	}()
	if orphan {
		c.orphanReply(id, rep, m)
		return
	}
	if m.OK {
		if h, err := parseWireHeads(m.Heads); err == nil && len(h) > 0 && rep.doc.Has(h) {
			rep.accepted = h
		} else {
			rep.accepted = sent
		}
		rep.durable = rep.accepted
		rep.stored = max(rep.stored, sentSeq)
		return
	}
	ref := &question.Refusal{Reason: m.Reason, Message: m.Message, Reset: m.Reset}
	c.log.Info("edit refused", "id", id, "reason", m.Reason, "message", m.Message, "reset", m.Reset)
	if m.Reset && m.Reason == question.Stale {
		// An edit made against a history the server has since rebased:
		// the reset carries the rebased document, and the local values
		// carry over to it instead of being dropped.
		if srv, err := crdt.Load(m.Doc, nil, crdt.Options{}); err == nil && len(m.Doc) > 0 && isRebased(rep, srv) {
			c.rebase(id, rep, srv, srv.Heads())
			c.emit(c.eventFor(wire.KindDoc, id, ""))
			return
		}
	}
	if m.Reset {
		if err := c.reset(rep, m.Doc); err != nil {
			c.log.Error("cannot reset the replica", "id", id, "err", err)
		}
		rep.reset, rep.droppedAt = ref, rep.seq
	} else {
		rep.held = ref
	}
	e := c.eventFor(KindEditRefused, id, "")
	e.Err = ref
	c.emit(e)
}

// orphanReply settles the reply to an edit made against a history the
// replica has left by a rebase since; its local values were carried over
// to the rebased document already, so the reply drops nothing. A reset
// carrying a document rebased again carries them over again; one of the
// replica's current history is merged, like a question:doc.
func (c *Client) orphanReply(id string, rep *replica, m *wire.Reply) {
	if m.OK {
		// The server accepted it before its rebase; the rebased document
		// holds it already.
		c.log.Warn("an edit of the old history was accepted after the rebase", "id", id, "rid", m.RID)
		return
	}
	c.log.Info("edit of the old history refused after a rebase", "id", id, "reason", m.Reason)
	if !m.Reset || len(m.Doc) == 0 {
		return
	}
	srv, err := crdt.Load(m.Doc, nil, crdt.Options{})
	if err != nil {
		c.log.Error("cannot load the reset's document", "id", id, "err", err)
		return
	}
	if isRebased(rep, srv) {
		c.rebase(id, rep, srv, srv.Heads())
		c.emit(c.eventFor(wire.KindDoc, id, ""))
		return
	}
	if err := rep.doc.Merge(srv); err != nil {
		c.log.Error("cannot merge the reset's document", "id", id, "err", err)
		return
	}
	rep.accepted, rep.durable = srv.Heads(), srv.Heads()
}

// reset returns a replica to the accepted document: the one the refusal
// carries, or else the replica as of its accepted heads. The new replica
// writes as a fresh actor, so nothing it writes can collide with the
// dropped changes.
func (c *Client) reset(rep *replica, doc []byte) error {
	var d *crdt.Doc
	var err error
	if len(doc) > 0 {
		d, err = crdt.Load(doc, nil, crdt.Options{})
	}
	fromServer := d != nil
	if d == nil {
		if len(rep.accepted) == 0 {
			return errors.Join(err, errors.New("no accepted heads to return to"))
		}
		if d, err = rep.doc.ForkAt(rep.accepted, ""); err != nil {
			return err
		}
	}
	rep.doc, rep.accepted, rep.held = d, d.Heads(), nil
	rep.stored = rep.seq // the local changes are dropped
	if fromServer {
		rep.durable = rep.accepted
	}
	rep.file.saved = nil // the log holds the dropped changes: a snapshot next
	return nil
}
