package replica

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
)

// TestUndoProperty: random sessions of three members, each typing only
// characters of its own alphabet (few letters, so repeated, or a fresh
// character each time), setting marks and choices, undoing and redoing,
// exchanging changes now and then, and now and then taking a rebased
// document, driven through the undo engine on documents merged in
// memory. After every undo and redo:
//
//   - it changed only its group's value, and only if that held the
//     member's value (else it is skipped and changes nothing); a text
//     group is never skipped, removes only characters the group inserted
//     (its member's) and inserts only those it deleted (undo), or the
//     other way round (redo), and leaves every other character in order;
//   - an undo of a burst nothing happened after gives the text the burst
//     began with;
//   - an undo followed at once by a redo (or a redo by an undo) gives the
//     member's draft exactly as it was;
//   - a member's groups made with nothing arriving, all undone, give the
//     draft as before them, all redone as after them (text put back by
//     one undo counting for the group it came from);
//   - a rebase empties the stacks;
//
// and once every change is everywhere, the drafts are equal.
// It runs undoChecks sessions unless -rapid.checks or RAPID_CHECKS says
// otherwise.
func TestUndoProperty(t *testing.T) {
	testutil.WithRapidChecks(undoChecks, func() { rapid.Check(t, undoProperty) })
}

// undoChecks is how many sessions TestUndoProperty runs by default: about
// 7 s under -race.
const undoChecks = 400

func undoProperty(rt *rapid.T) {
	s := newUndoSession(rt, rapid.Bool().Draw(rt, "fresh characters"))
	for range rapid.IntRange(1, 60).Draw(rt, "steps") {
		s.step()
	}
	syncAll(s.ms...)
	first := s.ms[0].draft()
	for _, m := range s.ms[1:] {
		if d := m.draft(); !d.Equal(first) {
			rt.Fatalf("%s's draft %+v differs from %s's %+v", m.name, d.Questions, s.ms[0].name, first.Questions)
		}
	}
}

type undoSession struct {
	t     *rapid.T
	ms    []*member
	fresh bool
	// alphabets are the letters each member types, when not fresh; next
	// the next fresh one of each.
	alphabets [][]rune
	next      []rune
	// began holds the text before each burst never undone.
	began  map[*undoEntry]string
	undone map[*undoEntry]bool
	seen   map[*undoEntry]bool
}

func newUndoSession(t *rapid.T, fresh bool) *undoSession {
	return &undoSession{
		t: t, ms: members(t, "ana", "ben", "cleo"), fresh: fresh,
		alphabets: [][]rune{[]rune("aá"), []rune("bβ"), []rune("c😀")},
		next:      []rune{0x4E00, 0x5E00, 0x6E00},
		began:     map[*undoEntry]string{},
		undone:    map[*undoEntry]bool{},
		seen:      map[*undoEntry]bool{},
	}
}

// owns reports whether member i types r.
func (s *undoSession) owns(i int, r rune) bool {
	if s.fresh {
		return r >= 0x4E00+rune(i)*0x1000 && r < 0x5E00+rune(i)*0x1000
	}
	return slices.Contains(s.alphabets[i], r)
}

func (s *undoSession) word(i int) string {
	t := s.t
	n := rapid.IntRange(0, 3).Draw(t, "letters")
	out := make([]rune, n)
	for k := range out {
		if s.fresh {
			out[k] = s.next[i]
			s.next[i]++
		} else {
			out[k] = rapid.SampledFrom(s.alphabets[i]).Draw(t, "letter")
		}
	}
	return string(out)
}

func (s *undoSession) step() {
	t := s.t
	i := rapid.IntRange(0, len(s.ms)-1).Draw(t, "who")
	m := s.ms[i]
	m.now = m.now.Add(rapid.SampledFrom([]time.Duration{10 * time.Millisecond, 400 * time.Millisecond, 1500 * time.Millisecond}).Draw(t, "pause"))
	// Few cells and options, so that members meet on them.
	switch op := rapid.IntRange(0, 23).Draw(t, "op"); {
	case op < 2:
		m.edit(localEdit{kind: groupMark, q: rapid.SampledFrom([]string{"one", "many"}).Draw(t, "q"),
			option: rapid.SampledFrom([]string{"a", "b"}).Draw(t, "option"), criterion: "x",
			mark: rapid.SampledFrom(allMarks).Draw(t, "mark")})
	case op < 4:
		m.edit(localEdit{kind: groupChoice, q: rapid.SampledFrom([]string{"one", "many"}).Draw(t, "q"),
			option: rapid.SampledFrom([]string{"a", "b"}).Draw(t, "option"), on: rapid.Bool().Draw(t, "on")})
	case op < 7:
		s.splice(i)
	case op < 9:
		// A typing burst, right away undone now and then.
		for range rapid.IntRange(1, 6).Draw(t, "keys") {
			s.splice(i)
			m.now = m.now.Add(50 * time.Millisecond)
		}
		if rapid.Bool().Draw(t, "undo the burst") {
			s.revert(i, false, true)
		}
	case op < 13:
		s.revert(i, false, true)
	case op < 15:
		s.revert(i, true, true)
	case op < 19:
		to := rapid.IntRange(0, len(s.ms)-1).Draw(t, "to")
		if to != i {
			m.syncTo(s.ms[to])
		}
	case op < 21:
		syncAll(s.ms...)
	case op < 23:
		s.quiet(i)
	default:
		if rapid.IntRange(0, 3).Draw(t, "rebase?") == 0 {
			s.rebase()
		}
	}
}

