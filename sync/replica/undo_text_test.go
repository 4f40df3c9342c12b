package replica

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
)

// member is one member's replica driven through the undo engine alone,
// on a crdt.Doc merged with the others' in memory, on a clock of its own.
type member struct {
	t    fataler
	name string
	doc  *crdt.Doc
	log  *undoLog
	now  time.Time
}

// members returns n members holding one shaped document (newShaped), each
// under its own actor.
func members(t fataler, names ...string) []*member {
	base := newShaped(t)
	out := make([]*member, len(names))
	for i, n := range names {
		d, err := base.Fork("")
		if err != nil {
			t.Fatal(err)
		}
		out[i] = &member{t: t, name: n, doc: d, log: &undoLog{}, now: time.Unix(1_700_000_000, 0)}
		out[i].log.observe(question.Open, d.Generation())
	}
	return out
}

func (m *member) edit(e localEdit) {
	if _, err := m.log.edit(m.doc, e, m.now, m.name); err != nil {
		m.t.Fatal(err)
	}
	m.now = m.now.Add(100 * time.Millisecond)
}

func (m *member) splice(pos, del int, ins string) {
	m.edit(localEdit{kind: groupText, q: "note", pos: pos, del: del, ins: ins})
}

// typeAt types s at pos one character at a time, as a person does.
func (m *member) typeAt(pos int, s string) {
	for i, r := range []rune(s) {
		m.splice(pos+i, 0, string(r))
	}
}

// backspace deletes n characters before pos, one at a time.
func (m *member) backspace(pos, n int) {
	for i := range n {
		m.splice(pos-1-i, 1, "")
	}
}

func (m *member) pause() { m.now = m.now.Add(burstPause) }

func (m *member) text() string {
	s, err := m.doc.Text("note")
	if err != nil {
		m.t.Fatal(err)
	}
	return s
}

func (m *member) draft() crdt.Draft {
	d, err := m.doc.Draft()
	if err != nil {
		m.t.Fatal(err)
	}
	return d
}

// step undoes (redo: redoes) the top group, as Client.Undo does for all
// but a why.
func (m *member) step(redo bool) (UndoResult, error) {
	res, _, why, err := m.log.step(m.doc, redo, m.name)
	if why != nil {
		m.t.Fatal("a why group in an engine test")
	}
	return res, err
}

func (m *member) undo() UndoResult {
	res, err := m.step(false)
	if err != nil {
		m.t.Fatal(err)
	}
	return res
}

func (m *member) redo() UndoResult {
	res, err := m.step(true)
	if err != nil {
		m.t.Fatal(err)
	}
	return res
}

// syncTo gives to every change of m's that it lacks, as a frame applied
// by the client does (a burst whose text it alters ends).
func (m *member) syncTo(to *member) {
	w := to.log.watchText(to.doc, to.now)
	if err := to.doc.Merge(m.doc); err != nil {
		m.t.Fatal(err)
	}
	to.log.settleText(to.doc, w)
}

func syncAll(ms ...*member) {
	for range 2 {
		for _, a := range ms {
			for _, b := range ms {
				if a != b {
					a.syncTo(b)
				}
			}
		}
	}
}

func wantText(t *testing.T, m *member, want string) {
	t.Helper()
	if got := m.text(); got != want {
		t.Fatalf("%s's text %q, want %q", m.name, got, want)
	}
}

func wantGroup(t *testing.T, got UndoGroup, want UndoGroup) {
	t.Helper()
	if got != want {
		t.Fatalf("group %+v, want %+v", got, want)
	}
}

func TestUndoTypingBurst(t *testing.T) {
	ms := members(t, "ana")
	ana := ms[0]
	ana.typeAt(0, "hello")
	wantText(t, ana, "hello")
	res := ana.undo()
	wantGroup(t, res.Group, UndoGroup{Kind: groupText, Question: "note", To: "hello"})
	if !res.Done || res.By != "ana" {
		t.Fatalf("undo %+v", res)
	}
	wantText(t, ana, "")
	if _, err := ana.step(false); !errors.Is(err, ErrNothingToUndo) {
		t.Fatalf("a second undo: %v", err)
	}
	ana.redo()
	wantText(t, ana, "hello")
	if _, err := ana.step(true); !errors.Is(err, ErrNothingToRedo) {
		t.Fatalf("a second redo: %v", err)
	}
	ana.undo()
	wantText(t, ana, "")
}

