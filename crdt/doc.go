// Package crdt holds one decision as a CRDT document: the shapes of its
// questions, the options and criteria appended to them (with the
// idempotency map of appends), and the shared working answer (the draft) of
// every settle generation. It is the only package that imports automerge-go
// (through cgo; internal/cmem, which reads the C allocator's figures for
// benchmarks, is the module's only other cgo); everything it returns is
// typed and checked.
//
// A document holds:
//
//	v            format version (a newer one is refused, not misread)
//	questions    id → {written, multiple, options [{id,label}], criteria [...]}
//	appended     idempotency key → {kind, question, id}
//	generation   the current settle generation
//	drafts       generation → question id → draft
//
// A choice question's draft holds marks (a flat map of last-writer-wins
// registers keyed "option/criterion": yes, partly, no, or null once
// cleared; a missing key is unmarked) and its choices (one register for a
// single-choice question, so concurrent choices resolve to one; a map of
// booleans for a multiple-choice one). A written question's draft holds a
// text that merges character by character. Keys are created lazily: a fresh
// draft is empty, and appending an option or criterion never rewrites one.
//
// A Doc and its Sessions are not safe for concurrent use; the goroutine
// that owns the document calls them.
//
// # Usage
//
// There is one authority replica per document (the server) and any number
// of member replicas (clients). Only the authority changes the definition
// side:
//
//	d, _ := crdt.New(crdt.Options{})                     // at creation
//	d.AddQuestion(crdt.QuestionShape{ID: "q1", Options: opts, Criteria: crit})
//	d.StartGeneration(1)                                 // the first, empty draft
//	it, repeated, _ := d.AppendOption("q1", key, item)   // C2, C6: a repeated key returns the first item
//	d.StartGeneration(2)                                 // reopen (L12): a fresh, empty draft
//
// Members load the authority's document and edit the current draft:
//
//	m, _ := crdt.Load(saved, nil, crdt.Options{})
//	before := m.Heads()
//	m.SetMark("q1", "o1", "c1", marks.Yes)               // or marks.Cleared
//	m.Choose("q1", "o2", true)
//	m.SetText("q2", "because ...")                       // a minimal splice
//	batch, _ := m.ChangesSince(before)                   // send as the edit
//
// Edits travel as ChangesSince batches. The authority applies a member's
// batch with ApplyEdit, which refuses (ErrShape) any operation that is not
// a draft value edit (a deleted or replaced draft, marks or choices map or
// text, a new object, anything of the definition side), checks the result
// (State, and that only the current generation's draft changed), and either
// keeps it, persists the batch and forwards it to every other member (who
// ApplyChanges it), or undoes it with Rollback(before) and tells the member
// to reset. Its sync sessions are edit sessions (NewEditSession), which
// apply the changes of sync messages by the same rules. Edits made
// against an older generation land in that generation's draft, never in
// the current one.
//
// The authority persists a Snapshot when a document is created or
// compacted and the ChangesSince batch of every accepted edit after it;
// Load(snapshot, chunks, opts) reads them back in one call. State and Draft
// read the document; they check every value and return an error wrapping
// ErrMalformed for anything this package would not have written.
//
// Every document keeps a running Budget of what Load would count of it as
// stored (operations, bytes, changes, actors), counted change by change.
// Load refuses a document past MaxDocumentOps or MaxDocumentBytes, and
// automerge keeps every operation ever made, so before the authority
// stores a state past a rebase threshold (Budget.NeedsRebase) it replaces
// the document by Rebase: a fresh history of one change holding the same
// values, proven to load back and read the same State. A rebased document
// shares no change with the old one; replicas replace theirs with it
// (Rebased reports it).
//
// A replica that was offline, or whose edits went astray, catches up with
// a Session per peer: Generate a message and send it; Receive each message
// from the peer; repeat until neither side has anything to send. InSync
// reports that the peer last reported exactly our heads.
//
// # Designing around automerge 0.5
//
// automerge-go pins the Rust core at 0.5.0, which has known bugs. Each is
// designed around here:
//
//   - Sync sessions stall or loop: its sync state believes changes in a lost
//     message delivered and never sends them again, never answers a message
//     that brings it to the sender's heads (so the sender never learns),
//     and, after a Bloom filter false positive, sends every change after the
//     missing one but never that one. A Session resets after a few
//     Generate calls with nothing to send while out of step, or after many
//     messages that change nothing; answers with its heads when automerge
//     stays silent; asks by hash for the dependencies of changes it had to
//     refuse; and starts afresh when the peer asks for changes automerge
//     will not send again.
//   - Crafted input aborts the process: a Rust panic cannot be recovered in
//     Go. Every sync message is parsed and bounds-checked in Go
//     (ParseSyncMessage) before automerge sees it; changes and saves are
//     checked for what automerge uses unchecked (actor indices, actions,
//     sequence numbers, and operations whose key does not fit their object,
//     which apply cleanly and abort the next reader); changes whose
//     dependencies are missing are refused rather than parked inside
//     automerge, where nothing could check them.
//   - Loading many incremental chunks one by one takes quadratic time: Load
//     takes the snapshot and all chunks and loads them in one call, and the
//     authority compacts a document's chunks into a snapshot at a threshold.
//   - A compact save can fail to load again (an actor table bug): Snapshot
//     loads every save back before returning it and falls back to the
//     document's changes, concatenated, which Load reads just the same.
//     NewActorID mints actor ids of one fixed length with no leading zero
//     byte, the form seen to round-trip.
package crdt
