package replica

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
)

func TestRespliced(t *testing.T) {
	for _, tc := range []struct{ accepted, local, target, want string }{
		{"hello world", "hello brave world", "hello world", "hello brave world"},
		{"hello world", "hello brave world", "hello world!", "hello brave world!"},
		{"hello world", "hello brave world", ">hello world", ">hello brave world"},
		{"hello world", "hello", "Oh, hello world", "Oh, hello"},
		{"hello world", "hello there", "hello wide world", "hello there"}, // overlap: the replica's text wins
		{"", "new", "", "new"},
		{"", "new", "other", "newother"},
		{"abc", "", "abcd", "d"},
		{"αβγ", "αxγ", "αβγδ", "αxγδ"}, // code points, not bytes
		{"same", "same", "changed", "changed"},
	} {
		pos, del, ins := respliced(tc.accepted, tc.local, tc.target)
		r := []rune(tc.target)
		if pos < 0 || del < 0 || pos+del > len(r) {
			t.Fatalf("respliced(%q, %q, %q) = %d, %d: outside the target", tc.accepted, tc.local, tc.target, pos, del)
		}
		if got := string(r[:pos]) + ins + string(r[pos+del:]); got != tc.want {
			t.Errorf("respliced(%q, %q, %q) gives %q, want %q", tc.accepted, tc.local, tc.target, got, tc.want)
		}
	}
}

