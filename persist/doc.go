// Package persist defines the durable storage that the decision authority
// (package question) writes through, and its contract. Backends live in
// sub-packages: boltstore (bbolt, the embedded default), jetstream (NATS
// JetStream, replicated), postgres (PostgreSQL) and memstore (an in-memory
// reference). Package storetest holds the conformance suite every backend
// passes.
//
// # Contract
//
// A Store keeps, per document: encoded decision records, each decision's
// CRDT document as a snapshot followed by incremental chunks, each
// decision's card projection, the waiting answers of the decision_answers
// table, and each decision's append-only audit log.
//
//   - Commit applies every part of one Write atomically and returns only once
//     the Write is durable: after a crash either all of it is visible or none.
//     A command is acknowledged only after its Commit returned nil.
//   - Commit may be called from many goroutines at once; backends group
//     concurrent commits into shared fsyncs where they can.
//   - LoadDocument of a document never written returns an empty
//     StoredDocument, not an error.
//   - Values handed to Commit and returned by LoadDocument are owned by the
//     caller afterwards; a Store copies what it keeps.
//   - DeleteDocument removes a document for good: afterwards it loads empty
//     and is not listed by Documents; other documents are untouched. The
//     caller stops writing to the document first (close its authority):
//     a Commit after the delete starts the document afresh.
//   - A decision's audit log only grows: rows are appended by Commit, in
//     the Write's order, and read back in commit order by ReadAudit. A
//     snapshot of the draft leaves it as it is.
//   - Damaged storage gives a *CorruptError (errors.Is ErrCorrupt), never a
//     panic.
//   - A Store that several servers share may refuse a Commit with an error
//     matching ErrConflict: another server wrote the document since this
//     one loaded it. Nothing was applied; the writer loads it again.
//   - After Close every method returns ErrClosed.
package persist
