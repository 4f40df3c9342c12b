package crdt

import (
	"slices"
	"strconv"

	"github.com/automerge/automerge-go"

	"github.com/accord-crdt/accord/marks"
)

// commit closes the pending automerge transaction as one change. An edit
// that changed nothing (automerge skips writing a register the value it
// already holds, and a splice that neither deletes nor inserts) leaves no
// pending operation; that is success with no change, not an error.
func (d *Doc) commit(msg string) error {
	t := d.now()
	d.heads = headsCache{}
	h, err := d.am.Commit(msg, automerge.CommitOptions{Time: &t})
	if err != nil {
		if err.Error() == errEmptyCommit {
			return nil
		}
		return amError("commit", err)
	}
	if d.budgetKnown {
		d.countLocal(h)
	}
	if d.known != nil {
		d.known[ChangeHash(h)] = true
	}
	if d.seqs != nil {
		d.seqs[string(d.actor)]++
	}
	return nil
}

// countLocal adds a committed local change to the budget. If the change
// cannot be read back, the budget is counted again when next asked for.
func (d *Doc) countLocal(h automerge.ChangeHash) {
	c, err := d.am.Change(h)
	if err != nil {
		d.budgetKnown, d.marks = false, nil
		return
	}
	raw := c.Save()
	n, err := changeOps(raw)
	if err != nil {
		d.budgetKnown, d.marks = false, nil
		return
	}
	// A local change depends on exactly the heads before it (asking
	// automerge for heads before committing would close the pending
	// transaction).
	d.markBudget(sortHeads(fromAM(c.Dependencies())))
	d.addBudget(n, len(raw), 1)
}

// errEmptyCommit is the text of the error automerge-go's Commit returns
// when there were no pending operations; it has no sentinel to test for.
const errEmptyCommit = "Commit is empty"

func genKey(g uint64) string { return strconv.FormatUint(g, 10) }

// AddQuestion records a question's shape: whether it is written, whether
// it takes several choices, and its initial options and criteria. Only the
// authority calls it, at creation.
func (d *Doc) AddQuestion(q QuestionShape) error {
	if err := marks.CheckID(q.ID); err != nil {
		return errorf(ErrInvalid, "question id: %v", err)
	}
	if _, err := d.question(q.ID); err == nil {
		return errorf(ErrInvalid, "question %q already exists", q.ID)
	}
	for _, it := range append(slices.Clone(q.Options), q.Criteria...) {
		if err := marks.CheckID(it.ID); err != nil {
			return errorf(ErrInvalid, "item id: %v", err)
		}
	}
	if err := writeShape(d.am.Path("questions").Map(), q, "add question"); err != nil {
		return err
	}
	return d.commit("question " + q.ID)
}

// writeShape writes a question's shape (kind and items) under its id in
// the questions map; op names the step in errors.
func writeShape(questions *automerge.Map, q QuestionShape, op string) error {
	m := automerge.NewMap()
	if err := questions.Set(q.ID, m); err != nil {
		return amError(op, err)
	}
	if err := m.Set("written", q.Written); err != nil {
		return amError(op, err)
	}
	if err := m.Set("multiple", q.Multiple); err != nil {
		return amError(op, err)
	}
	for _, list := range []struct {
		key   string
		items []Item
	}{{"options", q.Options}, {"criteria", q.Criteria}} {
		l := automerge.NewList()
		if err := m.Set(list.key, l); err != nil {
			return amError(op, err)
		}
		for _, it := range list.items {
			if err := appendItem(l, it); err != nil {
				return err
			}
		}
	}
	return nil
}

func appendItem(l *automerge.List, it Item) error {
	m := automerge.NewMap()
	if err := l.Append(m); err != nil {
		return amError("append item", err)
	}
	if err := m.Set("id", it.ID); err != nil {
		return amError("append item", err)
	}
	return amError("append item", m.Set("label", it.Label))
}

