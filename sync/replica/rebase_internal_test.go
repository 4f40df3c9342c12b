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
		{"hello world", "hello there", "hello, world", "hello, there"},
		{"abcdef", "aXf", "abcYef", "aXf"},
		{"1:1\n2:1\n3:1\n", "1:1\n2:2\n3:1\n", "1:5\n2:1\n3:7\n", "1:5\n2:2\n3:7\n"}, // one line per writer
		{"hello world", "hello brave world", "HELLO world", "HELLO brave world"},
		{"abc", "abXc", "abYc", "abYXc"}, // two insertions at one point: the replica's after theirs
		{"", "new", "", "new"},
		{"", "new", "other", "othernew"},
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

// fataler is what the helpers below need of a *testing.T or a *rapid.T.
type fataler interface{ Fatal(args ...any) }

// newShaped returns a document laid out as the authority lays out a
// decision: a single-choice matrix, a multiple-choice one and a written
// question.
func newShaped(t fataler) *crdt.Doc {
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
func copyDraft(t fataler, d crdt.Draft, to *crdt.Doc) {
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

// intended is the choice a person expects once the replica's edits are
// carried onto theirs, the new history's choice (docs/PROTOCOL.md,
// Rebase): the replica's net intent since accepted, what it edited from,
// applied to theirs. An option the replica deselected is dropped, and no
// other; an option it selected is added, and in a single choice replaces
// whatever theirs holds. Options are a, b, c: option order is sorted
// order.
func intended(accepted, local, theirs []string, multiple bool) []string {
	selected := slices.DeleteFunc(slices.Clone(local), func(o string) bool { return slices.Contains(accepted, o) })
	deselected := slices.DeleteFunc(slices.Clone(accepted), func(o string) bool { return slices.Contains(local, o) })
	want := slices.DeleteFunc(slices.Clone(theirs), func(o string) bool { return slices.Contains(deselected, o) })
	switch {
	case multiple:
		want = append(want, selected...)
	case len(selected) > 0:
		want = selected
	}
	slices.Sort(want)
	return slices.Compact(want)
}

// TestCarryProperty: carried onto a document of another history holding
// the accepted state, the replica's unaccepted edits give exactly the
// replica's draft; with others' edits on the new history too, every mark
// and written answer the replica changed is the replica's and every other
// is theirs, and every choice is the one intended gives.
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
			}
		}
		for _, q := range []string{"one", "many"} {
			choices := func(d crdt.Draft) []string { return d.Questions[q].Choices }
			want := intended(choices(accepted), choices(local), choices(target), q == "many")
			if !slices.Equal(choices(got), want) {
				t.Fatalf("%s chosen %v, want %v (accepted %v, the replica's %v, theirs %v)",
					q, choices(got), want, choices(accepted), choices(local), choices(target))
			}
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

// step is one draft edit of a table case.
type step func(d *crdt.Doc) error

func choose(q, o string, on bool) step {
	return func(d *crdt.Doc) error { return d.Choose(q, o, on) }
}

func mark(q, o, c string, m marks.Mark) step {
	return func(d *crdt.Doc) error { return d.SetMark(q, o, c, m) }
}

func splice(pos, del int, ins string) step {
	return func(d *crdt.Doc) error { return d.SpliceText("note", pos, del, ins) }
}

// TestCarryIntent: the carry-over rule's cases, each edit named. The
// replica edits from the accepted draft; others edit the rebased copy of
// it; the carry puts the replica's net intent on theirs.
func TestCarryIntent(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		accepted, local, theirs []step
		one, many               []string
		marks                   map[string]marks.Mark // "question/option/criterion"
		text                    string
		carried                 int // values carry makes again on theirs
	}{{
		// The case rapid found (TestCarryProperty), edit for edit.
		name: "a deselect of a keeps b chosen by another",
		accepted: []step{choose("one", "a", false), choose("one", "a", false), choose("one", "a", false),
			choose("one", "a", true), splice(0, 0, "a")},
		local:  []step{choose("one", "a", false), choose("one", "a", false), choose("one", "a", false), choose("one", "a", false)},
		theirs: []step{choose("one", "b", true)},
		one:    []string{"b"}, text: "a",
		carried: 0,
	}, {
		name:     "a deselect of a they kept",
		accepted: []step{choose("one", "a", true)},
		local:    []step{choose("one", "a", false)},
		theirs:   []step{mark("one", "b", "x", marks.Yes)},
		one:      nil, marks: map[string]marks.Mark{"one/b/x": marks.Yes},
		carried: 1,
	}, {
		name:     "a deselect of a they deselected too",
		accepted: []step{choose("one", "a", true)},
		local:    []step{choose("one", "a", false)},
		theirs:   []step{choose("one", "a", false)},
		one:      nil,
		carried:  0,
	}, {
		name:     "a select of c replaces b chosen by another",
		accepted: []step{choose("one", "a", true)},
		local:    []step{choose("one", "c", true)},
		theirs:   []step{choose("one", "b", true)},
		one:      []string{"c"},
		carried:  1,
	}, {
		name:    "a select from none replaces b chosen by another",
		local:   []step{choose("one", "c", true)},
		theirs:  []step{choose("one", "b", true)},
		one:     []string{"c"},
		carried: 1,
	}, {
		name:     "b selected then deselected, from a, nets a deselect of a",
		accepted: []step{choose("one", "a", true)},
		local:    []step{choose("one", "b", true), choose("one", "b", false)},
		theirs:   []step{choose("one", "c", true)},
		one:      []string{"c"},
		carried:  0,
	}, {
		name:     "the latest select counts: a deselect then c",
		accepted: []step{choose("one", "a", true)},
		local:    []step{choose("one", "a", false), choose("one", "c", true)},
		theirs:   []step{choose("one", "b", true)},
		one:      []string{"c"},
		carried:  1,
	}, {
		name:     "no net change: a deselected and selected again",
		accepted: []step{choose("one", "a", true)},
		local:    []step{choose("one", "a", false), choose("one", "a", true)},
		theirs:   []step{choose("one", "b", true)},
		one:      []string{"b"},
		carried:  0,
	}, {
		name:     "a select of what they selected too",
		accepted: []step{choose("one", "a", true)},
		local:    []step{choose("one", "b", true)},
		theirs:   []step{choose("one", "b", true)},
		one:      []string{"b"},
		carried:  1,
	}, {
		name:     "multiple: each option on its own",
		accepted: []step{choose("many", "a", true), choose("many", "b", true)},
		local:    []step{choose("many", "a", false), choose("many", "c", true)},
		theirs:   []step{choose("many", "b", false), choose("many", "a", true), choose("one", "a", true)},
		one:      []string{"a"}, many: []string{"c"},
		carried: 2,
	}, {
		name:     "multiple: a deselect keeps the others' selections",
		accepted: []step{choose("many", "a", true)},
		local:    []step{choose("many", "a", false)},
		theirs:   []step{choose("many", "b", true)},
		many:     []string{"b"},
		carried:  1,
	}, {
		name:     "marks: the cells the replica set or cleared, the others theirs",
		accepted: []step{mark("one", "a", "x", marks.Yes), mark("one", "b", "y", marks.No)},
		local:    []step{mark("one", "a", "x", marks.Partly), mark("one", "b", "y", marks.Cleared)},
		theirs: []step{mark("one", "a", "x", marks.No), mark("one", "b", "y", marks.Yes),
			mark("one", "c", "x", marks.Yes), mark("many", "a", "x", marks.No)},
		marks: map[string]marks.Mark{"one/a/x": marks.Partly, "one/b/y": marks.Cleared,
			"one/c/x": marks.Yes, "many/a/x": marks.No},
		carried: 2,
	}, {
		name:     "text: the replica's splice moves with theirs",
		accepted: []step{splice(0, 0, "hello world")},
		local:    []step{splice(5, 0, " brave")},
		theirs:   []step{splice(0, 0, "Oh, ")},
		text:     "Oh, hello brave world",
		carried:  1,
	}, {
		// The replica's edit reached the server before its rebase.
		name:     "text: theirs already reads as the replica's",
		accepted: []step{splice(0, 0, "hello world")},
		local:    []step{splice(5, 0, " brave")},
		theirs:   []step{splice(5, 0, " brave")},
		text:     "hello brave world",
		carried:  0,
	}, {
		name:    "text: two insertions at one point, the replica's after",
		local:   []step{splice(0, 0, "new")},
		theirs:  []step{splice(0, 0, "other")},
		text:    "othernew",
		carried: 1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(d *crdt.Doc, steps []step) {
				for _, s := range steps {
					if err := s(d); err != nil {
						t.Fatal(err)
					}
				}
			}
			old := newShaped(t)
			run(old, tc.accepted)
			base := old.Heads()
			accepted, err := old.Draft()
			if err != nil {
				t.Fatal(err)
			}
			to := newShaped(t)
			copyDraft(t, accepted, to)
			run(old, tc.local)
			run(to, tc.theirs)
			n, err := carry(old, base, to)
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.carried {
				t.Errorf("carried %d values, want %d", n, tc.carried)
			}
			got, err := to.Draft()
			if err != nil {
				t.Fatal(err)
			}
			if g := got.Questions["one"].Choices; !slices.Equal(g, tc.one) {
				t.Errorf("single choice %v, want %v", g, tc.one)
			}
			if g := got.Questions["many"].Choices; !slices.Equal(g, tc.many) {
				t.Errorf("multiple choice %v, want %v", g, tc.many)
			}
			for key, want := range tc.marks {
				if g := markOf(got, key); g != want {
					t.Errorf("cell %s: %q, want %q", key, g, want)
				}
			}
			if g := got.Questions["note"].Text; g != tc.text {
				t.Errorf("text %q, want %q", g, tc.text)
			}
		})
	}
}

