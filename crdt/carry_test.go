package crdt

import (
	"testing"

	"github.com/accord-crdt/accord/marks"
)

// TestCarryKeepsWhatLoadForgets: a document loaded again from the bytes it
// was stored as, with what it carried (Carry), has the very budget and
// rebase mark of the dropped one, and keeps counting the same; without it,
// Load's count differs (BaseOps forgotten, compact bytes counted).
func TestCarryKeepsWhatLoadForgets(t *testing.T) {
	auth := newTestDoc(t)
	ok(t, auth.SetText(qWhy, "before the rebase"))
	nd, err := auth.Rebase()
	ok(t, err)
	snap, err := nd.Snapshot()
	ok(t, err)
	var chunks [][]byte
	for i := range 3 {
		h := nd.Heads()
		ok(t, nd.SetMark(qPick, "o1", "c1", []marks.Mark{marks.Yes, marks.No, marks.Cleared}[i]))
		c, err := nd.ChangesSince(h)
		ok(t, err)
		chunks = append(chunks, c)
	}
	plain, err := Load(snap, chunks, Options{Actor: nd.Actor()})
	ok(t, err)
	if plain.Budget() == nd.Budget() {
		t.Fatalf("Load alone counted the running budget %+v: nothing to carry", nd.Budget())
	}
	back, err := Load(snap, chunks, Options{Actor: nd.Actor(), Now: testNow, Carry: nd.Carry()})
	ok(t, err)
	if back.Budget() != nd.Budget() || !back.Rebased() || !back.Heads().Equal(nd.Heads()) {
		t.Fatalf("carried budget %+v, want %+v", back.Budget(), nd.Budget())
	}
	for _, d := range []*Doc{nd, back} {
		ok(t, d.SetText(qWhy, "after"))
	}
	if back.Budget() != nd.Budget() || !back.Heads().Equal(nd.Heads()) {
		t.Fatalf("after one more change: %+v, want %+v", back.Budget(), nd.Budget())
	}
	// A budget not known (a merged document) stays to be counted.
	other, err := auth.Fork("")
	ok(t, err)
	ok(t, other.Merge(auth))
	again, err := Load(other.Save(), nil, Options{Carry: other.Carry()})
	ok(t, err)
	if again.Budget() != other.Budget() {
		t.Fatalf("uncounted budget carried as %+v, want %+v", again.Budget(), other.Budget())
	}
}
