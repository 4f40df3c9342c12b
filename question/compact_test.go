package question_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
)

// TestChurnIsRebasedEarly: an answer rewritten a few characters at a time
// (a counter, as a load test writes one) grows the history by operations
// that hold no value. The authority rebases the decision once its history
// outgrows its values (crdt.CompactOps, crdt.CompactRatio), long before
// the load budget's thresholds, so a replica that follows the protocol
// never holds more than about twice CompactOps; every edit is accepted,
// and the draft reads the same after a restart.
func TestChurnIsRebasedEarly(t *testing.T) {
	t.Parallel()
	f := newBoltFixture(t)
	out, err := f.a.Create(context.Background(), ana, []question.CreateRequest{{Key: "w", Origin: question.FromPlanner, Definition: writtenDef()}})
	must(t, err)
	id := out[0].Record.ID
	m := f.member(id)
	most := 0
	const edits = 1000
	for i := 1; i <= edits; i++ {
		dr, err := m.doc.Draft()
		must(t, err)
		cur := []rune(dr.Questions["q1"].Text)
		const head = "seq:"
		if len(cur) == 0 {
			must(t, m.doc.SpliceText("q1", 0, 0, head+"0"))
			cur = []rune(head + "0")
		}
		must(t, m.doc.SpliceText("q1", len(head), len(cur)-len(head), fmt.Sprint(i)))
		if _, err := m.send(ana); err != nil {
			t.Fatalf("edit %d refused: %v", i, err)
		}
		most = max(most, m.doc.Budget().Ops)
	}
	if m.rebases < 2 {
		t.Fatalf("%d counter edits rebased %d times, want at least 2", edits, m.rebases)
	}
	if most > 2*crdt.CompactOps+64 {
		t.Fatalf("the replica's history reached %d operations, want at most about 2×%d", most, crdt.CompactOps)
	}
	f.reopen()
	dr, _, err := f.a.Draft(id)
	must(t, err)
	if got, want := dr.Questions["q1"].Text, fmt.Sprintf("seq:%d", edits); got != want {
		t.Fatalf("after a restart the answer reads %q, want %q", got, want)
	}
}

