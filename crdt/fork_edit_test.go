package crdt

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/marks"
)

// textOf reads the written answer qWhy of d.
func textOf(tb fataler, d *Doc) string {
	tb.Helper()
	s, err := d.Text(qWhy)
	ok(tb, err)
	return s
}

// pair returns a member replica holding s, and a second replica of the
// same revision: a peer whose edits are concurrent to the member's.
func pair(t *testing.T, s string) (me, peer *Doc, at Heads) {
	t.Helper()
	me = replicaOf(t, newTestDoc(t))
	ok(t, me.SetText(qWhy, s))
	peer = replicaOf(t, me)
	return me, peer, me.Heads()
}

// applyFrom applies every change of from that to lacks.
func applyFrom(t *testing.T, to, from *Doc) {
	t.Helper()
	batch, err := from.ChangesSince(nil)
	ok(t, err)
	_, err = to.ApplyChanges(batch)
	ok(t, err)
}

func TestText(t *testing.T) {
	d := newTestDoc(t)
	ok(t, d.SetText(qWhy, "héllo"))
	if got := textOf(t, d); got != "héllo" {
		t.Fatalf("Text = %q", got)
	}
	if _, err := d.Text(qPick); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("Text of a choice question: %v", err)
	}
	if _, err := d.Text("nope"); !errors.Is(err, ErrNoQuestion) {
		t.Fatalf("Text of a missing question: %v", err)
	}
}

// TestSpliceAtActsOnCharacters: an edit made as of an earlier revision
// deletes the characters that revision showed, wherever they are now;
// characters others typed since, inside the span too, stay; the inserted
// text follows the character it followed then.
func TestSpliceAtActsOnCharacters(t *testing.T) {
	for _, tc := range []struct {
		name  string
		peer  func(p *Doc) error
		edits []Splice
		want  string
	}{
		{"no one else", func(p *Doc) error { return nil }, []Splice{{Pos: 6, Del: 5, Ins: "there"}}, "hello there"},
		{"before and after", func(p *Doc) error {
			if err := p.SpliceText(qWhy, 11, 0, "!"); err != nil {
				return err
			}
			return p.SpliceText(qWhy, 0, 1, "")
		}, []Splice{{Pos: 6, Del: 5, Ins: "there"}}, "ello there!"},
		{"inside the span", func(p *Doc) error { return p.SpliceText(qWhy, 9, 0, "X") }, []Splice{{Pos: 6, Del: 5, Ins: "there"}}, "hello thereX"},
		{"deleted already", func(p *Doc) error { return p.SpliceText(qWhy, 5, 6, "") }, []Splice{{Pos: 6, Del: 5}}, "hello"},
		{"its anchor deleted", func(p *Doc) error { return p.SpliceText(qWhy, 4, 2, "") }, []Splice{{Pos: 6, Ins: "big "}}, "hellbig world"},
		{"several splices", func(p *Doc) error { return p.SpliceText(qWhy, 11, 0, "!") }, []Splice{{Pos: 6, Del: 5}, {Pos: 0, Del: 1, Ins: "J"}}, "Jello !"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			me, peer, at := pair(t, "hello world")
			ok(t, tc.peer(peer))
			applyFrom(t, me, peer)
			h, err := me.SpliceAt(at, qWhy, tc.edits)
			ok(t, err)
			if got := textOf(t, me); got != tc.want {
				t.Fatalf("text %q, want %q", got, tc.want)
			}
			if len(h) != 1 || !me.Has(h) || h.Equal(at) {
				t.Fatalf("heads %v: want the one new change", h)
			}
			// The change is an ordinary one: the peer takes it.
			applyFrom(t, peer, me)
			if got := textOf(t, peer); got != tc.want {
				t.Fatalf("peer's text %q, want %q", got, tc.want)
			}
			// Forked at the new change, the text is the edit's alone.
			f, err := me.ForkAt(h, "")
			ok(t, err)
			if got, want := textOf(t, f), spliced("hello world", tc.edits); got != want {
				t.Fatalf("text at the returned heads %q, want %q", got, want)
			}
		})
	}
}

// spliced applies splices to s.
func spliced(s string, splices []Splice) string {
	r := []rune(s)
	for _, sp := range splices {
		r = slices.Concat(r[:sp.Pos], []rune(sp.Ins), r[sp.Pos+sp.Del:])
	}
	return string(r)
}

