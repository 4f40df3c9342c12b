// Package memstore is the in-memory reference implementation of
// persist.Store. Nothing survives Close or the process; it exists for tests
// and for reading the contract as code. It passes the same conformance suite
// (package persist/storetest) as the durable backends.
//
// # Usage
//
//	s := memstore.New()
//	defer s.Close()
//	err := s.Commit(ctx, "plan-1", &persist.Write{
//		Records: []persist.Put{{Key: "d1", Value: rec}},
//	})
//	doc, err := s.LoadDocument(ctx, "plan-1")
//
// Values are copied on the way in and on the way out, so callers may reuse
// or modify their slices freely.
//
// # Fault injection
//
// Tests of the packages that write through a Store can make commits fail:
//
//   - FailNextCommit(err) makes the next Commit return err and apply nothing.
//   - SetBeforeCommit(fn) runs fn at the start of every Commit; an error from
//     fn fails that Commit without applying it, and a blocking fn holds the
//     commit in flight, so a test can check that nothing was acknowledged or
//     broadcast before the write became durable.
//
// Both hooks run after validation: a Write with an empty key still fails
// with persist.ErrEmptyKey, and a closed Store with persist.ErrClosed.
package memstore
