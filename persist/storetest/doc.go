// Package storetest is the conformance suite for persist.Store backends.
// Every backend's tests call Run (or RunWithOptions); a backend that passes
// it keeps the contract written in package persist.
//
// # Usage
//
// In the backend's _test.go:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) persist.Store {
//			return memstore.New()
//		})
//	}
//
// A durable backend also hands the suite a way to close and reopen the same
// storage, so the property test can check that every acknowledged Write
// survives:
//
//	storetest.RunWithOptions(t, open, storetest.Options{
//		Reopen: func(t *testing.T, s persist.Store) persist.Store { ... },
//	})
//
// open must return a new, empty Store each time it is called; it may be called
// many times within one test. The suite closes every Store it opens; a
// backend's own cleanup may call Close again and gets persist.ErrClosed.
//
// # What it checks
//
// Loading a document never written; putting, overwriting and deleting
// records, projections and answers; draft chunks kept in commit order and
// dropped by a snapshot; atomic visibility of a multi-part Write and of a
// failed one; isolation between documents; Documents sorted; copying of
// values in and out; persist.ErrClosed and persist.ErrEmptyKey; a cancelled
// context; commits from 16 goroutines at once (run with -race); deleting a
// document (its neighbours untouched, a missing one no error, durable across
// a reopen, while others commit); and a property test (pgregory.net/rapid)
// comparing the Store to a plain map model over random sequences of Writes,
// merged Writes, invalid Writes, deletes and, when Options.Reopen is set,
// reopens.
//
// The property test runs Options.Checks random sequences (DefaultChecks if
// zero). The usual rapid flags apply: -rapid.checks raises the count,
// -rapid.seed and -rapid.failfile reproduce a failure.
//
// # Semantics the suite pins down
//
// Beyond the package persist contract, backends agree on these details:
//
//   - LoadDocument returns non-nil maps, also for a document never written.
//   - A document appears in Documents once a non-empty Write was committed
//     to it; an empty Write changes nothing.
//   - A record or projection with a nil Value stores an empty value; an
//     answer with a nil Value is deleted, one with an empty non-nil Value is
//     stored.
//   - A draft written only with chunks has an empty Snapshot; a draft whose
//     last DraftPut was a snapshot has no Chunks.
//   - Within one Write, entries of each kind apply in order, so a later Put
//     of the same key wins and chunks after a snapshot are kept.
//   - A Write naming an empty document, record, projection, answer or draft
//     key fails with persist.ErrEmptyKey and applies nothing.
//   - Commit with an already cancelled context returns the context's error
//     and applies nothing.
//   - DeleteDocument of a document never written (or already deleted)
//     returns nil; of an empty id, persist.ErrEmptyKey. A document written
//     after its delete starts afresh.
package storetest
