package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/jetstream"
)

// ErrFenced is returned by FencedStore.Commit when another node committed
// to the document since this node loaded it: this node's authority decided
// on a state that is no longer the document's, so nothing was applied. The
// document must be loaded again (closed and reopened) before it commits.
// It matches persist.ErrConflict, as every store's fenced commit does.
var ErrFenced = fmt.Errorf("cluster: document committed elsewhere since it was loaded (fenced): %w", persist.ErrConflict)

// FencedStore is a persist.Store on a shared JetStream stream whose Commits
// succeed only on top of the state this node last loaded or committed: each
// Commit is a jetstream.Store.CommitAt at the head it knows. Whatever the
// leases say, two nodes that loaded the same state cannot both commit on
// it, so every acknowledged command was decided on the whole history before
// it. The authority of one document commits one Write at a time (the
// document's goroutine in package sync/server), which is what a head per
// document assumes.
type FencedStore struct {
	s *jetstream.Store

	mu    sync.Mutex
	heads map[string]uint64 // per loaded document: the head its state is at

	// leased, if set (RequireLease), says whether this node holds a
	// document's lease.
	leased atomic.Pointer[func(doc string) bool]

	fenced atomic.Uint64
	log    *slog.Logger
}

var _ persist.Store = (*FencedStore)(nil)

// NewFencedStore fences s. The FencedStore closes s when it is closed.
func NewFencedStore(s *jetstream.Store) *FencedStore {
	return &FencedStore{s: s, heads: make(map[string]uint64), log: slog.New(slog.DiscardHandler)}
}

// SetLogger has f log each commit at Debug (the document, the head the
// commit was decided on and the head it made: an audit of who wrote
// what, in which order), each fenced one at Warn and each of unknown
// outcome at Error. Call it before f is used.
func (f *FencedStore) SetLogger(l *slog.Logger) { f.log = l }

// RequireLease has f refuse every Commit for a document whose lease r
// does not hold (lost, released, handed off, or never taken), with an
// error wrapping ErrNotOwner, applying nothing, until r holds it again.
// The fence alone lets a node that lost the lease commit once more after
// it reloaded the document (host work drained while the document shuts
// down, for instance): that commit lands on the new owner's state, which
// is a chain still, but fences the new owner's next commit. Call it
// before f is used.
func (f *FencedStore) RequireLease(r *Router) {
	held := r.holds
	f.leased.Store(&held)
}

// LoadDocument loads doc and remembers the head of the state returned.
func (f *FencedStore) LoadDocument(ctx context.Context, doc string) (*persist.StoredDocument, error) {
	start := time.Now()
	d, head, err := f.s.LoadDocumentHead(ctx, doc)
	if err != nil {
		return nil, err
	}
	f.log.Debug("cluster: loaded", "doc", doc, "head", head, "took", time.Since(start))
	f.mu.Lock()
	f.heads[doc] = head
	f.mu.Unlock()
	return d, nil
}

// Commit commits w on top of the state last loaded or committed for doc.
// It returns an error wrapping ErrFenced, applying nothing, if another
// node committed to doc since, or if doc was never loaded here or its last
// Commit's outcome is unknown; the next LoadDocument lifts the fence. With
// RequireLease, it returns one wrapping ErrNotOwner, applying nothing,
// while this node does not hold doc's lease.
func (f *FencedStore) Commit(ctx context.Context, doc string, w *persist.Write) error {
	if w.Empty() {
		return f.s.Commit(ctx, doc, w) // validation and ErrClosed only
	}
	if leased := f.leased.Load(); leased != nil && !(*leased)(doc) {
		if err := f.s.Commit(ctx, doc, &persist.Write{}); err != nil {
			return err
		}
		f.log.Warn("cluster: commit refused: the lease is not held here", "doc", doc)
		return fmt.Errorf("cluster: commit to %q: %w", doc, ErrNotOwner)
	}
	f.mu.Lock()
	head, ok := f.heads[doc]
	f.mu.Unlock()
	if !ok {
		if err := f.s.Commit(ctx, doc, &persist.Write{}); err != nil {
			return err
		}
		f.fenced.Add(1)
		return fmt.Errorf("cluster: commit to %q without a loaded state: %w", doc, ErrFenced)
	}
	next, err := f.s.CommitAt(ctx, doc, w, head)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err == nil:
		// A Forget while the commit was in flight leaves the head
		// unknown: the next commit waits for a load, as Forget promises.
		if cur, ok := f.heads[doc]; ok && cur == head {
			f.heads[doc] = next
		}
		f.log.Debug("cluster: committed", "doc", doc, "from", head, "to", next)
		return nil
	case errors.Is(err, jetstream.ErrConflict):
		delete(f.heads, doc)
		f.fenced.Add(1)
		// The error names the sequence the stream holds instead.
		f.log.Warn("cluster: commit fenced", "doc", doc, "from", head, "err", err)
		return fmt.Errorf("cluster: commit to %q: %w", doc, ErrFenced)
	case errors.Is(err, persist.ErrEmptyKey), errors.Is(err, persist.ErrClosed),
		errors.Is(err, jetstream.ErrTooLarge), errors.Is(err, jetstream.ErrKeyTooLong),
		errors.Is(err, context.Canceled):
		return err // refused before anything was sent: the head stands
	default:
		// The Write may have landed: the head this node knows is no
		// longer sure.
		delete(f.heads, doc)
		f.log.Error("cluster: commit outcome unknown", "doc", doc, "from", head, "err", err)
		return err
	}
}

// Documents lists every document in the stream.
func (f *FencedStore) Documents(ctx context.Context) ([]string, error) { return f.s.Documents(ctx) }

// ReadAudit reads a decision's audit log from the stream; reading needs
// no fence.
func (f *FencedStore) ReadAudit(ctx context.Context, doc, decision string, after uint64, limit int) ([]persist.AuditRow, error) {
	return f.s.ReadAudit(ctx, doc, decision, after, limit)
}

// DeleteDocument deletes doc everywhere and forgets its head here.
func (f *FencedStore) DeleteDocument(ctx context.Context, doc string) error {
	f.mu.Lock()
	delete(f.heads, doc)
	f.mu.Unlock()
	return f.s.DeleteDocument(ctx, doc)
}

// Forget drops doc's head, so that its next Commit is fenced until it is
// loaded again: for a node that gave up the document.
func (f *FencedStore) Forget(doc string) {
	f.mu.Lock()
	delete(f.heads, doc)
	f.mu.Unlock()
}

// Fenced counts the Commits refused with ErrFenced.
func (f *FencedStore) Fenced() uint64 { return f.fenced.Load() }

// Close closes the underlying store.
func (f *FencedStore) Close() error { return f.s.Close() }
