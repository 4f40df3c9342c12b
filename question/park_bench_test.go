//go:build linux

package question_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/cmem"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
)

// nullStore keeps nothing (its document is always empty), so what a
// benchmark measures is the authority alone.
type nullStore struct{}

func (nullStore) LoadDocument(context.Context, string) (*persist.StoredDocument, error) {
	return &persist.StoredDocument{}, nil
}
func (nullStore) Commit(context.Context, string, *persist.Write) error { return nil }
func (nullStore) Documents(context.Context) ([]string, error)          { return nil, nil }
func (nullStore) DeleteDocument(context.Context, string) error         { return nil }
func (nullStore) Close() error                                         { return nil }
func (nullStore) ReadAudit(context.Context, string, string, uint64, int) ([]persist.AuditRow, error) {
	return nil, nil
}

// matrixDef is a small decision: one choice question, 3 options × 2
// criteria (the shape BenchmarkOpenDocumentMemory uses in sync/server).
func matrixDef() question.Definition {
	q := question.Question{ID: "q1", Text: "Which storage engine?"}
	for i := range 3 {
		q.Options = append(q.Options, question.Option{ID: "o" + strconv.Itoa(i), Label: "Option " + strconv.Itoa(i)})
	}
	for i := range 2 {
		q.Criteria = append(q.Criteria, question.Criterion{ID: "c" + strconv.Itoa(i), Label: "Criterion " + strconv.Itoa(i)})
	}
	return question.Definition{Questions: []question.Question{q}}
}

// footprint is what the process holds: the Go heap in use, the C heap in
// use (automerge's Rust core, which Go's statistics do not see) and the
// resident set (which also keeps C memory freed but not handed back).
type footprint struct{ heap, c, rss int64 }

// memory measures the footprint after collections that ran every
// finalizer they queued: a dropped automerge document's memory is freed by
// finalizers, which the collection that finds it only queues.
func memory(tb testing.TB) footprint {
	sm := []metrics.Sample{{Name: "/gc/finalizers/queued:finalizers"}, {Name: "/gc/finalizers/executed:finalizers"}}
	for range 100 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		if metrics.Read(sm); sm[0].Value.Uint64() == sm[1].Value.Uint64() {
			break
		}
	}
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c, _ := cmem.Stats()
	return footprint{heap: int64(ms.HeapInuse), c: c, rss: vmRSS(tb)}
}

// report reports the growth from f0 to f1 per decision.
func report(b *testing.B, f0, f1 footprint, n int) {
	per := func(x int64) float64 { return float64(x) / float64(n) / 1024 }
	b.ReportMetric(per(f1.heap-f0.heap), "heapKB/decision")
	b.ReportMetric(per(f1.c-f0.c), "cKB/decision")
	b.ReportMetric(per(f1.heap-f0.heap+f1.c-f0.c), "KB/decision")
	b.ReportMetric(per(f1.rss-f0.rss), "rssKB/decision")
}

// vmRSS reads the process's resident set from /proc/self/status.
func vmRSS(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	tb.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// BenchmarkDecisionMemory: what the authority holds per decision of a
// document of 2,000 small decisions, each created and edited once (a mark
// and a choice), then every one read for a joiner (Save), with documents
// live without limit (before parking) and with the default cap of 64.
// Both heap-in-use and resident-set deltas are reported, per decision.
func BenchmarkDecisionMemory(b *testing.B) {
	const n = 2000
	for _, live := range []int{-1, question.DefaultLiveDecisions} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			for b.Loop() {
				f0 := memory(b)
				a, err := question.NewAuthority(context.Background(), question.Options{Store: nullStore{}, Doc: "mem", LiveDecisions: live})
				if err != nil {
					b.Fatal(err)
				}
				ids := createMatrices(b, a, n)
				for _, id := range ids {
					benchEdit(b, a, id, func(r *crdt.Doc) error {
						if err := r.SetMark("q1", "o1", "c0", marks.Yes); err != nil {
							return err
						}
						return r.Choose("q1", "o1", true)
					})
				}
				for _, id := range ids {
					if _, err := a.Save(id); err != nil {
						b.Fatal(err)
					}
				}
				report(b, f0, memory(b), n)
				runtime.KeepAlive(a)
			}
		})
	}
}

// BenchmarkLoadMemory: the same 2,000 decisions reopened from a store
// (NewAuthority), before and after parking: what the authority holds per
// decision right after the load.
func BenchmarkLoadMemory(b *testing.B) {
	const n = 2000
	st := memstore.New()
	a, err := question.NewAuthority(context.Background(), question.Options{Store: st, Doc: "mem"})
	if err != nil {
		b.Fatal(err)
	}
	for _, id := range createMatrices(b, a, n) {
		benchEdit(b, a, id, func(r *crdt.Doc) error { return r.SetMark("q1", "o1", "c0", marks.Yes) })
	}
	a = nil
	for _, live := range []int{-1, question.DefaultLiveDecisions} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			for b.Loop() {
				f0 := memory(b)
				a, err := question.NewAuthority(context.Background(), question.Options{Store: st, Doc: "mem", LiveDecisions: live})
				if err != nil {
					b.Fatal(err)
				}
				report(b, f0, memory(b), n)
				runtime.KeepAlive(a)
			}
		})
	}
}

// BenchmarkWake: the cost of waking a parked small decision (3×2 matrix,
// a few marks and a choice in incremental chunks): with a cap of one live
// document, each catch-up read alternates between two decisions, so every
// call parks one and loads the other.
func BenchmarkWake(b *testing.B) {
	a, err := question.NewAuthority(context.Background(), question.Options{Store: nullStore{}, Doc: "wake", LiveDecisions: 1})
	if err != nil {
		b.Fatal(err)
	}
	ids := createMatrices(b, a, 2)
	heads := make([]crdt.Heads, len(ids))
	for i, id := range ids {
		for j, m := range []marks.Mark{marks.Yes, marks.No, marks.Partly} {
			benchEdit(b, a, id, func(r *crdt.Doc) error { return r.SetMark("q1", "o"+strconv.Itoa(j), "c0", m) })
		}
		benchEdit(b, a, id, func(r *crdt.Doc) error { return r.Choose("q1", "o2", true) })
		_, heads[i], _ = a.Draft(id)
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if _, err := a.ChangesSince(ids[i%2], heads[i%2]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/wake")
}

func createMatrices(b *testing.B, a *question.Authority, n int) []string {
	b.Helper()
	var ids []string
	for start := 0; start < n; start += 10 {
		var reqs []question.CreateRequest
		for i := start; i < min(n, start+10); i++ {
			reqs = append(reqs, question.CreateRequest{Key: "m" + strconv.Itoa(i), Origin: question.FromPerson, Definition: matrixDef()})
		}
		out, err := a.Create(context.Background(), benchWho, reqs)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range out {
			ids = append(ids, o.Record.ID)
		}
	}
	return ids
}
