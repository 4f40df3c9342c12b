package jetstream

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/accord-crdt/accord/persist"
)

// Layout: one stream, one subject per stored value, and at most one
// message kept per subject (MaxMsgsPerSubject = 1), so the stream is its
// own materialized view: the last message of a subject is the value.
//
//	<p>.<doc>.r.<decision>          encoded record
//	<p>.<doc>.p.<decision>          card projection
//	<p>.<doc>.a.<decision>          decision_answers row; a tombstone (header Accord-Op: del) once deleted
//	<p>.<doc>.s.<decision>          CRDT snapshot
//	<p>.<doc>.c.<decision>.<unique> one CRDT chunk; its stream sequence orders it
//	<p>.<doc>.m                     head: the last message of every Write
//	<p>.~a.<doc>.<decision>.<unique> one audit row; its stream sequence orders it
//
// <p> is the stream name in lower case; <doc> and <decision> are
// base64url (no padding) of the raw ids, so any bytes make a valid token.
//
// A Write is one atomic batch (ADR-50: Nats-Batch-Id, -Sequence, -Commit):
// the server stores all of its messages or none, under consecutive stream
// sequences, and acks the commit only once a quorum of replicas has it. The
// head message closes every batch and carries the Accord-End header, so a
// reader knows it has seen a Write whole.
//
// Audit rows live outside <p>.<doc>.> ("~" is no base64url character, so
// no document's token is "~a"): loading a document never reads them, they
// are written in the same batch as the rest of a Write, never purged by a
// snapshot, and only DeleteDocument removes them.
//
// Chunks never share a subject, so they are never replaced; a chunk counts
// only if its stream sequence is above its decision's snapshot's. Chunks
// below it are dead: readers skip them, and the Commit that wrote the
// snapshot purges them afterwards (a failed purge only leaves garbage that
// the next snapshot's purge takes).

const (
	kindRecord     = "r"
	kindProjection = "p"
	kindAnswer     = "a"
	kindSnapshot   = "s"
	kindChunk      = "c"
	kindHead       = "m"

	hdrOp    = "Accord-Op"
	hdrEnd   = "Accord-End"
	opDelete = "del"

	hdrBatchID     = "Nats-Batch-Id"
	hdrBatchSeq    = "Nats-Batch-Sequence"
	hdrBatchCommit = "Nats-Batch-Commit"
)

var enc = base64.RawURLEncoding

type layout struct{ prefix string }

func (l layout) docPrefix(doc string) string {
	return l.prefix + "." + enc.EncodeToString([]byte(doc)) + "."
}

func (l layout) docFilter(doc string) string { return l.docPrefix(doc) + ">" }

func (l layout) head(doc string) string { return l.docPrefix(doc) + kindHead }

func (l layout) key(doc, kind, key string) string {
	return l.docPrefix(doc) + kind + "." + enc.EncodeToString([]byte(key))
}

// auditToken is the second token of every audit row's subject.
const auditToken = "~a"

// audit is the subject of one audit row of decision, and auditFilter
// matches every row of decision (or, with decision empty, of doc).
func (l layout) audit(doc, decision, unique string) string {
	return l.auditFilter(doc, decision) + "." + unique
}

func (l layout) auditFilter(doc, decision string) string {
	f := l.prefix + "." + auditToken + "." + enc.EncodeToString([]byte(doc))
	if decision == "" {
		return f
	}
	return f + "." + enc.EncodeToString([]byte(decision))
}

func (l layout) chunk(doc, decision, unique string) string {
	return l.key(doc, kindChunk, decision) + "." + unique
}

// headsFilter matches the head subject of every document.
func (l layout) headsFilter() string { return l.prefix + ".*." + kindHead }

// docOfHead returns the document id of a head subject.
func (l layout) docOfHead(subject string) (string, error) {
	rest, ok := strings.CutPrefix(subject, l.prefix+".")
	tok, ok2 := strings.CutSuffix(rest, "."+kindHead)
	if !ok || !ok2 || strings.Contains(tok, ".") {
		return "", &persist.CorruptError{Bucket: l.prefix, Key: subject, Err: ErrLayout}
	}
	id, err := enc.DecodeString(tok)
	if err != nil {
		return "", &persist.CorruptError{Bucket: l.prefix, Key: subject, Err: fmt.Errorf("%w: %v", ErrLayout, err)}
	}
	return string(id), nil
}

// parse splits a subject of doc into its kind and decision key.
func (l layout) parse(doc, subject string) (kind, key string, err error) {
	bad := func(why error) error {
		return &persist.CorruptError{Bucket: l.prefix + "/" + doc, Key: subject, Err: why}
	}
	rest, ok := strings.CutPrefix(subject, l.docPrefix(doc))
	if !ok {
		return "", "", bad(ErrLayout)
	}
	parts := strings.Split(rest, ".")
	kind = parts[0]
	want := 2
	switch kind {
	case kindHead:
		want = 1
	case kindChunk:
		want = 3
	case kindRecord, kindProjection, kindAnswer, kindSnapshot:
	default:
		return "", "", bad(fmt.Errorf("%w: unknown kind %q", ErrLayout, kind))
	}
	if len(parts) != want {
		return "", "", bad(fmt.Errorf("%w: %d tokens after the document, want %d", ErrLayout, len(parts), want))
	}
	if want == 1 {
		return kind, "", nil
	}
	k, err := enc.DecodeString(parts[1])
	if err != nil || len(k) == 0 {
		return "", "", bad(fmt.Errorf("%w: key token %q: %v", ErrLayout, parts[1], err))
	}
	return kind, string(k), nil
}