// TestQuietRebase: with Options.QuietRebase the authority leaves the
// rebase of a decision whose history outgrew its values to Rebase (which
// a server calls once nobody has edited for a moment): edits past the
// threshold are accepted as they are, RebaseDue names the decision, and
// Rebase replaces its history, durably. A decision edited without a pause
// is still rebased with an edit once its history is overdue, twice past;
// one that two members edit, with the edit that outgrows it.
func TestQuietRebase(t *testing.T) {
	f := newBoltFixture(t)
	f.quiet = true
	f.reopen()
	out, err := f.a.Create(context.Background(), ana, []question.CreateRequest{{Key: "w", Origin: question.FromPlanner, Definition: writtenDef()}})
	must(t, err)
	id := out[0].Record.ID
	m := f.member(id)
	i := 0
	who := ana
	count := func() {
		t.Helper()
		i++
		dr, err := m.doc.Draft()
		must(t, err)
		must(t, m.doc.SpliceText("q1", 0, len([]rune(dr.Questions["q1"].Text)), fmt.Sprint(i)))
		if _, err := m.send(who); err != nil {
			t.Fatalf("edit %d refused: %v", i, err)
		}
	}
	if rebased, err := f.a.Rebase(context.Background(), id); err != nil || rebased {
		t.Fatalf("Rebase of a fresh decision = %v, %v; want false, nil", rebased, err)
	}
	for len(f.a.RebaseDue()) == 0 {
		if i > 4*crdt.CompactOps {
			t.Fatalf("after %d counter edits no rebase is due", i)
		}
		count()
	}
	if m.rebases != 0 {
		t.Fatalf("an edit rebased the decision before it was overdue (%d rebases)", m.rebases)
	}
	// The rebase waits for Rebase: more edits, still below overdue.
	for range 20 {
		count()
	}
	if m.rebases != 0 || len(f.a.RebaseDue()) != 1 {
		t.Fatalf("after 20 more edits: %d rebases by edits, %d due; want 0 and 1", m.rebases, len(f.a.RebaseDue()))
	}
	rebased, err := f.a.Rebase(context.Background(), id)
	if err != nil || !rebased {
		t.Fatalf("Rebase = %v, %v; want true, nil", rebased, err)
	}
	if due := f.a.RebaseDue(); len(due) != 0 {
		t.Fatalf("RebaseDue after Rebase = %v", due)
	}
	if rebased, err := f.a.Rebase(context.Background(), id); err != nil || rebased {
		t.Fatalf("Rebase again = %v, %v; want false, nil", rebased, err)
	}
	m.reload()
	if ops := m.doc.Budget().Ops; ops > crdt.CompactOps/4 {
		t.Fatalf("the rebased document holds %d operations", ops)
	}
	f.reopen()
	dr, _, err := f.a.Draft(id)
	must(t, err)
	if got, want := dr.Questions["q1"].Text, fmt.Sprint(i); got != want {
		t.Fatalf("after a restart the answer reads %q, want %q", got, want)
	}
	if saved, err := f.a.Save(id); err != nil || len(saved) == 0 {
		t.Fatalf("Save after a restart: %v", err)
	}
	// Edited without a pause, the decision is rebased with an edit once
	// its history is overdue, and never holds much more.
	m = f.member(id)
	if ops := m.doc.Budget().Ops; ops > crdt.CompactOps/4 {
		t.Fatalf("after a restart the decision's document holds %d operations: the rebase was not stored", ops)
	}
	most := 0
	for start := i; m.rebases == 0; {
		if i-start > 8*crdt.CompactOps {
			t.Fatalf("%d edits without a pause never rebased the decision", i-start)
		}
		most = max(most, m.doc.Budget().Ops)
		count()
	}
	if most < 2*crdt.CompactOps-64 || most > 2*crdt.CompactOps+64 {
		t.Fatalf("the history reached %d operations before an edit rebased it, want about 2×%d", most, crdt.CompactOps)
	}
	// Two members editing: rebased with the edit that outgrows, as
	// without QuietRebase.
	m.rebases, most = 0, 0
	for start := i; m.rebases == 0; {
		if i-start > 8*crdt.CompactOps {
			t.Fatalf("%d edits of two members never rebased the decision", i-start)
		}
		most = max(most, m.doc.Budget().Ops)
		who = []question.Member{ana, ben}[i%2]
		count()
	}
	if most > crdt.CompactOps+64 {
		t.Fatalf("two members' edits took the history to %d operations before a rebase, want about %d", most, crdt.CompactOps)
	}
}

// BenchmarkMemberReceivesAtHistory is the cost, for a member's replica,
// of applying the next accepted change of a decision after 100 and after
// 10,000 edits of churn (a mark and a counter rewritten in a written
// answer, the peers' load), with the authority compacting the history as
// it does: the replica follows each rebase by loading the document, as a
// member does. Without compaction the 10,000th costs several times the
// 100th (automerge's apply grows with the operations held); with it the
// two stay close.
func BenchmarkMemberReceivesAtHistory(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			f := openBoltFixture(b, b.TempDir())
			b.Cleanup(f.close)
			out, err := f.a.Create(context.Background(), ana, []question.CreateRequest{{Key: "w", Origin: question.FromPlanner, Definition: churnDef()}})
			if err != nil {
				b.Fatal(err)
			}
			id := out[0].Record.ID
			writer := f.member(id)
			reader := f.member(id)
			// step makes one edit and returns what a member is sent: its
			// changes, or after a rebase the whole document.
			type sent struct{ changes, doc []byte }
			step := func(i int) sent {
				if err := writer.doc.SetMark("q2", []string{"a", "b"}[i%2], "c", []marks.Mark{marks.Yes, marks.No, marks.Partly}[i%3]); err != nil {
					b.Fatal(err)
				}
				dr, err := writer.doc.Draft()
				if err != nil {
					b.Fatal(err)
				}
				cur := []rune(dr.Questions["q1"].Text)
				if err := writer.doc.SpliceText("q1", 0, len(cur), fmt.Sprint(i)); err != nil {
					b.Fatal(err)
				}
				ed, err := writer.send(ana)
				if err != nil {
					b.Fatal(err)
				}
				if ed.Rebased {
					saved, err := f.a.Save(id)
					if err != nil {
						b.Fatal(err)
					}
					return sent{doc: saved}
				}
				return sent{changes: ed.Changes}
			}
			load := func(saved []byte) {
				d, err := crdt.Load(saved, nil, crdt.Options{})
				if err != nil {
					b.Fatal(err)
				}
				reader.doc = d
			}
			for i := range n {
				if m := step(i); m.doc != nil {
					load(m.doc)
				} else if _, err := reader.doc.ApplyChanges(m.changes); err != nil {
					b.Fatal(err)
				}
			}
			batches := make([]sent, 0, b.N)
			for i := range b.N {
				batches = append(batches, step(n+i))
			}
			b.ResetTimer()
			for _, m := range batches {
				if m.doc != nil {
					b.StopTimer() // a rebase: the member loads the document
					load(m.doc)
					b.StartTimer()
					continue
				}
				if _, err := reader.doc.ApplyChanges(m.changes); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(reader.doc.Budget().Ops), "ops-held")
		})
	}
}

