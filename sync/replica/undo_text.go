package replica

import (
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/accord-crdt/accord/crdt"
)

// A typing burst is a run of text edits of one question, each within
// burstPause of the one before and touching the span the burst has
// changed so far. No change from elsewhere alters that text while the
// burst is open (one that does ends it: see watchText), so the burst's
// own splices say exactly which characters of the text, as it is when the
// burst ends, are the ones it inserted: a contiguous span, at start.
// Every original character it deleted was next to that span when it went
// (an edit touches the span or starts a new burst), so together they are
// one stretch of the text the burst began with, which would sit at start
// again. Identity comes from these positions, never from comparing texts,
// so repeated characters are told apart.
//
// The undo of a group is a undoText: deletions of characters and
// insertions between the rest, in the coordinates of the text as the
// document was at some heads. It is made on a copy of the document at
// those heads (crdt.Doc.SpliceAt), so it acts on those very characters
// wherever others' edits have moved them. Its own effect on the replica
// is then located (crdt.Doc.Locate) to build the edit that reverts it,
// in the coordinates of the replica right after it: the redo of an undo
// (and the undo of a redo) restores the text exactly, others' typing in
// and around the span included.

// burst is the open typing burst: the top undo group while another edit
// may join it.
type burst struct {
	entry *undoEntry
	q     string
	// start is where the burst's span begins in the text now; ins is what
	// the span holds (all of it typed in the burst), del the original
	// characters the burst deleted, in their order.
	start    int
	ins, del []rune
	last     time.Time
}

// undoText is a text group's undo (or redo): delete the characters at Del
// (sorted positions) of the text as the document was at At, then make
// the insertions, in the coordinates left after the deletions.
type undoText struct {
	At  crdt.Heads
	Del []int
	Ins []insertion
}

// insertion is text to insert at Gap, a position in the text after a
// undoText's deletions. A undoText's insertions are sorted by Gap, each
// Gap once.
type insertion struct {
	Gap  int    `json:"gap"`
	Text string `json:"text"`
}

// current returns the open burst (of question q, or of any question when
// q is empty), ending it if the pause since its last edit is over.
func (l *undoLog) current(q string, now time.Time) *burst {
	b := l.burst
	if b == nil {
		return nil
	}
	if d := now.Sub(b.last); d >= burstPause || d < 0 {
		l.burst = nil
		return nil
	}
	if q != "" && b.q != q {
		return nil
	}
	return b
}

// editText applies a text edit to d and records it: in the open burst, or
// as a new group.
func (l *undoLog) editText(d *crdt.Doc, e localEdit, now time.Time) (bool, error) {
	var text []rune
	read := func() error {
		if text != nil {
			return nil
		}
		s, err := d.Text(e.q)
		text = []rune(s)
		return err
	}
	pos, del, ins := e.pos, e.del, e.ins
	if e.whole {
		if err := read(); err != nil {
			if e.ins == "" && (errors.Is(err, crdt.ErrWrongKind) || errors.Is(err, crdt.ErrNoQuestion)) {
				return false, nil // as crdt.Doc.SetText: no text to empty
			}
			return false, err
		}
		// The smallest splice, as crdt.Doc.SetText makes it.
		nu := []rune(e.ins)
		p, s := span(text, nu)
		if p == len(text) && p == len(nu) {
			return false, nil
		}
		pos, del, ins = p, len(text)-p-s, string(nu[p:len(nu)-s])
	}
	b := l.current(e.q, now)
	touches := b != nil && pos <= b.start+len(b.ins) && pos+del >= b.start
	if del > 0 && (!touches || pos < b.start || pos+del > b.start+len(b.ins)) {
		// Original characters go: the group must know them.
		if err := read(); err != nil {
			return false, err
		}
	}
	heads := d.Heads()
	if err := d.SpliceText(e.q, pos, del, ins); err != nil {
		return false, err
	}
	after := d.Heads()
	if after.Equal(heads) {
		return false, nil
	}
	if !touches {
		b = &burst{entry: &undoEntry{group: UndoGroup{Kind: groupText, Question: e.q}, gen: d.Generation()}, q: e.q, start: pos}
		l.push(b.entry)
		l.burst = b
	}
	b.splice(pos, del, []rune(ins), text)
	b.last = now
	if len(b.ins) == 0 && len(b.del) == 0 {
		// Typed and taken back: the burst changed nothing, and is no group.
		l.undo = l.undo[:len(l.undo)-1]
		l.burst = nil
		return true, nil
	}
	b.entry.group.From, b.entry.group.To = string(b.del), string(b.ins)
	t := &undoText{At: after}
	for i := range b.ins {
		t.Del = append(t.Del, b.start+i)
	}
	if len(b.del) > 0 {
		t.Ins = []insertion{{Gap: b.start, Text: string(b.del)}}
	}
	b.entry.text = t
	l.topDirty = true
	return true, nil
}