// TestBurstBoundaries: a pause, an edit elsewhere in the text, another
// kind of edit, or typing from elsewhere arriving starts a new group.
func TestBurstBoundaries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		between func(ana, ben *member)
		second  func(ana *member)
		want    []string // the text after each undo
	}{
		{"one burst", func(ana, ben *member) {}, func(ana *member) { ana.typeAt(4, "cd") }, []string{"----"}},
		{"typing at its start", func(ana, ben *member) {}, func(ana *member) { ana.typeAt(2, "cd") }, []string{"----"}},
		{"a pause", func(ana, ben *member) { ana.pause() }, func(ana *member) { ana.typeAt(4, "cd") }, []string{"--ab--", "----"}},
		{"elsewhere", func(ana, ben *member) {}, func(ana *member) { ana.typeAt(0, "cd") }, []string{"--ab--", "----"}},
		{"a mark", func(ana, ben *member) {
			ana.edit(localEdit{kind: groupMark, q: "one", option: "a", criterion: "x", mark: marks.Yes})
		}, func(ana *member) { ana.typeAt(4, "cd") }, []string{"--ab--", "--ab--", "----"}},
		{"typing arriving", func(ana, ben *member) {
			ana.syncTo(ben)
			ben.splice(4, 0, "Z")
			ben.syncTo(ana)
		}, func(ana *member) { ana.typeAt(5, "cd") }, []string{"--abZ--", "--Z--"}},
		{"other changes arriving", func(ana, ben *member) {
			ana.syncTo(ben)
			ben.edit(localEdit{kind: groupMark, q: "one", option: "a", criterion: "x", mark: marks.No})
			ben.syncTo(ana)
		}, func(ana *member) { ana.typeAt(4, "cd") }, []string{"----"}},
		{"a change that changes nothing", func(ana, ben *member) {
			ana.splice(2, 0, "")
		}, func(ana *member) { ana.typeAt(4, "cd") }, []string{"----"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := members(t, "ana", "ben")
			ana, ben := ms[0], ms[1]
			ben.splice(0, 0, "----")
			ben.syncTo(ana)
			ana.typeAt(2, "ab")
			tc.between(ana, ben)
			tc.second(ana)
			for _, want := range tc.want {
				ana.undo()
				wantText(t, ana, want)
			}
			if st := ana.log.state(ana.now); st.Undo != nil {
				t.Fatalf("a group left: %+v", st.Undo)
			}
		})
	}
}

// TestBurstDeletesBackIntoOriginals: deleting back into the burst and past
// it, and typing over, is one group; the undo restores the originals in
// place, repeated characters and all.
func TestBurstDeletesBackIntoOriginals(t *testing.T) {
	ms := members(t, "ana", "ben")
	ana, ben := ms[0], ms[1]
	ben.typeAt(0, "aaa bbb")
	ben.syncTo(ana)
	ana.typeAt(3, "XY")       // aaaXY bbb
	ana.backspace(5, 4)       // aX bbb: Y, X, then two a's
	ana.typeAt(1, "a")        // aa bbb
	ana.splice(2, 2, "Q")     // aaQbb: forward over the space and a b
	wantText(t, ana, "aaQbb") //
	res := ana.undo()         //
	wantGroup(t, res.Group, UndoGroup{Kind: groupText, Question: "note", From: "aa b", To: "aQ"})
	wantText(t, ana, "aaa bbb")
	ana.redo()
	wantText(t, ana, "aaQbb")
	// Ben, who saw none of it, takes it all.
	ana.syncTo(ben)
	wantText(t, ben, "aaQbb")
}

