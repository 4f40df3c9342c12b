package question_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/accord-crdt/accord/crdt"
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
	f := newBoltFixture(t)
	out, err := f.a.Create(context.Background(), ana, []question.CreateRequest{{Key: "w", Origin: question.FromPlanner, Definition: writtenDef()}})
	must(t, err)
	id := out[0].Record.ID
	m := f.member(id)
	most := 0
	const edits = 3000
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
