package crdt

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/marks"
)

// TestHeadsAfterMatchesAutomerge: the heads ApplyChanges expects after a
// batch (headsAfter) are the heads automerge reaches, over random
// histories of several replicas that edit, exchange changes in random
// order and sometimes skip some. Were the two ever to differ on an applied
// batch, ApplyChanges would refuse good changes.
func TestHeadsAfterMatchesAutomerge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := newTestDoc(t)
		reps := make([]*Doc, rapid.IntRange(2, 4).Draw(t, "replicas"))
		for i := range reps {
			reps[i] = replicaOf(t, base)
		}
		for step := range rapid.IntRange(1, 30).Draw(t, "steps") {
			r := reps[rapid.IntRange(0, len(reps)-1).Draw(t, "who")]
			if rapid.Bool().Draw(t, "edit") {
				m := marks.All[step%3]
				ok(t, r.SetMark(qPick, rapid.SampledFrom([]string{"o1", "o2", "o3"}).Draw(t, "o"), "c1", m))
				continue
			}
			from := reps[rapid.IntRange(0, len(reps)-1).Draw(t, "from")]
			if from == r {
				continue
			}
			batch, err := from.ChangesSince(nil)
			ok(t, err)
			chunks, err := splitChunks(batch)
			ok(t, err)
			parsed, err := parseChangeList(chunks)
			ok(t, err)
			var fresh []checkedChange
			for _, c := range parsed {
				if !r.Has(Heads{c.hash}) {
					fresh = append(fresh, c)
				}
			}
			want := headsAfter(r.amHeads(), fresh)
			_, err = r.ApplyChanges(batch)
			ok(t, err)
			if got := r.Heads(); !got.Equal(want) {
				t.Fatalf("after applying %d fresh changes: automerge's heads %v, expected %v", len(fresh), got, want)
			}
		}
	})
}

// TestHeadsAfterSeesAParkedChange: a change left out of what automerge
// applied, whether or not another change of the batch depends on it,
// makes the heads differ, which is how ApplyChanges notices that automerge
// parked a change.
func TestHeadsAfterSeesAParkedChange(t *testing.T) {
	a := newTestDoc(t)
	before := a.Heads()
	ok(t, a.SetMark(qPick, "o1", "c1", marks.Yes))
	first := a.Heads()
	ok(t, a.SetMark(qPick, "o2", "c1", marks.No))
	batch, err := a.ChangesSince(before)
	ok(t, err)
	chunks, err := splitChunks(batch)
	ok(t, err)
	parsed, err := parseChangeList(chunks)
	ok(t, err)
	if len(parsed) != 2 {
		t.Fatalf("want 2 changes, got %d", len(parsed))
	}
	if got := headsAfter(before, parsed); !got.Equal(a.Heads()) {
		t.Fatalf("both applied: expected %v, automerge has %v", got, a.Heads())
	}
	for _, tc := range []struct {
		name    string
		fresh   []checkedChange
		applied Heads // automerge's heads had it parked the rest
	}{
		{"the second of two parked", parsed, first},
		{"both parked", parsed, before},
		{"a lone change parked", parsed[:1], before},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := headsAfter(before, tc.fresh); got.Equal(tc.applied) {
				t.Fatalf("expected heads %v equal automerge's with a change parked", got)
			}
		})
	}
}
