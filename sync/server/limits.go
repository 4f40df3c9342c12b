package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/time/rate"
)

// closeLinger bounds how long a connection closed for its rate is still
// read, and what it sends discarded, after its close frame: the peer then
// reads the close frame and its reason instead of a reset (closing a
// socket that holds unread bytes resets it).
const closeLinger = time.Second

// rested is how long a connection must have stayed under its rates, in
// tokens saved up, for a run over them to end: its buckets must hold
// again what they refill in rested (their whole burst if that is less).
// A frame that passes at once only because the read pump paused for a
// moment (a busy CPU, a collection) holds a few tokens, far from that,
// and does not forgive a flood.
const rested = time.Second

// limiter holds one connection's token buckets on incoming data frames
// and their bytes (Options.FrameRate, ByteRate). Only the connection's
// read pump uses it.
type limiter struct {
	frames, bytes *rate.Limiter // nil: no such limit
	// frameLevel and byteLevel are the tokens the buckets must hold
	// again before a frame for a run over the rates to end (rested).
	frameLevel, byteLevel float64
	grace                 time.Duration // Options.MaxThrottle; < 0: never close
	// over is when the connection's current run over its rates began:
	// the first frame that had to wait since the buckets last held
	// their levels; zero if none did.
	over  time.Time
	timer *time.Timer
}

// overRate is why a connection was closed for its rate.
type overRate struct {
	limit  string // "frames" or "bytes"
	reason string // the close frame's reason
}

func (e *overRate) Error() string { return e.reason }

// newLimiter returns the limiter of a connection, or nil if neither rate
// is limited.
func newLimiter(o *Options) *limiter {
	l := &limiter{grace: o.MaxThrottle}
	if o.FrameRate > 0 && o.FrameBurst > 0 {
		l.frames = rate.NewLimiter(rate.Limit(o.FrameRate), o.FrameBurst)
		l.frameLevel = min(float64(o.FrameBurst), o.FrameRate*rested.Seconds())
	}
	if o.ByteRate > 0 && o.ByteBurst > 0 {
		l.bytes = rate.NewLimiter(rate.Limit(o.ByteRate), o.ByteBurst)
		l.byteLevel = min(float64(o.ByteBurst), o.ByteRate*rested.Seconds())
	}
	if l.frames == nil && l.bytes == nil {
		return nil
	}
	return l
}

// take accounts for one frame of n bytes. It returns at once while both
// buckets hold enough tokens; otherwise it waits for them (throttled is
// then true), unless done closes first (errClosed), or returns the
// *overRate of reserve instead of waiting.
func (l *limiter) take(n int, done <-chan struct{}) (throttled bool, err error) {
	wait, err := l.reserve(time.Now(), n)
	if wait == 0 || err != nil {
		return wait > 0, err
	}
	if l.timer == nil {
		l.timer = time.NewTimer(wait)
	} else {
		l.timer.Reset(wait)
	}
	select {
	case <-l.timer.C:
		return true, nil
	case <-done:
		l.timer.Stop()
		return true, errClosed
	}
}

// reserve takes the tokens of one frame of n bytes read at now and
// returns how long the frame must wait for them. A frame that must wait
// begins a run over the rates, if none is under way; the run ends only
// at a frame that finds the buckets holding their levels again (rested),
// not at the first frame that does not wait. reserve returns an
// *overRate if the frame would leave the connection over its rates for
// longer than the grace: it would wait until past over + grace. (A frame
// larger than a burst could never pass; setDefaults keeps ByteBurst at
// ReadLimit or more, so none is read.)
func (l *limiter) reserve(now time.Time, n int) (time.Duration, error) {
	var wait time.Duration
	limit := ""
	if l.frames != nil {
		if r := l.frames.ReserveN(now, 1); !r.OK() {
			wait, limit = rate.InfDuration, "frames"
		} else if d := r.DelayFrom(now); d > wait {
			wait, limit = d, "frames"
		}
	}
	if l.bytes != nil {
		if r := l.bytes.ReserveN(now, n); !r.OK() {
			wait, limit = rate.InfDuration, "bytes"
		} else if d := r.DelayFrom(now); d > wait {
			wait, limit = d, "bytes"
		}
	}
	if wait == 0 {
		if !l.over.IsZero() && l.rested(now, n) {
			l.over = time.Time{}
		}
		return 0, nil
	}
	if l.over.IsZero() {
		l.over = now
	}
	if wait == rate.InfDuration || l.grace >= 0 && now.Add(wait).Sub(l.over) > l.grace {
		return wait, l.overRate(limit)
	}
	return wait, nil
}

