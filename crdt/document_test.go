package crdt

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/accord-crdt/accord/marks"
)

// fataler is what the helpers below need of a *testing.T, *testing.B or
// *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// testNow is the fixed clock of every test document, so that nothing in a
// test depends on the wall clock.
func testNow() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

// Question ids and items of the decision most tests use.
const (
	qPick = "pick" // single choice, 3 options × 2 criteria
	qMany = "many" // multiple choice, 2 options × 1 criterion
	qWhy  = "why"  // written
)

func testShapes() []QuestionShape {
	return []QuestionShape{
		{ID: qPick, Options: []Item{{"o1", "Postgres"}, {"o2", "SQLite"}, {"o3", "Files"}}, Criteria: []Item{{"c1", "Cheap"}, {"c2", "Fast"}}},
		{ID: qMany, Multiple: true, Options: []Item{{"o1", "Mon"}, {"o2", "Tue"}}, Criteria: []Item{{"c1", "Free"}}},
		{ID: qWhy, Written: true},
	}
}

// ok fails the test on an error.
func ok(tb fataler, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("unexpected error: %v", err)
	}
}

// newTestDoc returns an authority document holding shapes (testShapes when
// none are given) with generation 1 started.
func newTestDoc(tb fataler, shapes ...QuestionShape) *Doc {
	tb.Helper()
	if len(shapes) == 0 {
		shapes = testShapes()
	}
	d, err := New(Options{Now: testNow})
	ok(tb, err)
	for _, s := range shapes {
		ok(tb, d.AddQuestion(s))
	}
	ok(tb, d.StartGeneration(1))
	return d
}

// replicaOf loads a member replica, under a fresh actor, from d's save.
func replicaOf(tb fataler, d *Doc) *Doc {
	tb.Helper()
	r, err := Load(d.Save(), nil, Options{Now: testNow})
	ok(tb, err)
	return r
}

func stateOf(tb fataler, d *Doc) *State {
	tb.Helper()
	st, err := d.State()
	ok(tb, err)
	return st
}

func draftOf(tb fataler, d *Doc) Draft {
	tb.Helper()
	dr, err := d.Draft()
	ok(tb, err)
	return dr
}

// mergeAll merges every document into every other, so that all hold the
// same changes.
func mergeAll(tb fataler, docs ...*Doc) {
	tb.Helper()
	for _, a := range docs {
		for _, b := range docs {
			if a != b {
				ok(tb, a.Merge(b))
			}
		}
	}
}

// rawDoc builds a document with automerge directly, bypassing every check
// of this package, as an older or foreign writer would have.
func rawDoc(tb fataler, build func(root *automerge.Map) error) []byte {
	tb.Helper()
	am := automerge.New()
	ok(tb, am.SetActorID(string(NewActorID())))
	ok(tb, build(am.RootMap()))
	_, err := am.Commit("raw")
	ok(tb, err)
	return am.Save()
}

// rawQuestion writes a question map the way AddQuestion does.
func rawQuestion(parent *automerge.Map, s QuestionShape) error {
	q := automerge.NewMap()
	if err := parent.Set(s.ID, q); err != nil {
		return err
	}
	if err := q.Set("written", s.Written); err != nil {
		return err
	}
	if err := q.Set("multiple", s.Multiple); err != nil {
		return err
	}
	for key, items := range map[string][]Item{"options": s.Options, "criteria": s.Criteria} {
		l := automerge.NewList()
		if err := q.Set(key, l); err != nil {
			return err
		}
		for _, it := range items {
			m := automerge.NewMap()
			if err := l.Append(m); err != nil {
				return err
			}
			if err := m.Set("id", it.ID); err != nil {
				return err
			}
			if err := m.Set("label", it.Label); err != nil {
				return err
			}
		}
	}
	return nil
}

