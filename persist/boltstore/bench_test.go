package boltstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/accord-crdt/accord/persist"
)

// benchWrite is a typical small Write: a ~300-byte record and a ~100-byte
// draft chunk.
func benchWrite(i int) *persist.Write {
	rec := make([]byte, 300)
	chunk := make([]byte, 100)
	copy(rec, fmt.Sprint(i))
	copy(chunk, fmt.Sprint(i))
	return &persist.Write{
		Records: []persist.Put{{Key: fmt.Sprintf("d%d", i%64), Value: rec}},
		Drafts:  []persist.DraftPut{{Decision: fmt.Sprintf("d%d", i%64), Chunk: chunk}},
	}
}

func benchStore(b *testing.B, opts *Options) *Store {
	b.Helper()
	s, err := Open(filepath.Join(b.TempDir(), "bench.db"), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func reportCommits(b *testing.B, s *Store) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	if st := s.Stats(); st.Transactions > 0 {
		b.ReportMetric(float64(st.Commits)/float64(st.Transactions), "commits/txn")
	}
}

// BenchmarkCommitSerial is one goroutine committing durably, one Write at a
// time: the latency of a single acknowledged command.
func BenchmarkCommitSerial(b *testing.B) {
	s := benchStore(b, nil)
	ctx := context.Background()
	writes := make([]*persist.Write, 256)
	for i := range writes {
		writes[i] = benchWrite(i)
	}
	for i := 0; b.Loop(); i++ {
		if err := s.Commit(ctx, "doc", writes[i%len(writes)]); err != nil {
			b.Fatal(err)
		}
	}
	reportCommits(b, s)
}

// parallel16 runs commit from exactly 16 goroutines, each its own document
// as the per-document authority goroutines would, until b.N commits are
// done. (b.RunParallel would give GOMAXPROCS × SetParallelism goroutines,
// which is 16 only when GOMAXPROCS divides 16.)
func parallel16(b *testing.B, commit func(doc string, w *persist.Write) error) {
	const goroutines = 16
	var next atomic.Int64
	var wg sync.WaitGroup
	writes := make([]*persist.Write, 256)
	for i := range writes {
		writes[i] = benchWrite(i)
	}
	b.ResetTimer()
	for g := range goroutines {
		wg.Go(func() {
			doc := fmt.Sprintf("doc-%02d", g)
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if err := commit(doc, writes[i%int64(len(writes))]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
}

// BenchmarkCommitParallel16 is 16 goroutines committing durably at once:
// throughput with group commit.
func BenchmarkCommitParallel16(b *testing.B) {
	s := benchStore(b, nil)
	ctx := context.Background()
	parallel16(b, func(doc string, w *persist.Write) error { return s.Commit(ctx, doc, w) })
	reportCommits(b, s)
}

// BenchmarkCommitParallel16BoltBatch is BenchmarkCommitParallel16 through
// bbolt's DB.Batch with its default 10ms MaxBatchDelay instead of the
// store's commit queue, for comparison.
func BenchmarkCommitParallel16BoltBatch(b *testing.B) {
	s := benchStore(b, nil)
	txid := func() int {
		var id int
		_ = s.db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
		return id
	}
	start := txid()
	parallel16(b, func(doc string, w *persist.Write) error {
		return s.db.Batch(func(tx *bolt.Tx) error { return apply(tx, doc, w) })
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	if n := txid() - start; n > 0 {
		b.ReportMetric(float64(b.N)/float64(n), "commits/txn")
	}
}

// BenchmarkFsync measures this machine's raw fsync: write 4 KiB to a small
// file in the benchmark's temp dir, then Sync. A durable bbolt commit costs
// at least two of these (data pages, then the meta page).
func BenchmarkFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for b.Loop() {
		if _, err := f.WriteAt(buf, 0); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/fsync")
}
