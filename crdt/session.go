package crdt

import (
	"errors"
	"slices"

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
	// ackDue is set when the peer's last message did not show that it
	// knows we hold its heads; see Generate.
	ackDue bool
	// missing holds dependencies of changes the peer sent that were refused
	// for lack of them; see withNeed.
	missing Heads
	// owed holds changes the peer last asked for by hash that we hold.
	owed []ChangeHash
	// edit applies the peer's changes as ApplyEdit does.
	edit bool
}

// maxMissing bounds the dependencies a session asks for at once.
const maxMissing = 256

// NewSession starts syncing d with one peer.
func (d *Doc) NewSession() *Session {
	return &Session{doc: d, ss: automerge.NewSyncState(d.am)}
}

// NewEditSession starts syncing d with a member: changes the member sends
// are applied as ApplyEdit applies them, so a sync message can no more
// change the document's shape than an edit can. The authority's sessions
// are edit sessions.
func (d *Doc) NewEditSession() *Session {
	s := d.NewSession()
	s.edit = true
	return s
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
	s.ackDue = false
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
		if _, err := s.doc.applyRaw(batch, s.edit); err != nil {
			if errors.Is(err, ErrMissingDeps) {
				s.noteMissing(batch)
			}
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
	s.owed = s.owed[:0]
	for _, h := range m.Need {
		if s.doc.Has(Heads{h}) {
			s.owed = append(s.owed, h)
		}
	}
	s.ackDue = !knowsShared(m, s.theirHeads) // answered in Generate once our heads are the peer's
	return nil
}

// knowsShared reports whether the sender of m already believed it shared
// heads with us: one of its haves starts from exactly those heads.
func knowsShared(m *SyncMessage, heads Heads) bool {
	for _, h := range m.Have {
		if sortHeads(h.LastSync).Equal(heads) {
			return true
		}
	}
	return false
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
	owed := len(s.owed) > 0
	s.owed = s.owed[:0]
	if ok && owed && !carriesChanges(msg.Bytes()) {
		// The peer asked for changes we hold and automerge sends none: it
		// sends a change once per session, and believes these delivered
		// (they were lost, or refused for a missing dependency). Only a
		// fresh session sends them again.
		s.Reset()
	} else if ok {
		s.idle = 0
		s.ackDue = false
		s.unproduct++
		if s.unproduct <= loopAfter {
			return s.withNeed(msg.Bytes()), true
		}
		s.Reset()
	} else {
		if s.known && s.theirHeads.Equal(ours) {
			s.idle = 0
			if s.ackDue {
				// automerge 0.5 never answers a message that carries no
				// changes and the heads it already has, so a peer that
				// arrives at our heads (or starts there) would never learn
				// we hold them too, stall, reset, and ask again forever.
				// Answer as automerge's own reply would read: our heads,
				// and a have from those heads with nothing since.
				s.ackDue = false
				ack := &SyncMessage{Heads: ours, Have: []SyncHave{{LastSync: ours}}}
				return ack.Encode(), true
			}
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
	return s.withNeed(msg.Bytes()), true
}

// carriesChanges reports whether an outgoing message carries changes.
func carriesChanges(msg []byte) bool {
	m, err := ParseSyncMessage(msg)
	return err == nil && len(m.Changes) > 0
}

// noteMissing records the dependencies a refused batch lacked.
func (s *Session) noteMissing(batch []byte) {
	chs, err := splitChanges(batch)
	if err != nil {
		return
	}
	in := make(map[ChangeHash]bool, len(chs))
	for _, c := range chs {
		in[c.hash] = true
	}
	for _, c := range chs {
		for _, dep := range c.deps {
			if !in[dep] && !s.doc.Has(Heads{dep}) && !slices.Contains(s.missing, dep) && len(s.missing) < maxMissing {
				s.missing = append(s.missing, dep)
			}
		}
	}
}

// withNeed adds the dependencies the peer's refused changes lacked to the
// need list of an outgoing message. automerge 0.5 chooses what to send
// from a Bloom filter of what the peer holds; a false positive for one
// change makes it send every change after it but never that one. automerge
// itself would park the dependents and ask for the missing change by hash;
// a Session refuses changes with missing dependencies instead (parked
// changes escape every check), so it must ask, or the two peers exchange
// the same refused changes forever.
func (s *Session) withNeed(msg []byte) []byte {
	s.missing = slices.DeleteFunc(s.missing, func(h ChangeHash) bool { return s.doc.Has(Heads{h}) })
	if len(s.missing) == 0 {
		return msg
	}
	m, err := ParseSyncMessage(msg)
	if err != nil {
		return msg
	}
	for _, h := range s.missing {
		if !slices.Contains(m.Need, h) && len(m.Need) < MaxHashes {
			m.Need = append(m.Need, h)
		}
	}
	return m.Encode()
}
