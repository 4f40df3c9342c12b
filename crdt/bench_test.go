package crdt

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/accord-crdt/accord/marks"
)

// Each benchmark has a crdt sub-benchmark and a raw one doing the same
// work with automerge-go directly, without checks, so that the wrapper's
// overhead shows as the ratio of the two. docs/BENCHMARKS.md records them.

// benchMatrix is the 20 options × 5 criteria question of the save/load
// benchmark.
func benchMatrix() QuestionShape {
	q := QuestionShape{ID: "matrix"}
	for i := range 20 {
		q.Options = append(q.Options, Item{fmt.Sprintf("o%d", i), fmt.Sprintf("Option %d", i)})
	}
	for i := range 5 {
		q.Criteria = append(q.Criteria, Item{fmt.Sprintf("c%d", i), fmt.Sprintf("Criterion %d", i)})
	}
	return q
}

func newBenchDoc(b *testing.B) *Doc {
	b.Helper()
	d, err := New(Options{Actor: actorA, Now: testNow})
	ok(b, err)
	ok(b, d.AddQuestion(benchMatrix()))
	ok(b, d.AddQuestion(testShapes()[2]))
	ok(b, d.StartGeneration(1))
	return d
}

// rawSetMark is what SetMark writes, without reading or checking anything.
func rawSetMark(b *testing.B, am *automerge.Doc, key string, m marks.Mark) {
	if err := am.Path("drafts", "1", "matrix", "marks").Map().Set(key, string(m)); err != nil {
		b.Fatal(err)
	}
	t := testNow()
	if _, err := am.Commit("mark", automerge.CommitOptions{Time: &t}); err != nil {
		b.Fatal(err)
	}
}

