package memstore

import (
	"context"
	"slices"
	"sync"

	"github.com/accord-crdt/accord/persist"
)

// Store is an in-memory persist.Store. It is safe for concurrent use. The
// zero value is not usable; call New.
type Store struct {
	mu           sync.Mutex
	closed       bool
	docs         map[string]*document
	failNext     error
	beforeCommit func(doc string, w *persist.Write) error
}

var _ persist.Store = (*Store)(nil)

type document struct {
	records     map[string][]byte
	drafts      map[string]*draft
	projections map[string][]byte
	answers     map[string][]byte
	audit       map[string][][]byte // a decision's log; a row's Seq is its index + 1
}

type draft struct {
	snapshot []byte
	chunks   [][]byte
}

// New returns an empty Store.
func New() *Store {
	return &Store{docs: make(map[string]*document)}
}

// FailNextCommit makes the next Commit that passes validation return err
// without applying anything. It is a fault hook for tests of the packages
// that write through a Store: they can check that a failed commit is never
// acknowledged. A nil err cancels a pending failure.
func (s *Store) FailNextCommit(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = err
}

// SetBeforeCommit installs fn to run at the start of every Commit that passes
// validation, before anything is applied, outside the Store's lock. If fn
// returns an error, Commit returns it and applies nothing. fn may block, for
// example to hold a commit in flight while a test looks at what has (not)
// been acknowledged, and it may be called from many goroutines at once. fn
// must not modify or retain w. A nil fn removes the hook.
func (s *Store) SetBeforeCommit(fn func(doc string, w *persist.Write) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beforeCommit = fn
}

// Commit applies w to doc atomically. An empty Write changes nothing and
// does not make doc appear in Documents.
func (s *Store) Commit(ctx context.Context, doc string, w *persist.Write) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return persist.ErrClosed
	}
	if err := persist.CheckWrite(doc, w, persist.Limits{}); err != nil {
		s.mu.Unlock()
		return err
	}
	if err := ctx.Err(); err != nil {
		s.mu.Unlock()
		return err
	}
	if err := s.failNext; err != nil {
		s.failNext = nil
		s.mu.Unlock()
		return err
	}
	hook := s.beforeCommit
	s.mu.Unlock()

	if hook != nil {
		if err := hook(doc, w); err != nil {
			return err
		}
	}
	if w.Empty() {
		return nil
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return persist.ErrClosed
	}
	d := s.docs[doc]
	if d == nil {
		d = &document{
			records:     make(map[string][]byte),
			drafts:      make(map[string]*draft),
			projections: make(map[string][]byte),
			answers:     make(map[string][]byte),
			audit:       make(map[string][][]byte),
		}
		s.docs[doc] = d
	}
	for _, p := range w.Records {
		d.records[p.Key] = clone(p.Value)
	}
	for _, p := range w.Projections {
		d.projections[p.Key] = clone(p.Value)
	}
	for _, p := range w.Answers {
		if p.Value == nil {
			delete(d.answers, p.Key)
		} else {
			d.answers[p.Key] = clone(p.Value)
		}
	}
	for _, p := range w.Audit {
		d.audit[p.Key] = append(d.audit[p.Key], clone(p.Value))
	}
	for _, dp := range w.Drafts {
		dr := d.drafts[dp.Decision]
		if dr == nil {
			dr = &draft{}
			d.drafts[dp.Decision] = dr
		}
		if dp.Snapshot {
			dr.snapshot = clone(dp.Chunk)
			dr.chunks = nil
		} else {
			dr.chunks = append(dr.chunks, clone(dp.Chunk))
		}
	}
	return nil
}

// LoadDocument returns a copy of everything stored for doc. A document never
// written gives an empty StoredDocument whose maps are non-nil.
func (s *Store) LoadDocument(ctx context.Context, doc string) (*persist.StoredDocument, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, persist.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := &persist.StoredDocument{
		Records:     make(map[string][]byte),
		Drafts:      make(map[string]persist.StoredDraft),
		Projections: make(map[string][]byte),
		Answers:     make(map[string][]byte),
	}
	d := s.docs[doc]
	if d == nil {
		return out, nil
	}
	copyValues(out.Records, d.records)
	copyValues(out.Projections, d.projections)
	copyValues(out.Answers, d.answers)
	for id, dr := range d.drafts {
		sd := persist.StoredDraft{Snapshot: clone(dr.snapshot)}
		if len(dr.chunks) > 0 {
			sd.Chunks = make([][]byte, len(dr.chunks))
			for i, c := range dr.chunks {
				sd.Chunks[i] = clone(c)
			}
		}
		out.Drafts[id] = sd
	}
	return out, nil
}

// ReadAudit returns up to limit rows of decision's audit log after
// position after, copied.
func (s *Store) ReadAudit(ctx context.Context, doc, decision string, after uint64, limit int) ([]persist.AuditRow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, persist.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d := s.docs[doc]
	if d == nil || limit <= 0 {
		return nil, nil
	}
	log := d.audit[decision]
	var out []persist.AuditRow
	for i := after; i < uint64(len(log)) && len(out) < limit; i++ {
		out = append(out, persist.AuditRow{Seq: i + 1, Value: clone(log[i])})
	}
	return out, nil
}

// Documents returns the ids of every document a non-empty Write was
// committed to, sorted.
func (s *Store) Documents(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, persist.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(s.docs))
	for id := range s.docs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// DeleteDocument drops everything stored for doc. A document never written
// is no error; an empty id is persist.ErrEmptyKey.
func (s *Store) DeleteDocument(ctx context.Context, doc string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return persist.ErrClosed
	}
	if doc == "" {
		return persist.ErrEmptyKey
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	delete(s.docs, doc)
	return nil
}

// Close drops everything stored. Afterwards every method, Close included,
// returns persist.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return persist.ErrClosed
	}
	s.closed = true
	s.docs = nil
	return nil
}

// clone copies b; the copy is never nil, so an empty stored value stays
// distinct from a missing one.
func clone(b []byte) []byte {
	return append(make([]byte, 0, len(b)), b...)
}

func copyValues(dst, src map[string][]byte) {
	for k, v := range src {
		dst[k] = clone(v)
	}
}
