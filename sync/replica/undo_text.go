package replica

import (
	"errors"
	"fmt"
	"slices"
	"strings"
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
// The undo of a group is an undoText: deletions of characters and
// insertions between the rest, in the coordinates of the text as the
// document was at some heads (for a burst, where it ended). It acts on
// those very characters wherever others' edits have moved them: they are
// found in the replica's text by the document's history
// (crdt.Doc.Locate), deleted where they are now, and each insertion goes
// right after the character that preceded it, where that character is
// now; if someone deleted that one, the insertion is made on a copy of
// the document at the group's heads and merged back (crdt.Doc.SpliceAt),
// after its deleted place. Every change is made on a fork under a fresh
// actor. The edit's own effect is then located to build the edit that
// reverts it, in the coordinates of the replica right after it: the redo
// of an undo (and the undo of a redo) restores the text exactly, others'
// typing in and around the span included.
//
// A character put back is a new one, a copy. When the characters an edit
// puts back are another group's (a burst deleting the end of an older
// one, then undone; an older group's text, redone), that group's edit
// takes their copies for them: as characters it deletes too (Extra), or
// as the character its insertion follows (insertion.Copy). So undoing
// several groups and redoing them gives each text back.

// burst is the open typing burst: the top undo group while another edit
// may join it.
type burst struct {
	entry *undoEntry
	q     string
	// base are the document's heads before the burst: the original
	// characters it deleted are there, from start on.
	base crdt.Heads
	// start is where the burst's span begins in the text now; ins is what
	// the span holds (all of it typed in the burst), del the original
	// characters the burst deleted, in their order; after the character
	// before the span (0 at the start, or not read yet).
	start    int
	ins, del []rune
	after    rune
	last     time.Time
}

// undoText is a text group's undo (or redo): delete the characters at Del
// (sorted positions) of the text as the document was at At, then make
// the insertions, in the coordinates left after the deletions; and
// delete the characters of Extra too, wherever they are.
type undoText struct {
	At  crdt.Heads
	Del []int
	Ins []insertion
	// Orig are the characters the insertions put back, one for each
	// character inserted, in order: copies of them are made.
	Orig chars
	// Extra are copies of characters of Del (or of Extra) that other
	// groups' edits put back since.
	Extra []chars
}

// chars names characters of the text: at Pos (sorted) in the text as the
// document was at At.
type chars struct {
	At  crdt.Heads
	Pos []int
}

// insertion is text to insert at Gap, a position in the text after an
// undoText's deletions: after the character before Gap there, which is
// After (0 if unknown). An undoText's insertions are sorted by Gap, each
// Gap once. Copy, when set, is the newest copy of that character.
type insertion struct {
	Gap   int
	Text  string
	After rune
	Copy  *chars
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
		b = &burst{entry: &undoEntry{group: UndoGroup{Kind: groupText, Question: e.q}, gen: d.Generation()}, q: e.q, base: heads, start: pos}
		l.push(b.entry)
		l.burst = b
	}
	start := b.start
	b.splice(pos, del, []rune(ins), text)
	b.last = now
	if b.start != start {
		b.after = 0
	}
	if b.after == 0 && b.start > 0 && len(b.del) > 0 {
		// What the put back characters follow: the text before the span
		// is as it was.
		if text == nil {
			if err := read(); err != nil {
				return true, err
			}
		}
		b.after = text[b.start-1]
	}
	if len(b.ins) == 0 && len(b.del) == 0 {
		// Typed and taken back: the burst changed nothing, and is no group.
		l.undo = l.undo[:len(l.undo)-1]
		l.burst = nil
		return true, nil
	}
	b.entry.group.From, b.entry.group.To = string(b.del), string(b.ins)
	t := &undoText{At: after, Orig: chars{At: b.base}}
	for i := range b.ins {
		t.Del = append(t.Del, b.start+i)
	}
	if len(b.del) > 0 {
		t.Ins = []insertion{{Gap: b.start, Text: string(b.del), After: b.after}}
		for i := range b.del {
			t.Orig.Pos = append(t.Orig.Pos, b.start+i)
		}
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

// applyText makes e's text edit on d (see the top of this file) and
// returns the edit that reverts what it did to d: at d's heads right
// after it, delete what it inserted and insert again, each where it was,
// what it deleted of the text as d had it. changed reports whether d
// changed (also when err is set).
func (l *undoLog) applyText(d *crdt.Doc, e *undoEntry) (changed bool, opposite *undoText, err error) {
	t, q := e.text, e.group.Question
	if t == nil || !d.Has(t.At) {
		return false, nil, errors.New("the text group's revision is not in the document")
	}
	before := d.Heads()
	// The characters to delete still there, and where: the edit's own,
	// and their copies.
	all, err := d.Locate(t.At, q, t.Del)
	if err != nil {
		return false, nil, err
	}
	for _, x := range t.Extra {
		if !d.Has(x.At) {
			continue
		}
		p, err := d.Locate(x.At, q, x.Pos)
		if err != nil {
			return false, nil, err
		}
		all = append(all, p...)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	s, err := d.Text(q)
	if err != nil {
		return false, nil, err
	}
	text := []rune(s)
	// One change where the text is now: the deletions, and each insertion
	// right after the character before it (its newest copy, or itself),
	// or at the start; one at the group's heads for the insertions whose
	// character before is gone.
	now, old := &undoText{Del: all}, &undoText{}
	var nowOf, oldOf []int // the insertion of t each insertion of now, old is
	for i, in := range t.Ins {
		at, err := anchor(d, q, t, in, all)
		if err != nil {
			return false, nil, err
		}
		if at == gone {
			old.Ins = append(old.Ins, insertion{Gap: nth(in.Gap-1, t.Del) + 1, Text: in.Text})
			oldOf = append(oldOf, i)
			continue
		}
		gap := 0
		if at >= 0 {
			gap = at - countBelow(all, at) + 1
		}
		now.Ins = append(now.Ins, insertion{Gap: gap, Text: in.Text})
		nowOf = append(nowOf, i)
	}
	// Insertions anchored alike keep their order.
	order := make([]int, len(now.Ins))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return now.Ins[a].Gap - now.Ins[b].Gap })
	now.Ins, nowOf = permute(now.Ins, order), permute(nowOf, order)
	// made[i] are insertion i's characters: the change's heads and their
	// positions there, located in d once both changes are made.
	made := make([]chars, len(t.Ins))
	for _, c := range []struct {
		at crdt.Heads
		u  *undoText
		of []int
	}{{before, now, nowOf}, {t.At, old, oldOf}} {
		splices, inserted := c.u.splices()
		if len(splices) == 0 {
			continue
		}
		h, err := d.SpliceAt(c.at, q, splices)
		if err != nil {
			return changed, nil, err
		}
		if h.Equal(c.at) {
			continue
		}
		changed = true
		k := 0
		for n, in := range c.u.Ins {
			m := utf8.RuneCountInString(in.Text)
			made[c.of[n]] = chars{At: h, Pos: inserted[k : k+m]}
			k += m
		}
	}
	opposite = &undoText{At: d.Heads(), Orig: chars{At: before, Pos: all}}
	var copies []int
	for i, m := range made {
		if len(m.Pos) == 0 {
			continue
		}
		p, err := d.Locate(m.At, q, m.Pos)
		if err != nil || len(p) != len(m.Pos) {
			return changed, nil, fmt.Errorf("locating the characters put back: %v", err)
		}
		made[i].Pos = p
		copies = append(copies, p...)
	}
	opposite.Del = slices.Sorted(slices.Values(copies))
	// The text without what the edit inserted is the text before it
	// without what it deleted: a deleted character goes back where it sat
	// among the rest, after the same character.
	for i, p := range all {
		gap := p - i
		if n := len(opposite.Ins); n > 0 && opposite.Ins[n-1].Gap == gap {
			opposite.Ins[n-1].Text += string(text[p])
			continue
		}
		in := insertion{Gap: gap, Text: string(text[p])}
		if p > 0 {
			in.After = text[p-1]
		}
		opposite.Ins = append(opposite.Ins, in)
	}
	if err := l.copied(d, e, t.Orig, chars{At: opposite.At, Pos: copies}); err != nil {
		return changed, nil, fmt.Errorf("following the characters put back: %w", err)
	}
	return changed, opposite, nil
}

// gone is anchor's answer for an insertion whose character before is no
// longer in the text.
const gone = -2

// anchor returns where in d's text an insertion of t goes: after the
// character at the position returned, -1 for the start, or gone. A
// character to delete (all) does not count.
func anchor(d *crdt.Doc, q string, t *undoText, in insertion, all []int) (int, error) {
	if in.Gap == 0 {
		return -1, nil
	}
	refs := []chars{{At: t.At, Pos: []int{nth(in.Gap-1, t.Del)}}}
	if in.Copy != nil {
		refs = append([]chars{*in.Copy}, refs...)
	}
	for _, r := range refs {
		if !d.Has(r.At) {
			continue
		}
		p, err := d.Locate(r.At, q, r.Pos)
		if err != nil {
			return 0, err
		}
		if len(p) == 1 {
			if _, del := slices.BinarySearch(all, p[0]); !del {
				return p[0], nil
			}
		}
	}
	return gone, nil
}

func permute[T any](s []T, order []int) []T {
	out := make([]T, len(s))
	for i, o := range order {
		out[i] = s[o]
	}
	return out
}

// nth returns the position of the k-th (from 0) position that is not in
// skip (sorted).
func nth(k int, skip []int) int {
	p := k
	for _, s := range skip {
		if s > p {
			break
		}
		p++
	}
	return p
}

// countBelow counts the positions of sorted below p.
func countBelow(sorted []int, p int) int {
	n, _ := slices.BinarySearch(sorted, p)
	return n
}

// copied notes that the characters orig, which e's edit put back, are now
// the characters copies (one for one, in order): every other group of the
// question that deletes any of them deletes their copies too, and an
// insertion that follows one of them follows its copy.
func (l *undoLog) copied(d *crdt.Doc, e *undoEntry, orig, copies chars) error {
	if len(orig.Pos) == 0 || len(orig.Pos) != len(copies.Pos) || !d.Has(orig.At) {
		return nil
	}
	q := e.group.Question
	var frame *crdt.Doc // the document where the originals are, forked when first needed
	// find returns the copies of the characters of r that are originals.
	find := func(r chars) ([]int, error) {
		if len(r.Pos) == 0 {
			return nil, nil
		}
		if frame == nil {
			f, err := d.ForkAt(orig.At, "")
			if err != nil {
				return nil, err
			}
			frame = f
		}
		if !frame.Has(r.At) {
			return nil, nil // made after the originals were deleted
		}
		at, err := frame.Locate(r.At, q, r.Pos)
		if err != nil {
			return nil, err
		}
		var out []int
		for _, p := range at {
			if k, found := slices.BinarySearch(orig.Pos, p); found {
				out = append(out, copies.Pos[k])
			}
		}
		return out, nil
	}
	for _, stack := range [][]*undoEntry{l.undo, l.redo} {
		for _, o := range stack {
			if o == e || o.text == nil || o.group.Question != q {
				continue
			}
			if sharesRunes(o, e.text.Ins) {
				var matched []int
				for _, part := range slices.Concat([]chars{{At: o.text.At, Pos: o.text.Del}}, o.text.Extra) {
					m, err := find(part)
					if err != nil {
						return err
					}
					matched = append(matched, m...)
				}
				if len(matched) > 0 {
					slices.Sort(matched)
					o.text.Extra = append(o.text.Extra, chars{At: copies.At, Pos: slices.Compact(matched)})
				}
			}
			for i, in := range o.text.Ins {
				if in.Gap == 0 || in.After != 0 && !putsBack(e.text.Ins, in.After) {
					continue
				}
				r := chars{At: o.text.At, Pos: []int{nth(in.Gap-1, o.text.Del)}}
				if in.Copy != nil {
					r = *in.Copy
				}
				m, err := find(r)
				if err != nil {
					return err
				}
				if len(m) == 1 {
					o.text.Ins[i].Copy = &chars{At: copies.At, Pos: m}
				}
			}
		}
	}
	return nil
}

// sharesRunes reports whether the characters o deletes may be among those
// put back: a cheap test on their values before locating them. o deletes
// what its group inserted (on the undo stack) or deleted (on the redo
// stack).
func sharesRunes(o *undoEntry, put []insertion) bool {
	for _, r := range o.group.From + o.group.To {
		if putsBack(put, r) {
			return true
		}
	}
	return false
}

// putsBack reports whether r is among the characters put.
func putsBack(put []insertion, r rune) bool {
	for _, in := range put {
		if strings.ContainsRune(in.Text, r) {
			return true
		}
	}
	return false
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
