package crdt

import (
	"slices"
	"unicode/utf8"

	"github.com/automerge/automerge-go"

	"github.com/accord-crdt/accord/marks"
)

// Editing a revision other than the document's own, for a client's undo:
// an edit made on a copy of the document as it was at some heads, under a
// fresh actor, and merged back, acts on the characters that revision
// shows, wherever others' concurrent edits have moved them since. Locate
// answers where such characters are now.

// Splice is one edit of a written answer, in code points: delete Del
// characters at Pos, then insert Ins.
type Splice struct {
	Pos, Del int
	Ins      string
}

// Text returns a written question's answer in the current generation's
// draft.
func (d *Doc) Text(question string) (string, error) {
	t, err := d.textObject(d.am, question)
	if err != nil {
		return "", err
	}
	s, err := t.Get()
	return s, amError("read text", err)
}

// MarkOf returns one cell's mark in the current generation's draft:
// marks.Cleared when unmarked or cleared. It reads that cell alone, so a
// client can note what an edit replaces at the cost of the edit.
func (d *Doc) MarkOf(question, option, criterion string) (marks.Mark, error) {
	qd, qs, err := d.draftQuestion(question)
	if err != nil {
		return "", err
	}
	if qs.Written {
		return "", errorf(ErrWrongKind, "question %q is written; it has no marks", question)
	}
	key := marks.Key(option, criterion)
	v, err := qd.Get("marks")
	if err != nil || v.Kind() != automerge.KindMap {
		return marks.Cleared, nil // a draft without a marks map has none marked
	}
	mv, err := v.Map().Get(key)
	if err != nil {
		return "", amError("read mark", err)
	}
	if mv.Kind() == automerge.KindVoid {
		return marks.Cleared, nil
	}
	return readCell("marks/"+key, key, mv, qs)
}

// Chosen returns the options chosen in a choice question's current draft
// (in no particular order) and whether it takes several, reading that
// question's choices alone.
func (d *Doc) Chosen(question string) (chosen []string, multiple bool, err error) {
	qd, qs, err := d.draftQuestion(question)
	if err != nil {
		return nil, false, err
	}
	if qs.Written {
		return nil, false, errorf(ErrWrongKind, "question %q is written; it has no options", question)
	}
	if !qs.Multiple {
		v, err := qd.Get("choice")
		if err != nil {
			return nil, false, amError("read choice", err)
		}
		if v.Kind() == automerge.KindStr {
			chosen = []string{v.Str()}
		}
		return chosen, false, nil
	}
	v, err := qd.Get("chosen")
	if err != nil || v.Kind() != automerge.KindMap {
		return nil, true, errorf(ErrMalformed, "question %q draft has no choices map", question)
	}
	vals, err := v.Map().Values()
	if err != nil {
		return nil, true, amError("read choices", err)
	}
	for o, ov := range vals {
		if ov.Kind() == automerge.KindBool && ov.Bool() {
			chosen = append(chosen, o)
		}
	}
	return chosen, true, nil
}

// textObject returns the text of question's draft in am's current
// generation.
func (d *Doc) textObject(am *automerge.Doc, question string) (t *automerge.Text, err error) {
	// automerge-go panics (recoverably) on value kinds it does not know.
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, errorf(ErrMalformed, "unreadable value: %v", r)
		}
	}()
	var g uint64
	if v, err := am.RootMap().Get("generation"); err == nil && v.Kind() == automerge.KindUint64 {
		g = v.Uint64()
	}
	v, err := am.Path("drafts", genKey(g), question, "text").Get()
	if err != nil {
		return nil, amError("read text", err)
	}
	if v.Kind() != automerge.KindText {
		if q, err := am.Path("questions", question).Get(); err != nil || q.Kind() != automerge.KindMap {
			return nil, errorf(ErrNoQuestion, "%q", question)
		}
		return nil, errorf(ErrWrongKind, "question %q has no written answer in generation %d", question, g)
	}
	return v.Text(), nil
}