// TestCarrySkipsWhatTheRebaseHolds: an edit the server accepted before it
// rebased, whose reply the replica never got (its connection dropped), is
// in the rebased document already; the carry-over makes only the later
// local edit, never that one a second time.
func TestCarrySkipsWhatTheRebaseHolds(t *testing.T) {
	srv := newShaped(t)
	if err := srv.SetText("note", "hello"); err != nil {
		t.Fatal(err)
	}
	old, err := srv.Fork("")
	if err != nil {
		t.Fatal(err)
	}
	accepted := old.Heads()
	if err := old.SpliceText("note", 5, 0, " world"); err != nil { // sent, accepted, reply lost
		t.Fatal(err)
	}
	sent, err := old.ChangesSince(accepted)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.ApplyChanges(sent); err != nil {
		t.Fatal(err)
	}
	if err := srv.SpliceText("note", 0, 0, "> "); err != nil { // another member, after it
		t.Fatal(err)
	}
	if err := old.SpliceText("note", 11, 0, "!"); err != nil { // not sent yet
		t.Fatal(err)
	}
	rebased, err := srv.Rebase()
	if err != nil {
		t.Fatal(err)
	}
	// The server rebased again, after another edit, before the replica
	// came back: the second clock still names the first's writers.
	twice, err := rebased.Fork("")
	if err != nil {
		t.Fatal(err)
	}
	if err := twice.SpliceText("note", 0, 0, "#"); err != nil {
		t.Fatal(err)
	}
	if twice, err = twice.Rebase(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		rebased *crdt.Doc
		base    crdt.Heads
		want    string
	}{
		{"from the rebase's clock", rebased, carryBase(old, accepted, rebased), "> hello world!"},
		{"from the clock of a second rebase", twice, carryBase(old, accepted, twice), "#> hello world!"},
		// Without the clock the accepted edit would be made again.
		{"from the accepted heads alone", rebased, accepted, "> hello world world!"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to, err := crdt.Load(tc.rebased.Save(), nil, crdt.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(to.RebaseClock()) == 0 {
				t.Fatal("the rebased document carries no clock")
			}
			if _, err := carry(old, tc.base, to); err != nil {
				t.Fatal(err)
			}
			d, err := to.Draft()
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Questions["note"].Text; got != tc.want {
				t.Fatalf("text %q, want %q", got, tc.want)
			}
		})
	}
}