// quiet has member i edit with nothing arriving meanwhile, in several
// groups, then undo all of them (the draft must be as before), redo them
// all (as after) and undo them again.
func (s *undoSession) quiet(i int) {
	t, m := s.t, s.ms[i]
	m.pause() // no burst from before goes on
	older := map[*undoEntry]bool{}
	for _, e := range m.log.undo {
		older[e] = true
	}
	before := m.draft()
	for range rapid.IntRange(1, 8).Draw(t, "quiet edits") {
		m.now = m.now.Add(rapid.SampledFrom([]time.Duration{10 * time.Millisecond, 1500 * time.Millisecond}).Draw(t, "quiet pause"))
		switch rapid.IntRange(0, 3).Draw(t, "quiet op") {
		case 0:
			m.edit(localEdit{kind: groupMark, q: "one", option: rapid.SampledFrom([]string{"a", "b"}).Draw(t, "option"), criterion: "x",
				mark: rapid.SampledFrom(allMarks).Draw(t, "mark")})
		default:
			s.splice(i)
		}
	}
	after := m.draft()
	if len(m.log.undo) >= maxUndo {
		return // older groups were forgotten
	}
	n := 0
	for e := m.log.top(false); e != nil && !older[e]; e = m.log.top(false) {
		s.undone[e] = true
		if res := m.undo(); !res.Done {
			t.Fatalf("undoing %+v with nothing arriving was skipped", res.Group)
		}
		n++
	}
	// A cell never marked and one cleared read alike.
	if d := m.draft(); !sameAnswer(d, before) {
		t.Fatalf("undoing %d groups gives %+v, want %+v", n, d.Questions, before.Questions)
	}
	for range n {
		m.redo()
	}
	if d := m.draft(); !sameAnswer(d, after) {
		t.Fatalf("redoing %d groups gives %+v, want %+v", n, d.Questions, after.Questions)
	}
	for range n {
		m.undo()
	}
	if d := m.draft(); !sameAnswer(d, before) {
		t.Fatalf("undoing %d groups again gives %+v, want %+v", n, d.Questions, before.Questions)
	}
}

// splice makes a text edit of member i's, often where its burst goes on.
func (s *undoSession) splice(i int) {
	t, m := s.t, s.ms[i]
	text := []rune(m.text())
	lo, hi := 0, len(text)
	if b := m.log.current("note", m.now); b != nil && rapid.Bool().Draw(t, "on the burst") {
		lo, hi = max(0, b.start-1), min(len(text), b.start+len(b.ins)+1)
	}
	pos := rapid.IntRange(lo, hi).Draw(t, "pos")
	del := rapid.IntRange(0, min(3, len(text)-pos)).Draw(t, "del")
	top := m.log.top(false)
	m.splice(pos, del, s.word(i))
	// A new burst; not an older group left on top by a burst that typed
	// and took back.
	if e := m.log.top(false); e != top && e != nil && e.group.Kind == groupText && !s.seen[e] {
		s.began[e] = string(text)
	}
	for _, e := range m.log.undo {
		s.seen[e] = true
	}
}

