package server

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// ErrUnauthorized may be returned by Options.Authorize to refuse a
// connection with 401 rather than 403.
var ErrUnauthorized = errors.New("server: unauthorized")

// ErrUnknownDocument may be returned by Options.Authorize to refuse a
// connection to a document that does not exist with 404 rather than 403.
var ErrUnknownDocument = errors.New("server: unknown document")

// Options configures a Server. Store and Authorize are required; every
// other field has a working default.
type Options struct {
	// Store is where every document's decisions are committed.
	Store persist.Store
	// Authorize tells who a connection's member is for a document, and
	// whether they write or only read. An error refuses the connection.
	// Server.Reauthorize calls it again, with a copy of the upgrade
	// request (same URL, headers and cookies; no body).
	Authorize func(r *http.Request, doc string) (question.Member, error)
	// CheckOrigin accepts or refuses a browser's Origin. nil accepts only
	// requests whose Origin host equals the request's Host (or no Origin).
	CheckOrigin func(r *http.Request) bool
	// Now and NewID are handed to each document's authority.
	Now   func() time.Time
	NewID func() string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Host is the application around the engine: running
	// implementations, pages, research, and the notifications of joins,
	// findings and commits. nil is NopHost.
	Host Host

	// MaxConnections caps open connections (default 4096).
	MaxConnections int
	// MaxDocuments caps documents loaded at once (default 1024).
	MaxDocuments int
	// Outbox is the number of frames queued per connection before it is
	// dropped as slow (default 1024).
	Outbox int
	// ReadLimit caps one incoming frame (default wire.MaxFrameBytes).
	ReadLimit int64
	// PingInterval and PongWait bound a silent peer (defaults 20 s, 45 s).
	PingInterval, PongWait time.Duration
	// WriteWait bounds one frame write (default 10 s).
	WriteWait time.Duration
	// IdleUnload is how long a document with no connection stays loaded
	// (default 30 s).
	IdleUnload time.Duration
	// ParkIdle is how long a decision of an open document goes unused
	// (no edit, save, catch-up or other command needing its automerge
	// document) before that document is parked, at most twice that
	// (default 10 s; negative: never). Its members stay connected: a live
	// decision costs tens to hundreds of KB of automerge memory, a parked
	// one its stored bytes (question.Authority.ParkUnused), and whatever
	// needs a parked decision wakes it, in about a millisecond for a
	// small decision. Decisions a question:sync session pins stay live.
	ParkIdle time.Duration
	// MaxGroup is the most commands committed in one group (default 512).
	MaxGroup int
	// QuietRebase is how long a document goes without a command before
	// the server rebases its decisions whose history has outgrown their
	// values (question.Options.QuietRebase; default 1 s). A rebase makes
	// every member load the decision again, and an edit in flight be made
	// again: done while nobody edits, nobody waits for it. A decision
	// edited without such a pause is rebased with an edit once its
	// history is overdue. Negative: rebase with the edit that outgrows
	// the values.
	QuietRebase time.Duration
	// GroupWait is the longest a document's next group of draft edits
	// waits for more edits before its commit, while two or more
	// connections edit it together and its edits come less than
	// GroupWait apart on average (default 20 ms; negative: never): people
	// editing at human rates never wait. The group ends sooner once every
	// recent editor has an edit in it, and at once for anything but draft
	// edits. A group's replies and
	// broadcast go out after its commit, so they wait too; in exchange
	// every replica applies fewer, larger frames, and the server commits
	// and writes less per edit. A lone editor never waits.
	GroupWait time.Duration
	// FrameRate and FrameBurst bound the data frames one connection
	// sends: a token bucket refilled at FrameRate frames per second that
	// holds up to FrameBurst of them (defaults 50 and 200). The page and
	// Go clients keep at most one edit per decision in flight and fold
	// what was typed meanwhile into the next, so a person typing sends a
	// few frames a second, and a page coming back online one edit per
	// decision it changed; neither comes near, while a client flooding
	// the server is held to a small share of what one document's
	// goroutine decides. A negative value of either turns the frame limit
	// off.
	FrameRate  float64
	FrameBurst int
	// ByteRate and ByteBurst bound the bytes of the data frames one
	// connection sends, as a token bucket in the same way (defaults
	// 1 MiB per second, and twice ReadLimit, so that two frames of the
	// largest size pass at once). ByteBurst is raised to ReadLimit if it
	// is below it: a frame that passes the read limit always fits in the
	// bucket. A negative value of either turns the byte limit off.
	ByteRate  float64
	ByteBurst int
	// MaxThrottle is how long a connection may stay over its rates. A
	// frame that finds a bucket empty is not read on until the bucket
	// holds its tokens, so a flooding connection is slowed while the
	// others are not. A connection is over its rates from the first
	// frame that has to wait until its buckets have refilled to what
	// they gain in a second (FrameRate frames and ByteRate bytes, or
	// their bursts if less), that is until it stayed under its rates
	// for a while: a frame that passes at once because the server
	// paused reading for a moment (a busy CPU) does not end the time
	// over them. A connection over its rates for longer than
	// MaxThrottle (its frame that would have to wait past it), or whose
	// next frame would have to wait longer than that, is closed with
	// WebSocket close code 1008 (policy violation) and the reason "rate
	// limit: more than N frames/s" (or bytes/s). Default 5 s; negative:
	// such connections are only slowed, never closed.
	MaxThrottle time.Duration
	// MaxMemberConnections caps the connections one member (login,
	// compared case-insensitively) holds at once on the Server, across
	// documents (default 32: a person with many tabs open). The next is
	// refused before the upgrade with HTTP 429. Connections with an
	// empty login are not counted. Negative: no cap.
	MaxMemberConnections int
	// MaxDocumentConnections caps the connections one document holds at
	// once (default 1024). The next is refused before the upgrade with
	// HTTP 503. Negative: no cap.
	MaxDocumentConnections int
	// PresenceRate is how many presence frames (question:presence) per
	// second one connection may publish; the server relays at most one
	// per 1/PresenceRate and drops the others (default 10). Presence
	// frames count against FrameRate too.
	PresenceRate float64
	// PresenceSilence is how long a connection that published presence
	// may stay quiet before the others are told it went silent and its
	// state is dropped (default 30 s). A client that stays put publishes
	// its state again within it.
	PresenceSilence time.Duration
	// Registerer, if set, receives the Server's Prometheus collectors
	// (accord_sync_*: connections, documents, live decisions, frames in
	// and out by kind, refusals by reason, commit group size and latency,
	// commit failures, outbox depth, slow-consumer drops, catch-up bytes,
	// throttled frames, rate closes, upgrades refused by limit). New fails
	// if they cannot be registered, for example twice on one registry.
	Registerer prometheus.Registerer
}

