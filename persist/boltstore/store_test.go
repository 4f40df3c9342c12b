package boltstore_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	berrors "go.etcd.io/bbolt/errors"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/persist/storetest"
)

// openTemp opens a store on a new file in t's temp dir. When t ends, after
// the store is closed, the file is opened again and must pass Check.
func openTemp(t *testing.T, opts *boltstore.Options) *boltstore.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "accord.db")
	s, err := boltstore.Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		_ = s.Close()
		checkFile(t, path)
	})
	return s
}

func checkFile(t *testing.T, path string) {
	t.Helper()
	s, err := boltstore.Open(path, nil)
	if err != nil {
		t.Errorf("reopen %s for Check: %v", path, err)
		return
	}
	defer s.Close()
	if err := s.Check(); err != nil {
		t.Errorf("Check %s: %v", path, err)
	}
}

func reopen(t *testing.T, s persist.Store) persist.Store {
	t.Helper()
	path := s.(*boltstore.Store).Path()
	if err := s.Close(); err != nil && !errors.Is(err, persist.ErrClosed) {
		t.Fatalf("Close: %v", err)
	}
	s2, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	return s2
}

func TestStore(t *testing.T) {
	storetest.RunWithOptions(t, func(t *testing.T) persist.Store {
		return openTemp(t, nil)
	}, storetest.Options{Reopen: reopen})
}

func TestOpenMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "accord.db")
	s, err := boltstore.Open(path, nil)
	if err == nil {
		s.Close()
		t.Fatal("Open in a missing directory succeeded")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v does not wrap fs.ErrNotExist", err)
	}
	if msg := err.Error(); !strings.Contains(msg, path) || strings.Count(msg, path) != 1 {
		t.Errorf("error %q should name the path once", msg)
	}
}

func TestOpenLocked(t *testing.T) {
	s := openTemp(t, nil)
	start := time.Now()
	s2, err := boltstore.Open(s.Path(), &boltstore.Options{Timeout: 50 * time.Millisecond})
	if err == nil {
		s2.Close()
		t.Fatal("second Open of a locked file succeeded")
	}
	if !errors.Is(err, berrors.ErrTimeout) || !strings.Contains(err.Error(), "locked") {
		t.Errorf("error %v should say the file is locked and wrap ErrTimeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Open waited %v, Timeout was 50ms", d)
	}
}

func TestOpenInvalidOptions(t *testing.T) {
	dir := t.TempDir()
	for _, o := range []boltstore.Options{
		{Timeout: -1},
		{MaxBatchSize: -1},
		{MaxBatchDelay: -time.Millisecond},
	} {
		if s, err := boltstore.Open(filepath.Join(dir, "x.db"), &o); err == nil {
			s.Close()
			t.Errorf("Open(%+v) succeeded", o)
		}
	}
}

func TestCommitLimits(t *testing.T) {
	s := openTemp(t, nil)
	ctx := context.Background()
	long := strings.Repeat("k", 32769)
	err := s.Commit(ctx, "doc", &persist.Write{Records: []persist.Put{{Key: long, Value: []byte("v")}}})
	if !errors.Is(err, berrors.ErrKeyTooLarge) {
		t.Errorf("Commit with a %d-byte key = %v, want ErrKeyTooLarge", len(long), err)
	}
	err = s.Commit(ctx, long, &persist.Write{Records: []persist.Put{{Key: "k", Value: []byte("v")}}})
	if !errors.Is(err, berrors.ErrKeyTooLarge) {
		t.Errorf("Commit to a %d-byte document id = %v, want ErrKeyTooLarge", len(long), err)
	}
	if ids, err := s.Documents(ctx); err != nil || len(ids) != 0 {
		t.Errorf("Documents = %q, %v; want none", ids, err)
	}
}

// TestGroupCommit checks that concurrent commits share transactions, with
// and without a batch delay.
func TestGroupCommit(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *boltstore.Options
	}{
		{"default", nil},
		{"delay", &boltstore.Options{MaxBatchDelay: 500 * time.Microsecond, MaxBatchSize: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t, tc.opts)
			const writers, each = 16, 25
			var wg sync.WaitGroup
			for g := range writers {
				wg.Go(func() {
					for i := range each {
						w := &persist.Write{Drafts: []persist.DraftPut{{Decision: "d", Chunk: []byte{byte(g), byte(i)}}}}
						if err := s.Commit(context.Background(), "doc", w); err != nil {
							t.Errorf("Commit: %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			st := s.Stats()
			if st.Commits != writers*each {
				t.Fatalf("Stats.Commits = %d, want %d", st.Commits, writers*each)
			}
			if st.Transactions >= st.Commits {
				t.Errorf("%d commits took %d transactions; want fewer", st.Commits, st.Transactions)
			}
			if tc.opts != nil && st.Transactions*uint64(tc.opts.MaxBatchSize) < st.Commits {
				t.Errorf("%d commits in %d transactions exceed MaxBatchSize %d", st.Commits, st.Transactions, tc.opts.MaxBatchSize)
			}
			d, err := s.LoadDocument(context.Background(), "doc")
			if err != nil {
				t.Fatal(err)
			}
			if n := len(d.Drafts["d"].Chunks); n != writers*each {
				t.Errorf("%d chunks, want %d", n, writers*each)
			}
			t.Logf("%d commits in %d transactions", st.Commits, st.Transactions)
		})
	}
}