// splice applies splices to t in order, each in the coordinates the ones
// before left; limit, when positive, caps the text's length.
func splice(t *automerge.Text, splices []Splice, limit int) error {
	n := t.Len()
	for _, s := range splices {
		if s.Pos < 0 || s.Del < 0 || s.Pos > n || s.Del > n-s.Pos {
			return errorf(ErrInvalid, "splice at %d deleting %d outside text of %d characters", s.Pos, s.Del, n)
		}
		n += utf8.RuneCountInString(s.Ins) - s.Del
		if limit > 0 && n > limit {
			return errorf(ErrTooLarge, "written answer longer than %d characters", limit)
		}
		if err := t.Splice(s.Pos, s.Del, s.Ins); err != nil {
			return amError("splice", err)
		}
	}
	return nil
}

// fork returns a scratch copy of am at heads (all of it when heads is
// nil) writing as a fresh actor.
func fork(am *automerge.Doc, heads Heads) (*automerge.Doc, error) {
	var f *automerge.Doc
	var err error
	if heads == nil {
		f, err = am.Fork()
	} else {
		f, err = am.Fork(toAM(heads)...)
	}
	if err != nil {
		return nil, amError("fork", err)
	}
	return f, amError("set actor", f.SetActorID(string(NewActorID())))
}

// SpliceAt edits a written answer as the document was at heads: the
// splices apply in order to the text that revision shows, in its
// coordinates, as one change of a fresh actor, which is then applied to d.
// So the edit acts on the characters themselves: a character it deletes
// that someone deleted since stays deleted, characters typed since stay,
// and inserted text goes after the character it follows at heads. It
// returns the new change's heads (heads itself if the splices changed
// nothing). The edit lands in the draft of the generation current at
// heads.
func (d *Doc) SpliceAt(heads Heads, question string, splices []Splice) (Heads, error) {
	if !d.Has(heads) {
		return nil, errorf(ErrMissingDeps, "heads %v are not all in the document", heads)
	}
	f, err := fork(d.am, heads)
	if err != nil {
		return nil, err
	}
	t, err := d.textObject(f, question)
	if err != nil {
		return nil, err
	}
	if err := splice(t, splices, MaxTextRunes); err != nil {
		return nil, err
	}
	now := d.now()
	h, err := f.Commit("text", automerge.CommitOptions{Time: &now})
	if err != nil {
		if err.Error() == errEmptyCommit {
			return slices.Clone(heads), nil
		}
		return nil, amError("commit", err)
	}
	c, err := f.Change(h)
	if err != nil {
		return nil, amError("change", err)
	}
	if _, err := d.ApplyChanges(c.Save()); err != nil {
		return nil, err
	}
	return Heads{ChangeHash(h)}, nil
}