// TestResplicedKeepsTheirEditsElsewhere: when the replica's edit and up to
// five edits of others lie apart (a character at least between any two),
// the carried splice gives the text both would give made one after the
// other. Every character is distinct, so that each edit has one place.
func TestResplicedKeepsTheirEditsElsewhere(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := make([]rune, rapid.IntRange(8, 200).Draw(t, "length"))
		for i := range base {
			base[i] = rune(0x4e00 + i)
		}
		fresh := rune(0x3041)
		word := func(label string) []rune {
			w := make([]rune, rapid.IntRange(0, 3).Draw(t, label))
			for i := range w {
				w[i], fresh = fresh, fresh+1
			}
			return w
		}
		mp := rapid.IntRange(2, len(base)-3).Draw(t, "at")
		md := rapid.IntRange(0, min(2, len(base)-mp-2)).Draw(t, "del")
		all := []textEdit{{at: mp, del: md, ins: word("ins")}}
		for i := range rapid.IntRange(1, 5).Draw(t, "theirs") {
			at := rapid.IntRange(0, len(base)).Draw(t, fmt.Sprint("their at ", i))
			del := rapid.IntRange(0, min(2, len(base)-at)).Draw(t, fmt.Sprint("their del ", i))
			if slices.ContainsFunc(all, func(e textEdit) bool { return at <= e.at+e.del+1 && e.at <= at+del+1 }) {
				continue
			}
			all = append(all, textEdit{at: at, del: del, ins: word(fmt.Sprint("their ins ", i))})
		}
		apply := func(es []textEdit) string {
			out := slices.Clone(base)
			es = slices.Clone(es)
			slices.SortFunc(es, func(x, y textEdit) int { return y.at - x.at })
			for _, e := range es {
				out = slices.Replace(out, e.at, e.at+e.del, e.ins...)
			}
			return string(out)
		}
		local, target, want := apply(all[:1]), apply(all[1:]), apply(all)
		if local == string(base) {
			return
		}
		pos, del, ins := respliced(string(base), local, target)
		r := []rune(target)
		if got := string(r[:pos]) + ins + string(r[pos+del:]); got != want {
			t.Fatalf("respliced(%q, %q, %q) gives %q, want %q", string(base), local, target, got, want)
		}
	})
}

