package server

import (
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// conn is one WebSocket. Its read pump (ServeHTTP's goroutine) decodes
// frames and hands them to the document's goroutine; its write pump owns
// every write to the socket. The document goroutine never blocks on a
// conn: a full outbox closes the conn as slow.
type conn struct {
	s      *Server
	ws     *websocket.Conn
	member question.Member
	doc    *document

	mu     sync.Mutex
	format wire.Format // set by the hello frame, before any reply
	out    chan frame
	done   chan struct{}
	once   sync.Once
}

type frame struct {
	typ  int
	data []byte
}

// send queues an encoded frame; a full outbox drops the connection.
func (c *conn) send(f frame) {
	select {
	case <-c.done:
	case c.out <- f:
	default:
		c.s.opts.Logger.Warn("dropping slow connection", "doc", c.doc.id, "member", c.member.Login)
		c.close()
	}
}

func (c *conn) close() {
	c.once.Do(func() { close(c.done) })
}

func (c *conn) writePump() {
	ping := time.NewTicker(c.s.opts.PingInterval)
	defer func() {
		ping.Stop()
		c.ws.Close()
	}()
	for {
		select {
		case f := <-c.out:
			c.ws.SetWriteDeadline(time.Now().Add(c.s.opts.WriteWait))
			if err := c.ws.WriteMessage(f.typ, f.data); err != nil {
				c.close()
				return
			}
		case <-ping.C:
			c.ws.SetWriteDeadline(time.Now().Add(c.s.opts.WriteWait))
			if err := c.ws.WriteMessage(websocket.PingMessage, nil); err != nil {
				c.close()
				return
			}
		case <-c.done:
			// Flush what is queued, then say goodbye.
			for {
				select {
				case f := <-c.out:
					c.ws.SetWriteDeadline(time.Now().Add(c.s.opts.WriteWait))
					if c.ws.WriteMessage(f.typ, f.data) != nil {
						return
					}
					continue
				default:
				}
				break
			}
			c.ws.SetWriteDeadline(time.Now().Add(time.Second))
			c.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
			return
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
		e.frames[f] = &frame{typ: typ, data: b}
	}
	return *e.frames[f], nil
}
