package persist

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrClosed is returned by every method of a Store after Close.
var ErrClosed = errors.New("persist: store closed")

// ErrEmptyKey is returned by Commit when a Write names a document, record,
// draft or answer with an empty key.
var ErrEmptyKey = errors.New("persist: empty key")

// ErrCorrupt matches every *CorruptError under errors.Is, so a host can
// tell damaged storage (restore from a backup) from a failing one (retry).
var ErrCorrupt = errors.New("persist: corrupt storage")

// ErrOutcomeUnknown is wrapped by a Commit error after which the Write may
// have been applied or not (its acknowledgement never came): the caller
// must not report it as refused, and learns the outcome by loading.
var ErrOutcomeUnknown = errors.New("persist: commit outcome unknown")

// CorruptError is returned when stored bytes cannot be read back. It names
// where they live, so an operator can find them.
//
// Bucket and Key name one damaged value (value-level damage: the rest of
// the storage reads fine). Bucket alone names a subtree that could not be
// walked. With both empty the damage is in the file's own structure (its
// header or pages): nothing in it can be trusted, and the file must be
// restored from a backup.
type CorruptError struct {
	File   string // the backend's file, when it has one
	Bucket string // e.g. "docs/plan-1/records"
	Key    string
	Err    error
}

func (e *CorruptError) Error() string {
	var b strings.Builder
	b.WriteString("persist: corrupt ")
	switch {
	case e.Key != "" || e.Bucket != "" && e.File == "":
		fmt.Fprintf(&b, "value at bucket %q key %q", e.Bucket, e.Key)
	case e.Bucket != "":
		fmt.Fprintf(&b, "bucket %q", e.Bucket)
	case e.File != "":
		fmt.Fprintf(&b, "file %q", e.File)
	default:
		b.WriteString("storage")
	}
	if e.File != "" && (e.Bucket != "" || e.Key != "") {
		fmt.Fprintf(&b, " in file %q", e.File)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Store is durable storage for documents' decisions. See the package
// documentation for the contract.
type Store interface {
	// LoadDocument returns everything stored for one document.
	LoadDocument(ctx context.Context, doc string) (*StoredDocument, error)
	// Commit makes one Write durable, atomically.
	Commit(ctx context.Context, doc string, w *Write) error
	// Documents lists the ids of every document with stored state, sorted.
	Documents(ctx context.Context) ([]string, error)
	// DeleteDocument removes everything stored for doc (records, drafts,
	// projections, answers), durably and atomically. Deleting a document
	// never written, or already deleted, returns nil.
	DeleteDocument(ctx context.Context, doc string) error
	// ReadAudit returns up to limit rows of a decision's audit log, in
	// the order they were committed, starting after position after (0 for
	// the first). A log never written gives none. Reading page by page
	// keeps a long history out of memory; a row's Seq is the position to
	// pass to read on.
	ReadAudit(ctx context.Context, doc, decision string, after uint64, limit int) ([]AuditRow, error)
	// Close releases the store. Commits already returned stay durable.
	Close() error
}

// AuditRow is one entry of a decision's audit log.
type AuditRow struct {
	// Seq is the row's position in the log: it grows with every row, and
	// may skip numbers.
	Seq   uint64
	Value []byte
}

// StoredDocument is the durable state of one document.
type StoredDocument struct {
	// Records maps a decision id to its encoded record.
	Records map[string][]byte
	// Drafts maps a decision id to its CRDT document.
	Drafts map[string]StoredDraft
	// Projections maps a decision id to its rendered card projection.
	Projections map[string][]byte
	// Answers maps a decision id to its encoded decision_answers row.
	Answers map[string][]byte
}

// StoredDraft is one decision's CRDT document: a full snapshot followed by
// the incremental chunks appended since, in commit order.
type StoredDraft struct {
	Snapshot []byte
	Chunks   [][]byte
}

// Write is the set of effects one command (or a group of commands) commits
// together.
type Write struct {
	// Records to put, by decision id.
	Records []Put
	// Drafts to extend or compact.
	Drafts []DraftPut
	// Projections to put, by decision id.
	Projections []Put
	// Answers to put (Value non-nil) or delete (Value nil), by decision id.
	Answers []Put
	// Audit rows to append, by decision id (Key), to the decision's
	// audit log, in order. The log is kept apart from the draft:
	// snapshots and compaction never touch it, LoadDocument never reads
	// it, and only DeleteDocument removes it.
	Audit []Put
}

// Put stores Value under Key.
type Put struct {
	Key   string
	Value []byte
}

// DraftPut appends Chunk to a decision's CRDT document, or, when Snapshot is
// true, replaces its snapshot with Chunk and drops every chunk before it.
type DraftPut struct {
	Decision string
	Chunk    []byte
	Snapshot bool
}

// Empty reports whether w changes nothing.
func (w *Write) Empty() bool {
	return w == nil || len(w.Records) == 0 && len(w.Drafts) == 0 && len(w.Projections) == 0 && len(w.Answers) == 0 &&
		len(w.Audit) == 0
}

// Merge appends the effects of o after those of w, so that committing the
// merged Write equals committing w then o.
func (w *Write) Merge(o *Write) {
	if o == nil {
		return
	}
	w.Records = append(w.Records, o.Records...)
	w.Drafts = append(w.Drafts, o.Drafts...)
	w.Projections = append(w.Projections, o.Projections...)
	w.Answers = append(w.Answers, o.Answers...)
	w.Audit = append(w.Audit, o.Audit...)
}