// rawSplice inserts a character at the start of the written answer.
func rawSplice(b *testing.B, am *automerge.Doc) {
	if err := am.Path("drafts", "1", qWhy, "text").Text().Splice(0, 0, "x"); err != nil {
		b.Fatal(err)
	}
	t := testNow()
	if _, err := am.Commit("text", automerge.CommitOptions{Time: &t}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSetMark sets one cell and commits.
func BenchmarkSetMark(b *testing.B) {
	b.Run("crdt", func(b *testing.B) {
		d := newBenchDoc(b)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := d.SetMark("matrix", fmt.Sprintf("o%d", i%20), fmt.Sprintf("c%d", i%5), marks.All[(i/20)%3]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		am := newBenchDoc(b).am
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			rawSetMark(b, am, marks.Key(fmt.Sprintf("o%d", i%20), fmt.Sprintf("c%d", i%5)), marks.All[(i/20)%3])
		}
	})
}

// benchReplicas returns two replicas of a decision that each made n edits
// since they last shared changes.
func benchReplicas(b *testing.B, n int) (*Doc, *Doc) {
	b.StopTimer()
	defer b.StartTimer()
	a := newBenchDoc(b)
	c, err := Load(a.Save(), nil, Options{Actor: actorB, Now: testNow})
	ok(b, err)
	for i := range n {
		key := fmt.Sprintf("o%d", i%20)
		ok(b, a.SetMark("matrix", key, fmt.Sprintf("c%d", i%5), marks.All[i%3]))
		ok(b, c.SetMark("matrix", key, fmt.Sprintf("c%d", (i+1)%5), marks.All[(i+1)%3]))
	}
	return a, c
}

// BenchmarkMerge merges two replicas that made 100 concurrent edits each.
func BenchmarkMerge(b *testing.B) {
	b.Run("crdt", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			x, y := benchReplicas(b, 100)
			if err := x.Merge(y); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			x, y := benchReplicas(b, 100)
			if _, err := x.am.Merge(y.am); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchHistory is a decision with a 20×5 matrix and 1,000 edits of
// history: marks over every cell, choices and text.
func benchHistory(b *testing.B) *Doc {
	b.Helper()
	d := newBenchDoc(b)
	for i := range 1000 {
		o, c := fmt.Sprintf("o%d", i%20), fmt.Sprintf("c%d", (i/20)%5)
		switch i % 10 {
		case 7:
			ok(b, d.Choose("matrix", o, true))
		case 9:
			ok(b, d.SpliceText(qWhy, 0, 0, "because "))
		default:
			ok(b, d.SetMark("matrix", o, c, marks.All[i%3]))
		}
	}
	return d
}

// BenchmarkSaveLoad saves the decision and loads it back.
func BenchmarkSaveLoad(b *testing.B) {
	d := benchHistory(b)
	b.Run("crdt", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Load(d.Save(), nil, Options{Actor: actorB}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := automerge.Load(d.am.Save()); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Snapshot checks that its save loads back before returning it; this
	// shows what that costs beside a plain save and load.
	b.Run("crdt-snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			snap, err := d.Snapshot()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Load(snap, nil, Options{Actor: actorB}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// syncRefresh bounds the history the sync benchmarks build up: every so
// many iterations they start again from fresh replicas, so that the cost
// per round trip does not depend on how many iterations ran.
const syncRefresh = 200

// BenchmarkSyncRoundTrip: one side types a character (not timed); then
// the two exchange messages until both are in sync and quiet.
func BenchmarkSyncRoundTrip(b *testing.B) {
	b.Run("crdt", func(b *testing.B) {
		var x, y *Doc
		var p *syncPair
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			if i%syncRefresh == 0 {
				x, y = benchReplicas(b, 10)
				b.StopTimer()
				p = newSyncPair(x, y)
				p.settle(b, 20)
			}
			ok(b, x.SpliceText(qWhy, 0, 0, "x"))
			b.StartTimer()
			for {
				ma, okA := p.sa.Generate()
				if okA {
					ok(b, p.sb.Receive(ma))
				}
				mb, okB := p.sb.Generate()
				if okB {
					ok(b, p.sa.Receive(mb))
				}
				if !okA && !okB {
					break
				}
			}
			if !x.Heads().Equal(y.Heads()) {
				b.Fatal("not in sync")
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		var x, y *automerge.Doc
		var sx, sy *automerge.SyncState
		exchange := func() {
			for {
				ma, okA := sx.GenerateMessage()
				if okA {
					if _, err := sy.ReceiveMessage(ma.Bytes()); err != nil {
						b.Fatal(err)
					}
				}
				mb, okB := sy.GenerateMessage()
				if okB {
					if _, err := sx.ReceiveMessage(mb.Bytes()); err != nil {
						b.Fatal(err)
					}
				}
				if !okA && !okB {
					return
				}
			}
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			if i%syncRefresh == 0 {
				dx, dy := benchReplicas(b, 10)
				b.StopTimer()
				x, y = dx.am, dy.am
				sx, sy = automerge.NewSyncState(x), automerge.NewSyncState(y)
				exchange()
			}
			rawSplice(b, x)
			b.StartTimer()
			exchange()
			if !sameHeads(fromAM(x.Heads()), fromAM(y.Heads())) {
				b.Fatal("not in sync")
			}
		}
	})
}

// BenchmarkApplyChangeAtHistory is a member replica's receive path: apply
// one more accepted change (a mark) to a decision whose history already
// holds N changes, then check the announced heads (Has) and read its own
// (Heads), as sync/replica does for every question:changes frame. Its
// cost must not grow with N. The b.N changes are made beforehand, so the
// history grows by b.N during a run: run it with a fixed count
// (-benchtime=1000x) to keep /100 well below /10000.
func BenchmarkApplyChangeAtHistory(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			auth := newTestDoc(b)
			cells := [][2]string{{"o1", "c1"}, {"o1", "c2"}, {"o2", "c1"}, {"o2", "c2"}, {"o3", "c1"}, {"o3", "c2"}}
			ms := []marks.Mark{marks.Yes, marks.No, marks.Partly}
			mark := func(i int) {
				c := cells[i%len(cells)]
				ok(b, auth.SetMark(qPick, c[0], c[1], ms[(i/len(cells))%len(ms)]))
			}
			for i := range n {
				mark(i)
			}
			member, err := Load(auth.Save(), nil, Options{Now: testNow})
			ok(b, err)
			const warm = 3 // a replica that has received a few frames
			batches := make([][]byte, b.N+warm)
			heads := make([]Heads, b.N+warm)
			for i := range batches {
				h := auth.Heads()
				mark(n + i)
				batches[i], err = auth.ChangesSince(h)
				ok(b, err)
				heads[i] = auth.Heads()
			}
			for i := range warm {
				_, err := member.ApplyChanges(batches[i])
				ok(b, err)
				member.Has(heads[i])
			}
			cpu := startThreadCPU()
			b.ResetTimer()
			for i := warm; i < b.N+warm; i++ {
				if _, err := member.ApplyChanges(batches[i]); err != nil {
					b.Fatal(err)
				}
				if !member.Has(heads[i]) || !member.Heads().Equal(heads[i]) {
					b.Fatal("member did not reach the announced heads")
				}
			}
			cpu.report(b)
		})
	}
}

// BenchmarkRawLoadIncrementalAtHistory is the automerge call alone of
// BenchmarkApplyChangeAtHistory (no checks, no Has, no Heads), to tell
// the wrapper's per-change cost from automerge's own.
func BenchmarkRawLoadIncrementalAtHistory(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			auth := newTestDoc(b)
			cells := [][2]string{{"o1", "c1"}, {"o1", "c2"}, {"o2", "c1"}, {"o2", "c2"}, {"o3", "c1"}, {"o3", "c2"}}
			ms := []marks.Mark{marks.Yes, marks.No, marks.Partly}
			mark := func(i int) {
				c := cells[i%len(cells)]
				ok(b, auth.SetMark(qPick, c[0], c[1], ms[(i/len(cells))%len(ms)]))
			}
			for i := range n {
				mark(i)
			}
			am, err := automerge.Load(auth.Save())
			ok(b, err)
			batches := make([][]byte, b.N)
			for i := range batches {
				h := auth.Heads()
				mark(n + i)
				batches[i], err = auth.ChangesSince(h)
				ok(b, err)
			}
			cpu := startThreadCPU()
			b.ResetTimer()
			for i := range b.N {
				if err := am.LoadIncremental(batches[i]); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report(b)
		})
	}
}

// threadCPU measures the CPU time of the benchmark's own OS thread, which
// (unlike ns/op) does not count the time the thread waits for a core on
// a busy machine. The goroutine is locked to its thread until report.
type threadCPU struct{ start time.Duration }

func startThreadCPU() threadCPU {
	runtime.LockOSThread()
	return threadCPU{start: threadTime()}
}

func (c threadCPU) report(b *testing.B) {
	b.ReportMetric(float64(threadTime()-c.start)/float64(b.N), "cpu-ns/op")
	runtime.UnlockOSThread()
}

func threadTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