func (d *Doc) question(id string) (*automerge.Map, error) {
	v, err := d.am.Path("questions", id).Get()
	if err != nil {
		return nil, amError("read question", err)
	}
	if v.Kind() != automerge.KindMap {
		return nil, errorf(ErrNoQuestion, "%q", id)
	}
	return v.Map(), nil
}

// AppendOption appends an option to a question under an idempotency key.
// A key seen before returns what it minted then, with repeated true, and
// writes nothing. Only the authority calls it.
func (d *Doc) AppendOption(question, key string, it Item) (Item, bool, error) {
	return d.appendItem("options", question, key, it)
}

// AppendCriterion appends a criterion, like AppendOption. Options and
// criteria share one idempotency map.
func (d *Doc) AppendCriterion(question, key string, it Item) (Item, bool, error) {
	return d.appendItem("criteria", question, key, it)
}

func (d *Doc) appendItem(list, question, key string, it Item) (Item, bool, error) {
	if key == "" {
		return Item{}, false, errorf(ErrInvalid, "empty idempotency key")
	}
	st, err := d.State()
	if err != nil {
		return Item{}, false, err
	}
	if prev, ok := st.Appended[key]; ok {
		qs := st.Questions[prev.Question]
		if qs != nil {
			for _, x := range qs.items(prev.Kind) {
				if x.ID == prev.ID {
					return x, true, nil
				}
			}
		}
		return Item{}, false, errorf(ErrMalformed, "appended key %q names a missing item", key)
	}
	if st.Questions[question] == nil {
		return Item{}, false, errorf(ErrNoQuestion, "%q", question)
	}
	if err := marks.CheckID(it.ID); err != nil {
		return Item{}, false, errorf(ErrInvalid, "item id: %v", err)
	}
	if hasItem(st.Questions[question].items(kindOf(list)), it.ID) {
		// A second item with the same id would make the document unreadable.
		return Item{}, false, errorf(ErrInvalid, "question %q already has %s %q", question, kindOf(list), it.ID)
	}
	q, _ := d.question(question)
	v, err := q.Get(list)
	if err != nil || v.Kind() != automerge.KindList {
		return Item{}, false, errorf(ErrMalformed, "question %q has no %s list", question, list)
	}
	if err := appendItem(v.List(), it); err != nil {
		return Item{}, false, err
	}
	kind := kindOf(list)
	entry := automerge.NewMap()
	if err := d.am.Path("appended").Map().Set(key, entry); err != nil {
		return Item{}, false, amError("append", err)
	}
	// In a fixed order, so that the same append always makes the same
	// change (a map's order would vary its operations, and so its hash).
	for _, kv := range [][2]string{{"kind", kind}, {"question", question}, {"id", it.ID}} {
		if err := entry.Set(kv[0], kv[1]); err != nil {
			return Item{}, false, amError("append", err)
		}
	}
	return it, false, d.commit(kind + " " + it.ID)
}

// kindOf names the items of an item list: "option" or "criterion".
func kindOf(list string) string {
	if list == "criteria" {
		return "criterion"
	}
	return "option"
}

// StartGeneration makes generation g current and lays out its empty draft
// for every question: a marks map and a choices map for choice questions,
// an empty text for written ones. A fresh generation starts from nothing,
// so edits made against an older one never show in it. Only the authority
// calls it, at creation (g = 1) and on every reopen.
func (d *Doc) StartGeneration(g uint64) error {
	st, err := d.State()
	if err != nil {
		return err
	}
	if g <= st.Generation {
		return errorf(ErrInvalid, "generation %d is not after %d", g, st.Generation)
	}
	draft := automerge.NewMap()
	if err := d.am.Path("drafts").Map().Set(genKey(g), draft); err != nil {
		return amError("start generation", err)
	}
	ids := make([]string, 0, len(st.Questions))
	for id := range st.Questions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		qd := automerge.NewMap()
		if err := draft.Set(id, qd); err != nil {
			return amError("start generation", err)
		}
		if st.Questions[id].Written {
			err = qd.Set("text", automerge.NewText(""))
		} else {
			if err = qd.Set("marks", automerge.NewMap()); err == nil {
				err = qd.Set("chosen", automerge.NewMap())
			}
		}
		if err != nil {
			return amError("start generation", err)
		}
	}
	if err := d.am.RootMap().Set("generation", g); err != nil {
		return amError("start generation", err)
	}
	return d.commit("generation " + genKey(g))
}