// TestUndoTextAmongOthers: others' typing inside and around the burst's
// span, arrived before the undo, stays; what the burst inserted goes,
// what it deleted comes back after the character that preceded it; a
// redo then restores the text exactly.
func TestUndoTextAmongOthers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		start    string
		burst    func(ana *member)
		ben      func(ben *member)
		undone   string
		fromTo   [2]string
		benAfter string // ben's text once he has the undo
	}{
		{"typing around", "", func(ana *member) { ana.typeAt(0, "abc") }, func(ben *member) {
			ben.splice(3, 0, ">")
			ben.splice(0, 0, "<")
		}, "<>", [2]string{"", "abc"}, "<>"},
		{"typing inside", "", func(ana *member) { ana.typeAt(0, "abc") }, func(ben *member) { ben.splice(2, 0, "Z") }, "Z", [2]string{"", "abc"}, "Z"},
		{"some of it deleted", "", func(ana *member) { ana.typeAt(0, "abc") }, func(ben *member) { ben.splice(1, 1, "") }, "", [2]string{"", "abc"}, ""},
		{"a deletion, others typing after it", "one two three", func(ana *member) { ana.backspace(7, 4) }, func(ben *member) {
			ben.splice(9, 0, "!")  // one three!
			ben.splice(0, 0, "1 ") // 1 one three!
		}, "1 one two three!", [2]string{" two", ""}, "1 one two three!"},
		{"a deletion, its neighbour deleted", "one two three", func(ana *member) { ana.backspace(7, 4) }, func(ben *member) {
			ben.splice(0, 3, "ONE")
		}, "ONE two three", [2]string{" two", ""}, "ONE two three"},
		{"repeated characters", "aaaa", func(ana *member) { ana.typeAt(2, "aa") }, func(ben *member) {
			ben.splice(1, 1, "")  // an original a: a A A a a
			ben.splice(3, 0, "b") // after ana's second a: a A A b a a
		}, "abaa", [2]string{"", "aa"}, "abaa"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := members(t, "ana", "ben")
			ana, ben := ms[0], ms[1]
			if tc.start != "" {
				ben.splice(0, 0, tc.start)
				ben.syncTo(ana)
			}
			tc.burst(ana)
			ana.syncTo(ben)
			tc.ben(ben)
			ben.syncTo(ana)
			before := ana.draft()
			res := ana.undo()
			if !res.Done || res.Group.From != tc.fromTo[0] || res.Group.To != tc.fromTo[1] {
				t.Fatalf("undo %+v", res)
			}
			wantText(t, ana, tc.undone)
			ana.syncTo(ben)
			wantText(t, ben, tc.benAfter)
			ana.redo()
			if after := ana.draft(); !after.Equal(before) {
				t.Fatalf("redo gives %q, want %q as before the undo", after.Questions["note"].Text, before.Questions["note"].Text)
			}
			ana.undo()
			wantText(t, ana, tc.undone)
			syncAll(ana, ben)
			if a, b := ana.draft(), ben.draft(); !a.Equal(b) {
				t.Fatalf("replicas differ: %q and %q", a.Questions["note"].Text, b.Questions["note"].Text)
			}
		})
	}
}

// TestRedoAfterOthersTyped: a redo made once others typed since the undo
// keeps their typing, and puts the burst back where it was.
func TestRedoAfterOthersTyped(t *testing.T) {
	ms := members(t, "ana", "ben")
	ana, ben := ms[0], ms[1]
	ben.splice(0, 0, "one three")
	ben.syncTo(ana)
	ana.typeAt(4, "two ")
	ana.undo()
	ana.syncTo(ben)
	ben.splice(0, 0, ">")
	ben.splice(10, 0, "<")
	ben.syncTo(ana)
	wantText(t, ana, ">one three<")
	ana.redo()
	wantText(t, ana, ">one two three<")
}

