package loopback

import (
	"bytes"
	"errors"
	"io"
	"sync"
)

// DefaultBuffer is how many messages Pipe buffers in each direction.
const DefaultBuffer = 64

// ErrClosed is returned by ReadMessage and WriteMessage on an end that was
// closed.
var ErrClosed = errors.New("loopback: use of closed connection")

// Conn is one end of a pipe.
type Conn struct {
	in     <-chan message
	out    chan<- message
	closed chan struct{} // closed by this end's Close
	peer   chan struct{} // closed by the other end's Close
	once   sync.Once
}

type message struct {
	typ  int
	data []byte
}

// Pipe returns the two ends of a connection buffering DefaultBuffer
// messages in each direction.
func Pipe() (a, b *Conn) { return NewPipe(DefaultBuffer) }

// NewPipe returns the two ends of a connection buffering up to buffer
// messages in each direction; 0 makes every write wait for the peer's
// read.
func NewPipe(buffer int) (a, b *Conn) {
	if buffer < 0 {
		buffer = 0
	}
	ab, ba := make(chan message, buffer), make(chan message, buffer)
	ac, bc := make(chan struct{}), make(chan struct{})
	a = &Conn{in: ba, out: ab, closed: ac, peer: bc}
	b = &Conn{in: ab, out: ba, closed: bc, peer: ac}
	return a, b
}

// ReadMessage returns the next message the peer wrote. After the peer
// closed, it returns what is still buffered and then io.EOF; after this
// end closed, ErrClosed.
func (c *Conn) ReadMessage() (messageType int, p []byte, err error) {
	select {
	case <-c.closed:
		return 0, nil, ErrClosed
	default:
	}
	select {
	case m := <-c.in:
		return m.typ, m.data, nil
	case <-c.closed:
		return 0, nil, ErrClosed
	case <-c.peer:
		select {
		case m := <-c.in:
			return m.typ, m.data, nil
		default:
			return 0, nil, io.EOF
		}
	}
}

// WriteMessage sends a copy of data, waiting while the peer's buffer is
// full. It fails with ErrClosed once this end is closed and with
// io.ErrClosedPipe once the peer is.
func (c *Conn) WriteMessage(messageType int, data []byte) error {
	select {
	case <-c.closed:
		return ErrClosed
	case <-c.peer:
		return io.ErrClosedPipe
	default:
	}
	m := message{typ: messageType, data: bytes.Clone(data)}
	select {
	case c.out <- m:
		return nil
	case <-c.closed:
		return ErrClosed
	case <-c.peer:
		return io.ErrClosedPipe
	}
}

// Close closes this end. It wakes a blocked read or write on either end.
// Closing twice is harmless.
func (c *Conn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}
