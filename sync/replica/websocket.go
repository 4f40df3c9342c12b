package replica

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/sync/wire"
)

// wsConn adapts a gorilla *websocket.Conn: a read limit, a read deadline
// renewed by every frame, ping and pong, and a deadline on every write.
type wsConn struct {
	ws       *websocket.Conn
	pongWait time.Duration // 0: no read deadline
}

func webSocketDialer(ping time.Duration) Dialer {
	return func(ctx context.Context, url string, header http.Header) (Conn, error) {
		d := websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: defaultHandshake}
		ws, resp, err := d.DialContext(ctx, url, header)
		if err != nil {
			if resp != nil {
				return nil, fmt.Errorf("%w (HTTP %s)", err, resp.Status)
			}
			return nil, err
		}
		c := &wsConn{ws: ws}
		ws.SetReadLimit(wire.MaxFrameBytes)
		if ping > 0 {
			c.pongWait = 2*ping + 5*time.Second
			c.renew()
			ws.SetPongHandler(func(string) error { c.renew(); return nil })
			ws.SetPingHandler(func(data string) error {
				c.renew()
				err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(defaultWriteWait))
				if err == websocket.ErrCloseSent {
					return nil
				}
				return err
			})
		}
		return c, nil
	}
}

func (c *wsConn) renew() {
	if c.pongWait > 0 {
		c.ws.SetReadDeadline(time.Now().Add(c.pongWait))
	}
}

func (c *wsConn) ReadMessage() (int, []byte, error) {
	typ, p, err := c.ws.ReadMessage()
	if err == nil {
		c.renew()
	}
	return typ, p, err
}

func (c *wsConn) WriteMessage(typ int, data []byte) error {
	c.ws.SetWriteDeadline(time.Now().Add(defaultWriteWait))
	return c.ws.WriteMessage(typ, data)
}

// Ping is called by the goroutine that writes; WriteControl may run
// beside WriteMessage.
func (c *wsConn) Ping() error {
	return c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(defaultWriteWait))
}

// Close says goodbye with a close frame, then closes the socket.
func (c *wsConn) Close() error {
	c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
		time.Now().Add(defaultCloseWait))
	return c.ws.Close()
}
