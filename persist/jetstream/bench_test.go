package jetstream_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/natstest"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/persist/jetstream"
)

// benchWrite is the same typical small Write as boltstore's benchmark: a
// ~300-byte record and a ~100-byte draft chunk.
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

// reportLatency reports the p50 and p99 of the commit latencies.
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

func serial(b *testing.B, s persist.Store) {
	ctx := context.Background()
	writes := make([]*persist.Write, 256)
	for i := range writes {
		writes[i] = benchWrite(i)
	}
	lat := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if err := s.Commit(ctx, "doc", writes[i%len(writes)]); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	reportLatency(b, lat)
}

// parallel16 is 16 goroutines, each its own document, committing b.N Writes
// in all.
func parallel16(b *testing.B, s persist.Store) {
	ctx := context.Background()
	var next atomic.Int64
	var mu sync.Mutex
	lat := make([]time.Duration, 0, b.N)
	var wg sync.WaitGroup
	b.ResetTimer()
	for g := range 16 {
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

// BenchmarkCommit compares the cost of one acknowledged Write: bbolt with
// fsync, JetStream R1 on files and in memory on one server, and R3 on files
// on three servers of one machine.
func BenchmarkCommit(b *testing.B) {
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
		{"jetstream-R1-file", func(b *testing.B) persist.Store {
			nc := natstest.Connect(b, natstest.RunServer(b).ClientURL())
			return benchOpen(b, nc.ConnectedUrl(), jetstream.Options{Stream: "BENCH"})
		}},
		{"jetstream-R1-memory", func(b *testing.B) persist.Store {
			nc := natstest.Connect(b, natstest.RunServer(b).ClientURL())
			return benchOpen(b, nc.ConnectedUrl(), jetstream.Options{Stream: "BENCH", Memory: true})
		}},
		{"jetstream-R3-file", func(b *testing.B) persist.Store {
			c := natstest.RunCluster(b, 3)
			return benchOpen(b, c.URLs(), jetstream.Options{Stream: "BENCH", Replicas: 3})
		}},
	}
	for _, st := range stores {
		b.Run(st.name+"/serial", func(b *testing.B) {
			s := st.open(b)
			defer s.Close()
			serial(b, s)
		})
		b.Run(st.name+"/parallel16", func(b *testing.B) {
			s := st.open(b)
			defer s.Close()
			parallel16(b, s)
		})
	}
}

func benchOpen(b *testing.B, url string, o jetstream.Options) persist.Store {
	b.Helper()
	nc := natstest.Connect(b, url)
	var s *jetstream.Store
	var err error
	// A new cluster may still be placing its first stream.
	for range 50 {
		if s, err = jetstream.Open(context.Background(), nc, &o); err == nil {
			return s
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatal(err)
	return nil
}

// BenchmarkLoadDocument loads a document of 64 decisions, each with a
// record and a draft chunk: what opening a document costs.
func BenchmarkLoadDocument(b *testing.B) {
	nc := natstest.Connect(b, natstest.RunServer(b).ClientURL())
	s := benchOpen(b, nc.ConnectedUrl(), jetstream.Options{Stream: "BENCH", Memory: true})
	defer s.Close()
	ctx := context.Background()
	for i := range 64 {
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
