package boltstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
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

	commits      atomic.Uint64
	transactions atomic.Uint64
}

var _ persist.Store = (*Store)(nil)

// Open opens the store in the bbolt file at path, creating the file (but
// not its directory) if it does not exist. Only one Store, in any process,
// can have a file open at a time; Open waits Options.Timeout for the lock.
// opts may be nil.
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

	bopts := &bolt.Options{
		Timeout:      o.Timeout,
		NoSync:       o.NoSync,
		FreelistType: bolt.FreelistMapType,
	}
	if o.Logger != nil {
		bopts.Logger = boltLogger{o.Logger}
	}
	db, err := bolt.Open(path, 0o600, bopts)
	if err != nil {
		var pe *fs.PathError
		switch {
		case errors.Is(err, berrors.ErrTimeout):
			err = fmt.Errorf("boltstore: open %s: file still locked after %v (another process or Store has it open): %w", path, o.Timeout, err)
		case errors.As(err, &pe) && pe.Path == path:
			// Name the path once, keeping the error for errors.Is.
			err = fmt.Errorf("boltstore: open %s: %w", path, pe.Err)
		default:
			err = fmt.Errorf("boltstore: open %s: %w", path, err)
		}
		return nil, err
	}
	if err := createDocsBucket(db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	if o.NoSync {
		logger.Warn("boltstore: NoSync is set; commits are not durable", "path", path)
	}
	logger.Debug("boltstore: opened", "path", path)
	return &Store{
		db:            db,
		path:          path,
		log:           logger,
		maxBatchSize:  o.MaxBatchSize,
		maxBatchDelay: o.MaxBatchDelay,
		queue:         commitQueue{full: make(chan struct{}, 1)},
	}, nil
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
	var out *persist.StoredDocument
	err := s.db.View(func(tx *bolt.Tx) error {
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
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		ids, err = loadDocuments(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// Check verifies the whole file: bbolt's own consistency check of pages and
// free list, then the layout of every document. It returns nil if all is
// well, or every problem found joined into one error; layout problems are
// *persist.CorruptError. It reads in one transaction and does not block
// commits.
func (s *Store) Check() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return persist.ErrClosed
	}
	return s.db.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, fmt.Errorf("boltstore: bbolt check: %w", err))
		}
		if len(errs) > 0 {
			// The pages are damaged; walking them may only add noise.
			return errors.Join(errs...)
		}
		ids, err := loadDocuments(tx)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := loadDocument(tx, id); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
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