// Locate returns where characters of a written answer are in d's text
// now: pos are positions (sorted, distinct) in the text as the document
// was at heads, and the result holds, sorted, the positions in d's
// current text of those characters no edit has deleted since. Identity
// comes from the document's history, not from the characters' values, so
// repeated characters are told apart.
func (d *Doc) Locate(heads Heads, question string, pos []int) ([]int, error) {
	if len(pos) == 0 {
		return nil, nil
	}
	for i := 1; i < len(pos); i++ {
		if pos[i] <= pos[i-1] {
			return nil, errorf(ErrInvalid, "positions are not sorted and distinct")
		}
	}
	if !d.Has(heads) {
		return nil, errorf(ErrMissingDeps, "heads %v are not all in the document", heads)
	}
	if d.Heads().Equal(heads) {
		t, err := d.textObject(d.am, question)
		if err != nil {
			return nil, err
		}
		if pos[0] < 0 || pos[len(pos)-1] >= t.Len() {
			return nil, errorf(ErrInvalid, "positions outside text of %d characters", t.Len())
		}
		return slices.Clone(pos), nil
	}
	// A probe deletes the characters as heads shows them; merged into a
	// copy of d, it removes those still there, and only those.
	probe, err := fork(d.am, heads)
	if err != nil {
		return nil, err
	}
	pt, err := d.textObject(probe, question)
	if err != nil {
		return nil, err
	}
	if pos[0] < 0 || pos[len(pos)-1] >= pt.Len() {
		return nil, errorf(ErrInvalid, "positions outside text of %d characters", pt.Len())
	}
	if err := splice(pt, deletions(pos), 0); err != nil {
		return nil, err
	}
	if _, err := probe.Commit("probe"); err != nil {
		return nil, amError("commit", err)
	}
	now, err := d.Text(question)
	if err != nil {
		return nil, err
	}
	r := []rune(now)
	z, err := d.merged(question, probe, nil)
	if err != nil {
		return nil, err
	}
	m := len(r) - len(z)
	if m <= 0 {
		return nil, nil
	}
	// The deleted set is one way of removing m characters from r to leave
	// z; with repeated characters there may be several. Every way lies
	// between the leftmost and the rightmost.
	left, right := removed(r, z, true), removed(r, z, false)
	if left == nil || right == nil {
		return nil, errorf(ErrMalformed, "the probe left a text that is not a subsequence")
	}
	if slices.Equal(left, right) {
		return left, nil
	}
	// Told apart by markers: a character inserted after each character of
	// the window, in a change after all of d's, sits right after it, and
	// the probe's deletions leave the markers alone.
	lo, hi := left[0], right[m-1]
	marker := unused(r[lo : hi+1])
	y, err := d.merged(question, probe, func(t *automerge.Text) error {
		for k := hi; k >= lo; k-- {
			if err := t.Insert(k+1, string(marker)); err != nil {
				return amError("mark", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []int
	j := lo
	if len(y) < lo || !slices.Equal(y[:lo], r[:lo]) {
		return nil, errorf(ErrMalformed, "the markers' probe moved the text before its window")
	}
	for k := lo; k <= hi; k++ {
		switch {
		case j < len(y) && y[j] == marker:
			out = append(out, k)
			j++
		case j+1 < len(y) && y[j] == r[k] && y[j+1] == marker:
			j += 2
		default:
			return nil, errorf(ErrMalformed, "the markers' probe reads unexpectedly")
		}
	}
	if len(out) != m || !slices.Equal(y[j:], r[hi+1:]) {
		return nil, errorf(ErrMalformed, "the markers' probe reads unexpectedly")
	}
	return out, nil
}

// merged returns question's text in a scratch copy of d, edited by mark
// (if set) as one change, with probe's changes merged in.
func (d *Doc) merged(question string, probe *automerge.Doc, mark func(*automerge.Text) error) ([]rune, error) {
	w, err := fork(d.am, nil)
	if err != nil {
		return nil, err
	}
	if mark != nil {
		t, err := d.textObject(w, question)
		if err != nil {
			return nil, err
		}
		if err := mark(t); err != nil {
			return nil, err
		}
		if _, err := w.Commit("markers"); err != nil {
			return nil, amError("commit", err)
		}
	}
	if _, err := w.Merge(probe); err != nil {
		return nil, amError("merge", err)
	}
	t, err := d.textObject(w, question)
	if err != nil {
		return nil, err
	}
	s, err := t.Get()
	if err != nil {
		return nil, amError("read text", err)
	}
	return []rune(s), nil
}

// deletions returns the splices deleting the characters at pos (sorted),
// run by run from the last, so that each applies where pos says.
func deletions(pos []int) []Splice {
	var out []Splice
	for i := len(pos); i > 0; {
		j := i - 1
		for j > 0 && pos[j-1] == pos[j]-1 {
			j--
		}
		out = append(out, Splice{Pos: pos[j], Del: i - j})
		i = j
	}
	return out
}

// removed returns positions of r whose removal leaves z (a subsequence of
// r): the leftmost such set when leftmost, else the rightmost; nil if z is
// not a subsequence of r.
func removed(r, z []rune, leftmost bool) []int {
	out := make([]int, 0, len(r)-len(z))
	if leftmost {
		// Match z as late as possible: what is left unmatched is leftmost.
		j := len(z) - 1
		for i := len(r) - 1; i >= 0; i-- {
			if j >= 0 && r[i] == z[j] {
				j--
			} else {
				out = append(out, i)
			}
		}
		if j >= 0 {
			return nil
		}
		slices.Reverse(out)
		return out
	}
	j := 0
	for i := range r {
		if j < len(z) && r[i] == z[j] {
			j++
		} else {
			out = append(out, i)
		}
	}
	if j < len(z) {
		return nil
	}
	return out
}

// unused returns a private-use code point that s does not hold.
func unused(s []rune) rune {
	seen := make(map[rune]bool, len(s))
	for _, c := range s {
		seen[c] = true
	}
	for c := rune(0xF0000); ; c++ {
		if c == 0xFFFFE {
			c = 0x100000
		}
		if !seen[c] {
			return c
		}
	}
}
