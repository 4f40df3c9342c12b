package server

import (
	"context"
	"strings"

	"github.com/accord-crdt/accord/question"
)

// Stats is a snapshot of a Server's activity. Counts are since New.
type Stats struct {
	// Connections is the number of open connections (upgraded or being
	// upgraded).
	Connections int
	// Documents is the number of documents loaded.
	Documents int
	// LiveDecisions is the number of decisions of loaded documents whose
	// automerge document is in memory, the others being parked (see
	// Options.ParkIdle).
	LiveDecisions int
	// Commits counts the groups of commands committed to the store, and
	// CommitFailures those whose commit failed (every reply of such a
	// group was a refusal).
	Commits, CommitFailures uint64
	// FramesIn and FramesOut count the frames read from and written to
	// every connection.
	FramesIn, FramesOut uint64
	// Refusals counts refused requests and frames: replies with ok false
	// and error frames.
	Refusals uint64
	// SlowDrops counts the connections closed because they stopped keeping
	// up: their outbox filled, or one write took longer than WriteWait.
	SlowDrops uint64
	// Throttled counts the frames that waited for their connection's rate
	// limits (Options.FrameRate, ByteRate), and RateCloses the
	// connections closed for staying over them (Options.MaxThrottle).
	Throttled, RateCloses uint64
	// RefusedUpgrades counts the connections refused at the upgrade for a
	// cap: MaxConnections, MaxDocuments, MaxMemberConnections or
	// MaxDocumentConnections.
	RefusedUpgrades uint64
	// PresenceDropped counts presence frames not relayed: sent faster
	// than Options.PresenceRate, or before the connection's welcome.
	PresenceDropped uint64
	// GatherWaits counts the groups of draft edits that waited for other
	// editors' edits before their commit (Options.GroupWait).
	GatherWaits uint64
	// Reclaims counts the times the server handed the memory of dropped
	// automerge documents back to the system (a collection, then a trim
	// of the C allocator), after documents parked their decisions or
	// unloaded.
	Reclaims uint64
}

// Stats returns the Server's current figures.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	st := Stats{Connections: len(s.conns), Documents: len(s.docs)}
	for _, d := range s.docs {
		st.LiveDecisions += int(d.live.Load())
	}
	s.mu.Unlock()
	st.Commits = s.stats.commits.Load()
	st.CommitFailures = s.stats.commitFailures.Load()
	st.FramesIn = s.stats.framesIn.Load()
	st.FramesOut = s.stats.framesOut.Load()
	st.Refusals = s.stats.refusals.Load()
	st.SlowDrops = s.stats.slowDrops.Load()
	st.Throttled = s.stats.throttled.Load()
	st.RateCloses = s.stats.rateCloses.Load()
	st.RefusedUpgrades = s.stats.refusedUpgrades.Load()
	st.PresenceDropped = s.stats.presenceDropped.Load()
	st.GatherWaits = s.stats.gatherWaits.Load()
	st.Reclaims = s.stats.reclaims.Load()
	return st
}

// Reauthorized counts what Reauthorize or Revoke did to a member's live
// connections.
type Reauthorized struct {
	// Kept: the member's rights on the connection's document are unchanged.
	Kept int
	// Downgraded: a writer who may now only read. The connection stays;
	// the client is told by an error frame with reason forbidden, and every
	// later write of the connection is refused as forbidden.
	Downgraded int
	// Closed: refused now (the client gets an error frame with reason
	// forbidden before the close, and a reconnect is refused at the
	// upgrade), or given more rights or another login, which a client
	// learns from a fresh welcome when it reconnects.
	Closed int
}

// Reauthorize runs Options.Authorize again for every live connection of
// the member login (compared case-insensitively), with a copy of each
// connection's upgrade request, and applies the answer: a refusal closes
// the connection, a writer now reading is downgraded in place, more
// rights close it so the client reconnects to get them. A host calls it
// when a member's rights change. Each change takes effect on the
// document's goroutine, in order with the connection's commands: a
// command decided after it is decided with the new rights, none after a
// close. It returns once every connection was handled.
func (s *Server) Reauthorize(ctx context.Context, login string) (Reauthorized, error) {
	return s.reauthorize(ctx, login, false)
}

// Revoke closes every live connection of the member login (compared
// case-insensitively) as Reauthorize closes a refused one, without asking
// Options.Authorize; the host's Authorize must refuse the member from now
// on, or they reconnect. It returns the number of connections closed.
func (s *Server) Revoke(ctx context.Context, login string) (int, error) {
	r, err := s.reauthorize(ctx, login, true)
	return r.Closed, err
}

type rightsChange struct {
	member  question.Member
	refused bool
	done    chan rightsOutcome
}

type rightsOutcome int

const (
	rightsKept rightsOutcome = iota
	rightsDowngraded
	rightsClosed
	rightsGone // the connection had already ended
)

func (s *Server) reauthorize(ctx context.Context, login string, revoke bool) (Reauthorized, error) {
	var out Reauthorized
	s.mu.Lock()
	var conns []*conn
	for c := range s.conns {
		if c.doc != nil && strings.EqualFold(c.login().Login, login) {
			conns = append(conns, c)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		ch := &rightsChange{refused: revoke, done: make(chan rightsOutcome, 1)}
		if !revoke {
			m, err := s.opts.Authorize(c.req, c.docID)
			ch.member, ch.refused = m, err != nil
		}
		select {
		case c.doc.inbox <- op{c: c, rights: ch}:
		case <-c.done:
			continue
		case <-c.doc.quit:
			continue
		case <-ctx.Done():
			return out, ctx.Err()
		}
		select {
		case o := <-ch.done:
			switch o {
			case rightsKept:
				out.Kept++
			case rightsDowngraded:
				out.Downgraded++
			case rightsClosed:
				out.Closed++
			}
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
	return out, nil
}

// changeRights applies a rights change on the document's goroutine.
func (d *document) changeRights(c *conn, ch *rightsChange) rightsOutcome {
	if c.closed() {
		return rightsGone
	}
	old := c.login()
	switch {
	case ch.refused:
		// The host that asked says why, once (Reauthorize's count).
		d.s.opts.Logger.Debug("closing a connection whose member was refused", "doc", d.id, "member", old.Login)
		c.replyError(c.format, "", string(question.Forbidden), "your access to this document was withdrawn")
		c.close()
		return rightsClosed
	case !strings.EqualFold(ch.member.Login, old.Login) || ch.member.Write && !old.Write:
		d.s.opts.Logger.Info("closing a connection whose member gained rights", "doc", d.id, "member", old.Login)
		c.close()
		return rightsClosed
	case old.Write && !ch.member.Write:
		c.mu.Lock()
		c.member = ch.member
		c.mu.Unlock()
		d.s.opts.Logger.Info("a writer now only reads", "doc", d.id, "member", old.Login)
		c.replyError(c.format, "", string(question.Forbidden), "you may now only read this document")
		return rightsDowngraded
	}
	return rightsKept
}