// rested reports whether the buckets held their levels at now before
// the frame of n bytes reserve just took from them.
func (l *limiter) rested(now time.Time, n int) bool {
	if l.frames != nil && l.frames.TokensAt(now)+1 < l.frameLevel {
		return false
	}
	return l.bytes == nil || l.bytes.TokensAt(now)+float64(n) >= l.byteLevel
}

func (l *limiter) overRate(limit string) *overRate {
	r := l.frames
	if limit == "bytes" {
		r = l.bytes
	}
	per := strconv.FormatFloat(float64(r.Limit()), 'f', -1, 64)
	return &overRate{limit: limit, reason: "rate limit: more than " + per + " " + limit + "/s"}
}

// errClosed ends a read pump whose connection was closed meanwhile.
var errClosed = errors.New("server: connection closed")

// throttle applies the connection's rate limits to a frame of n bytes
// just read, counting the wait; an *overRate closes the connection with
// close code 1008 (policy violation, RFC 6455 §7.4.1) and the limit as
// its reason.
func (s *Server) throttle(c *conn, n int) error {
	if c.limit == nil {
		return nil
	}
	throttled, err := c.limit.take(n, c.done)
	if throttled {
		s.stats.throttled.Add(1)
		s.metrics.throttled()
	}
	if o, ok := err.(*overRate); ok {
		s.stats.rateCloses.Add(1)
		s.metrics.rateClose(o.limit)
		s.opts.Logger.Warn("closing a connection over its rate limit", "doc", c.docID, "member", c.login().Login, "limit", o.reason)
		c.closeWith(websocket.ClosePolicyViolation, o.reason)
	}
	return err
}

// linger reads and discards what the peer of a connection closed for its
// rate still sends, until it answers the close frame, fails, or the read
// deadline set at the close (closeLinger) passes.
func (c *conn) linger() {
	for {
		_, r, err := c.ws.NextReader()
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return
		}
	}
}

// tally counts the open connections of each member and of each document,
// for MaxMemberConnections and MaxDocumentConnections. Guarded by s.mu.
type tally struct {
	members map[string]int // by lower-cased login; an empty login is not counted
	docs    map[string]int
}

func memberKey(login string) string { return strings.ToLower(login) }

// admit checks the member's and the document's connection caps for one
// more connection and, if it fits, counts it. Otherwise it returns the
// HTTP status and message of the refusal. Called with s.mu held.
func (s *Server) admit(login, doc string) (status int, msg string) {
	key := memberKey(login)
	if max := s.opts.MaxMemberConnections; max > 0 && key != "" && s.tally.members[key] >= max {
		s.refusedUpgrade("member_connections")
		return http.StatusTooManyRequests, fmt.Sprintf("too many connections for this member: at most %d at once", max)
	}
	if max := s.opts.MaxDocumentConnections; max > 0 && s.tally.docs[doc] >= max {
		s.refusedUpgrade("document_connections")
		return http.StatusServiceUnavailable, fmt.Sprintf("too many connections to this document: at most %d at once", max)
	}
	if key != "" {
		s.tally.members[key]++
	}
	s.tally.docs[doc]++
	return 0, ""
}

// release uncounts a connection admit counted. Called with s.mu held.
func (s *Server) release(login, doc string) {
	if key := memberKey(login); key != "" {
		if s.tally.members[key]--; s.tally.members[key] <= 0 {
			delete(s.tally.members, key)
		}
	}
	if s.tally.docs[doc]--; s.tally.docs[doc] <= 0 {
		delete(s.tally.docs, doc)
	}
}

// refusedUpgrade counts an upgrade refused for one of the connection or
// document caps, in Stats and in the metrics.
func (s *Server) refusedUpgrade(limit string) {
	s.stats.refusedUpgrades.Add(1)
	s.metrics.refusedUpgrade(limit)
}
