// Package postgres is a persist.Store in a PostgreSQL database, through a
// pgx connection pool (github.com/jackc/pgx/v5), for a service that runs
// PostgreSQL already: its backups, replicas and monitoring then cover
// Accord's decisions too, and several Accord servers can share one
// database.
//
// # Usage
//
//	s, err := postgres.Open(ctx, "postgres://accord@db.internal/accord", &postgres.Options{Logger: logger})
//	if err != nil { ... }
//	defer s.Close()
//
//	// As with any persist.Store: persist, then reply and broadcast.
//	if err := s.Commit(ctx, "plan-1", w); err != nil {
//		// Not acknowledged.
//	}
//
// The URL is anything pgx takes (a postgres:// URL or key=value pairs, with
// PG* environment variables filling the gaps), pool settings such as
// pool_max_conns included. Open creates the store's tables in their own
// schema (Options.Schema, "accord" by default) and migrates them: the
// schema's version is in its schema_version table, and Open applies the
// migrations this build has beyond it, in one transaction, under an
// advisory lock, so that of several servers starting at once one
// migrates and the others wait and find it done. A schema newer than the
// build is refused (ErrSchemaTooNew). The database user needs the right
// to create the schema on the first Open, and to read and write its
// tables after.
//
// # Atomicity and durability
//
// A Write is one transaction: its statements go to the server in one round
// trip (a pgx batch, run as one implicit transaction), and Commit returns
// nil only after the server answered that it committed, which with the
// default synchronous_commit = on means its write-ahead log was flushed.
// Concurrent Commits of different documents run on their own connections
// (up to Options.MaxConns), and the server flushes the log once for the
// commits that arrive together.
// A connection lost while the outcome was awaited leaves it unknown; the
// error wraps persist.ErrOutcomeUnknown. Every other error means nothing of
// the Write was applied.
//
// # Several servers on one database: the fence
//
// Every Write moves its document's revision (a value of a sequence, never
// reused), on condition that the revision is still the one this Store last
// loaded, committed or deleted: UPDATE ... WHERE revision = expected, in
// the Write's own transaction, which holds the document's row until it
// commits. A server that loaded a document, then lost it to another
// server that committed to it, is refused when it commits again: an error
// wrapping persist.ErrConflict, nothing applied, and so on until it loads
// the document again. This is the fence that persist/jetstream's CommitAt
// and sync/cluster's FencedStore give a cluster, here without NATS: two
// servers that decided on the same state never both commit on it. It
// assumes one writer per document per Store, as the sync server's one
// goroutine per document is; a Store writes a document it has not met
// (neither loaded nor committed) whatever its revision. docs/SCALING.md
// says what it leaves to the host: which server a document's clients
// reach.
//
// # Damage
//
// Every stored value has a CRC-32C of its place and bytes beside it, which
// every read checks: a value changed outside the store, or damaged below
// PostgreSQL, is a *persist.CorruptError naming its table, document and
// key (errors.Is persist.ErrCorrupt, wrapping ErrChecksum). Only that
// document's loads fail (or that decision's audit reads); the others load
// as ever. PostgreSQL's own reports of damaged pages (SQLSTATE XX001,
// XX002) are a *persist.CorruptError naming the schema.
//
// # Layout
//
//	<schema>.schema_version(version, applied)
//	<schema>.documents(doc, revision)
//	<schema>.items(doc, kind, key, value, sum)       kind: record, projection, answer, snapshot
//	<schema>.chunks(doc, decision, seq, value, sum)  CRDT chunks after the snapshot, by seq
//	<schema>.audit(doc, decision, seq, value, sum)   audit rows, by seq (AuditRow.Seq)
//
// Ids and keys are bytea. A snapshot replaces its decision's row in items
// and deletes its chunks in the same transaction; DeleteDocument deletes
// every row of the document in one. Backups are PostgreSQL's own (pg_dump
// of the schema, or base backups): docs/OPERATIONS.md.
//
// # Limits
//
// Keys are at most MaxKeySize bytes, values at most MaxValueSize, a Write
// at most MaxWriteSize; beyond them Commit returns ErrKeyTooLong or
// ErrTooLarge before sending anything.
package postgres
