package boltstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/accord-crdt/accord/persist"
)

// Store is a persist.Store in one bbolt file. It is safe for concurrent use.
type Store struct {
	db   *bolt.DB
	path string
	log  *slog.Logger

	maxBatchSize  int
	maxBatchDelay time.Duration

	// mu is held for reading by every call in flight and for writing by
	// Close, which so waits for them and then fails every later call.
	mu     sync.RWMutex
	closed bool

	queue commitQueue

	// damaged holds the documents whose pages Open found damaged, by id.
	// The store never lets bbolt walk them (see checkTree); it is not
	// changed after Open.
	damaged map[string]error

	commits      atomic.Uint64
	transactions atomic.Uint64
}

var _ persist.Store = (*Store)(nil)

// Open opens the store in the bbolt file at path, creating the file (but
// not its directory) if it does not exist. Only one Store, in any process,
// can have a file open at a time; Open waits Options.Timeout for the lock.
// opts may be nil.
//
// A damaged file gives a *persist.CorruptError naming the file (errors.Is
// persist.ErrCorrupt), never a panic: Open checks an existing file's meta
// pages, size, freelist and page tree before bbolt maps it, and recovers
// what bbolt raises beyond that. Damage below one document's bucket does
// not fail Open; that document alone is refused (see the package doc). A directory, a missing folder or a file
// the process may not read gives an *fs.PathError naming the path.
func Open(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	o.setDefaults()
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	damaged, err := checkFile(path)
	if err != nil {
		return nil, openError(path, o.Timeout, err)
	}

	// file is what bbolt opened, so that a panic inside bolt.Open (which
	// checkFile should have ruled out) does not leak the descriptor and
	// with it the lock.
	var file *os.File
	bopts := &bolt.Options{
		Timeout:      o.Timeout,
		NoSync:       o.NoSync,
		FreelistType: bolt.FreelistMapType,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, perm)
			if name == path && file == nil {
				file = f
			}
			return f, err
		},
	}
	if o.Logger != nil {
		bopts.Logger = &boltLogger{o.Logger}
	}
	var db *bolt.DB
	err = guard(path, "", func() error {
		var err error
		db, err = bolt.Open(path, 0o600, bopts)
		return err
	})
	if err != nil {
		var ce *persist.CorruptError
		if errors.As(err, &ce) && db == nil && file != nil {
			_ = file.Close()
		}
		return nil, openError(path, o.Timeout, err)
	}
	if err := guard(path, "", func() error { return createDocsBucket(db) }); err != nil {
		_ = db.Close()
		return nil, openError(path, o.Timeout, err)
	}
	s := &Store{
		db:            db,
		path:          path,
		log:           logger,
		maxBatchSize:  o.MaxBatchSize,
		maxBatchDelay: o.MaxBatchDelay,
		queue:         commitQueue{full: make(chan struct{}, 1)},
		damaged:       damaged,
	}
	for doc, err := range damaged {
		logger.Error("boltstore: a document's pages are damaged; it is unavailable until the file is restored",
			"path", path, "doc", doc, "err", err)
	}
	if o.Verify {
		if err := s.Check(); err != nil {
			_ = db.Close()
			return nil, openError(path, o.Timeout, err)
		}
	}
	if o.NoSync {
		logger.Warn("boltstore: NoSync is set; commits are not durable", "path", path)
	}
	logger.Debug("boltstore: opened", "path", path)
	return s, nil
}

// openError words an error of Open. Damage becomes a *persist.CorruptError
// naming the file; a path problem stays an *fs.PathError naming the path
// once.
func openError(path string, timeout time.Duration, err error) error {
	var ce *persist.CorruptError
	var pe *fs.PathError
	switch {
	case errors.As(err, &ce):
		if ce.File == "" {
			ce.File = path
		}
		return err
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("boltstore: open %s: file still locked after %v (another process or Store has it open): %w", path, timeout, err)
	case errors.As(err, &pe) && pe.Path == path:
		return &fs.PathError{Op: "boltstore: open", Path: path, Err: pe.Err}
	case errors.Is(err, ErrEmptyFile), errors.Is(err, ErrNoMeta), errors.Is(err, ErrTruncated), errors.Is(err, ErrBadPage),
		errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrChecksum):
		return &persist.CorruptError{File: path, Err: err}
	}
	return fmt.Errorf("boltstore: open %s: %w", path, err)
}

// createDocsBucket creates the top-level bucket in a new file. It reads
// first, so that opening an existing file commits (and fsyncs) nothing.
func createDocsBucket(db *bolt.DB) error {
	exists := false
	if err := db.View(func(tx *bolt.Tx) error {
		exists = tx.Bucket(bucketDocs) != nil
		return nil
	}); err != nil || exists {
		return err
	}
	return db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketDocs)
		if errors.Is(err, berrors.ErrIncompatibleValue) {
			return corrupt("", bucketDocs, ErrNotBucket)
		}
		return err
	})
}

// Path returns the file the store was opened on, also after Close.
func (s *Store) Path() string { return s.path }

