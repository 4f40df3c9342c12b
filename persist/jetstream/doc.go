// Package jetstream is a persist.Store in a NATS JetStream stream
// (github.com/nats-io/nats.go/jetstream), so that several Accord nodes can
// share documents and survive the loss of a machine: with Options.Replicas
// 3 a Commit returns only once a quorum of three servers holds the Write.
//
// # Usage
//
//	nc, err := nats.Connect("nats://n1:4222,nats://n2:4222,nats://n3:4222")
//	if err != nil { ... }
//	defer nc.Close()
//	s, err := jetstream.Open(ctx, nc, &jetstream.Options{Replicas: 3, Logger: logger})
//	if err != nil { ... }
//	defer s.Close()
//
//	// As with any persist.Store: persist, then reply and broadcast.
//	if err := s.Commit(ctx, "plan-1", w); err != nil {
//		// Not acknowledged.
//	}
//
// Open creates the stream (or updates its replica count). The caller owns
// the connection. Several Stores, in one process or many, may use one
// stream at once.
//
// # Atomicity and durability
//
// A Write is one JetStream atomic batch: its messages (one per value, see
// below) are stored all together or not at all, under consecutive stream
// sequences, and the ack of the batch's last message is the Commit's
// success. On a replicated stream the server proposes the whole batch as
// one Raft entry and acks after a quorum stored it; a leader change during
// a Commit fails it (nothing applied) or, rarely, leaves its outcome
// unknown after Options.Timeout, which the error says.
//
// A quorum ack is durability against the loss of a minority of servers.
// JetStream writes each message to its files at once but fsyncs them only
// every sync_interval (two minutes by default); a simultaneous power loss
// of a majority can lose the last acknowledged Writes unless the servers
// run with sync_interval: always. A single-replica file stream is
// different: the server stages each atomic batch in its own file and
// fsyncs it, which makes R1 commits durable but slow (see the benchmark).
// Options.Memory streams are for tests.
//
// # Reads
//
// LoadDocument first asks the stream's leader for the document's head
// (the sequence of its last Write), then reads the document's subjects in
// stream order until it has passed that head with nothing behind it: it
// returns the state after one Write, never part of one, and never older
// than a Write acknowledged before it started, on whichever node that
// Write was committed. A single-replica stream is read through an
// ephemeral consumer; a replicated one message by message from its leader
// (a consumer may sit on a lagging replica), about 100 µs a message on one
// machine. A leader elected a moment ago may answer before it has applied
// every committed Write; CommitAt's check on the head still refuses a
// decision taken on such a stale read.
//
// # Compare-and-set
//
// Beyond persist.Store, Head and LoadDocumentHead return a document's
// head, and CommitAt commits only if the head has not moved; otherwise it
// returns ErrConflict and applies nothing. The stream itself checks the
// head (Nats-Expected-Last-Subject-Sequence on the batch's last message),
// so two nodes that decided on the same state cannot both commit: this is
// the fence a cluster's authority uses (docs/SCALING.md).
//
// # Layout
//
// One stream (Options.Stream, subjects "<lower-case name>.>") keeps at most
// one message per subject, so the stream is its own materialized view:
//
//	<p>.<doc>.r.<decision>          encoded record
//	<p>.<doc>.p.<decision>          card projection
//	<p>.<doc>.a.<decision>          decision_answers row, or a tombstone once deleted
//	<p>.<doc>.s.<decision>          CRDT snapshot
//	<p>.<doc>.c.<decision>.<unique> one CRDT chunk, ordered by its stream sequence
//	<p>.<doc>.m                     the document's head: the last message of every Write
//
// Ids are base64url in subject tokens. A chunk counts only above its
// decision's snapshot; the Commit that writes a snapshot purges the chunks
// below it. DeleteDocument purges every subject of the document, which the
// stream applies atomically. A message that does not fit the layout is
// reported as a *persist.CorruptError naming its subject.
//
// # Limits
//
// A Write takes one message per distinct key and chunk, plus its head: at
// most Options.MaxBatch (the server's max_batch_size, 1000 by default); each
// value must fit the server's max_payload (1 MB by default, up to 64 MB).
// Beyond them Commit returns ErrTooLarge before sending anything. The
// server keeps 50 atomic batches open per stream; a Store keeps at most
// Options.MaxInflight in flight and retries when the server says too many.
package jetstream
