package wire

import "fmt"

// KindPresence is the ephemeral presence channel, in both directions. A
// client sends its own state (Presence.State; any Conn or Member it
// claims is ignored); the server relays it to the document's other
// connections with Conn and Member filled in from the connection, never
// stores it and never passes it through the authority, and announces a
// connection that leaves (Left) or stops publishing (Silent). Members who
// may only read may publish. It is no request: nothing answers it.
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
)

func (m *Presence) validate() error {
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