// TestIdentityNotValues: which characters an undo deletes is a matter of
// identity, not of value: ben types right after ana's own 'a' and right
// after an original one, concurrently with her undo; his characters end
// where he put them.
func TestIdentityNotValues(t *testing.T) {
	ms := members(t, "ana", "ben")
	ana, ben := ms[0], ms[1]
	ben.splice(0, 0, "aaaa")
	ben.syncTo(ana)
	ana.typeAt(2, "a") // aa[a]aa
	ana.syncTo(ben)
	ben.splice(0, 0, "x") // xaa[a]aa
	ben.syncTo(ana)       //
	ana.undo()            // deletes its own a, wherever it is
	ben.splice(4, 0, "y") // right after ana's a
	ben.splice(3, 0, "z") // right after the second original a
	syncAll(ana, ben)     //
	wantText(t, ana, "xaazyaa")
}

func TestUndoMarksAndChoices(t *testing.T) {
	mark := func(q, o, c string, m marks.Mark) localEdit {
		return localEdit{kind: groupMark, q: q, option: o, criterion: c, mark: m}
	}
	choose := func(q, o string, on bool) localEdit {
		return localEdit{kind: groupChoice, q: q, option: o, on: on}
	}
	for _, tc := range []struct {
		name   string
		first  []localEdit // before the group
		group  localEdit
		want   UndoGroup
		ben    *localEdit // ben's edit between the group and the undo
		done   bool
		by     string
		undone func(d crdt.Draft) bool
	}{
		{"a mark", nil, mark("one", "a", "x", marks.Yes), UndoGroup{Kind: groupMark, Question: "one", Cell: "a/x", To: "yes"}, nil, true, "ana",
			func(d crdt.Draft) bool { return d.Questions["one"].Marks["a/x"] == marks.Cleared }},
		{"a mark replaced", []localEdit{mark("one", "a", "x", marks.No)}, mark("one", "a", "x", marks.Partly),
			UndoGroup{Kind: groupMark, Question: "one", Cell: "a/x", From: "no", To: "partly"}, nil, true, "ana",
			func(d crdt.Draft) bool { return d.Questions["one"].Marks["a/x"] == marks.No }},
		{"a mark cleared", []localEdit{mark("one", "b", "y", marks.No)}, mark("one", "b", "y", marks.Cleared),
			UndoGroup{Kind: groupMark, Question: "one", Cell: "b/y", From: "no"}, nil, true, "ana",
			func(d crdt.Draft) bool { return d.Questions["one"].Marks["b/y"] == marks.No }},
		{"a mark changed since", nil, mark("one", "a", "x", marks.Yes), UndoGroup{Kind: groupMark, Question: "one", Cell: "a/x", To: "yes"},
			&localEdit{kind: groupMark, q: "one", option: "a", criterion: "x", mark: marks.No}, false, "ben",
			func(d crdt.Draft) bool { return d.Questions["one"].Marks["a/x"] == marks.No }},
		{"a single choice", []localEdit{choose("one", "a", true)}, choose("one", "b", true),
			UndoGroup{Kind: groupChoice, Question: "one", From: "a", To: "b"}, nil, true, "ana",
			func(d crdt.Draft) bool { return slices.Equal(d.Questions["one"].Choices, []string{"a"}) }},
		{"a single choice from none", nil, choose("one", "c", true),
			UndoGroup{Kind: groupChoice, Question: "one", To: "c"}, nil, true, "ana",
			func(d crdt.Draft) bool { return len(d.Questions["one"].Choices) == 0 }},
		{"a single choice deselected", []localEdit{choose("one", "c", true)}, choose("one", "c", false),
			UndoGroup{Kind: groupChoice, Question: "one", From: "c"}, nil, true, "ana",
			func(d crdt.Draft) bool { return slices.Equal(d.Questions["one"].Choices, []string{"c"}) }},
		{"a single choice changed since", nil, choose("one", "c", true), UndoGroup{Kind: groupChoice, Question: "one", To: "c"},
			&localEdit{kind: groupChoice, q: "one", option: "a", on: true}, false, "ben",
			func(d crdt.Draft) bool { return slices.Equal(d.Questions["one"].Choices, []string{"a"}) }},
		{"a multiple choice", []localEdit{choose("many", "a", true)}, choose("many", "b", true),
			UndoGroup{Kind: groupChoice, Question: "many", Cell: "b", To: "chosen"}, nil, true, "ana",
			func(d crdt.Draft) bool { return slices.Equal(d.Questions["many"].Choices, []string{"a"}) }},
		{"a multiple choice, another option changed since", nil, choose("many", "b", true),
			UndoGroup{Kind: groupChoice, Question: "many", Cell: "b", To: "chosen"},
			&localEdit{kind: groupChoice, q: "many", option: "a", on: true}, true, "ana",
			func(d crdt.Draft) bool { return slices.Equal(d.Questions["many"].Choices, []string{"a"}) }},
		{"a multiple choice deselected since", nil, choose("many", "b", true),
			UndoGroup{Kind: groupChoice, Question: "many", Cell: "b", To: "chosen"},
			&localEdit{kind: groupChoice, q: "many", option: "b", on: false}, false, "ben",
			func(d crdt.Draft) bool { return len(d.Questions["many"].Choices) == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := members(t, "ana", "ben")
			ana, ben := ms[0], ms[1]
			for _, e := range tc.first {
				ana.edit(e)
			}
			ana.pause()
			ana.edit(tc.group)
			if st := ana.log.state(ana.now); st.Undo == nil || *st.Undo != tc.want || st.Redo != nil {
				t.Fatalf("state %+v", st)
			}
			if tc.ben != nil {
				ana.syncTo(ben)
				ben.edit(*tc.ben)
				ben.syncTo(ana)
				// The server's cells name who set each value.
				after := ben.draft()
				cell := question.CellProvenance{Generation: 1, Question: tc.ben.q, By: "ben"}
				if tc.ben.kind == groupMark {
					cell.Kind, cell.Cell, cell.Value = question.CellMark, marks.Key(tc.ben.option, tc.ben.criterion), string(tc.ben.mark)
				} else if tc.ben.q == "many" {
					cell.Kind, cell.Cell, cell.Value = question.CellChoice, tc.ben.option, chosenValue(slices.Contains(after.Questions["many"].Choices, tc.ben.option))
				} else {
					cell.Kind, cell.Value = question.CellChoice, first(after.Questions["one"].Choices)
				}
				ana.log.noteCells([]question.CellProvenance{cell})
			}
			before := ana.draft()
			res := ana.undo()
			wantGroup(t, res.Group, tc.want)
			if res.Done != tc.done || res.By != tc.by {
				t.Fatalf("undo %+v, want done %v by %q", res, tc.done, tc.by)
			}
			if after := ana.draft(); !tc.undone(after) {
				t.Fatalf("after the undo: %+v", after.Questions)
			}
			st := ana.log.state(ana.now)
			if !tc.done {
				if !ana.draft().Equal(before) {
					t.Fatal("a skipped undo changed the draft")
				}
				if st.Redo != nil {
					t.Fatalf("a skipped group went to the redo stack: %+v", st)
				}
				if st.Undo != nil {
					t.Fatalf("the skipped group stays: %+v", st.Undo)
				}
				return
			}
			if st.Redo == nil || *st.Redo != tc.want {
				t.Fatalf("redo stack %+v", st)
			}
			ana.redo()
			if after := ana.draft(); !after.Equal(before) {
				t.Fatalf("redo gives %+v, want %+v", after.Questions, before.Questions)
			}
		})
	}
}