// newShaped returns a document laid out as the authority lays out a
// decision: a single-choice matrix, a multiple-choice one and a written
// question.
func newShaped(t *rapid.T) *crdt.Doc {
	d, err := crdt.New(crdt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	items := func(ids ...string) []crdt.Item {
		var out []crdt.Item
		for _, id := range ids {
			out = append(out, crdt.Item{ID: id, Label: id})
		}
		return out
	}
	for _, q := range []crdt.QuestionShape{
		{ID: "one", Options: items("a", "b", "c"), Criteria: items("x", "y")},
		{ID: "many", Multiple: true, Options: items("a", "b", "c"), Criteria: items("x")},
		{ID: "note", Written: true},
	} {
		if err := d.AddQuestion(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.StartGeneration(1); err != nil {
		t.Fatal(err)
	}
	return d
}

// copyDraft makes to's draft hold d's values: a document of another
// history with the same state.
func copyDraft(t *rapid.T, d crdt.Draft, to *crdt.Doc) {
	for q, qd := range d.Questions {
		for k, m := range qd.Marks {
			c, _ := marks.ParseKey(k)
			if err := to.SetMark(q, c.Option, c.Criterion, m); err != nil {
				t.Fatal(err)
			}
		}
		for _, o := range qd.Choices {
			if err := to.Choose(q, o, true); err != nil {
				t.Fatal(err)
			}
		}
		if err := to.SetText(q, qd.Text); err != nil && qd.Text != "" {
			t.Fatal(err)
		}
	}
}

var (
	allMarks = []marks.Mark{marks.Yes, marks.Partly, marks.No, marks.Cleared}
	words    = []string{"a", "b", "ab", " ", "ç", "ß", "xyz"}
)

// sameAnswer compares drafts as a person sees them: a cell cleared and a
// cell never marked are both empty.
func sameAnswer(a, b crdt.Draft) bool {
	if a.Generation != b.Generation || len(a.Questions) != len(b.Questions) {
		return false
	}
	for id, q := range a.Questions {
		p := b.Questions[id]
		if q.Text != p.Text || !slices.Equal(q.Choices, p.Choices) || !q.Snapshot().Equal(p.Snapshot()) {
			return false
		}
	}
	return true
}

// edit makes one random draft edit on d.
func edit(t *rapid.T, d *crdt.Doc, label string) {
	switch rapid.IntRange(0, 3).Draw(t, label+" op") {
	case 0, 1:
		q := rapid.SampledFrom([]string{"one", "many"}).Draw(t, label+" q")
		o := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, label+" option")
		if rapid.Bool().Draw(t, label+" mark?") {
			c := "x"
			if q == "one" {
				c = rapid.SampledFrom([]string{"x", "y"}).Draw(t, label+" criterion")
			}
			if err := d.SetMark(q, o, c, rapid.SampledFrom(allMarks).Draw(t, label+" mark")); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := d.Choose(q, o, rapid.Bool().Draw(t, label+" on")); err != nil {
			t.Fatal(err)
		}
		return
	default:
		dr, _ := d.Draft()
		n := len([]rune(dr.Questions["note"].Text))
		pos := rapid.IntRange(0, n).Draw(t, label+" pos")
		del := rapid.IntRange(0, n-pos).Draw(t, label+" del")
		if err := d.SpliceText("note", pos, del, rapid.SampledFrom(words).Draw(t, label+" ins")); err != nil {
			t.Fatal(err)
		}
	}
}

func markOf(d crdt.Draft, key string) marks.Mark {
	parts := splitKey(key)
	q, o, c := parts[0], parts[1], parts[2]
	m, ok := d.Questions[q].Marks[marks.Key(o, c)]
	if !ok {
		return marks.Cleared
	}
	return m
}

func splitKey(key string) []string {
	var out []string
	start := 0
	for i := range len(key) {
		if key[i] == '/' {
			out = append(out, key[start:i])
			start = i + 1
		}
	}
	return append(out, key[start:])
}

// TestCarryProperty: carried onto a document of another history holding
// the accepted state, the replica's unaccepted edits give exactly the
// replica's draft; with others' edits on the new history too, every value
// the replica changed is the replica's and every other value is theirs.
func TestCarryProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		old := newShaped(t)
		for i := range rapid.IntRange(0, 8).Draw(t, "accepted edits") {
			edit(t, old, fmt.Sprint("accepted ", i))
		}
		base := old.Heads()
		accepted, _ := old.Draft()
		to := newShaped(t)
		copyDraft(t, accepted, to)
		for i := range rapid.IntRange(0, 8).Draw(t, "local edits") {
			edit(t, old, fmt.Sprint("local ", i))
		}
		local, _ := old.Draft()
		others := rapid.Bool().Draw(t, "others edit the new history")
		if others {
			for i := range rapid.IntRange(1, 4).Draw(t, "their edits") {
				edit(t, to, fmt.Sprint("their ", i))
			}
		}
		target, _ := to.Draft()
		if _, err := carry(old, base, to); err != nil {
			t.Fatal(err)
		}
		got, err := to.Draft()
		if err != nil {
			t.Fatal(err)
		}
		if !others {
			if !sameAnswer(got, local) {
				t.Fatalf("carried draft %+v, want the replica's %+v", got, local)
			}
			return
		}
		for _, q := range []string{"one", "many"} {
			for _, o := range []string{"a", "b", "c"} {
				for _, c := range []string{"x", "y"} {
					key := q + "/" + o + "/" + c
					if q == "many" && c == "y" {
						continue
					}
					want := markOf(target, key)
					if markOf(local, key) != markOf(accepted, key) {
						want = markOf(local, key)
					}
					if g := markOf(got, key); g != want {
						t.Fatalf("cell %s: %q, want %q", key, g, want)
					}
				}
				if q == "many" {
					in := func(d crdt.Draft) bool { return slices.Contains(d.Questions["many"].Choices, o) }
					want := in(target)
					if in(local) != in(accepted) {
						want = in(local)
					}
					if in(got) != want {
						t.Fatalf("many/%s chosen %v, want %v", o, in(got), want)
					}
				}
			}
		}
		if !slices.Equal(local.Questions["one"].Choices, accepted.Questions["one"].Choices) {
			if !slices.Equal(got.Questions["one"].Choices, local.Questions["one"].Choices) {
				t.Fatalf("single choice %v, want the replica's %v", got.Questions["one"].Choices, local.Questions["one"].Choices)
			}
		} else if !slices.Equal(got.Questions["one"].Choices, target.Questions["one"].Choices) {
			t.Fatalf("single choice %v, want theirs %v", got.Questions["one"].Choices, target.Questions["one"].Choices)
		}
		lt, at, tt, gt := local.Questions["note"].Text, accepted.Questions["note"].Text, target.Questions["note"].Text, got.Questions["note"].Text
		switch {
		case lt == at && gt != tt:
			t.Fatalf("text %q, want theirs %q", gt, tt)
		case lt != at && tt == at && gt != lt:
			t.Fatalf("text %q, want the replica's %q", gt, lt)
		}
	})
}