func TestSpliceAtRefuses(t *testing.T) {
	me, _, at := pair(t, "abc")
	other := replicaOf(t, newTestDoc(t))
	for _, tc := range []struct {
		name  string
		heads Heads
		q     string
		s     []Splice
		want  error
	}{
		{"unknown heads", other.Heads(), qWhy, []Splice{{Pos: 0, Ins: "x"}}, ErrMissingDeps},
		{"a choice question", at, qPick, []Splice{{Pos: 0, Ins: "x"}}, ErrWrongKind},
		{"no such question", at, "nope", []Splice{{Pos: 0, Ins: "x"}}, ErrNoQuestion},
		{"outside the text", at, qWhy, []Splice{{Pos: 2, Del: 2}}, ErrInvalid},
		{"too long", at, qWhy, []Splice{{Pos: 0, Ins: strings.Repeat("x", MaxTextRunes)}}, ErrTooLarge},
	} {
		before := me.Heads()
		if _, err := me.SpliceAt(tc.heads, tc.q, tc.s); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if !me.Heads().Equal(before) {
			t.Errorf("%s: the document changed", tc.name)
		}
	}
	h, err := me.SpliceAt(at, qWhy, []Splice{{Pos: 1}})
	ok(t, err)
	if !h.Equal(at) || !me.Heads().Equal(at) {
		t.Fatalf("an empty splice made a change: %v", h)
	}
}

func TestLocate(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		peer func(p *Doc) error
		pos  []int
		want []int
	}{
		{"nothing since", "abcd", func(p *Doc) error { return nil }, []int{1, 3}, []int{1, 3}},
		{"moved", "abcd", func(p *Doc) error { return p.SpliceText(qWhy, 0, 0, "xy") }, []int{1, 3}, []int{3, 5}},
		{"one deleted", "abcd", func(p *Doc) error { return p.SpliceText(qWhy, 1, 1, "") }, []int{1, 3}, []int{2}},
		// Repeated characters: which 'a' survived is the history's to say.
		{"repeated, one deleted", "aaaa", func(p *Doc) error { return p.SpliceText(qWhy, 1, 1, "") }, []int{0, 2}, []int{0, 1}},
		{"repeated, replaced", "aaaa", func(p *Doc) error {
			if err := p.SpliceText(qWhy, 1, 1, ""); err != nil {
				return err
			}
			return p.SpliceText(qWhy, 0, 0, "a")
		}, []int{1, 2}, []int{2}},
		{"repeated, typed between", "aaaa", func(p *Doc) error { return p.SpliceText(qWhy, 2, 0, "aa") }, []int{1, 2, 3}, []int{1, 4, 5}},
		{"all deleted", "abab", func(p *Doc) error { return p.SpliceText(qWhy, 0, 4, "baba") }, []int{0, 1, 2, 3}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			me, peer, at := pair(t, tc.text)
			ok(t, tc.peer(peer))
			applyFrom(t, me, peer)
			ok(t, me.SpliceText(qWhy, 0, 0, "")) // nothing: Locate reads, never writes
			before := me.Heads()
			got, err := me.Locate(at, qWhy, tc.pos)
			ok(t, err)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Locate(%v) = %v, want %v (text now %q)", tc.pos, got, tc.want, textOf(t, me))
			}
			if !me.Heads().Equal(before) {
				t.Fatal("Locate changed the document")
			}
		})
	}
	me, _, at := pair(t, "ab")
	if _, err := me.Locate(at, qWhy, []int{1, 0}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unsorted positions: %v", err)
	}
	if _, err := me.Locate(at, qWhy, []int{2}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a position outside the text: %v", err)
	}
}

