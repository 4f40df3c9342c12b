package replica

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
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
				return nil, &refusedError{err: fmt.Errorf("%w (HTTP %s)", err, resp.Status), after: retryAfter(resp, time.Now())}
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

// refusedError is a handshake the server answered with an HTTP status
// other than 101, with the wait its Retry-After header asked for.
type refusedError struct {
	err   error
	after time.Duration
}

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// RetryAfter is the least wait before the next attempt that the server
// asked for (0 when it named none).
func (e *refusedError) RetryAfter() time.Duration { return e.after }

// retryAfter reads resp's Retry-After header, in seconds or as an HTTP
// date, as a wait from now; 0 when it is absent or unreadable.
func retryAfter(resp *http.Response, now time.Time) time.Duration {
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, 24*3600)) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}