// revert undoes (redo: redoes) member i's top group and checks what it
// did; once, at once, it may revert that again.
func (s *undoSession) revert(i int, redo, again bool) {
	t, m := s.t, s.ms[i]
	e := m.log.top(redo)
	// Nothing happened since the group: the document is where it left it.
	quiet := e != nil && e.text != nil && m.doc.Heads().Equal(e.text.At)
	before := m.draft()
	res, err := m.step(redo)
	if e == nil {
		if want := map[bool]error{false: ErrNothingToUndo, true: ErrNothingToRedo}[redo]; !errors.Is(err, want) {
			t.Fatalf("reverting nothing: %v", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	after := m.draft()
	if res.Group != e.group {
		t.Fatalf("reverted %+v, the top was %+v", res.Group, e.group)
	}
	g := e.group
	want, set := g.To, g.From
	if redo {
		want, set = set, want
	}
	if g.Kind == groupText {
		if !res.Done {
			t.Fatalf("a text group skipped: %+v", res)
		}
		if !sameBut(before, after, "note", "", "") {
			t.Fatalf("%+v changed other values: %+v → %+v", g, before.Questions, after.Questions)
		}
		for _, r := range g.To {
			if !s.owns(i, r) {
				t.Fatalf("%s's text group %+v holds %q, not %s's", m.name, g, r, m.name)
			}
		}
		if err := checkText(before.Questions["note"].Text, after.Questions["note"].Text, want, set); err != nil {
			t.Fatalf("reverting %+v: %v", g, err)
		}
		if text, ok := s.began[e]; ok && !redo && !s.undone[e] && quiet && after.Questions["note"].Text != text {
			t.Fatalf("undoing %+v with nothing after it gives %q, want %q", g, after.Questions["note"].Text, text)
		}
	} else {
		was, now := valueIn(before, g), valueIn(after, g)
		if res.Done != (was == want) {
			t.Fatalf("%+v: done %v, but the value was %q and the group left %q", g, res.Done, was, want)
		}
		if !sameBut(before, after, g.Question, g.Kind, g.Cell) {
			t.Fatalf("%+v changed other values: %+v → %+v", g, before.Questions, after.Questions)
		}
		if res.Done && now != set || !res.Done && !after.Equal(before) {
			t.Fatalf("%+v done %v: %q → %q", g, res.Done, was, now)
		}
	}
	if !redo {
		s.undone[e] = true
	}
	if res.Done && again && rapid.Bool().Draw(t, "at once back") {
		s.revert(i, !redo, false)
		if back := m.draft(); !back.Equal(before) {
			t.Fatalf("%+v reverted and back gives %+v, want %+v", g, back.Questions, before.Questions)
		}
	}
}

// rebase gives every member the rebased document of the changes all hold.
func (s *undoSession) rebase() {
	t := s.t
	syncAll(s.ms...)
	r, err := s.ms[0].doc.Rebase()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range s.ms {
		if m.doc, err = r.Fork(""); err != nil {
			t.Fatal(err)
		}
		m.log.clear(clearRebase) // as Client.rebase does
		if st := m.log.state(m.now); st.Undo != nil || st.Redo != nil || st.Cleared != clearRebase {
			t.Fatalf("state after a rebase %+v", st)
		}
		if _, err := m.step(false); !errors.Is(err, ErrNothingToUndo) {
			t.Fatalf("undo after a rebase: %v", err)
		}
	}
}

// valueIn reads a mark or choice group's value in a draft.
func valueIn(d crdt.Draft, g UndoGroup) string {
	q := d.Questions[g.Question]
	switch {
	case g.Kind == groupMark:
		return string(q.Marks[g.Cell])
	case g.Cell == "":
		return first(q.Choices)
	default:
		return chosenValue(slices.Contains(q.Choices, g.Cell))
	}
}

// sameBut reports whether two drafts hold the same values but for one:
// question q's text (kind empty), or one of its marks or choices.
func sameBut(a, b crdt.Draft, q, kind, cell string) bool {
	for id, x := range a.Questions {
		y := b.Questions[id]
		if id != q {
			if !x.Equal(y) {
				return false
			}
			continue
		}
		xm, ym := maps.Clone(x.Marks), maps.Clone(y.Marks)
		xc, yc := slices.Clone(x.Choices), slices.Clone(y.Choices)
		switch kind {
		case groupMark:
			// An unmarked cell and a cleared one read alike.
			delete(xm, cell)
			delete(ym, cell)
		case groupChoice:
			if cell == "" {
				xc, yc = nil, nil
			} else {
				xc = slices.DeleteFunc(xc, func(o string) bool { return o == cell })
				yc = slices.DeleteFunc(yc, func(o string) bool { return o == cell })
			}
		}
		if (kind != "" && x.Text != y.Text) || !slices.Equal(xc, yc) || !maps.Equal(xm, ym) {
			return false
		}
	}
	return len(a.Questions) == len(b.Questions)
}

// checkText checks a text group's revert: it removed only characters of
// want (what the group left) and inserted only characters of set (what
// it reverts to), and kept every other character in its order.
func checkText(before, after, want, set string) error {
	removed, added := count(before), count(after)
	for r, n := range count(after) {
		removed[r] -= n
	}
	for r, n := range count(before) {
		added[r] -= n
	}
	w, s := count(want), count(set)
	for r, n := range removed {
		if n > 0 && n > w[r] {
			return fmt.Errorf("removed %d × %q from %q (now %q)", n, r, before, after)
		}
	}
	for r, n := range added {
		if n > 0 && n > s[r] {
			return fmt.Errorf("inserted %d × %q into %q (now %q)", n, r, before, after)
		}
	}
	others := func(text string) string {
		return string(slices.DeleteFunc([]rune(text), func(r rune) bool { return w[r] > 0 || s[r] > 0 }))
	}
	if others(before) != others(after) {
		return fmt.Errorf("moved others' characters: %q → %q", before, after)
	}
	return nil
}

func count(s string) map[rune]int {
	out := map[rune]int{}
	for _, r := range s {
		out[r]++
	}
	return out
}

// TestUndoPropertyChecks: the text check above catches a wrong revert.
func TestUndoPropertyChecks(t *testing.T) {
	for _, tc := range []struct {
		name                string
		before, after, w, s string
		ok                  bool
	}{
		{"an undo", "xabY", "xY", "ab", "", true},
		{"an undo of a deletion", "xY", "xabY", "", "ab", true},
		{"removes another's character", "abZ", "a", "ab", "", false},
		{"inserts another's character", "Z", "xZ", "ab", "a", false},
		{"moves another's character", "ZaY", "YZ", "a", "", false},
		{"removes too many", "aa", "", "a", "", false},
	} {
		if err := checkText(tc.before, tc.after, tc.w, tc.s); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
