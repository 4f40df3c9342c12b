package boltstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/accord-crdt/accord/persist"
)

// Group commit.
//
// Commits queue up; the first to find no transaction in progress leads: it
// takes the queue (up to MaxBatchSize Writes), applies them in one bbolt
// write transaction, which costs one round of fsyncs, tells each caller the
// outcome, and hands the lead to the first Write that queued meanwhile.
// Writes that arrive while a transaction commits therefore share the next
// one, and a lone Write waits for no timer.
//
// This is the idea of bbolt's DB.Batch without its timer: Batch holds every
// batch open for MaxBatchDelay (10ms by default) before it starts, which
// bounds a single writer at about 100 commits/s.
//
// If one Write fails inside a transaction (a CorruptError, say), the
// transaction rolls back, that Write gets its error, and the others run again
// in a fresh transaction, like Batch does. apply computes everything from the
// Write and the transaction, so running it again is safe.

type commitQueue struct {
	mu      sync.Mutex
	pending []*call
	leading bool // a caller is leading; it hands off before it returns
	// full gets a token when MaxBatchSize Writes are pending, to cut a
	// MaxBatchDelay wait short.
	full chan struct{}
}

type call struct {
	doc  string
	w    *persist.Write
	done chan outcome // buffered; receives at most one message at a time
}

type outcome struct {
	err  error
	lead bool // take the lead instead: this call is first in the queue
}

// Commit makes w durable for doc, atomically: it returns nil only after the
// bbolt transaction holding w has been written and fsynced (unless
// Options.NoSync). Concurrent Commits share transactions.
//
// A Write with an empty key fails with persist.ErrEmptyKey, one with a key
// or value beyond bbolt's limits with an error wrapping bbolt's
// ErrKeyTooLarge or ErrValueTooLarge, before anything is queued. ctx is
// checked once, before the Write is queued; once queued, Commit waits for the
// outcome so that it never returns without knowing it. An empty Write
// returns nil and changes nothing.
func (s *Store) Commit(ctx context.Context, doc string, w *persist.Write) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return persist.ErrClosed
	}
	if err := persist.CheckWrite(doc, w, limits); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.docDamage(doc); err != nil {
		return err
	}
	if w.Empty() {
		return nil
	}

	c := &call{doc: doc, w: w, done: make(chan outcome, 1)}
	q := &s.queue
	q.mu.Lock()
	q.pending = append(q.pending, c)
	if q.leading {
		if len(q.pending) >= s.maxBatchSize {
			select {
			case q.full <- struct{}{}:
			default:
			}
		}
		q.mu.Unlock()
		if o := <-c.done; !o.lead {
			return o.err
		}
	} else {
		q.leading = true
		q.mu.Unlock()
	}
	return s.lead(c)
}

// lead commits one group, which starts with self, then passes the lead on.
func (s *Store) lead(self *call) error {
	s.run(s.gather())

	q := &s.queue
	q.mu.Lock()
	if len(q.pending) > 0 {
		q.pending[0].done <- outcome{lead: true}
	} else {
		q.leading = false
		q.pending = nil
	}
	q.mu.Unlock()
	return (<-self.done).err
}

// gather takes the next group off the queue, after waiting up to
// MaxBatchDelay for it to fill.
func (s *Store) gather() []*call {
	q := &s.queue
	if s.maxBatchDelay > 0 {
		q.mu.Lock()
		select {
		case <-q.full: // stale
		default:
		}
		n := len(q.pending)
		q.mu.Unlock()
		if n < s.maxBatchSize {
			timer := time.NewTimer(s.maxBatchDelay)
			select {
			case <-timer.C:
			case <-q.full:
			}
			timer.Stop()
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.pending), s.maxBatchSize)
	group := slices.Clone(q.pending[:n])
	clear(q.pending[:n])
	q.pending = q.pending[n:]
	return group
}

// run commits group in one transaction, taking out the Writes that fail, and
// tells every caller its outcome.
func (s *Store) run(group []*call) {
	for len(group) > 0 {
		failed := -1
		var failErr error
		// apply recovers what it trips over in a document's buckets
		// itself; guard catches a panic in bbolt's commit (a damaged page
		// met while rebalancing, say), which fails the whole group.
		err := guard(s.path, "", func() error {
			return s.db.Update(func(tx *bolt.Tx) error {
				for i, c := range group {
					if err := apply(tx, c.doc, c.w); err != nil {
						failed, failErr = i, inFile(s.path, err)
						return err
					}
				}
				return nil
			})
		})
		if failed >= 0 {
			s.log.Warn("boltstore: write refused", "doc", group[failed].doc, "err", failErr)
			group[failed].done <- outcome{err: failErr}
			group = slices.Delete(group, failed, failed+1)
			continue
		}
		var ce *persist.CorruptError
		switch {
		case errors.As(err, &ce):
			s.log.Error("boltstore: commit failed: the file is damaged", "writes", len(group), "err", err)
		case err != nil:
			s.log.Error("boltstore: commit failed", "writes", len(group), "err", err)
			err = fmt.Errorf("boltstore: commit: %w", err)
		default:
			s.commits.Add(uint64(len(group)))
			s.transactions.Add(1)
		}
		for _, c := range group {
			c.done <- outcome{err: err}
		}
		return
	}
}

// limits are bbolt's, for persist.CheckWrite.
var limits = persist.Limits{
	Name:     "boltstore",
	MaxKey:   bolt.MaxKeySize,
	MaxValue: bolt.MaxValueSize,
	ErrKey:   berrors.ErrKeyTooLarge,
	ErrValue: berrors.ErrValueTooLarge,
}
