package crdt

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/marks"
)

// TestApplyEditStateMatchesState is a property of ApplyEditState: for
// random draft edits by members whose replicas lag behind (so that some
// edits reach an older generation's draft), interleaved with the
// authority's own changes (a new generation, an appended option) and
// whole State reads, the State it returns equals the State read afresh
// after the edit, and it is built on the last State whenever that one is
// of the revision the edit applies to.
func TestApplyEditStateMatchesState(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		auth := newTestDoc(t)
		members := []*Doc{replicaOf(t, auth), replicaOf(t, auth)}
		gen := uint64(1)
		appended := 0
		var last []byte
		for range rapid.IntRange(1, 40).Draw(t, "steps") {
			k := rapid.IntRange(0, len(members)-1).Draw(t, "member")
			m := members[k]
			switch rapid.IntRange(0, 9).Draw(t, "step") {
			case 0: // the authority starts a new generation
				gen++
				ok(t, auth.StartGeneration(gen))
				continue
			case 1: // the authority appends an option
				appended++
				_, _, err := auth.AppendOption(qPick, "k"+string(rune('a'+appended)), Item{"x" + string(rune('a'+appended)), "Extra"})
				ok(t, err)
				continue
			case 2: // the member catches up
				ch, err := auth.ChangesSince(m.Heads())
				ok(t, err)
				_, err = m.ApplyChanges(ch)
				ok(t, err)
				continue
			case 3: // someone reads the whole State
				stateOf(t, auth)
				continue
			}
			before := m.Heads()
			switch rapid.IntRange(0, 3).Draw(t, "edit") {
			case 0:
				o := rapid.SampledFrom([]string{"o1", "o2", "o3"}).Draw(t, "o")
				c := rapid.SampledFrom([]string{"c1", "c2"}).Draw(t, "c")
				ok(t, m.SetMark(qPick, o, c, rapid.SampledFrom(append(marks.All[:], marks.Cleared)).Draw(t, "mark")))
			case 1:
				ok(t, m.Choose(qMany, rapid.SampledFrom([]string{"o1", "o2"}).Draw(t, "opt"), rapid.Bool().Draw(t, "on")))
			case 2:
				ok(t, m.Choose(qPick, rapid.SampledFrom([]string{"o1", "o2", "o3"}).Draw(t, "pick"), true))
			case 3:
				dr := draftOf(t, m)
				n := len([]rune(dr.Questions[qWhy].Text))
				pos := rapid.IntRange(0, n).Draw(t, "pos")
				del := rapid.IntRange(0, n-pos).Draw(t, "del")
				ok(t, m.SpliceText(qWhy, pos, del, rapid.StringMatching(`[a-zé ]{0,4}`).Draw(t, "ins")))
			}
			ch, err := m.ChangesSince(before)
			ok(t, err)
			if last != nil && rapid.Bool().Draw(t, "resend") {
				// A batch that also holds changes the authority has.
				ch = append(append([]byte{}, last...), ch...)
			}
			last = ch
			var primed *State
			if mm := auth.memo; mm != nil && mm.am == auth.am && reflect.DeepEqual(mm.at, auth.amHeads()) {
				primed = mm.st
			}
			h := auth.Heads()
			ap, err := auth.ApplyEditState(ch)
			ok(t, err)
			got := ap.State
			since, err := auth.ChangesSince(h)
			ok(t, err)
			if a, b := changeSet(t, ap.Changes), changeSet(t, since); !reflect.DeepEqual(a, b) {
				t.Fatalf("the edit's changes %v, ChangesSince %v", a, b)
			}
			want := stateOf(t, replicaOf(t, auth)) // read elsewhere: auth's last State stays the one returned
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("ApplyEditState's State\n%+v\nState after the edit\n%+v", got, want)
			}
			if primed != nil && reflect.ValueOf(got.Questions).Pointer() != reflect.ValueOf(primed.Questions).Pointer() {
				t.Fatal("the State was read whole although the last one was of the edit's revision")
			}
		}
	})
}

// changeSet is the set of change hashes a batch holds.
func changeSet(t fataler, batch []byte) map[ChangeHash]bool {
	chunks, err := splitChunks(batch)
	ok(t, err)
	parsed, err := parseChangeList(chunks)
	ok(t, err)
	out := map[ChangeHash]bool{}
	for _, c := range parsed {
		out[c.hash] = true
	}
	return out
}