func TestSkippedByUnknown(t *testing.T) {
	ms := members(t, "ana", "ben")
	ana, ben := ms[0], ms[1]
	ana.edit(localEdit{kind: groupMark, q: "one", option: "a", criterion: "x", mark: marks.Yes})
	ana.syncTo(ben)
	ben.edit(localEdit{kind: groupMark, q: "one", option: "a", criterion: "x", mark: marks.No})
	ben.syncTo(ana) // a catch-up: no cells say who
	if res := ana.undo(); res.Done || res.By != "" {
		t.Fatalf("undo %+v: want skipped, by unknown", res)
	}
	// Cells that name a setter of another value do not count.
	ana.edit(localEdit{kind: groupMark, q: "one", option: "b", criterion: "x", mark: marks.Yes})
	ana.syncTo(ben)
	ben.edit(localEdit{kind: groupMark, q: "one", option: "b", criterion: "x", mark: marks.No})
	ben.syncTo(ana)
	ana.log.noteCells([]question.CellProvenance{{Generation: 1, Question: "one", Kind: question.CellMark, Cell: "b/x", Value: "partly", By: "cleo"}})
	if res := ana.undo(); res.Done || res.By != "" {
		t.Fatalf("undo %+v: want skipped, by unknown", res)
	}
}

// TestNewGroupEmptiesRedo, and the stack keeps the 100 newest groups.
func TestUndoStacksBounded(t *testing.T) {
	ms := members(t, "ana")
	ana := ms[0]
	ms2 := []marks.Mark{marks.Yes, marks.No}
	for i := range maxUndo + 20 {
		ana.edit(localEdit{kind: groupMark, q: "one", option: "a", criterion: "x", mark: ms2[i%2]})
	}
	n := 0
	for {
		if _, err := ana.step(false); errors.Is(err, ErrNothingToUndo) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != maxUndo {
		t.Fatalf("%d groups undone, want %d", n, maxUndo)
	}
	ana.redo()
	ana.edit(localEdit{kind: groupMark, q: "one", option: "b", criterion: "x", mark: marks.Yes})
	if _, err := ana.step(true); !errors.Is(err, ErrNothingToRedo) {
		t.Fatalf("redo after a new group: %v", err)
	}
	// Typed and taken back is no group.
	ana.undo()
	ana.pause()
	ana.typeAt(0, "ab")
	ana.backspace(2, 2)
	if st := ana.log.state(ana.now); st.Undo == nil || st.Undo.Kind != groupMark {
		t.Fatalf("state %+v: want the mark group on top", st)
	}
}

func TestUndoCleared(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(l *undoLog)
		want string
	}{
		{"save", func(l *undoLog) { l.observe(question.Settled, 1) }, clearSave},
		{"discard", func(l *undoLog) { l.observe(question.Discarded, 1) }, clearDiscard},
		{"reopen", func(l *undoLog) { l.observe(question.Open, 2) }, clearReopen},
		{"reopen seen in the document first", func(l *undoLog) { l.observe("", 2) }, clearReopen},
		{"rebase", func(l *undoLog) { l.clear(clearRebase) }, clearRebase},
		{"reset", func(l *undoLog) { l.clear(clearReset) }, clearReset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ana := members(t, "ana")[0]
			ana.typeAt(0, "ab")
			ana.edit(localEdit{kind: groupMark, q: "one", option: "a", criterion: "x", mark: marks.Yes})
			ana.undo()
			tc.do(ana.log)
			if st := ana.log.state(ana.now); st.Undo != nil || st.Redo != nil || st.Cleared != tc.want {
				t.Fatalf("state %+v, want empty, cleared by %q", st, tc.want)
			}
			if _, err := ana.step(false); !errors.Is(err, ErrNothingToUndo) {
				t.Fatalf("undo: %v", err)
			}
			// The next group says nothing of it.
			ana.edit(localEdit{kind: groupMark, q: "one", option: "b", criterion: "x", mark: marks.Yes})
			if st := ana.log.state(ana.now); st.Cleared != "" || st.Undo == nil {
				t.Fatalf("state after a new group %+v", st)
			}
		})
	}
	// Neither a settled decision's own updates nor an open one's clear.
	ana := members(t, "ana")[0]
	ana.edit(localEdit{kind: groupMark, q: "one", option: "a", criterion: "x", mark: marks.Yes})
	ana.log.observe(question.Open, 1)
	ana.log.observe("", 1)
	if st := ana.log.state(ana.now); st.Undo == nil || st.Cleared != "" {
		t.Fatalf("state %+v", st)
	}
}

