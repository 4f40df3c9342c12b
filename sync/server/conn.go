package server

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// conn is one WebSocket. Its read pump (ServeHTTP's goroutine) decodes
// frames and hands them to the document's goroutine; its write pump owns
// every write to the socket. The document goroutine never blocks on a
// conn: a full outbox closes the conn as slow.
//
// The outbox is one FIFO holding two sorts of frames: ordinary ones
// (replies, broadcasts), at most Options.Outbox of them, and paced ones
// (the welcome and the join's catch-up frames), which the document
// goroutine adds only as the write pump drains them (see
// document.pumpJoins), so they never count against the slow-consumer
// bound and a joiner that keeps reading always gets everything.
type conn struct {
	s     *Server
	ws    *websocket.Conn
	cork  *corkConn // the socket under ws
	doc   *document // set under s.mu once attached
	docID string
	// req is the upgrade request as Options.Authorize saw it, for
	// Reauthorize.
	req *http.Request
	// closeRefusals: the client asked (refuse=close) for a refusal as a
	// close code (close.go), its HTTP status being hidden from it.
	closeRefusals bool

	mu     sync.Mutex
	member question.Member // set at the upgrade; Reauthorize may lower it
	format wire.Format     // set by the hello frame, before any reply

	qmu     sync.Mutex
	queue   []queued
	ordered int // ordinary frames queued
	paced   int // paced frames queued
	pacedB  int // bytes of the paced frames queued
	// presence counts presence frames queued (presence.go): they are
	// neither ordinary nor paced, and never close the connection.
	presence int
	wake     chan struct{}

	// limit is the conn's rate limiter (nil: none); its read pump's alone.
	limit *limiter

	// joining is set while the document has join frames left to send.
	joining atomic.Bool
	// helloSeen is owned by the document goroutine.
	helloSeen bool

	done chan struct{}
	once sync.Once
	// reading is the websocket.Conn whose read pump a close unblocks
	// (unblockRead), set once the pump may start.
	reading atomic.Pointer[websocket.Conn]
	// closeCode and closeReason are the close frame's, set once before
	// done closes.
	closeCode   int
	closeReason string
	// readDone closes when the read pump has returned, writeDone when
	// the write pump has (its last frames and the close frame written).
	readDone  chan struct{}
	writeDone chan struct{}
}

type frame struct {
	typ  int
	data []byte
	kind string
}

type queued struct {
	frame
	paced    bool
	presence bool
}

func (c *conn) login() question.Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.member
}

// send queues an ordinary frame; a full outbox drops the connection.
func (c *conn) send(f frame) {
	c.qmu.Lock()
	select {
	case <-c.done:
		c.qmu.Unlock()
		return
	default:
	}
	if c.ordered >= c.s.opts.Outbox {
		c.qmu.Unlock()
		c.s.stats.slowDrops.Add(1)
		c.s.metrics.slowDrop()
		c.s.opts.Logger.Warn("dropping slow connection", "doc", c.doc.id, "member", c.login().Login)
		c.close()
		return
	}
	c.ordered++
	c.s.metrics.outbox(len(c.queue))
	c.queue = append(c.queue, queued{frame: f})
	c.qmu.Unlock()
	c.signal()
}

// sendPaced queues a join frame; the document goroutine bounds how many
// are queued (pacedRoom).
func (c *conn) sendPaced(f frame) {
	c.qmu.Lock()
	select {
	case <-c.done:
		c.qmu.Unlock()
		return
	default:
	}
	c.paced++
	c.pacedB += len(f.data)
	c.s.metrics.outbox(len(c.queue))
	c.queue = append(c.queue, queued{frame: f, paced: true})
	c.qmu.Unlock()
	c.signal()
}

// pacedRoom reports how many more join frames may be queued now.
func (c *conn) pacedRoom() int {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if c.pacedB >= joinWindowBytes {
		return 0
	}
	return joinWindow - c.paced
}

func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// pop takes the oldest queued frame.
func (c *conn) pop() (queued, bool) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if len(c.queue) == 0 {
		return queued{}, false
	}
	q := c.queue[0]
	c.queue[0] = queued{}
	c.queue = c.queue[1:]
	if len(c.queue) == 0 {
		c.queue = nil // let the backing array go
	}
	if q.presence {
		c.presence--
	} else if q.paced {
		c.paced--
		c.pacedB -= len(q.data)
		if c.paced <= joinWindow/4 && c.joining.Load() {
			c.doc.wakeJoins()
		}
	} else {
		c.ordered--
	}
	return q, true
}

func (c *conn) close() { c.closeWith(websocket.CloseNormalClosure, "") }

