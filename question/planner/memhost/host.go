package memhost

import "github.com/accord-crdt/accord/question/planner"

// Host bundles the in-memory host: its Runtime reports the Chat busy while
// an accepted turn runs.
type Host struct {
	Docs    *Documents
	Chat    *Chat
	Runtime *Runtime
	Members *Members
}

var (
	_ planner.Document = (*Documents)(nil)
	_ planner.Chat     = (*Chat)(nil)
	_ planner.Runtime  = (*Runtime)(nil)
	_ planner.Members  = (*Members)(nil)
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
func (h *Host) Wire(o *planner.Options) {
	o.Document, o.Chat, o.Runtime, o.Members = h.Docs, h.Chat, h.Runtime, h.Members
}