func (o *Options) setDefaults() error {
	if o.Store == nil {
		return errors.New("server: Options.Store is required")
	}
	if o.Authorize == nil {
		return errors.New("server: Options.Authorize is required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Host == nil {
		o.Host = NopHost{}
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = 4096
	}
	if o.MaxDocuments <= 0 {
		o.MaxDocuments = 1024
	}
	if o.Outbox <= 0 {
		o.Outbox = 1024
	}
	if o.ReadLimit <= 0 {
		o.ReadLimit = wire.MaxFrameBytes
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 20 * time.Second
	}
	if o.PongWait <= o.PingInterval {
		o.PongWait = o.PingInterval*2 + 5*time.Second
	}
	if o.WriteWait <= 0 {
		o.WriteWait = 10 * time.Second
	}
	if o.IdleUnload <= 0 {
		o.IdleUnload = 30 * time.Second
	}
	if o.ParkIdle == 0 {
		o.ParkIdle = 10 * time.Second
	}
	if o.MaxGroup <= 0 {
		o.MaxGroup = 512
	}
	if o.QuietRebase == 0 {
		o.QuietRebase = time.Second
	}
	if o.GroupWait == 0 {
		o.GroupWait = 20 * time.Millisecond
	}
	if o.FrameRate == 0 {
		o.FrameRate = 50
	}
	if o.FrameBurst == 0 {
		o.FrameBurst = 200
	}
	if o.ByteRate == 0 {
		o.ByteRate = 1 << 20
	}
	if o.ByteBurst == 0 {
		o.ByteBurst = int(2 * o.ReadLimit)
	}
	if o.ByteBurst > 0 && int64(o.ByteBurst) < o.ReadLimit {
		o.ByteBurst = int(o.ReadLimit)
	}
	if o.MaxThrottle == 0 {
		o.MaxThrottle = 5 * time.Second
	}
	if o.MaxMemberConnections == 0 {
		o.MaxMemberConnections = 32
	}
	if o.MaxDocumentConnections == 0 {
		o.MaxDocumentConnections = 1024
	}
	if o.PresenceRate <= 0 {
		o.PresenceRate = 10
	}
	if o.PresenceSilence <= 0 {
		o.PresenceSilence = 30 * time.Second
	}
	return nil
}
