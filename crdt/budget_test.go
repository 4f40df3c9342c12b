package crdt

import (
	"errors"
	"strings"
	"testing"

	"github.com/accord-crdt/accord/marks"
)

// bigText is a written answer of n characters, varied by seed so that
// each replacement rewrites every character.
func bigText(n int, seed byte) string {
	return strings.Repeat(string('a'+seed%26), n)
}

// TestBudgetCountsWhatLoadCounts: the running budget of a document loaded
// from a snapshot and kept up to date by applied batches and local changes
// equals what Load counts of that snapshot and those batches as chunks,
// changes it already held and received again included.
func TestBudgetCountsWhatLoadCounts(t *testing.T) {
	auth := newTestDoc(t)
	snap, err := auth.Snapshot()
	ok(t, err)
	d, err := Load(snap, nil, Options{Now: testNow})
	ok(t, err)
	member := replicaOf(t, d)
	var chunks [][]byte
	for i := range 5 {
		h := member.Heads()
		ok(t, member.SetText(qWhy, bigText(1000*(i+1), byte(i))))
		ok(t, member.SetMark(qPick, "o1", "c1", marks.Yes))
		batch, err := member.ChangesSince(h)
		ok(t, err)
		// The edit also carries every earlier batch again, as a replica
		// unsure of what the server holds would: those count once.
		var resent []byte
		for _, c := range chunks {
			resent = append(resent, c...)
		}
		_, err = d.ApplyEdit(append(resent, batch...))
		ok(t, err)
		chunks = append(chunks, batch)
	}
	h := d.Heads()
	_, _, err = d.AppendOption(qPick, "k", Item{"o9", "Nine"})
	ok(t, err)
	local, err := d.ChangesSince(h)
	ok(t, err)
	chunks = append(chunks, local)
	back, err := Load(snap, chunks, Options{Now: testNow})
	ok(t, err)
	got, want := d.Budget(), back.Budget()
	if got.Ops != want.Ops || got.Bytes != want.Bytes || got.Changes != want.Changes || got.Actors != want.Actors {
		t.Fatalf("running budget %+v, Load counts %+v", got, want)
	}
	if got.Ops < 5*1000 || got.Changes < 10 || got.Actors != 3 {
		t.Fatalf("budget %+v is not counting", got)
	}
	// A rollback restores the budget of the revision it returns to.
	before := d.Budget()
	h = d.Heads()
	ok(t, d.SetText(qWhy, bigText(20_000, 9)))
	if d.Budget().Ops < before.Ops+20_000 {
		t.Fatalf("a local splice of 20,000 characters counted %d operations", d.Budget().Ops-before.Ops)
	}
	ok(t, d.Rollback(h))
	if d.Budget() != before {
		t.Fatalf("budget after rollback %+v, want %+v", d.Budget(), before)
	}
}

// TestRebaseKeepsValuesAndShedsHistory: a written answer replaced a dozen
// times with 99,000 characters passes the operations Load takes; Rebase
// returns a document holding the same state (every generation, marks with
// cleared registers, choices of both kinds, the appended map) in a history
// of a fraction of the size, which loads again, reports Rebased, takes
// further edits, and refuses changes made against the old history.
func TestRebaseKeepsValuesAndShedsHistory(t *testing.T) {
	auth := newTestDoc(t)
	_, _, err := auth.AppendOption(qPick, "k1", Item{"o4", "Cloud"})
	ok(t, err)
	ok(t, auth.SetMark(qPick, "o1", "c1", marks.Yes))
	ok(t, auth.SetMark(qPick, "o2", "c2", marks.Partly))
	ok(t, auth.SetMark(qPick, "o2", "c2", marks.Cleared))
	ok(t, auth.Choose(qPick, "o4", true))
	ok(t, auth.Choose(qMany, "o1", true))
	ok(t, auth.Choose(qMany, "o2", true))
	ok(t, auth.Choose(qMany, "o2", false))
	ok(t, auth.SetText(qWhy, "the first generation's answer"))
	ok(t, auth.StartGeneration(2))
	old := replicaOf(t, auth)
	for i := range 12 {
		ok(t, auth.SetText(qWhy, bigText(99_000, byte(i))))
	}
	b := auth.Budget()
	if b.Err() == nil || !b.NeedsRebase() {
		t.Fatalf("budget after 12 replacements %+v: want past MaxDocumentOps", b)
	}
	if _, err := Load(auth.Save(), nil, Options{}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Load of the long history = %v, want ErrTooLarge (the reason to rebase)", err)
	}
	want := stateOf(t, auth)
	nd, err := auth.Rebase()
	ok(t, err)
	if !stateOf(t, nd).Equal(want) {
		t.Fatal("rebased document reads differently")
	}
	nb := nd.Budget()
	if nb.Ops > 100_000 || nb.Ops < 99_000 || nb.Changes != 1 || nb.BaseOps != nb.Ops || nb.NeedsRebase() {
		t.Fatalf("rebased budget %+v", nb)
	}
	if !nd.Rebased() || auth.Rebased() {
		t.Fatal("Rebased reports the wrong document")
	}
	if nd.Actor() != auth.Actor() {
		t.Fatal("the rebased document writes as another actor")
	}
	back, err := Load(nd.Save(), nil, Options{})
	ok(t, err)
	if !back.Rebased() || !stateOf(t, back).Equal(want) {
		t.Fatal("a loaded rebased document lost its state or its mark")
	}
	st := stateOf(t, back)
	if st.Drafts[1].Questions[qPick].Marks["o2/c2"] != marks.Cleared || st.Drafts[1].Questions[qMany].Choices[0] != "o1" {
		t.Fatalf("generation 1 after rebase: %+v", st.Drafts[1])
	}
	// It keeps working: a member loads it and edits it.
	m := replicaOf(t, nd)
	h := m.Heads()
	ok(t, m.SetText(qWhy, bigText(99_000, 20)))
	batch, err := m.ChangesSince(h)
	ok(t, err)
	_, err = nd.ApplyEdit(batch)
	ok(t, err)
	// An edit made against the old history has unknown dependencies.
	oh := old.Heads()
	ok(t, old.SetMark(qPick, "o1", "c2", marks.No))
	stale, err := old.ChangesSince(oh)
	ok(t, err)
	if _, err := nd.ApplyEdit(stale); !errors.Is(err, ErrMissingDeps) {
		t.Fatalf("an old-history edit on the rebased document = %v, want ErrMissingDeps", err)
	}
}