// TestUndoLogStored: the stacks read back as written, whole or with a
// burst's top group carried alone, and work restored.
func TestUndoLogStored(t *testing.T) {
	ana := members(t, "ana")[0]
	ana.edit(localEdit{kind: groupMark, q: "one", option: "a", criterion: "x", mark: marks.Yes})
	ana.typeAt(0, "abc")
	ana.pause()
	ana.typeAt(3, "de")
	all, top := ana.log.changes()
	if all == nil || top != nil {
		t.Fatalf("changes after new groups: %v %v", all, top)
	}
	ana.log.written()
	ana.splice(5, 0, "f") // the burst goes on
	all2, top2 := ana.log.changes()
	if all2 != nil || top2 == nil || top2.To != "def" {
		t.Fatalf("changes within a burst: %v %+v", all2, top2)
	}
	same := func(a, b *undoLog) {
		t.Helper()
		x, _ := json.Marshal(a.saved())
		y, _ := json.Marshal(b.saved())
		if string(x) != string(y) {
			t.Fatalf("restored %s, want %s", x, y)
		}
	}
	var back undoLog
	if err := back.restore(replayUndo(replayUndo(nil, all, nil), nil, top2)); err != nil {
		t.Fatal(err)
	}
	same(&back, ana.log)
	ana.log.written()
	ana.undo()
	all3, _ := ana.log.changes()
	back = undoLog{}
	if err := back.restore(all3); err != nil {
		t.Fatal(err)
	}
	same(&back, ana.log)
	// Restored, the stacks work.
	ana.log = &back
	ana.redo()
	wantText(t, ana, "abcdef")
	ana.undo()
	ana.undo()
	wantText(t, ana, "")
	ana.undo()
	if d := ana.draft(); d.Questions["one"].Marks["a/x"] != marks.Cleared {
		t.Fatalf("mark after the undo %q", d.Questions["one"].Marks["a/x"])
	}
	for _, bad := range []*savedUndo{
		{Undo: []savedGroup{{UndoGroup: UndoGroup{Kind: "bogus"}}}},
		{Undo: []savedGroup{{UndoGroup: UndoGroup{Kind: groupText}, At: []string{"zz"}}}},
		{Redo: []savedGroup{{UndoGroup: UndoGroup{Kind: groupText}, Del: [][2]int{{3, 1}, {2, 1}}}}},
	} {
		var l undoLog
		if err := l.restore(bad); err == nil {
			t.Fatalf("restored %+v", bad)
		}
	}
}

