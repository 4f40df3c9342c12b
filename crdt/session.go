package crdt

import (
	"github.com/automerge/automerge-go"
)

// Stall and loop bounds of a Session. automerge 0.5's sync state can stop
// sending while the peers differ (its in-flight flag is never cleared when a
// reply is lost, and changes it believes sent are never sent again) or keep
// exchanging messages that change nothing. A Session detects both and
// starts the exchange afresh, which always converges.
const (
	// stallAfter is how many consecutive Generate calls may return nothing
	// while the peers are known to differ and nothing arrived in between.
	stallAfter = 3
	// loopAfter is how many messages may be generated without either
	// side's heads moving.
	loopAfter = 16
)

// Session is the sync state with one peer over one document: automerge's
// sync protocol with bounds checks on what arrives, and recovery from the
// stalls and loops of automerge 0.5.
//
// A Session is not safe for concurrent use; it belongs to the goroutine
// that owns its Doc.
type Session struct {
	doc        *Doc
	ss         *automerge.SyncState
	theirHeads Heads
	known      bool // a message from the peer has arrived since the last reset
	idle       int  // Generate calls with nothing to send while out of step
	unproduct  int  // messages generated without progress
	lastOurs   Heads
	lastTheirs Heads
	resets     int
}

// NewSession starts syncing d with one peer.
func (d *Doc) NewSession() *Session {
	return &Session{doc: d, ss: automerge.NewSyncState(d.am)}
}

// Resets counts how often the session recovered from a stall or loop.
func (s *Session) Resets() int { return s.resets }

// TheirHeads returns the heads the peer last reported.
func (s *Session) TheirHeads() Heads { return s.theirHeads }

// InSync reports whether the peer last reported exactly our heads.
func (s *Session) InSync() bool {
	return s.known && s.theirHeads.Equal(s.doc.Heads())
}

// Reset forgets what the peer is believed to hold; the next Generate starts
// the exchange afresh.
func (s *Session) Reset() {
	s.ss = automerge.NewSyncState(s.doc.am)
	s.known = false
	s.idle, s.unproduct = 0, 0
	s.resets++
}

// Receive checks a sync message from the peer and applies it: any changes
// it carries are merged into the document. Malformed or oversized messages
// are refused (wrapping ErrMalformedSync or ErrTooLarge) before automerge
// sees them, and change nothing.
func (s *Session) Receive(msg []byte) error {
	m, err := ParseSyncMessage(msg)
	if err != nil {
		return err
	}
	return s.ReceiveParsed(m)
}

// ReceiveParsed applies a message already parsed by ParseSyncMessage. The
// authority uses it to validate and apply a message's changes itself first,
// then hands the rest of the message (with or without the changes) here.
func (s *Session) ReceiveParsed(m *SyncMessage) error {
	if len(m.Changes) > 0 {
		// Changes whose dependencies are missing would be parked inside
		// automerge, invisible and unchecked; refuse them instead.
		var batch []byte
		for _, raw := range m.Changes {
			batch = append(batch, raw...)
		}
		if _, err := s.doc.applyRaw(batch); err != nil {
			return err
		}
		m = &SyncMessage{Heads: m.Heads, Need: m.Need, Have: m.Have}
	}
	s.ss.Doc = s.doc.am // the document may have been rebuilt by Rollback
	if _, err := s.ss.ReceiveMessage(m.Encode()); err != nil {
		return amError("receive sync message", err)
	}
	s.theirHeads = sortHeads(m.Heads)
	s.known = true
	s.idle = 0
	return nil
}

// Generate returns the next message to send to the peer, if any.
func (s *Session) Generate() ([]byte, bool) {
	s.ss.Doc = s.doc.am
	ours := s.doc.Heads()
	if !ours.Equal(s.lastOurs) || !s.theirHeads.Equal(s.lastTheirs) {
		s.unproduct = 0
		s.lastOurs, s.lastTheirs = ours, s.theirHeads
	}
	msg, ok := s.ss.GenerateMessage()
	if ok {
		s.idle = 0
		s.unproduct++
		if s.unproduct <= loopAfter {
			return msg.Bytes(), true
		}
		s.Reset()
	} else {
		if s.known && s.theirHeads.Equal(ours) {
			s.idle = 0
			return nil, false
		}
		s.idle++
		if s.idle < stallAfter {
			return nil, false
		}
		s.Reset()
	}
	s.ss.Doc = s.doc.am
	msg, ok = s.ss.GenerateMessage()
	if !ok {
		return nil, false
	}
	s.unproduct = 1
	return msg.Bytes(), true
}
