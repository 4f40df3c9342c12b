package crdt

import (
	"errors"
	"testing"

	"github.com/automerge/automerge-go"

	"github.com/accord-crdt/accord/marks"
)

// rogueChange loads a saved document with automerge directly, applies edit
// under a fresh actor with none of this package's checks, and returns the
// change it made, encoded as ChangesSince encodes it.
func rogueChange(tb fataler, saved []byte, edit func(am *automerge.Doc) error) []byte {
	tb.Helper()
	am, err := automerge.Load(saved)
	ok(tb, err)
	ok(tb, am.SetActorID(string(NewActorID())))
	heads := am.Heads()
	ok(tb, edit(am))
	_, err = am.Commit("rogue")
	ok(tb, err)
	chs, err := am.Changes(heads...)
	ok(tb, err)
	return automerge.SaveChanges(chs)
}

func del(path ...any) func(*automerge.Doc) error {
	return func(am *automerge.Doc) error { return am.Path(path...).Delete() }
}

func put(value any, path ...any) func(*automerge.Doc) error {
	return func(am *automerge.Doc) error { return am.Path(path...).Set(value) }
}

// TestApplyEditRefusesShapeChanges builds rogue changes with automerge on
// a saved document: each removes or replaces part of the layout or the
// definition, which would read back as a valid document (or a valid but
// emptied draft) and break every replica's next edit. ApplyEdit refuses
// each and changes nothing, while ApplyChanges (a member receiving the
// authority's changes) still applies what the authority itself writes.
func TestApplyEditRefusesShapeChanges(t *testing.T) {
	auth := newTestDoc(t)
	_, _, err := auth.AppendOption(qPick, "k1", Item{"o4", "Cloud"})
	ok(t, err)
	ok(t, auth.SpliceText(qWhy, 0, 0, "because"))
	saved := auth.Save()
	tests := []struct {
		name string
		edit func(*automerge.Doc) error
	}{
		{"delete marks", del("drafts", "1", qPick, "marks")},
		{"replace marks with a new map", put(automerge.NewMap(), "drafts", "1", qPick, "marks")},
		{"replace marks with a value", put("x", "drafts", "1", qPick, "marks")},
		{"delete chosen", del("drafts", "1", qMany, "chosen")},
		{"replace chosen", put(automerge.NewMap(), "drafts", "1", qMany, "chosen")},
		{"delete a question's draft", del("drafts", "1", qPick)},
		{"replace a question's draft", put(automerge.NewMap(), "drafts", "1", qPick)},
		{"delete text", del("drafts", "1", qWhy, "text")},
		{"replace text", put(automerge.NewText("other"), "drafts", "1", qWhy, "text")},
		{"delete a generation", del("drafts", "1")},
		{"add a generation", put(automerge.NewMap(), "drafts", "2")},
		{"delete drafts", del("drafts")},
		{"delete questions", del("questions")},
		{"delete a question", del("questions", qPick)},
		{"rename an option", put("Mainframe", "questions", qPick, "options", 0, "label")},
		{"flip written", put(true, "questions", qPick, "written")},
		{"delete appended", del("appended")},
		{"forge an appended entry", put("criterion", "appended", "k1", "kind")},
		{"move the generation", put(uint64(5), "generation")},
		{"rewrite the version", put(int64(0), "v")},
		{"a map inside marks", put(automerge.NewMap(), "drafts", "1", qPick, "marks", "o1/c1")},
		{"an unknown draft key", put("yes", "drafts", "1", qPick, "vote")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Load(saved, nil, Options{Now: testNow})
			ok(t, err)
			before, st := d.Heads(), stateOf(t, d)
			batch := rogueChange(t, saved, tt.edit)
			if _, err := d.ApplyEdit(batch); !errors.Is(err, ErrShape) {
				t.Fatalf("ApplyEdit = %v, want ErrShape", err)
			}
			if !d.Heads().Equal(before) || !stateOf(t, d).SameShape(st) || !draftOf(t, d).Equal(st.Drafts[1]) {
				t.Fatal("a refused edit changed the document")
			}
			// The document still takes honest edits afterwards.
			ok(t, d.SetMark(qPick, "o1", "c1", marks.Yes))
		})
	}
}

