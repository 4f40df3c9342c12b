package memhost

import "github.com/accord-crdt/accord/question/delivery"

// Host bundles the in-memory host: its Runtime reports the Chat busy while
// an accepted turn runs.
type Host struct {
	Docs    *Documents
	Chat    *Chat
	Runtime *Runtime
	Members *Members
}

var (
	_ delivery.Document = (*Documents)(nil)
	_ delivery.Chat     = (*Chat)(nil)
	_ delivery.Runtime  = (*Runtime)(nil)
	_ delivery.Members  = (*Members)(nil)
)

// New returns an empty Host: no documents, no members, no Planner owner,
// a local harness.
func New() *Host {
	rt := NewRuntime()
	ch := NewChat()
	rt.chat = ch
	ch.changed = rt.notify
	return &Host{Docs: NewDocuments(), Chat: ch, Runtime: rt, Members: NewMembers()}
}

// Wire sets the Document, Chat, Runtime and Members of o to the Host's.
func (h *Host) Wire(o *delivery.Options) {
	o.Document, o.Chat, o.Runtime, o.Members = h.Docs, h.Chat, h.Runtime, h.Members
}
