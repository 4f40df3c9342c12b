package postgres_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/pgtest"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/persist/postgres"
)

// benchWrite is the same typical small Write as boltstore's and
// jetstream's benchmarks: a ~300-byte record and a ~100-byte draft chunk.
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

// reportLatency reports commits per second and the p50 and p99 of the
// commit latencies.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(p(0.50), "p50-µs")
	b.ReportMetric(p(0.99), "p99-µs")
	b.ReportMetric(float64(len(lat))/b.Elapsed().Seconds(), "commits/s")
}

// commitN has writers goroutines, each on its own document as the sync
// server's per-document goroutines are, commit b.N Writes in all.
func commitN(b *testing.B, s persist.Store, writers int) {
	ctx := context.Background()
	for g := range writers { // as the authority does on opening a document
		if _, err := s.LoadDocument(ctx, fmt.Sprintf("doc-%02d", g)); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	var mu sync.Mutex
	lat := make([]time.Duration, 0, b.N)
	var wg sync.WaitGroup
	b.ResetTimer()
	for g := range writers {
		wg.Go(func() {
			doc := fmt.Sprintf("doc-%02d", g)
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				start := time.Now()
				if err := s.Commit(ctx, doc, benchWrite(int(i))); err != nil {
					b.Error(err)
					return
				}
				d := time.Since(start)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	reportLatency(b, lat)
}

// BenchmarkCommit compares the cost of one acknowledged Write, with 1 and
// 16 concurrent writers: bbolt with fsync, and PostgreSQL on the same
// machine with fsync on (synchronous_commit on, the default), through the
// default pool of DefaultMaxConns connections and through 4.
func BenchmarkCommit(b *testing.B) {
	srv := pgtest.New(b, pgtest.Options{Durable: true})
	stores := []struct {
		name string
		open func(b *testing.B) persist.Store
	}{
		{"bbolt-fsync", func(b *testing.B) persist.Store {
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"postgres", func(b *testing.B) persist.Store {
			return benchPostgres(b, srv, 0)
		}},
		{"postgres-conns4", func(b *testing.B) persist.Store {
			return benchPostgres(b, srv, 4)
		}},
	}
	for _, st := range stores {
		for _, writers := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/writers=%d", st.name, writers), func(b *testing.B) {
				s := st.open(b)
				defer s.Close()
				commitN(b, s, writers)
			})
		}
	}
}

// benchPostgres opens a store on a new database of srv.
func benchPostgres(b *testing.B, srv *pgtest.Server, conns int32) persist.Store {
	b.Helper()
	s, err := postgres.Open(context.Background(), srv.Database(b), &postgres.Options{MaxConns: conns})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkLoadDocument loads a document of 64 decisions, each with a
// record and 4 draft chunks: what opening a document costs.
func BenchmarkLoadDocument(b *testing.B) {
	s := benchPostgres(b, pgtest.New(b, pgtest.Options{Durable: true}), 0)
	defer s.Close()
	ctx := context.Background()
	for i := range 256 {
		if err := s.Commit(ctx, "doc", benchWrite(i)); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		d, err := s.LoadDocument(ctx, "doc")
		if err != nil || len(d.Records) != 64 {
			b.Fatalf("LoadDocument: %d records, %v", len(d.Records), err)
		}
	}
}