// Generation returns the current settle generation (0 before the first
// StartGeneration).
func (d *Doc) Generation() uint64 {
	v, err := d.am.RootMap().Get("generation")
	if err != nil || v.Kind() != automerge.KindUint64 {
		return 0
	}
	return v.Uint64()
}

// draftQuestion returns the current generation's draft map of a question,
// and its shape.
func (d *Doc) draftQuestion(question string) (*automerge.Map, *QuestionState, error) {
	heads := d.amHeads()
	c := d.edit
	if c == nil || c.am != d.am || !slices.Equal(c.heads, heads) {
		st, err := d.State()
		if err != nil {
			return nil, nil, err
		}
		c = &editCache{am: d.am, heads: heads, generation: st.Generation, questions: st.Questions, drafts: map[string]*automerge.Map{}}
		d.edit = c
	}
	qs := c.questions[question]
	if qs == nil {
		return nil, nil, errorf(ErrNoQuestion, "%q", question)
	}
	if qd := c.drafts[question]; qd != nil {
		return qd, qs, nil
	}
	v, err := d.am.Path("drafts", genKey(c.generation), question).Get()
	if err != nil || v.Kind() != automerge.KindMap {
		return nil, nil, errorf(ErrNoQuestion, "%q has no draft in generation %d", question, c.generation)
	}
	c.drafts[question] = v.Map()
	return v.Map(), qs, nil
}

// commitDraft commits a draft edit made after draftQuestion, and carries
// the edit cache over to the new heads.
func (d *Doc) commitDraft(msg string) error {
	c := d.edit
	if err := d.commit(msg); err != nil {
		d.edit = nil
		return err
	}
	if c != nil && c.am == d.am {
		before := c.heads
		c.heads = d.amHeads()
		d.advanceObjects(before, nil)
	}
	return nil
}

// SetMark sets one cell of a choice question's matrix in the current
// draft; marks.Cleared clears it (the register holds null). The cell must
// be one the question describes.
func (d *Doc) SetMark(question, option, criterion string, m marks.Mark) error {
	if m != marks.Cleared && !m.Valid() {
		return errorf(ErrInvalid, "mark %q", m)
	}
	qd, qs, err := d.draftQuestion(question)
	if err != nil {
		return err
	}
	if qs.Written {
		return errorf(ErrWrongKind, "question %q is written; it has no marks", question)
	}
	if !hasItem(qs.Options, option) || !hasItem(qs.Criteria, criterion) {
		return errorf(ErrInvalid, "question %q has no cell %s", question, marks.Key(option, criterion))
	}
	v, err := qd.Get("marks")
	if err != nil || v.Kind() != automerge.KindMap {
		return errorf(ErrMalformed, "question %q draft has no marks map", question)
	}
	var val any
	if m != marks.Cleared {
		val = string(m)
	}
	if err := v.Map().Set(marks.Key(option, criterion), val); err != nil {
		return amError("set mark", err)
	}
	return d.commitDraft("mark")
}

