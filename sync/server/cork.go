package server

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// corkLimit is how much a corked connection holds before the write pump
// sends it on, without waiting for the outbox to empty.
const corkLimit = 8 << 10

// newCorkBufs returns the pool of a server's corked connections' buffers,
// so that memory grows with the connections writing, not with all of
// them. Twice corkLimit, so that a frame of up to corkLimit fits behind
// what the pump let accumulate.
func newCorkBufs() *sync.Pool {
	return &sync.Pool{New: func() any {
		b := make([]byte, 0, 2*corkLimit)
		return &b
	}}
}

// corkConn is the hijacked connection as the websocket.Conn writes to it.
// It lets the write pump send the frames queued for a connection in one
// socket write instead of one each.
//
// gorilla/websocket writes a frame with one Write, or two for a frame
// larger than its 4 KiB buffer (header and start of the payload, then the
// rest), always holding its own write lock; so Writes bring whole frames,
// one after another, whoever sends them: the write pump's frames, pings
// and close, or a pong or close from the read goroutine.
//
// While the write pump holds it corked, Writes only copy into a buffer;
// the pump alone writes the buffer to the socket, outside gorilla's lock:
// when it uncorks, having written every queued frame, or sooner, once
// corkLimit bytes are held (flushFull). A pong written meanwhile, even
// while the pump's socket write is blocked, joins the buffer behind whole
// frames and leaves with the next write. Uncorked, a Write goes straight
// to the socket, as it did without the cork; the pump corks only between
// such Writes, so the socket never has two writers.
//
// gorilla sets the write deadline before each Write. A Write straight to
// the socket gets that deadline; a socket write of what was held gets the
// latest deadline set while corked: each frame the pump writes sets it
// WriteWait ahead, as for a frame written alone, and a pong's shorter one
// never cuts it short. A failed socket write is kept: every later Write,
// flush and uncork returns it, so that the websocket.Conn and the write
// pump fail as they would have on the socket.
type corkConn struct {
	net.Conn
	bufs *sync.Pool // the server's (newCorkBufs)

	mu     sync.Mutex
	corked bool
	held   *[]byte   // from bufs, once a corked Write brought bytes
	next   time.Time // the deadline gorilla set for its next Write
	batch  time.Time // the latest deadline set while corked
	err    error
}

// cork holds Writes until uncork. Only the write pump calls cork, flushFull
// and uncork.
func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// flushFull writes what is held if it reached corkLimit.
func (c *corkConn) flushFull() error {
	c.mu.Lock()
	full := c.held != nil && len(*c.held) >= corkLimit
	c.mu.Unlock()
	if !full {
		return c.failed()
	}
	return c.flush()
}

// uncork writes what is held, including what Writes bring meanwhile, and
// lets later Writes through.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	for c.err == nil && c.held != nil {
		c.mu.Unlock()
		c.flush()
		c.mu.Lock()
	}
	c.corked = false
	c.batch = time.Time{}
	if c.held != nil { // a write failed
		c.recycle(c.held)
		c.held = nil
	}
	err := c.err
	c.mu.Unlock()
	return err
}

// flush writes what is held to the socket, as Writes go on into a fresh
// buffer.
func (c *corkConn) flush() error {
	c.mu.Lock()
	held, deadline, err := c.held, c.batch, c.err
	c.held = nil
	c.mu.Unlock()
	if held == nil || err != nil {
		if held != nil {
			c.recycle(held)
		}
		return err
	}
	if err = c.Conn.SetWriteDeadline(deadline); err == nil {
		_, err = c.Conn.Write(*held)
	}
	c.recycle(held)
	if err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
	return c.failed()
}

func (c *corkConn) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *corkConn) recycle(b *[]byte) {
	if cap(*b) > 4*corkLimit {
		return // grown for a large frame: leave it to the collector
	}
	*b = (*b)[:0]
	c.bufs.Put(b)
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if !c.corked {
		n, err := c.write(p)
		c.err = err
		return n, err
	}
	if len(p) > 0 {
		if c.held == nil {
			c.held = c.bufs.Get().(*[]byte)
		}
		*c.held = append(*c.held, p...)
	}
	return len(p), nil
}

// write writes p straight to the socket. The caller holds mu.
func (c *corkConn) write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(c.next); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

func (c *corkConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next = t
	if c.corked && t.After(c.batch) {
		c.batch = t
	}
	return nil
}

func (c *corkConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// corkHijacker hands the upgrader a corkConn in place of the connection
// it hijacks.
type corkHijacker struct {
	http.ResponseWriter
	bufs *sync.Pool
	conn *corkConn
}

func (w *corkHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("server: the response cannot be hijacked")
	}
	nc, rw, err := h.Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.conn = &corkConn{Conn: nc, bufs: w.bufs}
	return w.conn, rw, nil
}

// Unwrap lets http.ResponseController reach the wrapped writer.
func (w *corkHijacker) Unwrap() http.ResponseWriter { return w.ResponseWriter }
