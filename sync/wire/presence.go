package wire

import "fmt"

// KindPresence is the ephemeral presence channel, in both directions. A
// client sends its own state (Presence.State; any Conn or Member it
// claims is ignored); the server relays it to the document's other
// connections with Conn and Member filled in from the connection, never
// stores it and never passes it through the authority, and announces a
// connection that leaves (Left) or stops publishing (Silent). Members who
// may only read may publish. It is no request: nothing answers it.
//
// The server relays in batches: a frame it sends holds in All the
// presence of every connection that changed since its last batch (one
// entry per connection, the latest), the recipient's own included, so
// that one encoding serves every connection. When a connection first
// publishes, the server names it to itself (Conn, with You set) before
// any batch holds its entry, so a client can leave its own entry out.
const KindPresence Kind = "question:presence"

// Presence is one connection's presence.
type Presence struct {
	Header
	// Conn names the connection within the document (the server assigns
	// it; a member may have several).
	Conn string `json:"conn,omitempty"`
	// Member is the connection's login as the server authorized it.
	Member string         `json:"member,omitempty"`
	State  *PresenceState `json:"state,omitempty"`
	// Left reports the connection closed; Silent that it published
	// nothing for the server's silence interval. Either clears its state.
	Left   bool `json:"left,omitempty"`
	Silent bool `json:"silent,omitempty"`
	// You says Conn is the recipient's own connection.
	You bool `json:"you,omitempty"`
	// All is a batch of presence, one entry per connection.
	All []Presence `json:"all,omitempty"`
}

// PresenceState is what a connection says about itself: which decision
// and field it is in, a text selection, and whether it is editing.
type PresenceState struct {
	Decision string `json:"decision,omitempty"`
	Question string `json:"question,omitempty"`
	// Field is a mark cell's key ("option/criterion"), "choice" or
	// "text".
	Field string `json:"field,omitempty"`
	// Selection is a written answer's selection as [anchor, head], in
	// characters; absent when none.
	Selection []int `json:"selection,omitempty"`
	Editing   bool  `json:"editing,omitempty"`
}

// Limits of a presence frame, checked by Decode.
const (
	maxPresenceField  = 200
	maxPresenceMember = 256
	// maxPresenceBatch is the most entries one batch holds: a document
	// has at most 1,024 connections by default (sync/server
	// Options.MaxDocumentConnections).
	maxPresenceBatch = 4096
)

func (m *Presence) validate() error {
	if len(m.All) > maxPresenceBatch {
		return fmt.Errorf("a batch of %d, at most %d", len(m.All), maxPresenceBatch)
	}
	for i := range m.All {
		if len(m.All[i].All) > 0 {
			return fmt.Errorf("a batch within a batch")
		}
		if err := m.All[i].validate(); err != nil {
			return fmt.Errorf("all[%d]: %w", i, err)
		}
	}
	return m.validateOne()
}

func (m *Presence) validateOne() error {
	if len(m.Conn) > maxIDLen {
		return fmt.Errorf("conn of %d bytes, at most %d", len(m.Conn), maxIDLen)
	}
	if len(m.Member) > maxPresenceMember {
		return fmt.Errorf("member of %d bytes, at most %d", len(m.Member), maxPresenceMember)
	}
	s := m.State
	if s == nil {
		return nil
	}
	if len(s.Decision) > maxIDLen || len(s.Question) > maxIDLen {
		return fmt.Errorf("decision and question are at most %d bytes", maxIDLen)
	}
	if len(s.Field) > maxPresenceField {
		return fmt.Errorf("field of %d bytes, at most %d", len(s.Field), maxPresenceField)
	}
	if n := len(s.Selection); n != 0 && n != 2 {
		return fmt.Errorf("a selection is [anchor, head]; got %d numbers", n)
	}
	for _, x := range s.Selection {
		if x < 0 || x > maxText {
			return fmt.Errorf("selection %d is outside 0 to %d", x, maxText)
		}
	}
	return nil
}