// TestBatchPastLoadLimitIsRefused: a single batch holding more operations
// than Load takes is refused at the door with ErrBudget.
func TestBatchPastLoadLimitIsRefused(t *testing.T) {
	auth := newTestDoc(t)
	m := replicaOf(t, auth)
	h := m.Heads()
	for i := range 6 {
		ok(t, m.SetText(qWhy, bigText(99_000, byte(i))))
	}
	batch, err := m.ChangesSince(h)
	ok(t, err)
	if len(batch) > MaxChangesBytes {
		t.Skipf("batch of %d bytes is refused by size first", len(batch))
	}
	before := auth.Budget()
	if _, err := auth.ApplyEdit(batch); !errors.Is(err, ErrBudget) || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ApplyEdit of %d operations = %v, want ErrBudget", m.Budget().Ops, err)
	}
	if auth.Budget() != before {
		t.Fatal("a refused batch changed the budget")
	}
}

// BenchmarkRebase rebases a decision holding a 99,000-character answer
// replaced eight times (about 1.5 million operations of history).
func BenchmarkRebase(b *testing.B) {
	auth := newTestDoc(b)
	for i := range 8 {
		ok(b, auth.SetText(qWhy, bigText(99_000, byte(i))))
	}
	cpu := startThreadCPU()
	b.ResetTimer()
	for b.Loop() {
		if _, err := auth.Rebase(); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b)
}

// TestChangeOpsCountsEveryOperation: the action-column count agrees with
// the full decoder on changes of every kind.
func TestChangeOpsCountsEveryOperation(t *testing.T) {
	d := newTestDoc(t)
	ok(t, d.SetText(qWhy, bigText(5000, 1)))
	ok(t, d.SetText(qWhy, "x"+bigText(4000, 2)+"y"))
	ok(t, d.SetMark(qPick, "o1", "c1", marks.Yes))
	ok(t, d.Choose(qMany, "o2", true))
	_, _, err := d.AppendCriterion(qPick, "k", Item{"c9", "Nine"})
	ok(t, err)
	ok(t, d.StartGeneration(2))
	chs, err := d.am.Changes()
	ok(t, err)
	for i, c := range chs {
		raw := c.Save()
		body, err := chunkBody(raw)
		ok(t, err)
		full, err := decodeChangeOps(skipDeps(body))
		ok(t, err)
		n, err := changeOps(raw)
		ok(t, err)
		if n != len(full) {
			t.Fatalf("change %d: counted %d operations, decoded %d", i, n, len(full))
		}
	}
}

// TestOutgrown is the rule's table.
func TestOutgrown(t *testing.T) {
	for _, c := range []struct {
		b    Budget
		live int
		want bool
	}{
		{Budget{Ops: CompactOps}, 10, false},                                       // not past the floor
		{Budget{Ops: CompactOps + 1}, 10, true},                                    // churn past the floor
		{Budget{Ops: 100_000}, 100_000/CompactRatio - 1, true},                     // just past the ratio
		{Budget{Ops: 100_000}, (100_000 + CompactRatio - 1) / CompactRatio, false}, // values are most of it
		{Budget{Ops: 10_000, BaseOps: 5_000}, 10, false},                           // the last rebase left 5,000
		{Budget{Ops: 10_001, BaseOps: 5_000}, 10, true},                            // twice that
		{Budget{Ops: RebaseOps + 1, BaseOps: RebaseOps / 2}, RebaseOps, false},     // big values
	} {
		if got := c.b.Outgrown(c.live); got != c.want {
			t.Errorf("%+v with %d live: Outgrown = %v, want %v", c.b, c.live, got, c.want)
		}
	}
}
