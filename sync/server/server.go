package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// Server is an http.Handler that upgrades each request to a WebSocket on
// one document (?doc=<id>) and routes its frames to that document's
// goroutine, which owns the document's authority.
type Server struct {
	opts     Options
	upgrader websocket.Upgrader

	mu       sync.Mutex
	docs     map[string]*document
	conns    map[*conn]struct{}
	tally    tally // connections per member and per document (limits.go)
	closing  bool
	runners  sync.WaitGroup
	handlers sync.WaitGroup

	stats   counters
	metrics *metrics
	// corkBufs holds the buffers of connections whose write pump is
	// sending a batch (cork.go).
	corkBufs *sync.Pool
	// deflaters holds the compressors of catch-up documents (join.go).
	deflaters *sync.Pool
	// reclaiming is set while a reclaim's collection is scheduled, and
	// trimming while a trim is (reclaim.go).
	reclaiming, trimming atomic.Bool
}

// counters are the Server's running totals (Stats).
type counters struct {
	slowDrops, commits, commitFailures, framesIn, framesOut, refusals atomic.Uint64
	throttled, rateCloses, refusedUpgrades                            atomic.Uint64
	presenceDropped, gatherWaits, reclaims                            atomic.Uint64
}

// New returns a Server.
func New(opts Options) (*Server, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, docs: map[string]*document{}, conns: map[*conn]struct{}{}, corkBufs: newCorkBufs(), deflaters: newDeflaters(),
		tally: tally{members: map[string]int{}, docs: map[string]int{}}}
	var err error
	if s.metrics, err = newMetrics(s, opts.Registerer); err != nil {
		return nil, fmt.Errorf("server: register metrics: %w", err)
	}
	s.upgrader = websocket.Upgrader{
		// No buffers of its own: a connection reads and writes frames
		// through the 4 KiB reader and writer net/http made for the
		// request, which it keeps while ServeHTTP runs, that is for as
		// long as the connection lasts.
		ReadBufferSize:  0,
		WriteBufferSize: 0,
		CheckOrigin:     opts.CheckOrigin,
	}
	if s.upgrader.CheckOrigin == nil {
		s.upgrader.CheckOrigin = sameOrigin
	}
	return s, nil
}

func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// ServeHTTP upgrades the request and serves the connection until it ends.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	docID := r.URL.Query().Get("doc")
	if docID == "" || len(docID) > 256 {
		http.Error(w, "missing or overlong ?doc= parameter", http.StatusBadRequest)
		return
	}
	closeRefusals := r.URL.Query().Get("refuse") == "close"
	member, err := s.opts.Authorize(r, docID)
	if err != nil {
		code, closeCode := http.StatusForbidden, CloseForbidden
		switch {
		case errors.Is(err, ErrUnauthorized):
			code, closeCode = http.StatusUnauthorized, CloseUnauthorized
		case errors.Is(err, ErrUnknownDocument):
			code, closeCode = http.StatusNotFound, CloseUnknownDocument
		}
		if closeRefusals {
			s.refuseByClose(w, r, closeCode, err.Error())
			return
		}
		http.Error(w, err.Error(), code)
		return
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	if len(s.conns) >= s.opts.MaxConnections {
		s.refusedUpgrade("connections")
		s.mu.Unlock()
		http.Error(w, "too many connections", http.StatusServiceUnavailable)
		return
	}
	d := s.docs[docID]
	if d == nil && len(s.docs) >= s.opts.MaxDocuments {
		s.refusedUpgrade("documents")
		s.mu.Unlock()
		http.Error(w, "too many open documents", http.StatusServiceUnavailable)
		return
	}
	if code, msg := s.admit(member.Login, docID); code != 0 {
		s.mu.Unlock()
		http.Error(w, msg, code)
		return
	}
	req := r.Clone(context.Background())
	req.Body = http.NoBody
	c := &conn{s: s, member: member, req: req, docID: docID, limit: newLimiter(&s.opts), closeRefusals: closeRefusals,
		wake: make(chan struct{}, 1), done: make(chan struct{}), readDone: make(chan struct{}), writeDone: make(chan struct{})}
	s.conns[c] = struct{}{} // reserve the slot before the upgrade
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.release(member.Login, docID)
		s.mu.Unlock()
	}()

	hw := &corkHijacker{ResponseWriter: w, bufs: s.corkBufs}
	ws, err := s.upgrader.Upgrade(hw, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	c.ws, c.cork = ws, hw.conn
	ws.SetReadLimit(s.opts.ReadLimit)
	ws.SetReadDeadline(time.Now().Add(s.opts.PongWait))
	ws.SetPongHandler(func(string) error {
		err := ws.SetReadDeadline(time.Now().Add(s.opts.PongWait))
		if c.closed() {
			c.unblockRead() // the close's deadline stands
		}
		return err
	})
	c.reading.Store(ws)
	if c.closed() {
		c.unblockRead() // closed before a close could unblock it
	}
	d = s.attach(docID)
	s.mu.Lock()
	c.doc = d
	s.mu.Unlock()
	go c.writePump()
	defer func() {
		c.close()
		d.presence.remove(c)
		d.leave(c)
		s.detach(d)
	}()
	s.readPump(c)
}