func TestMarksSetClearAbsent(t *testing.T) {
	key := marks.Key("o1", "c1")
	type step struct {
		q, o, c string
		m       marks.Mark
		wantErr error
	}
	tests := []struct {
		name  string
		steps []step
		// want is the cell's register afterwards; absent means no key.
		want   marks.Mark
		absent bool
	}{
		{name: "never marked is absent", absent: true},
		{name: "set", steps: []step{{qPick, "o1", "c1", marks.Yes, nil}}, want: marks.Yes},
		{name: "set twice keeps the last", steps: []step{{qPick, "o1", "c1", marks.Yes, nil}, {qPick, "o1", "c1", marks.Partly, nil}}, want: marks.Partly},
		{name: "set the same mark again", steps: []step{{qPick, "o1", "c1", marks.No, nil}, {qPick, "o1", "c1", marks.No, nil}}, want: marks.No},
		{name: "cleared is present and null", steps: []step{{qPick, "o1", "c1", marks.Yes, nil}, {qPick, "o1", "c1", marks.Cleared, nil}}, want: marks.Cleared},
		{name: "clearing an unmarked cell writes null", steps: []step{{qPick, "o1", "c1", marks.Cleared, nil}}, want: marks.Cleared},
		{name: "set after clear", steps: []step{{qPick, "o1", "c1", marks.Cleared, nil}, {qPick, "o1", "c1", marks.No, nil}}, want: marks.No},
		{name: "unknown mark", steps: []step{{qPick, "o1", "c1", "maybe", ErrInvalid}}, absent: true},
		{name: "unknown option", steps: []step{{qPick, "o9", "c1", marks.Yes, ErrInvalid}}, absent: true},
		{name: "unknown criterion", steps: []step{{qPick, "o1", "c9", marks.Yes, ErrInvalid}}, absent: true},
		{name: "unknown question", steps: []step{{"nope", "o1", "c1", marks.Yes, ErrNoQuestion}}, absent: true},
		{name: "written question", steps: []step{{qWhy, "o1", "c1", marks.Yes, ErrWrongKind}}, absent: true},
		{name: "refusal keeps the mark", steps: []step{{qPick, "o1", "c1", marks.Yes, nil}, {qPick, "o1", "c1", "YES", ErrInvalid}}, want: marks.Yes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestDoc(t)
			for _, s := range tc.steps {
				before := d.Heads()
				err := d.SetMark(s.q, s.o, s.c, s.m)
				if !errors.Is(err, s.wantErr) || (err == nil) != (s.wantErr == nil) {
					t.Fatalf("SetMark(%s, %s, %s, %q) = %v, want %v", s.q, s.o, s.c, s.m, err, s.wantErr)
				}
				if err != nil && !d.Heads().Equal(before) {
					t.Fatalf("refused SetMark changed the heads")
				}
			}
			got, present := draftOf(t, d).Questions[qPick].Marks[key]
			if present == tc.absent || got != tc.want {
				t.Fatalf("cell %s = %q (present %v), want %q (present %v)", key, got, present, tc.want, !tc.absent)
			}
			// Neither a cleared nor an absent cell is in the snapshot.
			_, snapped := draftOf(t, d).Questions[qPick].Snapshot()[key]
			if snapped != tc.want.Valid() {
				t.Fatalf("snapshot holds cell: %v, want %v", snapped, tc.want.Valid())
			}
			// The distinction survives a save and load.
			if g, p := draftOf(t, replicaOf(t, d)).Questions[qPick].Marks[key]; g != got || p != present {
				t.Fatalf("after load: %q (present %v), want %q (present %v)", g, p, got, present)
			}
		})
	}
}

func TestSetMarkUnchangedValueWritesNothing(t *testing.T) {
	d := newTestDoc(t)
	ok(t, d.SetMark(qPick, "o2", "c2", marks.Yes))
	heads := d.Heads()
	ok(t, d.SetMark(qPick, "o2", "c2", marks.Yes))
	if !d.Heads().Equal(heads) {
		t.Fatal("setting a cell to the mark it holds made a change")
	}
	ok(t, d.SetMark(qPick, "o2", "c2", marks.Cleared))
	heads = d.Heads()
	ok(t, d.SetMark(qPick, "o2", "c2", marks.Cleared))
	if !d.Heads().Equal(heads) {
		t.Fatal("clearing a cleared cell made a change")
	}
}

func TestKeysAreCreatedLazily(t *testing.T) {
	d := newTestDoc(t)
	for id, q := range draftOf(t, d).Questions {
		if len(q.Marks) != 0 || len(q.Choices) != 0 || q.Text != "" {
			t.Fatalf("fresh draft of %s is not empty: %+v", id, q)
		}
		if id != qWhy && q.Marks == nil {
			t.Fatalf("fresh draft of %s has a nil marks map", id)
		}
	}
	ok(t, d.SetMark(qPick, "o1", "c1", marks.Yes))
	ok(t, d.Choose(qPick, "o1", true))
	before := draftOf(t, d)

	// Appends add cells to the matrix but no key to any draft.
	_, _, err := d.AppendOption(qPick, "k-opt", Item{"o4", "Redis"})
	ok(t, err)
	_, _, err = d.AppendCriterion(qPick, "k-crit", Item{"c3", "Simple"})
	ok(t, err)
	after := draftOf(t, d)
	if !after.Equal(before) {
		t.Fatalf("append changed the draft:\nbefore %+v\nafter  %+v", before, after)
	}
	if len(after.Questions[qPick].Marks) != 1 {
		t.Fatalf("marks = %v, want the one cell set", after.Questions[qPick].Marks)
	}
	// The new cells exist once written.
	ok(t, d.SetMark(qPick, "o4", "c3", marks.Partly))
	if got := draftOf(t, d).Questions[qPick].Marks[marks.Key("o4", "c3")]; got != marks.Partly {
		t.Fatalf("appended cell = %q, want partly", got)
	}
}