// BenchmarkCarry is what a replica pays to carry two unaccepted edits onto
// a rebased document, by the number of changes in the history it carries
// them from (half set a mark, half rewrite a written answer). The server
// rebases a busy decision at about 450 changes of this kind.
func BenchmarkCarry(b *testing.B) {
	for _, history := range []int{250, 1000, 4000} {
		b.Run(fmt.Sprint(history), func(b *testing.B) {
			old := newShaped(b)
			for i := range history / 2 {
				cell := [...]string{"a", "b", "c"}[i%3]
				if err := old.SetMark("one", cell, "x", marks.All[i%3]); err != nil {
					b.Fatal(err)
				}
				if err := old.SetText("note", fmt.Sprintf("%d:%d\n", i%16, i)); err != nil {
					b.Fatal(err)
				}
			}
			base := old.Heads()
			if err := old.SetMark("one", "b", "y", marks.Yes); err != nil {
				b.Fatal(err)
			}
			if err := old.SpliceText("note", 0, 0, "mine "); err != nil {
				b.Fatal(err)
			}
			rebased, err := old.ForkAt(base, "")
			if err != nil {
				b.Fatal(err)
			}
			if rebased, err = rebased.Rebase(); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				to, err := rebased.Fork("")
				if err != nil {
					b.Fatal(err)
				}
				if n, err := carry(old, base, to); err != nil || n != 2 {
					b.Fatal(n, err)
				}
			}
		})
	}
}