// readPump decodes frames and hands them to the document goroutine, until
// the socket fails or the conn is closed. Each frame first passes the
// conn's rate limits (throttle): a frame over them is held here, so the
// conn is not read on meanwhile and its later frames wait in the socket,
// not in the document's inbox.
func (s *Server) readPump(c *conn) {
	defer close(c.readDone)
	joined := false
	for {
		typ, data, err := c.ws.ReadMessage()
		if err == nil {
			err = s.throttle(c, len(data))
		}
		if err != nil {
			if _, over := err.(*overRate); over {
				c.linger()
			}
			return
		}
		format := wire.Binary
		if typ == websocket.TextMessage {
			format = wire.Text
		}
		s.stats.framesIn.Add(1)
		msg, err := wire.Decode(data, format)
		if err != nil {
			s.metrics.frameIn("invalid")
			h := wire.PeekHeader(data, format)
			answer := format // before the hello, the frame's own format
			if joined {
				answer = c.format // after it, always the hello's
			}
			if wire.IsRequest(h.Kind) && h.RID != "" {
				// Answer the request itself, so its sender is not left waiting.
				c.replyFrame(answer, &wire.Reply{Header: h, Reason: question.Invalid, Message: err.Error()})
			} else {
				c.replyError(answer, h.RID, "invalid", err.Error())
			}
			continue
		}
		s.metrics.frameIn(string(msg.FrameKind()))
		if !joined {
			hello, ok := msg.(*wire.Hello)
			if !ok {
				c.replyError(format, "", "invalid", "the first frame must be hello")
				c.close()
				return
			}
			if hello.V != wire.Version {
				c.replyError(format, "", "version", "this server speaks protocol version 1")
				if c.closeRefusals {
					c.closeWith(CloseVersion, "this server speaks protocol version 1")
				} else {
					c.close()
				}
				return
			}
			c.mu.Lock()
			c.format = format
			c.mu.Unlock()
			joined = true
		}
		if p, ok := msg.(*wire.Presence); ok {
			// Ephemeral: relayed here, never through the document's
			// goroutine, its authority or its store.
			if !c.doc.presence.publish(c, p, time.Now()) {
				s.stats.presenceDropped.Add(1)
			}
			continue
		}
		if !c.doc.submit(op{c: c, msg: msg}) {
			// The document is stopping (handed off, or unloaded after a
			// failed commit): the replies to what it accepted go out
			// before the conn is closed (forget), not dropped by a close
			// from here. This frame was not applied.
			select {
			case <-c.doc.ended:
			case <-c.done:
			}
			return
		}
	}
}

func (c *conn) replyFrame(f wire.Format, m wire.Message) {
	if r, ok := m.(*wire.Reply); ok && !r.OK {
		c.s.refused(string(r.Reason))
	}
	e := &encoded{msg: m}
	if fr, err := e.frame(f); err == nil {
		c.send(fr)
	}
}

func (c *conn) replyError(f wire.Format, rid, reason, message string) {
	c.s.refused(reason)
	e := &encoded{msg: &wire.Error{Header: wire.Header{Kind: wire.KindError, RID: rid}, Reason: reason, Message: message}}
	if fr, err := e.frame(f); err == nil {
		c.send(fr)
	}
}

// refused counts a refusal, in Stats and in the metrics.
func (s *Server) refused(reason string) {
	s.stats.refusals.Add(1)
	s.metrics.refused(reason)
}

// attach returns the document's goroutine, starting it if needed, and
// counts the caller as attached so the document is not unloaded.
func (s *Server) attach(id string) *document {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.docs[id]
	if d == nil {
		d = newDocument(s, id)
		s.docs[id] = d
		s.runners.Add(1)
		go func() {
			defer s.runners.Done()
			d.run()
			s.forget(d)
		}()
	}
	d.refs++
	return d
}

func (s *Server) detach(d *document) {
	s.mu.Lock()
	d.refs--
	s.mu.Unlock()
}

// tryUnload removes an idle document; it reports whether the document's
// goroutine may exit.
func (s *Server) tryUnload(d *document) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.refs > 0 || len(d.inbox) > 0 {
		return false
	}
	delete(s.docs, d.id)
	d.stopped = true
	return true
}

// Do runs fn on the goroutine that owns doc's authority, loading the
// document if needed, and returns once fn's effects are durable and have
// been announced to the document's connections. Hosts use it for work
// that is not a connection's request: the Planner's tools, answer
// delivery, write-ups (it implements question/planner's Authorities).
// ctx bounds the wait for the document's goroutine; once fn is queued, Do
// waits for it to finish. fn must not block on other documents' Do.
func (s *Server) Do(ctx context.Context, doc string, fn func(a *question.Authority) error) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return errors.New("server: shutting down")
	}
	if s.docs[doc] == nil && len(s.docs) >= s.opts.MaxDocuments {
		s.mu.Unlock()
		return errors.New("server: too many open documents")
	}
	s.mu.Unlock()
	d := s.attach(doc)
	defer s.detach(d)
	done := make(chan error, 1)
	select {
	case d.inbox <- op{do: fn, done: done}:
	case <-d.quit:
		return errors.New("server: shutting down")
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once queued, fn runs: wait for it (or for the document to stop)
	// even if ctx ends, so that the caller never reads what fn writes
	// while fn still runs.
	select {
	case err := <-done:
		return err
	case <-d.quit:
		return errors.New("server: shutting down")
	}
}

// Shutdown stops accepting connections, closes every connection after its
// queued frames, waits for every document to commit what it accepted, and
// returns. Nothing acknowledged is lost: a command is acknowledged only
// after its commit.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for c := range s.conns {
		c.close()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.handlers.Wait()
		s.mu.Lock()
		for _, d := range s.docs {
			d.stop()
		}
		s.mu.Unlock()
		s.runners.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