// closeWith closes the conn, its close frame carrying code and reason;
// the first close decides them.
func (c *conn) closeWith(code int, reason string) {
	c.once.Do(func() {
		c.closeCode, c.closeReason = code, reason
		close(c.done)
		c.unblockRead()
	})
}

// unblockRead ends the read pump's wait for a frame once the conn is
// closed, after its lingering. A deadline, rather than a goroutine per
// conn waiting for done to set it, since idle conns are most of them.
func (c *conn) unblockRead() {
	if ws := c.reading.Load(); ws != nil {
		ws.SetReadDeadline(time.Now().Add(c.lingering()))
	}
}

// lingering is how long a closed conn is still read after its close
// frame: closeLinger for a close for its rate, which the peer is then
// sure to read (see linger), none otherwise. Only once done is closed.
func (c *conn) lingering() time.Duration {
	if c.closeCode == websocket.ClosePolicyViolation {
		return closeLinger
	}
	return 0
}

// write hands one frame to the websocket.Conn: to the socket, or to the
// cork's buffer while the pump drains the outbox.
func (c *conn) write(f frame) error {
	c.ws.SetWriteDeadline(time.Now().Add(c.s.opts.WriteWait))
	if err := c.ws.WriteMessage(f.typ, f.data); err != nil {
		return err
	}
	c.s.stats.framesOut.Add(1)
	c.s.metrics.frameOut(f.kind)
	return nil
}

// writeFailed notes a failed write: one that timed out drops the peer as
// slow.
func (c *conn) writeFailed(err error) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		// A peer that stopped reading: as slow as a full outbox.
		c.s.stats.slowDrops.Add(1)
		c.s.metrics.slowDrop()
		c.s.opts.Logger.Warn("dropping slow connection: a write timed out", "doc", c.docID, "member", c.login().Login)
	}
}

// drain writes every queued frame, and those queued meanwhile, to the
// corked connection, sending what it holds on whenever that reaches
// corkLimit; the caller uncorks once it returns, so that the frames of
// one wake reach the socket in one write. Frames leave the outbox one by
// one as they are written, so that the slow-consumer bound and the join
// pacing count them as without the cork.
func (c *conn) drain() error {
	for {
		q, ok := c.pop()
		if !ok {
			return nil
		}
		if err := c.write(q.frame); err != nil {
			return err
		}
		if err := c.cork.flushFull(); err != nil {
			return err
		}
	}
}

// sendQueued writes the queued frames (drain), then runs last if set,
// all corked, and sends what the cork holds in one write.
func (c *conn) sendQueued(last func()) error {
	c.cork.cork()
	err := c.drain()
	if last != nil {
		last()
	}
	if uerr := c.cork.uncork(); err == nil {
		err = uerr
	}
	return err
}

func (c *conn) writePump() {
	ping := time.NewTicker(c.s.opts.PingInterval)
	defer func() {
		ping.Stop()
		c.ws.Close()
		close(c.writeDone)
	}()
	pingNow := func() bool {
		c.ws.SetWriteDeadline(time.Now().Add(c.s.opts.WriteWait))
		return c.ws.WriteMessage(websocket.PingMessage, nil) == nil
	}
	for {
		select {
		case <-c.done:
			// Flush what is queued, then say goodbye, in one write.
			if err := c.sendQueued(func() {
				c.ws.SetWriteDeadline(time.Now().Add(time.Second))
				c.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(c.closeCode, c.closeReason))
			}); err != nil {
				c.writeFailed(err)
			}
			if c.lingering() > 0 {
				<-c.readDone // the socket stays open while the read pump lingers
			}
			return
		case <-ping.C:
			if !pingNow() {
				c.close()
				return
			}
			continue
		default:
		}
		if err := c.sendQueued(nil); err != nil {
			c.writeFailed(err)
			c.close()
			return
		}
		select {
		case <-c.wake:
		case <-ping.C:
			if !pingNow() {
				c.close()
				return
			}
		case <-c.done:
		}
	}
}

// encoded caches one message's encodings, so a broadcast is encoded once
// per format whatever the number of peers.
type encoded struct {
	msg    wire.Message
	frames [2]*frame
}

func (e *encoded) frame(f wire.Format) (frame, error) {
	if e.frames[f] == nil {
		b, err := wire.Encode(e.msg, f)
		if err != nil {
			return frame{}, err
		}
		typ := websocket.BinaryMessage
		if f == wire.Text {
			typ = websocket.TextMessage
		}
		e.frames[f] = &frame{typ: typ, data: b, kind: string(e.msg.FrameKind())}
	}
	return *e.frames[f], nil
}

func (c *conn) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}