// TestLocateProperty: two worlds run the same edits by the same actors,
// one typing characters that are all different, the other the same
// characters mapped onto two letters. automerge orders characters by
// their operations alone, so both worlds lay out the same characters
// alike; Locate in the repeated world must name what the unique world
// shows plainly.
func TestLocateProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		actors := []ActorID{NewActorID(), NewActorID(), NewActorID()}
		type world struct{ docs []*Doc }
		build := func() world {
			base, err := New(Options{Now: testNow, Actor: actors[0]})
			ok(rt, err)
			ok(rt, base.AddQuestion(QuestionShape{ID: qWhy, Written: true}))
			ok(rt, base.StartGeneration(1))
			w := world{docs: []*Doc{base}}
			for _, a := range actors[1:] {
				f, err := base.Fork(a)
				ok(rt, err)
				w.docs = append(w.docs, f)
			}
			return w
		}
		uniq, rep := build(), build()
		next := rune(0x4E00) // every character typed in the unique world differs
		repOf := func(r rune) string { return string("ab"[int(r)%2]) }
		var at Heads
		var atText []rune
		steps := rapid.IntRange(1, 30).Draw(rt, "steps")
		for i := range steps {
			who := rapid.IntRange(0, 2).Draw(rt, "who")
			switch op := rapid.IntRange(0, 3).Draw(rt, "op"); {
			case op <= 1:
				n := len([]rune(textOf(rt, uniq.docs[who])))
				pos := rapid.IntRange(0, n).Draw(rt, "pos")
				del := rapid.IntRange(0, min(3, n-pos)).Draw(rt, "del")
				k := rapid.IntRange(0, 3).Draw(rt, "ins")
				var u, r strings.Builder
				for range k {
					u.WriteRune(next)
					r.WriteString(repOf(next))
					next++
				}
				ok(rt, uniq.docs[who].SpliceText(qWhy, pos, del, u.String()))
				ok(rt, rep.docs[who].SpliceText(qWhy, pos, del, r.String()))
			case op == 2:
				to := rapid.IntRange(0, 2).Draw(rt, "to")
				if to != who {
					ok(rt, uniq.docs[to].Merge(uniq.docs[who]))
					ok(rt, rep.docs[to].Merge(rep.docs[who]))
				}
			default:
				if at == nil || rapid.Bool().Draw(rt, "move mark") {
					at, atText = rep.docs[0].Heads(), []rune(textOf(rt, uniq.docs[0]))
					_ = i
				}
			}
		}
		if at == nil {
			return
		}
		d := rapid.IntRange(0, 2).Draw(rt, "reader")
		if !rep.docs[d].Has(at) {
			ok(rt, rep.docs[d].Merge(rep.docs[0]))
			ok(rt, uniq.docs[d].Merge(uniq.docs[0]))
		}
		var pos []int
		for p := range atText {
			if rapid.Bool().Draw(rt, fmt.Sprintf("locate %d", p)) {
				pos = append(pos, p)
			}
		}
		now := []rune(textOf(rt, uniq.docs[d]))
		var want []int
		for _, p := range pos {
			if i := slices.Index(now, atText[p]); i >= 0 {
				want = append(want, i)
			}
		}
		slices.Sort(want)
		got, err := rep.docs[d].Locate(at, qWhy, pos)
		ok(rt, err)
		if !slices.Equal(got, want) {
			rt.Fatalf("Locate(%v) = %v, want %v; unique text then %q, now %q; repeated now %q",
				pos, got, want, string(atText), string(now), textOf(rt, rep.docs[d]))
		}
	})
}

func TestMarkOfAndChosen(t *testing.T) {
	d := newTestDoc(t)
	read := func() (marks.Mark, []string, []string) {
		t.Helper()
		m, err := d.MarkOf(qPick, "o1", "c2")
		ok(t, err)
		one, multiple, err := d.Chosen(qPick)
		ok(t, err)
		if multiple {
			t.Fatal("a single choice reads as multiple")
		}
		many, multiple, err := d.Chosen(qMany)
		ok(t, err)
		if !multiple {
			t.Fatal("a multiple choice reads as single")
		}
		slices.Sort(many)
		return m, one, many
	}
	if m, one, many := read(); m != marks.Cleared || one != nil || many != nil {
		t.Fatalf("fresh draft: %q %v %v", m, one, many)
	}
	ok(t, d.SetMark(qPick, "o1", "c2", marks.Partly))
	ok(t, d.Choose(qPick, "o3", true))
	ok(t, d.Choose(qMany, "o2", true))
	ok(t, d.Choose(qMany, "o1", true))
	if m, one, many := read(); m != marks.Partly || !slices.Equal(one, []string{"o3"}) || !slices.Equal(many, []string{"o1", "o2"}) {
		t.Fatalf("after edits: %q %v %v", m, one, many)
	}
	ok(t, d.SetMark(qPick, "o1", "c2", marks.Cleared))
	ok(t, d.Choose(qPick, "o3", false))
	ok(t, d.Choose(qMany, "o2", false))
	if m, one, many := read(); m != marks.Cleared || one != nil || !slices.Equal(many, []string{"o1"}) {
		t.Fatalf("after clearing: %q %v %v", m, one, many)
	}
	if _, err := d.MarkOf(qWhy, "o1", "c1"); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("MarkOf a written question: %v", err)
	}
	if _, _, err := d.Chosen("nope"); !errors.Is(err, ErrNoQuestion) {
		t.Fatalf("Chosen of a missing question: %v", err)
	}
}