// TestUndoAcrossCopies: the characters an undo puts back are new ones;
// the groups they belong to take them for theirs, so undoing several
// groups and redoing them gives each text back, stored stacks too.
func TestUndoAcrossCopies(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(ana *member)
		groups int
		start  string
	}{
		{"a burst deleting the end of an older one", func(ana *member) {
			ana.typeAt(0, "hello")
			ana.pause()
			ana.backspace(5, 2)
		}, 2, ""},
		{"typing before an older burst", func(ana *member) {
			ana.typeAt(0, "world")
			ana.pause()
			ana.typeAt(0, "hello ")
		}, 2, ""},
		{"typing inside an older burst", func(ana *member) {
			ana.typeAt(0, "ab")
			ana.pause()
			ana.typeAt(1, "X")
		}, 2, ""},
		{"deleting what an older burst deleted around", func(ana *member) {
			ana.backspace(4, 2) // one|two -> o|two
			ana.pause()
			ana.typeAt(2, "NE")
			ana.pause()
			ana.backspace(4, 3)
		}, 3, "one two"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, stored := range []bool{false, true} {
				ms := members(t, "ana", "ben")
				ana, ben := ms[0], ms[1]
				if tc.start != "" {
					ben.splice(0, 0, tc.start)
					ben.syncTo(ana)
				}
				tc.edit(ana)
				after := ana.text()
				for range tc.groups {
					ana.undo()
					if stored {
						var back undoLog
						if err := back.restore(ana.log.saved()); err != nil {
							t.Fatal(err)
						}
						ana.log = &back
					}
				}
				wantText(t, ana, tc.start)
				for range tc.groups {
					ana.redo()
				}
				wantText(t, ana, after)
				for range tc.groups {
					ana.undo()
				}
				wantText(t, ana, tc.start)
				syncAll(ana, ben)
				wantText(t, ben, tc.start)
			}
		})
	}
}
