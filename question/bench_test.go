package question_test

// Benchmarks of the authority on a real bbolt file with durable (default)
// options. Figures are in docs/BENCHMARKS.md; run them with
//
//	go test -run '^$' -bench . -benchtime 2s ./question
//
// Preparing documents is not timed: it uses a NoSync store on the same file,
// which is then closed and opened again with default options.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
)

var benchWho = question.Member{Login: "ana", Write: true}

func benchChoiceDef() question.Definition {
	return question.Definition{Questions: []question.Question{{
		Text:     "Which reset flow?",
		Options:  []question.Option{{ID: "email", Label: "Email link"}, {ID: "sms", Label: "SMS code"}},
		Criteria: []question.Criterion{{ID: "cheap", Label: "Cheap"}, {ID: "easy", Label: "Easy reset"}},
	}}}
}

func benchWrittenDef() question.Definition {
	return question.Definition{Questions: []question.Question{{
		Text: "How should onboarding work?", Response: question.Text, Options: []question.Option{},
	}}}
}

// benchOpen opens an authority for doc on st.
func benchOpen(b *testing.B, st *boltstore.Store, doc string) *question.Authority {
	b.Helper()
	a, err := question.NewAuthority(context.Background(), question.Options{Store: st, Doc: doc})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// benchEdit sends one replica change to the authority: it loads a replica
// from the accepted document, applies change and sends what it made.
func benchEdit(b *testing.B, a *question.Authority, id string, change func(r *crdt.Doc) error) {
	b.Helper()
	saved, err := a.Save(id)
	if err != nil {
		b.Fatal(err)
	}
	r, err := crdt.Load(saved, nil, crdt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	h := r.Heads()
	if err := change(r); err != nil {
		b.Fatal(err)
	}
	ch, err := r.ChangesSince(h)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := a.Edit(context.Background(), benchWho, id, ch); err != nil {
		b.Fatal(err)
	}
}

// benchPrepare fills doc on a NoSync store with n choice decisions, each
// with an option chosen so it can be submitted; every settle-th is settled
// (0: none). It returns their ids.
func benchPrepare(b *testing.B, st *boltstore.Store, doc string, n, settle int) []string {
	b.Helper()
	ctx := context.Background()
	a := benchOpen(b, st, doc)
	var ids []string
	for len(ids) < n {
		var reqs []question.CreateRequest
		for i := 0; i < question.MaxBatch && len(ids)+len(reqs) < n; i++ {
			k := len(ids) + len(reqs)
			def := benchChoiceDef()
			if settle > 0 && k%4 == 3 {
				def = benchWrittenDef()
			}
			reqs = append(reqs, question.CreateRequest{Key: fmt.Sprintf("k%d", k), Origin: question.FromPlanner, Definition: def})
		}
		out, err := a.Create(ctx, benchWho, reqs)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range out {
			ids = append(ids, c.Record.ID)
		}
	}
	for i, id := range ids {
		rec, _ := a.Record(id)
		q := rec.Definition.Questions[0]
		benchEdit(b, a, id, func(r *crdt.Doc) error {
			if q.Written() {
				return r.SetText(q.ID, "Invite-only at first; open sign-up in May.")
			}
			if err := r.SetMark(q.ID, "email", "cheap", marks.Yes); err != nil {
				return err
			}
			return r.Choose(q.ID, "email", true)
		})
		if settle > 0 && i%settle == 0 {
			_, heads, _ := a.Draft(id)
			out, err := a.Submit(ctx, benchWho, []question.SubmitRequest{{ID: id, Heads: heads}})
			if err != nil || out[0].Err != nil {
				b.Fatal(err, out)
			}
		}
	}
	return ids
}

// benchReopenDurable closes a NoSync store and opens its file with the
// default, durable options.
func benchReopenDurable(b *testing.B, st *boltstore.Store, opts *boltstore.Options) *boltstore.Store {
	b.Helper()
	path := st.Path()
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	d, err := boltstore.Open(path, opts)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func benchNoSync(b *testing.B) *boltstore.Store {
	b.Helper()
	st, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// benchCPU returns the CPU time (user and system) this process has used,
// all goroutines and the garbage collector included. On a machine shared
// with other work it is steadier than wall time.
func benchCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchPercentiles reports p50 and p99 of lat in microseconds.
func benchPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// BenchmarkSubmitDurable measures durable submits: with one submitter, and
// with 16 documents, each with its own Authority driven by its own owner
// goroutine, sharing one store so that their commits share fsyncs.
func BenchmarkSubmitDurable(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("submitters=%d", n), func(b *testing.B) {
			benchSubmit(b, n, nil, false)
		})
	}
	// The member displays the draft from before a criterion was appended:
	// the draft is the same, but the save must fork the document at the
	// displayed revision to prove it.
	b.Run("submitters=16/displayed-before-append", func(b *testing.B) {
		benchSubmit(b, 16, nil, true)
	})

}

// benchSubmit submits b.N prepared decisions from submitters goroutines,
// each owning one document. With older, each save claims the revision from
// before a criterion was appended.
func benchSubmit(b *testing.B, submitters int, opts *boltstore.Options, older bool) {
	st := benchNoSync(b)
	per := (b.N + submitters - 1) / submitters
	ids := make([][]string, submitters)
	heads := make([][]crdt.Heads, submitters)
	for s := range submitters {
		doc := fmt.Sprintf("plan-%d", s)
		ids[s] = benchPrepare(b, st, doc, per, 0)
		if !older {
			continue
		}
		a := benchOpen(b, st, doc)
		for _, id := range ids[s] {
			_, h, _ := a.Draft(id)
			heads[s] = append(heads[s], h)
			if _, err := a.AppendCriterion(context.Background(), benchWho,
				question.AppendRequest{ID: id, Question: "q1", Key: "late", Label: "Works offline"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	st = benchReopenDurable(b, st, opts)
	defer st.Close()
	auths := make([]*question.Authority, submitters)
	for s := range submitters {
		auths[s] = benchOpen(b, st, fmt.Sprintf("plan-%d", s))
		if older {
			continue
		}
		for _, id := range ids[s] {
			_, h, _ := auths[s].Draft(id)
			heads[s] = append(heads[s], h)
		}
	}
	before := st.Stats()
	lat := make([][]time.Duration, submitters)
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu0 := benchCPU()
	start := time.Now()
	for s := range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			a := auths[s]
			for i, id := range ids[s] {
				t0 := time.Now()
				out, err := a.Submit(ctx, benchWho, []question.SubmitRequest{{ID: id, Heads: heads[s][i]}})
				lat[s] = append(lat[s], time.Since(t0))
				if err != nil || out[0].Err != nil {
					b.Error(err, out[0].Err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := benchCPU() - cpu0
	b.StopTimer()
	all := slices.Concat(lat...)
	benchPercentiles(b, all)
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "submits/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(all)), "cpu-µs/submit")
	after := st.Stats()
	if tx := after.Transactions - before.Transactions; tx > 0 {
		b.ReportMetric(float64(after.Commits-before.Commits)/float64(tx), "writes/txn")
		b.ReportMetric(float64(elapsed.Microseconds())/float64(tx), "µs/txn")
	}
}

// BenchmarkSubmitNoSync is BenchmarkSubmitDurable with fsync off: the
// authority's and bbolt's CPU cost alone, to set against the disk's.
func BenchmarkSubmitNoSync(b *testing.B) {
	b.Run("submitters=16", func(b *testing.B) { benchSubmit(b, 16, &boltstore.Options{NoSync: true}, false) })
}

// BenchmarkCommandsDurable measures one document's command rate: three
// mark edits for each option append, every one committed durably. Each
// decision takes six appended options (eight in all) before the next one
// takes the appends: the cost of reading a draft document grows with its
// options and criteria.
func BenchmarkCommandsDurable(b *testing.B) {
	ctx := context.Background()
	st := benchNoSync(b)
	const appendsPer = 6
	decisions := b.N/4/appendsPer + 1
	ids := benchPrepare(b, st, "plan-1", decisions, 0)
	st = benchReopenDurable(b, st, nil)
	defer st.Close()
	a := benchOpen(b, st, "plan-1")
	replicas := make([]*crdt.Doc, len(ids))
	for i, id := range ids {
		saved, _ := a.Save(id)
		r, err := crdt.Load(saved, nil, crdt.Options{})
		if err != nil {
			b.Fatal(err)
		}
		replicas[i] = r
	}
	rng := rand.New(rand.NewPCG(1, 2))
	appended := make([]int, len(ids))
	next := 0 // the decision taking appends
	lat := make([]time.Duration, 0, b.N)
	var busy time.Duration
	b.ResetTimer()
	cpu0 := benchCPU()
	for i := range b.N {
		if i%4 == 3 {
			for appended[next] >= appendsPer {
				next++
			}
			id := ids[next]
			appended[next]++
			t0 := time.Now()
			_, err := a.AppendOption(ctx, benchWho, question.AppendRequest{ID: id, Question: "q1",
				Key: fmt.Sprintf("o%d", i), Label: fmt.Sprintf("Option %d", i)})
			d := time.Since(t0)
			lat, busy = append(lat, d), busy+d
			if err != nil {
				b.Fatal(err)
			}
			// The member's replica learns the new option, as a broadcast
			// would tell it.
			ch, _ := a.ChangesSince(id, replicas[next].Heads())
			if _, err := replicas[next].ApplyChanges(ch); err != nil {
				b.Fatal(err)
			}
			continue
		}
		k := rng.IntN(len(ids))
		r := replicas[k]
		h := r.Heads()
		opt := []string{"email", "sms"}[rng.IntN(2)]
		crit := []string{"cheap", "easy"}[rng.IntN(2)]
		if err := r.SetMark("q1", opt, crit, marks.All[rng.IntN(3)]); err != nil {
			b.Fatal(err)
		}
		ch, _ := r.ChangesSince(h)
		t0 := time.Now()
		_, err := a.Edit(ctx, benchWho, ids[k], ch)
		d := time.Since(t0)
		lat, busy = append(lat, d), busy+d
		if err != nil {
			b.Fatal(err)
		}
	}
	cpu := benchCPU() - cpu0
	b.StopTimer()
	benchPercentiles(b, lat)
	b.ReportMetric(float64(b.N)/busy.Seconds(), "cmds/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/cmd")
}

// BenchmarkColdLoad measures NewAuthority on a document of 1,000
// decisions (choice and written, a quarter settled, all edited).
func BenchmarkColdLoad(b *testing.B) {
	st := benchNoSync(b)
	benchPrepare(b, st, "plan-1", 1000, 4)
	st = benchReopenDurable(b, st, nil)
	defer st.Close()
	b.ResetTimer()
	for range b.N {
		a := benchOpen(b, st, "plan-1")
		if n := len(a.Records()); n != 1000 {
			b.Fatalf("loaded %d decisions", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/load")
}

// BenchmarkFsync measures this machine's fsync: write 4 KiB, then Sync,
// in the directory the other benchmarks use.
func BenchmarkFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "fsync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		buf[0] = byte(i)
		t0 := time.Now()
		if _, err := f.WriteAt(buf, 0); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	benchPercentiles(b, lat)
}