// TestApplyEditKeepsHonestEdits: marks set and cleared, choices of both
// kinds, text splices (by this package and by raw automerge), concurrent
// edits of two members, and edits landing in an older generation's draft
// all pass the shape check.
func TestApplyEditKeepsHonestEdits(t *testing.T) {
	auth := newTestDoc(t)
	a, b := replicaOf(t, auth), replicaOf(t, auth)
	h := auth.Heads()
	ok(t, a.SetMark(qPick, "o1", "c1", marks.Yes))
	ok(t, a.SetMark(qPick, "o1", "c1", marks.Cleared))
	ok(t, a.SetMark(qPick, "o2", "c2", marks.Partly))
	ok(t, a.Choose(qPick, "o2", true))
	ok(t, a.Choose(qPick, "o2", false))
	ok(t, a.Choose(qMany, "o1", true))
	ok(t, a.SetText(qWhy, "because it is cheap"))
	ok(t, b.SetMark(qPick, "o3", "c1", marks.No))
	ok(t, b.Choose(qPick, "o3", true))
	ok(t, b.SetText(qWhy, "cheap and fast"))
	for _, r := range []*Doc{a, b} {
		batch, err := r.ChangesSince(h)
		ok(t, err)
		if _, err := auth.ApplyEdit(batch); err != nil {
			t.Fatalf("honest edit refused: %v", err)
		}
	}
	raw := rogueChange(t, auth.Save(), func(am *automerge.Doc) error {
		return am.Path("drafts", "1", qWhy, "text").Text().Splice(0, 3, "Very")
	})
	if _, err := auth.ApplyEdit(raw); err != nil {
		t.Fatalf("raw text splice refused: %v", err)
	}
	rawMark := rogueChange(t, auth.Save(), del("drafts", "1", qPick, "marks", "o3/c1"))
	if _, err := auth.ApplyEdit(rawMark); err != nil {
		t.Fatalf("deleting a mark register refused: %v", err)
	}
	// An edit made against generation 1 after the authority started
	// generation 2 lands in generation 1's draft: the shape check lets it
	// through (the authority then refuses it as stale by value).
	old := replicaOf(t, auth)
	h1 := old.Heads()
	ok(t, old.SetMark(qPick, "o1", "c2", marks.Yes))
	ok(t, auth.StartGeneration(2))
	batch, err := old.ChangesSince(h1)
	ok(t, err)
	if _, err := auth.ApplyEdit(batch); err != nil {
		t.Fatalf("an edit of an older generation refused by shape: %v", err)
	}
	st := stateOf(t, auth)
	if st.Drafts[1].Questions[qPick].Marks["o1/c2"] != marks.Yes || len(st.Drafts[2].Questions[qPick].Marks) != 0 {
		t.Fatalf("drafts after an old edit: %+v", st.Drafts)
	}
	// Members still receive the authority's own layout changes.
	m := replicaOf(t, auth)
	hm := m.Heads()
	_, _, err = auth.AppendCriterion(qPick, "k2", Item{"c3", "Safe"})
	ok(t, err)
	ok(t, auth.StartGeneration(3))
	batch, err = auth.ChangesSince(hm)
	ok(t, err)
	if _, err := m.ApplyChanges(batch); err != nil {
		t.Fatalf("a member refused the authority's changes: %v", err)
	}
	fresh, err := auth.ForkAt(hm, "")
	ok(t, err)
	if _, err := fresh.ApplyEdit(batch); !errors.Is(err, ErrShape) {
		t.Fatalf("ApplyEdit of the authority's layout changes = %v, want ErrShape", err)
	}
}

// TestEditSessionRefusesShapeChanges: the sync route checks the same
// rules as an edit.
func TestEditSessionRefusesShapeChanges(t *testing.T) {
	auth := newTestDoc(t)
	member := replicaOf(t, auth)
	rogue := rogueChange(t, member.Save(), del("drafts", "1", qPick, "marks"))
	if _, err := member.ApplyChanges(rogue); err != nil {
		t.Fatal(err)
	}
	before := auth.Heads()
	as, ms := auth.NewEditSession(), member.NewSession()
	var refused error
	for range 20 {
		if msg, sent := ms.Generate(); sent {
			if err := as.Receive(msg); err != nil {
				refused = err
				break
			}
		}
		if msg, sent := as.Generate(); sent {
			ok(t, ms.Receive(msg))
		}
	}
	if !errors.Is(refused, ErrShape) {
		t.Fatalf("edit session received the rogue change: %v", refused)
	}
	if !auth.Heads().Equal(before) {
		t.Fatal("the rogue change reached the authority")
	}
	if err := auth.SetMark(qPick, "o1", "c1", marks.Yes); err != nil {
		t.Fatal(err)
	}
}