// Choose selects (on) or deselects an option of a choice question in the
// current draft. A single-choice question holds one register, so selecting
// an option replaces the previous choice.
func (d *Doc) Choose(question, option string, on bool) error {
	qd, qs, err := d.draftQuestion(question)
	if err != nil {
		return err
	}
	if qs.Written {
		return errorf(ErrWrongKind, "question %q is written; it has no options", question)
	}
	if !hasItem(qs.Options, option) {
		return errorf(ErrInvalid, "question %q has no option %q", question, option)
	}
	if !qs.Multiple {
		// One LWW register: concurrent choices on a single-choice question
		// resolve to one winner instead of merging into two.
		var val any
		if on {
			val = option
		} else if cur, err := qd.Get("choice"); err != nil || cur.Kind() != automerge.KindStr || cur.Str() != option {
			return nil // deselecting what is not selected changes nothing
		}
		if err := qd.Set("choice", val); err != nil {
			return amError("choose", err)
		}
		return d.commitDraft("choose")
	}
	v, err := qd.Get("chosen")
	if err != nil || v.Kind() != automerge.KindMap {
		return errorf(ErrMalformed, "question %q draft has no choices map", question)
	}
	if err := v.Map().Set(option, on); err != nil {
		return amError("choose", err)
	}
	return d.commitDraft("choose")
}

// SpliceText edits a written question's answer in the current draft:
// delete del characters (Unicode code points) at pos, then insert ins.
// Concurrent splices merge character by character.
func (d *Doc) SpliceText(question string, pos, del int, ins string) error {
	qd, qs, err := d.draftQuestion(question)
	if err != nil {
		return err
	}
	if !qs.Written {
		return errorf(ErrWrongKind, "question %q is a choice; it has no text", question)
	}
	v, err := qd.Get("text")
	if err != nil || v.Kind() != automerge.KindText {
		return errorf(ErrMalformed, "question %q draft has no text", question)
	}
	t := v.Text()
	n := t.Len()
	if pos < 0 || del < 0 || pos > n || del > n-pos {
		return errorf(ErrInvalid, "splice at %d deleting %d outside text of %d characters", pos, del, n)
	}
	if n-del+len([]rune(ins)) > MaxTextRunes {
		return errorf(ErrTooLarge, "written answer longer than %d characters", MaxTextRunes)
	}
	if err := t.Splice(pos, del, ins); err != nil {
		return amError("splice", err)
	}
	return d.commitDraft("text")
}

// SetText replaces a written answer with s by the smallest single splice
// (common prefix and suffix kept), so concurrent typing elsewhere in the
// text survives.
func (d *Doc) SetText(question, s string) error {
	dr, err := d.Draft()
	if err != nil {
		return err
	}
	old := []rune(dr.Questions[question].Text)
	nu := []rune(s)
	p := 0
	for p < len(old) && p < len(nu) && old[p] == nu[p] {
		p++
	}
	sfx := 0
	for sfx < len(old)-p && sfx < len(nu)-p && old[len(old)-1-sfx] == nu[len(nu)-1-sfx] {
		sfx++
	}
	if p == len(old) && p == len(nu) {
		return nil
	}
	return d.SpliceText(question, p, len(old)-p-sfx, string(nu[p:len(nu)-sfx]))
}

func hasItem(items []Item, id string) bool {
	for _, it := range items {
		if it.ID == id {
			return true
		}
	}
	return false
}

// EnsureMarks gives every choice question of the current draft an empty
// marks map where it has none, as drafts stored before criteria existed
// lack one, so members can mark cells once criteria are appended. It
// reports whether it changed the document (one change).
func (d *Doc) EnsureMarks() (bool, error) {
	st, err := d.State()
	if err != nil || st.Generation == 0 {
		return false, err
	}
	changed := false
	for id, q := range st.Questions {
		if q.Written {
			continue
		}
		v, err := d.am.Path("drafts", genKey(st.Generation), id, "marks").Get()
		if err != nil {
			return false, amError("read marks", err)
		}
		if v.Kind() == automerge.KindMap {
			continue
		}
		qd, err := d.am.Path("drafts", genKey(st.Generation), id).Get()
		if err != nil || qd.Kind() != automerge.KindMap {
			continue
		}
		if err := qd.Map().Set("marks", automerge.NewMap()); err != nil {
			return false, amError("add marks", err)
		}
		changed = true
	}
	if !changed {
		return false, nil
	}
	return true, d.commit("marks")
}
