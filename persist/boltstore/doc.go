// Package boltstore is the embedded, default persist.Store: every document's
// state in one bbolt file (go.etcd.io/bbolt), written through group commit.
//
// # Usage
//
//	s, err := boltstore.Open("/var/lib/accord/accord.db", &boltstore.Options{Logger: logger})
//	if err != nil { ... }
//	defer s.Close()
//
//	// In the document's goroutine: persist, then reply and broadcast.
//	if err := s.Commit(ctx, "plan-1", w); err != nil {
//		// Not durable: do not acknowledge the command.
//	}
//
//	doc, err := s.LoadDocument(ctx, "plan-1") // on opening a document
//	ids, err := s.Documents(ctx)              // every document stored
//
// A nil *Options, or its zero value, opens a durable store. Open creates the
// file but not its directory. The file is locked: a second Open of the same
// path, in this process or another, fails after Options.Timeout.
//
// # Durability and group commit
//
// Commit returns nil only after the bbolt transaction holding the Write has
// been fsynced. Commits from many goroutines share transactions: while one
// transaction is being written, the Writes that arrive queue up and go into
// the next one together, so N concurrent writers pay for about two fsyncs per
// transaction rather than per Write. A lone writer waits for no timer. See
// Options.MaxBatchSize and Options.MaxBatchDelay. Options.NoSync turns
// fsync off, which is only for benchmarks.
//
// # Layout
//
//	docs/<document id>/records/<decision id>          encoded record
//	docs/<document id>/drafts/<decision id>/snapshot  CRDT snapshot
//	docs/<document id>/drafts/<decision id>/<uint64>  chunk, big-endian sequence number
//	docs/<document id>/projections/<decision id>      card projection
//	docs/<document id>/answers/<decision id>          decision_answers row
//
// Chunk keys come from the decision bucket's sequence, so they iterate in
// commit order. A snapshot replaces the decision's bucket, which drops every
// earlier chunk in the same transaction.
//
// # Damage
//
// Anything found in the file that does not fit this layout (a value where a
// bucket belongs, a chunk key that is not 8 bytes, ...) is reported as a
// *persist.CorruptError naming the file, bucket path and key, never a panic.
// Damage to the file itself is a *persist.CorruptError naming the file
// alone: before bbolt maps an existing file, Open reads it with plain reads
// (both meta pages, the size they promise, the freelist, then every branch
// and leaf page of the tree) and refuses one that bbolt could not safely
// map: truncated, overwritten, with pages past its end, cycles or pages in
// use on the freelist. Damage below one document's bucket is that
// document's alone: LoadDocument, Commit and DeleteDocument of it return a
// CorruptError naming its bucket, and bbolt never walks it. Damage that
// appears after Open is met by the first read or commit that walks it,
// which bbolt would answer with a panic or a fault and the store answers
// with the error. Every CorruptError matches persist.ErrCorrupt. Check
// walks the tree again, runs bbolt's page-level consistency check and
// reads every document against the layout; Options.Verify runs it at Open.
//
// # Backup and deletion
//
// Backup and BackupFile write a consistent copy of the file while commits
// go on (bbolt's Tx.WriteTo in one read transaction). The copy is a bbolt
// file: restoring is stopping the server, putting the copy in place of the
// file and starting it again. DeleteDocument drops a document's buckets in
// one durable transaction. docs/OPERATIONS.md has the operator's side.
package boltstore