// splice takes one edit of the burst's text into the burst: delete del
// characters at pos, insert ins. text is the text before it, needed when
// the edit deletes original characters beyond the span.
func (b *burst) splice(pos, del int, ins, text []rune) {
	end := b.start + len(b.ins)
	var left, right []rune
	if pos < b.start {
		left = text[pos:b.start]
	}
	if pos+del > end {
		right = text[end : pos+del]
	}
	lo, hi := max(pos, b.start)-b.start, min(pos+del, end)-b.start
	b.ins = slices.Concat(b.ins[:lo], ins, b.ins[hi:])
	b.del = slices.Concat(left, b.del, right)
	b.start = min(pos, b.start)
}

// textWatch is what watchText saw of the open burst's text.
type textWatch struct {
	q, text string
	on      bool
}

// watchText reads the open burst's text before changes from elsewhere
// are applied to d; settleText ends the burst if they altered it.
func (l *undoLog) watchText(d *crdt.Doc, now time.Time) textWatch {
	b := l.current("", now)
	if b == nil {
		return textWatch{}
	}
	s, err := d.Text(b.q)
	if err != nil {
		l.burst = nil
		return textWatch{}
	}
	return textWatch{q: b.q, text: s, on: true}
}

func (l *undoLog) settleText(d *crdt.Doc, w textWatch) {
	if !w.on || l.burst == nil || l.burst.q != w.q {
		return
	}
	if s, err := d.Text(w.q); err != nil || s != w.text {
		l.burst = nil
	}
}

// applyText makes e's text edit on d, as of its heads, and returns the
// edit that reverts what it did to d: at d's heads right after it, delete
// what it inserted and insert again, each where it was, what it deleted
// of the text as d had it. changed reports whether d changed (also when
// err is set).
func (l *undoLog) applyText(d *crdt.Doc, e *undoEntry) (changed bool, opposite *undoText, err error) {
	t, q := e.text, e.group.Question
	if t == nil || !d.Has(t.At) {
		return false, nil, errors.New("the text group's revision is not in the document")
	}
	// Which of the characters to delete are still there, and where.
	alive, err := d.Locate(t.At, q, t.Del)
	if err != nil {
		return false, nil, err
	}
	var before []rune
	if len(alive) > 0 {
		s, err := d.Text(q)
		if err != nil {
			return false, nil, err
		}
		before = []rune(s)
	}
	splices, inserted := t.splices()
	h, err := d.SpliceAt(t.At, q, splices)
	if err != nil {
		return false, nil, err
	}
	opposite = &undoText{At: d.Heads()}
	if h.Equal(t.At) {
		return false, opposite, nil
	}
	if opposite.Del, err = d.Locate(h, q, inserted); err != nil {
		return true, nil, fmt.Errorf("locating the undone text: %w", err)
	}
	// The text without what the edit inserted is the text before it
	// without what it deleted: a deleted character goes back where it sat
	// among the rest.
	for i, p := range alive {
		gap := p - i
		if n := len(opposite.Ins); n > 0 && opposite.Ins[n-1].Gap == gap {
			opposite.Ins[n-1].Text += string(before[p])
		} else {
			opposite.Ins = append(opposite.Ins, insertion{Gap: gap, Text: string(before[p])})
		}
	}
	return true, opposite, nil
}

// splices returns t as splices applied in order, and the positions the
// inserted characters have after them.
func (t *undoText) splices() (out []crdt.Splice, inserted []int) {
	for i := len(t.Del); i > 0; {
		j := i - 1
		for j > 0 && t.Del[j-1] == t.Del[j]-1 {
			j--
		}
		out = append(out, crdt.Splice{Pos: t.Del[j], Del: i - j})
		i = j
	}
	off := 0
	for _, in := range t.Ins {
		p := in.Gap + off
		out = append(out, crdt.Splice{Pos: p, Ins: in.Text})
		n := utf8.RuneCountInString(in.Text)
		for k := range n {
			inserted = append(inserted, p+k)
		}
		off += n
	}
	return out, inserted
}

// runs encodes sorted positions as runs (position, length).
func runs(pos []int) [][2]int {
	var out [][2]int
	for _, p := range pos {
		if n := len(out); n > 0 && out[n-1][0]+out[n-1][1] == p {
			out[n-1][1]++
		} else {
			out = append(out, [2]int{p, 1})
		}
	}
	return out
}

// positions decodes runs, checking that they are sorted and apart.
func positions(rs [][2]int) ([]int, error) {
	var out []int
	next := 0
	for _, r := range rs {
		if r[0] < next || r[1] <= 0 || r[1] > crdt.MaxTextRunes {
			return nil, fmt.Errorf("malformed runs %v", rs)
		}
		for k := range r[1] {
			out = append(out, r[0]+k)
		}
		next = r[0] + r[1] + 1
	}
	return out, nil
}