// LoadDocument returns everything stored for doc, read in one bbolt read
// transaction, so it never sees part of a Write. A stored structure that
// does not match the layout gives a *persist.CorruptError.
func (s *Store) LoadDocument(ctx context.Context, doc string) (*persist.StoredDocument, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, persist.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.docDamage(doc); err != nil {
		return nil, err
	}
	var out *persist.StoredDocument
	err := s.view(path(string(bucketDocs), []byte(doc)), func(tx *bolt.Tx) error {
		var err error
		out, err = loadDocument(tx, doc)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Documents returns the ids of every document a non-empty Write was
// committed to, sorted.
func (s *Store) Documents(ctx context.Context) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, persist.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var ids []string
	err := s.view(string(bucketDocs), func(tx *bolt.Tx) error {
		var err error
		ids, err = loadDocuments(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// ReadAudit returns up to limit rows of decision's audit log after
// position after, read in one transaction of their own.
func (s *Store) ReadAudit(ctx context.Context, doc, decision string, after uint64, limit int) ([]persist.AuditRow, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, persist.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if doc == "" || decision == "" || limit <= 0 {
		return nil, nil
	}
	if err := s.docDamage(doc); err != nil {
		return nil, err
	}
	var rows []persist.AuditRow
	err := s.view(auditPath(doc), func(tx *bolt.Tx) error {
		var err error
		rows, err = readAudit(tx, doc, decision, after, limit)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// Check verifies the whole file: the page structure is walked (as Open
// does), then bbolt's own consistency check of pages and free list runs,
// then every document (its audit logs too) is read against the layout. It returns nil if all is well, or
// every problem found joined into one error: page damage is a
// *persist.CorruptError naming the file alone, layout damage one naming
// the bucket and key. It reads in one transaction and does not block
// commits; its cost grows with the file.
func (s *Store) Check() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return persist.ErrClosed
	}
	return s.view("", func(tx *bolt.Tx) error {
		// bbolt checks in a goroutine of its own and trusts the page
		// structure: a cycle or a huge overflow count makes it loop, a
		// page id past the map faults where no recover reaches. The same
		// walk as at Open, on this transaction's tree (whose pages no
		// commit reuses while it is open), comes first.
		f, err := os.Open(s.path)
		if err != nil {
			return fmt.Errorf("boltstore: check %s: %w", s.path, err)
		}
		defer f.Close()
		ps := uint64(s.db.Info().PageSize)
		m := meta{pageSize: ps, root: uint64(tx.Cursor().Bucket().RootPage()), pgid: uint64(tx.Size()) / ps}
		docs, err := checkTree(f, m, nil)
		if err != nil {
			return &persist.CorruptError{File: s.path, Err: err}
		}
		if len(docs) > 0 {
			var errs []error
			for _, doc := range slices.Sorted(maps.Keys(docs)) {
				errs = append(errs, &persist.CorruptError{File: s.path, Bucket: path(string(bucketDocs), []byte(doc)), Err: docs[doc]})
			}
			return errors.Join(errs...)
		}
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, fmt.Errorf("boltstore: bbolt check: %w", err))
		}
		if len(errs) > 0 {
			// The pages are damaged; walking them may only add noise.
			return &persist.CorruptError{File: s.path, Err: errors.Join(errs...)}
		}
		ids, err := loadDocuments(tx)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := loadDocument(tx, id); err != nil {
				errs = append(errs, inFile(s.path, err))
			}
			if err := checkAudit(tx, id); err != nil {
				errs = append(errs, inFile(s.path, err))
			}
		}
		return errors.Join(errs...)
	})
}

// docDamage is the error for a document whose pages Open found damaged,
// or nil.
func (s *Store) docDamage(doc string) error {
	if err, ok := s.damaged[doc]; ok {
		return &persist.CorruptError{File: s.path, Bucket: path(string(bucketDocs), []byte(doc)), Err: err}
	}
	return nil
}

// view runs fn in a read transaction under guard; bucket names what fn
// reads, for the error of a panic.
func (s *Store) view(bucket string, fn func(tx *bolt.Tx) error) error {
	return guard(s.path, bucket, func() error { return s.db.View(fn) })
}

// DeleteDocument removes every bucket and value of doc (records, drafts,
// projections, answers) in one durable write transaction. Deleting a
// document never written returns nil. The freed pages are reused by later
// commits; the file does not shrink (see docs/OPERATIONS.md).
func (s *Store) DeleteDocument(ctx context.Context, doc string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return persist.ErrClosed
	}
	if err := persist.CheckWrite(doc, nil, limits); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.docDamage(doc); err != nil {
		// Deleting walks the document's pages to free them.
		return err
	}
	key := []byte(doc)
	docPath := path(string(bucketDocs), key)
	err := guard(s.path, docPath, func() error {
		return s.db.Update(func(tx *bolt.Tx) error {
			docs := tx.Bucket(bucketDocs)
			switch {
			case docs == nil:
				return nil
			case docs.Bucket(key) != nil:
				if err := docs.DeleteBucket(key); err != nil {
					// The bucket exists, so failing to walk it (bbolt
					// words that "bucket not found", unwrapped) is damage.
					return corrupt(docPath, nil, err)
				}
				return nil
			case has(docs, key):
				// A value where the document's bucket belongs: the
				// document is damaged, and deleting it removes that too.
				return docs.Delete(key)
			}
			return nil
		})
	})
	var ce *persist.CorruptError
	switch {
	case err == nil:
	case errors.As(err, &ce):
		return err
	default:
		return fmt.Errorf("boltstore: delete document %q: %w", doc, err)
	}
	s.log.Info("boltstore: document deleted", "doc", doc)
	return nil
}

// Stats are counters since Open.
type Stats struct {
	// Commits is the number of non-empty Writes committed.
	Commits uint64
	// Transactions is the number of bbolt write transactions, and so of
	// fsyncs of the data, that committed them. Commits/Transactions is the
	// average size of a group commit.
	Transactions uint64
}

// Stats returns the counters since Open. It works after Close too.
func (s *Store) Stats() Stats {
	return Stats{Commits: s.commits.Load(), Transactions: s.transactions.Load()}
}

// Close waits for the calls in flight, then closes the file. Commits that
// returned nil stay durable. Afterwards every method, Close included,
// returns persist.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return persist.ErrClosed
	}
	s.closed = true
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("boltstore: close %s: %w", s.path, err)
	}
	s.log.Debug("boltstore: closed", "path", s.path)
	return nil
}
