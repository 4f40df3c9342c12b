package replica

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/accord-crdt/accord/sync/wire"
)

// Conn is a message connection to the server: the subset of
// *websocket.Conn (gorilla/websocket) the client uses, which
// *loopback.Conn also has. Message types are WebSocket's: 1 text, 2
// binary.
//
// The client calls ReadMessage from one goroutine and WriteMessage from
// one goroutine (never two at once), and Close from any. A Conn that also
// has a method Ping() error is pinged every Options.PingInterval by the
// goroutine that writes.
type Conn interface {
	ReadMessage() (messageType int, p []byte, err error)
	WriteMessage(messageType int, data []byte) error
	Close() error
}

// Dialer opens a Conn to url, sending header with the handshake.
type Dialer func(ctx context.Context, url string, header http.Header) (Conn, error)

// Options configures a Client. The zero value works.
type Options struct {
	// Header is sent with every WebSocket handshake (authentication).
	Header http.Header
	// Format is the frame encoding: wire.Binary (msgpack, the default) or
	// wire.Text (JSON).
	Format wire.Format
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// MinBackoff and MaxBackoff bound the wait before each redial (defaults
	// 50 ms and 5 s). The wait doubles from MinBackoff with every failed
	// attempt, up to MaxBackoff, and is jittered to between half and all
	// of that.
	MinBackoff, MaxBackoff time.Duration
	// Dir, when set, keeps each decision's replica document, last accepted
	// heads and record in files in Dir (a snapshot and a change log after
	// it), saved after every local change and every applied frame. A client
	// started on the same Dir
	// restores its drafts and unsent edits and pushes them on connecting.
	// One Dir belongs to one document and one client at a time.
	Dir string
	// Dialer opens connections; nil dials a WebSocket with
	// gorilla/websocket. Tests plug in an in-memory transport here.
	// A dial error with a method RetryAfter() time.Duration sets the
	// least wait before the next attempt (at most MaxBackoff): the
	// default dialer's errors have it when the server refused the
	// handshake with a Retry-After header (a 503 or 429).
	Dialer Dialer
	// Background makes Dial return at once and connect in the background,
	// so a client restored from Dir works offline from the start. By
	// default Dial returns only once the server has welcomed it.
	Background bool
	// EventBuffer is how many events Events buffers (default 256); when it
	// is full the oldest is dropped.
	EventBuffer int
	// HandshakeTimeout bounds one dial and its hello (default 10 s).
	HandshakeTimeout time.Duration
	// PingInterval is how often connections that can ping are pinged
	// (default 20 s; negative disables). The default dialer's connections
	// fail when nothing, not even a pong, arrives for 2×PingInterval+5 s.
	PingInterval time.Duration
}

const (
	defaultMinBackoff = 50 * time.Millisecond
	defaultMaxBackoff = 5 * time.Second
	defaultEvents     = 256
	defaultHandshake  = 10 * time.Second
	defaultPing       = 20 * time.Second
	requestQueue      = 64 // requests waiting for the writer
	defaultWriteWait  = 10 * time.Second
	defaultCloseWait  = time.Second
)

func (o *Options) setDefaults() error {
	if o.Format != wire.Binary && o.Format != wire.Text {
		return fmt.Errorf("replica: unknown Options.Format %d", o.Format)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = defaultMinBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = defaultMaxBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	if o.EventBuffer <= 0 {
		o.EventBuffer = defaultEvents
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = defaultHandshake
	}
	if o.PingInterval == 0 {
		o.PingInterval = defaultPing
	}
	if o.Dialer == nil {
		o.Dialer = webSocketDialer(o.PingInterval)
	}
	return nil
}