func churnDef() question.Definition {
	return question.Definition{Questions: []question.Question{
		{ID: "q1", Text: "Counter", Response: question.Text, Options: []question.Option{}},
		{ID: "q2", Text: "Which?", Options: []question.Option{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}, Criteria: []question.Criterion{{ID: "c", Label: "Cheap"}}},
	}}
}

// BenchmarkEditPeersShape is the authority's cost per accepted draft edit
// (a mark and a few characters of a written answer, as the peers' load
// writes) on a decision of the peers' shape: a 10 × 5 matrix and 19
// written questions. The store is in memory: it is the CPU of deciding.
func BenchmarkEditPeersShape(b *testing.B) {
	a, err := question.NewAuthority(context.Background(), question.Options{Store: memstore.New(), Doc: "bench",
		Now: func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }})
	if err != nil {
		b.Fatal(err)
	}
	def := question.Definition{}
	var opts []question.Option
	for i := range 10 {
		opts = append(opts, question.Option{ID: fmt.Sprintf("o%d", i), Label: fmt.Sprintf("Option %d", i)})
	}
	var crits []question.Criterion
	for j := range 5 {
		crits = append(crits, question.Criterion{ID: fmt.Sprintf("c%d", j), Label: fmt.Sprintf("Criterion %d", j)})
	}
	def.Questions = append(def.Questions, question.Question{ID: "marks", Text: "Matrix", Options: opts, Criteria: crits})
	for q := range 19 {
		def.Questions = append(def.Questions, question.Question{ID: fmt.Sprintf("p%d", q), Text: "Lines", Response: question.Text, Options: []question.Option{}})
	}
	out, err := a.Create(context.Background(), ana, []question.CreateRequest{{Key: "k", Origin: question.FromPerson, Definition: def}})
	if err != nil {
		b.Fatal(err)
	}
	id := out[0].Record.ID
	saved, err := a.Save(id)
	if err != nil {
		b.Fatal(err)
	}
	m, err := crdt.Load(saved, nil, crdt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ms := []marks.Mark{marks.Yes, marks.Partly, marks.No}
	i := 0
	for b.Loop() {
		i++
		before := m.Heads()
		if err := m.SetMark("marks", fmt.Sprintf("o%d", i%10), fmt.Sprintf("c%d", i%5), ms[i%3]); err != nil {
			b.Fatal(err)
		}
		q := fmt.Sprintf("p%d", i%19)
		if err := m.SetText(q, fmt.Sprintf("%d:%d\n", i%19, i)); err != nil {
			b.Fatal(err)
		}
		ch, err := m.ChangesSince(before)
		if err != nil {
			b.Fatal(err)
		}
		ed, err := a.Edit(context.Background(), ana, id, ch)
		if err != nil {
			b.Fatal(err)
		}
		if ed.Rebased {
			if saved, err = a.Save(id); err != nil {
				b.Fatal(err)
			}
			if m, err = crdt.Load(saved, nil, crdt.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
