package question

import "github.com/accord-crdt/accord/persist"

// StoredBodies returns the automerge bytes of a stored draft, without its
// provenance envelopes, for tests that load stored drafts themselves.
func StoredBodies(s persist.StoredDraft) (persist.StoredDraft, error) {
	snap, chunks, _, err := unwrapStored(s.Snapshot, s.Chunks, false, nil)
	return persist.StoredDraft{Snapshot: snap, Chunks: chunks}, err
}