func TestChoose(t *testing.T) {
	type step struct {
		q, o    string
		on      bool
		wantErr error
	}
	tests := []struct {
		name  string
		q     string
		steps []step
		want  []string
	}{
		{"single: choose", qPick, []step{{qPick, "o2", true, nil}}, []string{"o2"}},
		{"single: choosing another replaces", qPick, []step{{qPick, "o2", true, nil}, {qPick, "o1", true, nil}}, []string{"o1"}},
		{"single: deselect the choice", qPick, []step{{qPick, "o2", true, nil}, {qPick, "o2", false, nil}}, nil},
		{"single: deselect another keeps the choice", qPick, []step{{qPick, "o2", true, nil}, {qPick, "o1", false, nil}}, []string{"o2"}},
		{"single: deselect with nothing chosen", qPick, []step{{qPick, "o1", false, nil}}, nil},
		{"single: choose the same twice", qPick, []step{{qPick, "o3", true, nil}, {qPick, "o3", true, nil}}, []string{"o3"}},
		{"multiple: in option order", qMany, []step{{qMany, "o2", true, nil}, {qMany, "o1", true, nil}}, []string{"o1", "o2"}},
		{"multiple: deselect one", qMany, []step{{qMany, "o2", true, nil}, {qMany, "o1", true, nil}, {qMany, "o2", false, nil}}, []string{"o1"}},
		{"multiple: deselect unchosen", qMany, []step{{qMany, "o2", false, nil}}, nil},
		{"unknown option", qPick, []step{{qPick, "o9", true, ErrInvalid}}, nil},
		{"unknown question", qPick, []step{{"nope", "o1", true, ErrNoQuestion}}, nil},
		{"written question", qPick, []step{{qWhy, "o1", true, ErrWrongKind}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestDoc(t)
			for _, s := range tc.steps {
				err := d.Choose(s.q, s.o, s.on)
				if !errors.Is(err, s.wantErr) || (err == nil) != (s.wantErr == nil) {
					t.Fatalf("Choose(%s, %s, %v) = %v, want %v", s.q, s.o, s.on, err, s.wantErr)
				}
			}
			if got := draftOf(t, d).Questions[tc.q].Choices; !slices.Equal(got, tc.want) {
				t.Fatalf("choices = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestChooseSingleConcurrentResolvesToOne(t *testing.T) {
	for _, order := range []string{"a then b", "b then a"} {
		t.Run(order, func(t *testing.T) {
			d := newTestDoc(t)
			a, b := replicaOf(t, d), replicaOf(t, d)
			ok(t, a.Choose(qPick, "o1", true))
			ok(t, b.Choose(qPick, "o2", true))
			ok(t, b.Choose(qMany, "o2", true))
			ok(t, a.Choose(qMany, "o1", true))
			if order == "a then b" {
				mergeAll(t, d, a, b)
			} else {
				mergeAll(t, d, b, a)
			}
			want := draftOf(t, d)
			if n := len(want.Questions[qPick].Choices); n != 1 {
				t.Fatalf("single choice after concurrent choices: %v, want exactly one", want.Questions[qPick].Choices)
			}
			if got := want.Questions[qMany].Choices; !slices.Equal(got, []string{"o1", "o2"}) {
				t.Fatalf("multiple choice after concurrent choices: %v, want both", got)
			}
			for _, r := range []*Doc{a, b} {
				if got := draftOf(t, r); !got.Equal(want) {
					t.Fatalf("replicas differ: %+v vs %+v", got, want)
				}
			}
		})
	}
}

func TestSpliceText(t *testing.T) {
	tests := []struct {
		name     string
		q        string
		pos, del int
		ins      string
		want     string
		wantErr  error
	}{
		{"insert at start", qWhy, 0, 0, ">", ">héllo 😀", nil},
		{"insert at end", qWhy, 7, 0, "!", "héllo 😀!", nil},
		{"code points, not bytes", qWhy, 1, 1, "e", "hello 😀", nil},
		{"delete the emoji", qWhy, 6, 1, "", "héllo ", nil},
		{"replace all", qWhy, 0, 7, "new", "new", nil},
		{"nothing", qWhy, 3, 0, "", "héllo 😀", nil},
		{"negative position", qWhy, -1, 0, "x", "héllo 😀", ErrInvalid},
		{"position past the end", qWhy, 8, 0, "x", "héllo 😀", ErrInvalid},
		{"negative delete", qWhy, 0, -1, "x", "héllo 😀", ErrInvalid},
		{"delete past the end", qWhy, 5, 3, "", "héllo 😀", ErrInvalid},
		{"too long", qWhy, 0, 0, strings.Repeat("x", MaxTextRunes), "héllo 😀", ErrTooLarge},
		{"choice question", qPick, 0, 0, "x", "héllo 😀", ErrWrongKind},
		{"unknown question", "nope", 0, 0, "x", "héllo 😀", ErrNoQuestion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestDoc(t)
			ok(t, d.SpliceText(qWhy, 0, 0, "héllo 😀"))
			heads := d.Heads()
			err := d.SpliceText(tc.q, tc.pos, tc.del, tc.ins)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("SpliceText(%s, %d, %d, %.10q) = %v, want %v", tc.q, tc.pos, tc.del, tc.ins, err, tc.wantErr)
			}
			if err != nil && !d.Heads().Equal(heads) {
				t.Fatal("refused splice changed the heads")
			}
			if got := draftOf(t, d).Questions[qWhy].Text; got != tc.want {
				t.Fatalf("text = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSetTextKeepsConcurrentEdits(t *testing.T) {
	tests := []struct {
		name string
		base string
		set  string // what replica a sets the whole text to
		pos  int    // where replica b concurrently inserts ins
		ins  string
		want string
	}{
		{"insert in the middle, b at the start", "hello world", "hello brave world", 0, ">> ", ">> hello brave world"},
		{"insert in the middle, b at the end", "hello world", "hello brave world", 11, "!", "hello brave world!"},
		{"delete a word, b at the end", "one two three", "one three", 13, ".", "one three."},
		{"replace the tail, b at the start", "draft: maybe", "draft: yes", 0, "#", "#draft: yes"},
		{"unchanged, b types", "same", "same", 4, "!", "same!"},
		{"non-ASCII prefix kept", "日本語 text", "日本語 texts", 0, "«", "«日本語 texts"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestDoc(t)
			ok(t, d.SetText(qWhy, tc.base))
			a, b := replicaOf(t, d), replicaOf(t, d)
			ok(t, a.SetText(qWhy, tc.set))
			ok(t, b.SpliceText(qWhy, tc.pos, 0, tc.ins))
			mergeAll(t, a, b)
			for _, r := range []*Doc{a, b} {
				if got := draftOf(t, r).Questions[qWhy].Text; got != tc.want {
					t.Fatalf("text = %q, want %q", got, tc.want)
				}
			}
		})
	}
}

func TestSetTextUnchangedWritesNothing(t *testing.T) {
	d := newTestDoc(t)
	ok(t, d.SetText(qWhy, "x"))
	heads := d.Heads()
	ok(t, d.SetText(qWhy, "x"))
	if !d.Heads().Equal(heads) {
		t.Fatal("SetText to the same text made a change")
	}
	if err := d.SetText(qPick, "x"); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("SetText on a choice question = %v, want ErrWrongKind", err)
	}
}

func TestAppend(t *testing.T) {
	type step struct {
		criterion bool
		q, key    string
		it        Item
		want      Item
		repeated  bool
		wantErr   error
	}
	opt := func(q, key, id string) step {
		return step{q: q, key: key, it: Item{id, "L-" + id}, want: Item{id, "L-" + id}}
	}
	crit := func(q, key, id string) step {
		s := opt(q, key, id)
		s.criterion = true
		return s
	}
	repeat := func(s step, want Item) step {
		s.want, s.repeated = want, true
		return s
	}
	refuse := func(s step, err error) step {
		s.want, s.wantErr = Item{}, err
		return s
	}
	tests := []struct {
		name         string
		steps        []step
		wantOptions  []string
		wantCriteria []string
	}{
		{"new option", []step{opt(qPick, "k1", "o4")}, []string{"o1", "o2", "o3", "o4"}, []string{"c1", "c2"}},
		{"new criterion", []step{crit(qPick, "k1", "c3")}, []string{"o1", "o2", "o3"}, []string{"c1", "c2", "c3"}},
		{"repeated key returns the first item", []step{opt(qPick, "k1", "o4"), repeat(opt(qPick, "k1", "o5"), Item{"o4", "L-o4"})}, []string{"o1", "o2", "o3", "o4"}, []string{"c1", "c2"}},
		{"options and criteria share keys", []step{opt(qPick, "k1", "o4"), repeat(crit(qPick, "k1", "c3"), Item{"o4", "L-o4"})}, []string{"o1", "o2", "o3", "o4"}, []string{"c1", "c2"}},
		{"keys are shared across questions", []step{crit(qPick, "k1", "c3"), repeat(opt(qMany, "k1", "o3"), Item{"c3", "L-c3"})}, []string{"o1", "o2", "o3"}, []string{"c1", "c2", "c3"}},
		{"two keys two items", []step{opt(qPick, "k1", "o4"), opt(qPick, "k2", "o5")}, []string{"o1", "o2", "o3", "o4", "o5"}, []string{"c1", "c2"}},
		{"empty key", []step{refuse(opt(qPick, "", "o4"), ErrInvalid)}, []string{"o1", "o2", "o3"}, []string{"c1", "c2"}},
		{"bad id", []step{refuse(opt(qPick, "k1", "o 4"), ErrInvalid)}, []string{"o1", "o2", "o3"}, []string{"c1", "c2"}},
		{"id already in the list", []step{refuse(opt(qPick, "k1", "o2"), ErrInvalid)}, []string{"o1", "o2", "o3"}, []string{"c1", "c2"}},
		{"criterion id taken by an option is fine", []step{crit(qPick, "k1", "o1")}, []string{"o1", "o2", "o3"}, []string{"c1", "c2", "o1"}},
		{"unknown question", []step{refuse(opt("nope", "k1", "o4"), ErrNoQuestion)}, []string{"o1", "o2", "o3"}, []string{"c1", "c2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestDoc(t)
			for _, s := range tc.steps {
				before := d.Heads()
				add := d.AppendOption
				if s.criterion {
					add = d.AppendCriterion
				}
				got, repeated, err := add(s.q, s.key, s.it)
				if !errors.Is(err, s.wantErr) || (err == nil) != (s.wantErr == nil) {
					t.Fatalf("append %+v = %v, want %v", s, err, s.wantErr)
				}
				if got != s.want || repeated != s.repeated {
					t.Fatalf("append %+v = %v, %v; want %v, %v", s, got, repeated, s.want, s.repeated)
				}
				if changed := !d.Heads().Equal(before); changed != (err == nil && !repeated) {
					t.Fatalf("append %+v: heads changed %v", s, changed)
				}
			}
			st := stateOf(t, d)
			ids := func(items []Item) []string {
				var out []string
				for _, it := range items {
					out = append(out, it.ID)
				}
				return out
			}
			if got := ids(st.Questions[qPick].Options); !slices.Equal(got, tc.wantOptions) {
				t.Fatalf("options = %v, want %v", got, tc.wantOptions)
			}
			if got := ids(st.Questions[qPick].Criteria); !slices.Equal(got, tc.wantCriteria) {
				t.Fatalf("criteria = %v, want %v", got, tc.wantCriteria)
			}
			// Every key is recorded once and names the item it minted.
			for key, a := range st.Appended {
				if !hasItem(st.Questions[a.Question].items(a.Kind), a.ID) {
					t.Fatalf("appended[%s] = %+v names no item", key, a)
				}
			}
		})
	}
}

func TestAppendedItemsReachReplicas(t *testing.T) {
	d := newTestDoc(t)
	r := replicaOf(t, d)
	it, _, err := d.AppendOption(qPick, "k", Item{"o4", "Redis"})
	ok(t, err)
	batch, err := d.ChangesSince(r.Heads())
	ok(t, err)
	_, err = r.ApplyChanges(batch)
	ok(t, err)
	// A replica may mark the new cell once it has the append.
	ok(t, r.SetMark(qPick, it.ID, "c1", marks.No))
	if got := stateOf(t, r).Appended["k"]; got != (Appended{Kind: "option", Question: qPick, ID: "o4"}) {
		t.Fatalf("appended[k] = %+v", got)
	}
}

func TestStartGeneration(t *testing.T) {
	d := newTestDoc(t)
	member := replicaOf(t, d)
	ok(t, d.SetMark(qPick, "o1", "c1", marks.Yes))
	ok(t, d.Choose(qPick, "o1", true))
	ok(t, d.Choose(qMany, "o2", true))
	ok(t, d.SetText(qWhy, "first answer"))
	first := draftOf(t, d)

	ok(t, d.StartGeneration(2))
	if g := d.Generation(); g != 2 {
		t.Fatalf("Generation() = %d, want 2", g)
	}
	st := stateOf(t, d)
	cur := st.Drafts[2]
	for id, q := range cur.Questions {
		if len(q.Marks) != 0 || len(q.Choices) != 0 || q.Text != "" {
			t.Fatalf("new draft of %s is not empty: %+v", id, q)
		}
	}
	if len(cur.Questions) != 3 {
		t.Fatalf("new draft has %d questions, want 3", len(cur.Questions))
	}
	if !st.Drafts[1].Equal(first) {
		t.Fatal("the old draft changed when a new generation started")
	}

	// A member still on generation 1 edits its (old) draft offline.
	ok(t, member.SetMark(qPick, "o2", "c2", marks.No))
	ok(t, member.Choose(qPick, "o3", true))
	ok(t, member.SetText(qWhy, "stale"))
	batch, err := member.ChangesSince(nil)
	ok(t, err)
	_, err = d.ApplyChanges(batch)
	ok(t, err)
	mergeAll(t, d, member)
	for _, r := range []*Doc{d, member} {
		st := stateOf(t, r)
		if st.Generation != 2 {
			t.Fatalf("generation %d, want 2", st.Generation)
		}
		for id, q := range st.Drafts[2].Questions {
			if len(q.Marks) != 0 || len(q.Choices) != 0 || q.Text != "" {
				t.Fatalf("an old-generation edit shows in the new draft of %s: %+v", id, q)
			}
		}
		if got := st.Drafts[1].Questions[qWhy].Text; !strings.Contains(got, "stale") {
			t.Fatalf("old draft text %q lost the member's edit", got)
		}
	}

	for _, g := range []uint64{0, 1, 2} {
		if err := d.StartGeneration(g); !errors.Is(err, ErrInvalid) {
			t.Fatalf("StartGeneration(%d) after 2 = %v, want ErrInvalid", g, err)
		}
	}
	ok(t, d.StartGeneration(5))
	if g := draftOf(t, d).Generation; g != 5 {
		t.Fatalf("draft generation %d, want 5", g)
	}
}

func TestDraftWithoutMarksReadsEmpty(t *testing.T) {
	pick := testShapes()[0]
	saved := rawDoc(t, func(root *automerge.Map) error {
		if err := root.Set("v", int64(1)); err != nil {
			return err
		}
		qs := automerge.NewMap()
		if err := root.Set("questions", qs); err != nil {
			return err
		}
		if err := rawQuestion(qs, pick); err != nil {
			return err
		}
		// A draft stored before criteria existed: a choice, no marks map.
		drafts := automerge.NewMap()
		if err := root.Set("drafts", drafts); err != nil {
			return err
		}
		g1 := automerge.NewMap()
		if err := drafts.Set("1", g1); err != nil {
			return err
		}
		qd := automerge.NewMap()
		if err := g1.Set(qPick, qd); err != nil {
			return err
		}
		if err := qd.Set("choice", "o2"); err != nil {
			return err
		}
		return root.Set("generation", uint64(1))
	})
	d, err := Load(saved, nil, Options{})
	ok(t, err)
	q := draftOf(t, d).Questions[qPick]
	if q.Marks == nil || len(q.Marks) != 0 {
		t.Fatalf("marks of an old draft = %#v, want an empty map", q.Marks)
	}
	if q.Snapshot() != nil {
		t.Fatalf("snapshot of an old draft = %v, want nil", q.Snapshot())
	}
	if !slices.Equal(q.Choices, []string{"o2"}) {
		t.Fatalf("choices = %v, want [o2]", q.Choices)
	}
	// The next generation lays out a marks map as usual.
	ok(t, d.StartGeneration(2))
	ok(t, d.SetMark(qPick, "o1", "c2", marks.Partly))
	if got := draftOf(t, d).Questions[qPick].Marks; len(got) != 1 {
		t.Fatalf("marks = %v", got)
	}
}

func TestApplyChangesRefusesAndChangesNothing(t *testing.T) {
	base := newTestDoc(t)
	member := replicaOf(t, base)
	ok(t, member.SetMark(qPick, "o1", "c1", marks.Yes))
	mid := member.Heads()
	ok(t, member.SetMark(qPick, "o1", "c2", marks.No))
	second, err := member.ChangesSince(mid) // depends on the first edit
	ok(t, err)
	all, err := member.ChangesSince(base.Heads())
	ok(t, err)

	flipped := bytes.Clone(all)
	flipped[len(flipped)-1] ^= 0xff
	badChecksum := bytes.Clone(all)
	badChecksum[5] ^= 0xff

	tests := []struct {
		name    string
		batch   []byte
		wantErr error
	}{
		{"missing dependency", second, ErrMissingDeps},
		{"good change then a truncated one", append(bytes.Clone(all[:len(all)-len(second)]), second[:len(second)-1]...), ErrMalformed},
		{"garbage", []byte("not a change"), ErrMalformed},
		{"magic only", chunkMagic[:], ErrMalformed},
		{"truncated", all[:len(all)-3], ErrMalformed},
		{"body flipped", flipped, ErrMalformed},
		{"checksum flipped", badChecksum, ErrMalformed},
		{"a whole document", member.Save(), ErrMalformed},
		{"good then garbage", append(bytes.Clone(all), 0x85, 0x6f), ErrMalformed},
		{"too large", make([]byte, MaxChangesBytes+1), ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := replicaOf(t, base)
			heads, st := d.Heads(), stateOf(t, d)
			fresh, err := d.ApplyChanges(tc.batch)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("ApplyChanges = %v, want %v", err, tc.wantErr)
			}
			if fresh != nil {
				t.Fatalf("refused batch reported fresh changes %v", fresh)
			}
			if !d.Heads().Equal(heads) {
				t.Fatal("refused batch changed the heads")
			}
			if got := stateOf(t, d); !reflect.DeepEqual(got, st) {
				t.Fatalf("refused batch changed the state:\n%+v\n%+v", got, st)
			}
			// The document still takes good changes afterwards.
			fresh, err = d.ApplyChanges(all)
			ok(t, err)
			if len(fresh) != 2 || !d.Heads().Equal(member.Heads()) {
				t.Fatalf("good batch after a refusal: %d fresh, heads %v want %v", len(fresh), d.Heads(), member.Heads())
			}
		})
	}
}

func TestApplyChangesIdempotent(t *testing.T) {
	d := newTestDoc(t)
	r := replicaOf(t, d)
	ok(t, r.SetText(qWhy, "hi"))
	batch, err := r.ChangesSince(d.Heads())
	ok(t, err)
	fresh, err := d.ApplyChanges(batch)
	ok(t, err)
	if len(fresh) != 1 {
		t.Fatalf("fresh = %v, want one change", fresh)
	}
	heads := d.Heads()
	for _, b := range [][]byte{batch, nil, {}} {
		fresh, err = d.ApplyChanges(b)
		ok(t, err)
		if len(fresh) != 0 || !d.Heads().Equal(heads) {
			t.Fatalf("reapplying: fresh %v, heads moved %v", fresh, !d.Heads().Equal(heads))
		}
	}
	if empty, err := d.ChangesSince(d.Heads()); err != nil || empty != nil {
		t.Fatalf("ChangesSince(own heads) = %x, %v; want nil, nil", empty, err)
	}
	if _, err := d.ChangesSince(Heads{{1}}); !errors.Is(err, ErrMissingDeps) {
		t.Fatalf("ChangesSince(unknown) = %v, want ErrMissingDeps", err)
	}
}

func TestRollback(t *testing.T) {
	d := newTestDoc(t)
	ok(t, d.SetMark(qPick, "o1", "c1", marks.Yes))
	heads, st := d.Heads(), stateOf(t, d)
	ok(t, d.SetMark(qPick, "o1", "c1", marks.No))
	ok(t, d.SetText(qWhy, "gone"))
	later, err := d.ChangesSince(heads)
	ok(t, err)

	ok(t, d.Rollback(heads))
	if !d.Heads().Equal(heads) {
		t.Fatalf("heads after rollback %v, want %v", d.Heads(), heads)
	}
	if got := stateOf(t, d); !reflect.DeepEqual(got, st) {
		t.Fatalf("state after rollback:\n%+v\nwant\n%+v", got, st)
	}
	if d.Has(Heads(d.Heads())) != true {
		t.Fatal("Has(own heads) = false")
	}
	// The rolled-back changes are gone and can come back.
	_, err = d.ApplyChanges(later)
	ok(t, err)
	if got := draftOf(t, d).Questions[qWhy].Text; got != "gone" {
		t.Fatalf("text after re-applying = %q", got)
	}
	// The replica keeps writing as itself.
	ok(t, d.Rollback(heads))
	ok(t, d.SetText(qWhy, "again"))
	chs, err := d.am.Changes(toAM(heads)...)
	ok(t, err)
	if len(chs) != 1 || chs[0].ActorID() != string(d.Actor()) {
		t.Fatalf("change after rollback written by %q, want %q", chs[0].ActorID(), d.Actor())
	}
	if err := d.Rollback(Heads{{7}}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Rollback(unknown heads) = %v, want ErrMalformed", err)
	}
}

func TestSnapshotLoadsBack(t *testing.T) {
	build := map[string]func(t *testing.T) *Doc{
		"empty": func(t *testing.T) *Doc {
			d, err := New(Options{})
			ok(t, err)
			return d
		},
		"fresh decision": func(t *testing.T) *Doc { return newTestDoc(t) },
		"edited by three actors over two generations": func(t *testing.T) *Doc {
			d := newTestDoc(t)
			a, b := replicaOf(t, d), replicaOf(t, d)
			ok(t, a.SetMark(qPick, "o1", "c1", marks.Yes))
			ok(t, b.SetMark(qPick, "o1", "c1", marks.No))
			ok(t, b.SetText(qWhy, "ünïcode 😀"))
			_, _, err := d.AppendCriterion(qPick, "k", Item{"c3", "New"})
			ok(t, err)
			mergeAll(t, d, a, b)
			ok(t, d.StartGeneration(2))
			ok(t, a.Choose(qMany, "o1", true))
			mergeAll(t, d, a, b)
			return d
		},
	}
	for name, mk := range build {
		t.Run(name, func(t *testing.T) {
			d := mk(t)
			snap, err := d.Snapshot()
			ok(t, err)
			back, err := Load(snap, nil, Options{})
			ok(t, err)
			if !back.Heads().Equal(d.Heads()) {
				t.Fatalf("heads after load %v, want %v", back.Heads(), d.Heads())
			}
			if !reflect.DeepEqual(stateOf(t, back), stateOf(t, d)) {
				t.Fatal("state after load differs")
			}
			// Snapshot plus chunks: the first half as a snapshot, the rest
			// as changes, as the store keeps them.
			chs, err := d.am.Changes()
			ok(t, err)
			half, err := d.ForkAt(Heads{ChangeHash(chs[len(chs)/2].Hash())}, "")
			if len(chs) == 0 {
				return
			}
			ok(t, err)
			hsnap, err := half.Snapshot()
			ok(t, err)
			rest, err := d.ChangesSince(half.Heads())
			ok(t, err)
			back, err = Load(hsnap, [][]byte{rest}, Options{})
			ok(t, err)
			if !back.Heads().Equal(d.Heads()) || !reflect.DeepEqual(stateOf(t, back), stateOf(t, d)) {
				t.Fatal("snapshot + chunks does not load to the same document")
			}
		})
	}
}

func TestLoad(t *testing.T) {
	good := newTestDoc(t).Save()
	tests := []struct {
		name    string
		data    []byte
		chunks  [][]byte
		wantErr error
	}{
		{"nothing is an empty document", nil, nil, nil},
		{"a save", good, nil, nil},
		{"a save as chunks", nil, [][]byte{good[:10], good[10:]}, nil},
		{"format 1", rawDoc(t, func(r *automerge.Map) error { return r.Set("v", int64(1)) }), nil, nil},
		{"no format marker", rawDoc(t, func(r *automerge.Map) error { return r.Set("x", 1) }), nil, nil},
		{"newer format", rawDoc(t, func(r *automerge.Map) error { return r.Set("v", int64(2)) }), nil, ErrMalformed},
		{"format marker not a number", rawDoc(t, func(r *automerge.Map) error { return r.Set("v", "1") }), nil, ErrMalformed},
		{"garbage", []byte("garbage"), nil, ErrMalformed},
		{"truncated", good[:len(good)-5], nil, ErrMalformed},
		{"too large", make([]byte, MaxDocumentBytes/2), [][]byte{make([]byte, MaxDocumentBytes/2+1)}, ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Load(tc.data, tc.chunks, Options{})
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("Load = %v, want %v", err, tc.wantErr)
			}
			if err == nil && d == nil {
				t.Fatal("Load returned no document")
			}
		})
	}
}

func TestActorID(t *testing.T) {
	for range 100 {
		if a := NewActorID(); !a.Valid() {
			t.Fatalf("NewActorID() = %q is not valid", a)
		}
	}
	if NewActorID() == NewActorID() {
		t.Fatal("NewActorID repeats")
	}
	tests := []struct {
		id   ActorID
		want bool
	}{
		{"0102030405060708090a0b0c0d0e0f10", true},
		{"ff02030405060708090a0b0c0d0e0f10", true},
		{"", false},
		{"00", false},
		{"0002030405060708090a0b0c0d0e0f10", false},     // leading zero byte
		{"0102030405060708090a0b0c0d0e0f", false},       // 15 bytes
		{"0102030405060708090a0b0c0d0e0f1011", false},   // 17 bytes
		{"0102030405060708090a0b0c0d0e0f1", false},      // odd digits
		{"zz02030405060708090a0b0c0d0e0f10", false},     // not hex
		{"0102030405060708090a0b0c0d0e0f10 ", false},    // trailing space
		{"01020304-0506-0708-090a-0b0c0d0e0f10", false}, // a UUID
		{ActorID(strings.Repeat("ab", 32)), false},      // 32 bytes
	}
	for _, tc := range tests {
		if got := tc.id.Valid(); got != tc.want {
			t.Errorf("ActorID(%q).Valid() = %v, want %v", tc.id, got, tc.want)
		}
		d, err := New(Options{Actor: tc.id})
		if tc.id == "" {
			// Empty mints one.
			ok(t, err)
			if !d.Actor().Valid() {
				t.Errorf("minted actor %q is not valid", d.Actor())
			}
			continue
		}
		if tc.want {
			ok(t, err)
			if d.Actor() != tc.id {
				t.Errorf("Actor() = %q, want %q", d.Actor(), tc.id)
			}
		} else if !errors.Is(err, ErrInvalid) {
			t.Errorf("New(Actor: %q) = %v, want ErrInvalid", tc.id, err)
		}
	}
	// A fork writes under its own actor.
	d := newTestDoc(t)
	f, err := d.Fork("")
	ok(t, err)
	if f.Actor() == d.Actor() || !f.Actor().Valid() {
		t.Fatalf("fork actor %q (parent %q)", f.Actor(), d.Actor())
	}
	if _, err := d.Fork("bad"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Fork(bad) = %v, want ErrInvalid", err)
	}
}

func TestForkAtAndHas(t *testing.T) {
	d := newTestDoc(t)
	h1 := d.Heads()
	ok(t, d.SetText(qWhy, "later"))
	old, err := d.ForkAt(h1, "")
	ok(t, err)
	if !old.Heads().Equal(h1) || draftOf(t, old).Questions[qWhy].Text != "" {
		t.Fatal("ForkAt did not return the document as of heads")
	}
	if !d.Has(h1) || old.Has(d.Heads()) {
		t.Fatal("Has is wrong")
	}
	if _, err := d.ForkAt(Heads{{9}}, ""); !errors.Is(err, ErrMissingDeps) {
		t.Fatalf("ForkAt(unknown) = %v, want ErrMissingDeps", err)
	}
	hs, err := ParseHeads(d.Heads().String())
	ok(t, err)
	if !hs.Equal(d.Heads()) {
		t.Fatal("ParseHeads(String()) differs")
	}
}

// TestApplyChangesOutOfOrder: a change may come before one it depends on
// in the same batch, as in automerge's sync messages, which list
// explicitly requested changes first.
func TestApplyChangesOutOfOrder(t *testing.T) {
	d := newTestDoc(t)
	r := replicaOf(t, d)
	ok(t, r.SetMark(qPick, "o1", "c1", marks.Yes))
	ok(t, r.SetMark(qPick, "o1", "c1", marks.No))
	ok(t, r.SetText(qWhy, "third"))
	chs, err := r.am.Changes(toAM(d.Heads())...)
	ok(t, err)
	if len(chs) != 3 {
		t.Fatalf("%d changes, want 3", len(chs))
	}
	batch := slices.Concat(chs[2].Save(), chs[0].Save(), chs[1].Save())
	fresh, err := d.ApplyChanges(batch)
	ok(t, err)
	if len(fresh) != 3 || !d.Heads().Equal(r.Heads()) {
		t.Fatalf("fresh %d, heads %v, want %v", len(fresh), d.Heads(), r.Heads())
	}
	if !reflect.DeepEqual(stateOf(t, d), stateOf(t, r)) {
		t.Fatal("states differ")
	}
	// Without the change in the middle the batch is refused whole.
	base, err := d.ForkAt(Heads(sortHeads(fromAM(chs[0].Dependencies()))), "")
	ok(t, err)
	heads := base.Heads()
	if _, err := base.ApplyChanges(slices.Concat(chs[2].Save(), chs[0].Save())); !errors.Is(err, ErrMissingDeps) {
		t.Fatalf("batch missing a change = %v, want ErrMissingDeps", err)
	}
	if !base.Heads().Equal(heads) {
		t.Fatal("refused batch changed the heads")
	}
}

// TestHoldsTellsAResentBatch: a batch the document applied is held, one
// with any change it lacks is not, and neither applies anything.
func TestHoldsTellsAResentBatch(t *testing.T) {
	auth := newTestDoc(t)
	member := replicaOf(t, auth)
	start := member.Heads()
	ok(t, member.SetText(qWhy, "first"))
	first, err := member.ChangesSince(start)
	ok(t, err)
	ok(t, member.SetText(qWhy, "second"))
	both, err := member.ChangesSince(start)
	ok(t, err)

	if auth.Holds(first) {
		t.Fatal("a batch not yet applied is held")
	}
	if _, err := auth.ApplyEdit(first); err != nil {
		t.Fatal(err)
	}
	heads := auth.Heads()
	for _, tc := range []struct {
		name  string
		batch []byte
		want  bool
	}{
		{"the applied batch", first, true},
		{"a batch with one change more", both, false},
		{"an empty batch", nil, false},
		{"bytes that are not changes", []byte("not a change"), false},
		{"a truncated batch", first[:len(first)-1], false},
	} {
		if got := auth.Holds(tc.batch); got != tc.want {
			t.Errorf("%s: Holds = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !auth.Heads().Equal(heads) {
		t.Error("Holds changed the document")
	}
}
