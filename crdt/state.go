package crdt

import (
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/automerge/automerge-go"

	"github.com/accord-crdt/accord/marks"
)

// Heads is a sorted set of change hashes: a document revision.
type Heads []ChangeHash

// String renders heads as comma-separated hex hashes.
func (h Heads) String() string {
	parts := make([]string, len(h))
	for i, c := range h {
		parts[i] = c.String()
	}
	return strings.Join(parts, ",")
}

// Equal reports whether h and o name the same revision.
func (h Heads) Equal(o Heads) bool { return slices.Equal(h, o) }

// ParseHeads parses the form Heads.String writes.
func ParseHeads(s string) (Heads, error) {
	if s == "" {
		return Heads{}, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > 4096 {
		return nil, errorf(ErrTooLarge, "%d heads", len(parts))
	}
	out := make([]ChangeHash, 0, len(parts))
	for _, p := range parts {
		b, err := hex.DecodeString(p)
		if err != nil || len(b) != 32 {
			return nil, errorf(ErrInvalid, "head %q is not 64 hex digits", p)
		}
		out = append(out, ChangeHash(b))
	}
	return sortHeads(out), nil
}

// HeadsFromBytes converts raw 32-byte hashes (as on the wire) to Heads.
func HeadsFromBytes(raw [][]byte) (Heads, error) {
	out := make([]ChangeHash, 0, len(raw))
	for _, b := range raw {
		if len(b) != 32 {
			return nil, errorf(ErrInvalid, "head of %d bytes, want 32", len(b))
		}
		out = append(out, ChangeHash(b))
	}
	return sortHeads(out), nil
}

// Bytes returns the heads as raw 32-byte hashes.
func (h Heads) Bytes() [][]byte {
	out := make([][]byte, len(h))
	for i := range h {
		out[i] = h[i][:]
	}
	return out
}

// QuestionState is what the document holds of one question's definition.
type QuestionState struct {
	Written  bool
	Multiple bool
	Options  []Item
	Criteria []Item
}

func (q *QuestionState) items(kind string) []Item {
	if kind == "criterion" {
		return q.Criteria
	}
	return q.Options
}

// Appended is one entry of the idempotency map.
type Appended struct {
	Kind     string // "option" or "criterion"
	Question string
	ID       string
}

// QuestionDraft is the shared working answer to one question.
type QuestionDraft struct {
	// Choices are the selected option ids, in option order.
	Choices []string
	// Text is the written answer.
	Text string
	// Marks holds every cell register ever written: a mark, or
	// marks.Cleared for a register cleared to null. Cells never marked are
	// absent.
	Marks map[string]marks.Mark
}

// Snapshot returns the marked cells as a sparse snapshot (cleared cells
// dropped), nil when none is marked.
func (q QuestionDraft) Snapshot() marks.Snapshot {
	var s marks.Snapshot
	for k, m := range q.Marks {
		if m.Valid() {
			if s == nil {
				s = marks.Snapshot{}
			}
			s[k] = m
		}
	}
	return s
}

// Equal reports whether two drafts hold the same answer.
func (q QuestionDraft) Equal(o QuestionDraft) bool {
	if q.Text != o.Text || !slices.Equal(q.Choices, o.Choices) || len(q.Marks) != len(o.Marks) {
		return false
	}
	for k, m := range q.Marks {
		if n, ok := o.Marks[k]; !ok || n != m {
			return false
		}
	}
	return true
}

// Draft is the shared working answer of one generation.
type Draft struct {
	Generation uint64
	Questions  map[string]QuestionDraft
}

// Equal reports whether two drafts hold the same answers.
func (d Draft) Equal(o Draft) bool {
	if d.Generation != o.Generation || len(d.Questions) != len(o.Questions) {
		return false
	}
	for id, q := range d.Questions {
		p, ok := o.Questions[id]
		if !ok || !q.Equal(p) {
			return false
		}
	}
	return true
}

// State is the whole document, materialised and checked.
type State struct {
	Generation uint64
	Questions  map[string]*QuestionState
	Appended   map[string]Appended
	// Drafts holds every generation's draft; Drafts[Generation] is the
	// current one.
	Drafts map[uint64]Draft
}

// stateMemo is the last State a Doc read or built, at the automerge
// document and heads it was read at: what ApplyEditState builds on.
type stateMemo struct {
	am *automerge.Doc
	at []ChangeHash
	st *State
}

// LiveOps estimates the operations a fresh history of s holds (what a
// Rebase leaves): one per register, item field and character, a few per
// object. Budget.Outgrown compares a history with it.
func (s *State) LiveOps() int {
	n := 4
	for _, q := range s.Questions {
		n += 4 + 3*(len(q.Options)+len(q.Criteria))
	}
	n += 4 * len(s.Appended)
	for _, d := range s.Drafts {
		n++
		for _, q := range d.Questions {
			n += 3 + len(q.Marks) + len(q.Choices) + utf8.RuneCountInString(q.Text)
		}
	}
	return n
}

// SameShape reports whether s and o hold the same definition side:
// generation, questions with their items, and idempotency map. Draft edits
// never change it.
func (s *State) SameShape(o *State) bool {
	if s.Generation != o.Generation || len(s.Questions) != len(o.Questions) || len(s.Appended) != len(o.Appended) {
		return false
	}
	for id, q := range s.Questions {
		p := o.Questions[id]
		if p == nil || q.Written != p.Written || q.Multiple != p.Multiple ||
			!slices.Equal(q.Options, p.Options) || !slices.Equal(q.Criteria, p.Criteria) {
			return false
		}
	}
	for k, a := range s.Appended {
		if o.Appended[k] != a {
			return false
		}
	}
	if len(s.Drafts) != len(o.Drafts) {
		return false
	}
	for g := range s.Drafts {
		if _, ok := o.Drafts[g]; !ok {
			return false
		}
	}
	return true
}

// Equal reports whether s and o hold the same document: the same
// definition side (SameShape) and the same draft values in every
// generation.
func (s *State) Equal(o *State) bool {
	if !s.SameShape(o) {
		return false
	}
	for g, dr := range s.Drafts {
		if !dr.Equal(o.Drafts[g]) {
			return false
		}
	}
	return true
}

// Draft returns the current generation's draft.
func (d *Doc) Draft() (Draft, error) {
	st, err := d.State()
	if err != nil {
		return Draft{}, err
	}
	return st.Drafts[st.Generation], nil
}

// State reads the whole document and checks its structure: every value has
// the kind and form this package writes; every mark register holds a valid
// mark or null under a cell key the question describes; every choice names
// an option of its question. A document changed by a peer in any other way
// is reported as an error wrapping ErrMalformed and naming the path.
func (d *Doc) State() (st *State, err error) {
	// automerge-go panics (in Go, recoverably) on value kinds it does not
	// know; a peer's change must not take the process down that way.
	defer func() {
		if r := recover(); r != nil {
			st, err = nil, errorf(ErrMalformed, "unreadable value: %v", r)
		}
	}()
	root, err := d.am.RootMap().Values()
	if err != nil {
		return nil, amError("read root", err)
	}
	st = &State{
		Questions: map[string]*QuestionState{},
		Appended:  map[string]Appended{},
		Drafts:    map[uint64]Draft{},
	}
	for k, v := range root {
		switch k {
		case "v":
			if v.Kind() != automerge.KindInt64 {
				return nil, malformed("v", "not an integer")
			}
		case "generation":
			if v.Kind() != automerge.KindUint64 {
				return nil, malformed("generation", "not an unsigned integer")
			}
			st.Generation = v.Uint64()
		case "questions":
			if err := readQuestions(v, st); err != nil {
				return nil, err
			}
		case "appended":
			if err := readAppended(v, st); err != nil {
				return nil, err
			}
		case "drafts":
			// read below, once the questions are known
		default:
			return nil, malformed(k, "unknown key")
		}
	}
	if v, ok := root["drafts"]; ok {
		if err := readDrafts(v, st); err != nil {
			return nil, err
		}
	}
	if st.Generation > 0 {
		if _, ok := st.Drafts[st.Generation]; !ok {
			return nil, malformed("drafts", fmt.Sprintf("no draft for current generation %d", st.Generation))
		}
	}
	d.memo = &stateMemo{am: d.am, at: d.amHeads(), st: st}
	return st, nil
}

// stateAfter is prev with the question drafts of touched read again, at
// the document's current heads: what State would return after a draft
// edit that changed only those (ApplyEditState). A draft edit changes no
// shape, and its operations name the drafts they change.
func (d *Doc) stateAfter(prev *State, touched map[draftRef]*draftTouch) (st *State, err error) {
	defer func() {
		if r := recover(); r != nil {
			st, err = nil, errorf(ErrMalformed, "unreadable value: %v", r)
		}
	}()
	st = &State{Generation: prev.Generation, Questions: prev.Questions, Appended: prev.Appended,
		Drafts: maps.Clone(prev.Drafts)}
	copied := map[uint64]bool{}
	for ref, t := range touched {
		g, err := strconv.ParseUint(ref.gen, 10, 64)
		p := "drafts/" + ref.gen + "/" + ref.q
		dr, ok := st.Drafts[g]
		shape := st.Questions[ref.q]
		if err != nil || !ok || shape == nil {
			return nil, malformed(p, "an edit of a draft the document does not hold")
		}
		var qd QuestionDraft
		if t.whole || shape.Written {
			v, err := d.am.Path("drafts", ref.gen, ref.q).Get()
			if err != nil {
				return nil, amError("read "+p, err)
			}
			if qd, err = readQuestionDraft(p, v, shape); err != nil {
				return nil, err
			}
		} else if qd, err = d.readCells(p, ref, dr.Questions[ref.q], t.cells, shape); err != nil {
			// Only mark cells changed: a cell's value depends on the
			// operations on its key alone, so the others keep theirs.
			return nil, err
		}
		if !copied[g] {
			dr.Questions = maps.Clone(dr.Questions)
			copied[g] = true
		}
		dr.Questions[ref.q] = qd
		st.Drafts[g] = dr
	}
	d.memo = &stateMemo{am: d.am, at: d.amHeads(), st: st}
	return st, nil
}

func malformed(path, why string) error { return errorf(ErrMalformed, "%s: %s", path, why) }

func readQuestions(v *automerge.Value, st *State) error {
	if v.Kind() != automerge.KindMap {
		return malformed("questions", "not a map")
	}
	qs, err := v.Map().Values()
	if err != nil {
		return amError("read questions", err)
	}
	for id, qv := range qs {
		path := "questions/" + id
		if !marks.ValidID(id) || qv.Kind() != automerge.KindMap {
			return malformed(path, "not a question")
		}
		fields, err := qv.Map().Values()
		if err != nil {
			return amError("read question", err)
		}
		q := &QuestionState{}
		for k, f := range fields {
			switch k {
			case "written", "multiple":
				if f.Kind() != automerge.KindBool {
					return malformed(path+"/"+k, "not a boolean")
				}
				if k == "written" {
					q.Written = f.Bool()
				} else {
					q.Multiple = f.Bool()
				}
			case "options", "criteria":
				items, err := readItems(path+"/"+k, f)
				if err != nil {
					return err
				}
				if k == "options" {
					q.Options = items
				} else {
					q.Criteria = items
				}
			default:
				return malformed(path+"/"+k, "unknown key")
			}
		}
		st.Questions[id] = q
	}
	return nil
}

func readItems(path string, v *automerge.Value) ([]Item, error) {
	if v.Kind() != automerge.KindList {
		return nil, malformed(path, "not a list")
	}
	vals, err := v.List().Values()
	if err != nil {
		return nil, amError("read "+path, err)
	}
	items := make([]Item, 0, len(vals))
	seen := map[string]bool{}
	for i, iv := range vals {
		p := path + "/" + strconv.Itoa(i)
		if iv.Kind() != automerge.KindMap {
			return nil, malformed(p, "not an item")
		}
		f, err := iv.Map().Values()
		if err != nil {
			return nil, amError("read "+p, err)
		}
		id, label := f["id"], f["label"]
		if len(f) != 2 || id == nil || label == nil || id.Kind() != automerge.KindStr || label.Kind() != automerge.KindStr {
			return nil, malformed(p, "want {id, label} strings")
		}
		if !marks.ValidID(id.Str()) || seen[id.Str()] {
			return nil, malformed(p, "bad or repeated id")
		}
		seen[id.Str()] = true
		items = append(items, Item{ID: id.Str(), Label: label.Str()})
	}
	return items, nil
}

func readAppended(v *automerge.Value, st *State) error {
	if v.Kind() != automerge.KindMap {
		return malformed("appended", "not a map")
	}
	entries, err := v.Map().Values()
	if err != nil {
		return amError("read appended", err)
	}
	for key, ev := range entries {
		p := "appended/" + key
		if ev.Kind() != automerge.KindMap {
			return malformed(p, "not an entry")
		}
		f, err := ev.Map().Values()
		if err != nil {
			return amError("read "+p, err)
		}
		var a Appended
		for k, fv := range f {
			if fv.Kind() != automerge.KindStr {
				return malformed(p+"/"+k, "not a string")
			}
			switch k {
			case "kind":
				a.Kind = fv.Str()
			case "question":
				a.Question = fv.Str()
			case "id":
				a.ID = fv.Str()
			default:
				return malformed(p+"/"+k, "unknown key")
			}
		}
		if a.Kind != "option" && a.Kind != "criterion" {
			return malformed(p, "unknown kind")
		}
		st.Appended[key] = a
	}
	return nil
}

func readDrafts(v *automerge.Value, st *State) error {
	if v.Kind() != automerge.KindMap {
		return malformed("drafts", "not a map")
	}
	gens, err := v.Map().Values()
	if err != nil {
		return amError("read drafts", err)
	}
	for gk, gv := range gens {
		p := "drafts/" + gk
		g, err := strconv.ParseUint(gk, 10, 64)
		if err != nil || g == 0 || genKey(g) != gk || g > st.Generation {
			return malformed(p, "not a started generation")
		}
		if gv.Kind() != automerge.KindMap {
			return malformed(p, "not a map")
		}
		qs, err := gv.Map().Values()
		if err != nil {
			return amError("read "+p, err)
		}
		dr := Draft{Generation: g, Questions: make(map[string]QuestionDraft, len(qs))}
		for qid, qv := range qs {
			shape := st.Questions[qid]
			if shape == nil {
				return malformed(p+"/"+qid, "no such question")
			}
			qd, err := readQuestionDraft(p+"/"+qid, qv, shape)
			if err != nil {
				return err
			}
			dr.Questions[qid] = qd
		}
		st.Drafts[g] = dr
	}
	return nil
}

func readQuestionDraft(path string, v *automerge.Value, q *QuestionState) (QuestionDraft, error) {
	var out QuestionDraft
	if v.Kind() != automerge.KindMap {
		return out, malformed(path, "not a map")
	}
	fields, err := v.Map().Values()
	if err != nil {
		return out, amError("read "+path, err)
	}
	for k, f := range fields {
		p := path + "/" + k
		switch {
		case k == "text" && q.Written:
			if f.Kind() != automerge.KindText {
				return out, malformed(p, "not text")
			}
			if out.Text, err = f.Text().Get(); err != nil {
				return out, amError("read "+p, err)
			}
			if n := len([]rune(out.Text)); n > MaxTextRunes {
				return out, malformed(p, fmt.Sprintf("%d characters, more than %d", n, MaxTextRunes))
			}
		case k == "marks" && !q.Written:
			if out.Marks, err = readMarks(p, f, q); err != nil {
				return out, err
			}
		case k == "choice" && !q.Written && !q.Multiple:
			switch f.Kind() {
			case automerge.KindNull:
			case automerge.KindStr:
				if !hasItem(q.Options, f.Str()) {
					return out, malformed(p, fmt.Sprintf("unknown option %q", f.Str()))
				}
				out.Choices = []string{f.Str()}
			default:
				return out, malformed(p, "not an option id or null")
			}
		case k == "chosen" && !q.Written:
			if f.Kind() != automerge.KindMap {
				return out, malformed(p, "not a map")
			}
			vals, err := f.Map().Values()
			if err != nil {
				return out, amError("read "+p, err)
			}
			if len(vals) > 0 && !q.Multiple {
				return out, malformed(p, "a single-choice question takes its choice in one register")
			}
			for opt, ov := range vals {
				if !hasItem(q.Options, opt) {
					return out, malformed(p+"/"+opt, "unknown option")
				}
				if ov.Kind() != automerge.KindBool {
					return out, malformed(p+"/"+opt, "not a boolean")
				}
				if ov.Bool() {
					out.Choices = append(out.Choices, opt)
				}
			}
		default:
			return out, malformed(p, "unknown key for this question")
		}
	}
	if !q.Written && out.Marks == nil {
		// Drafts stored before criteria existed have no marks map; they
		// read as an empty one.
		out.Marks = map[string]marks.Mark{}
	}
	if len(out.Choices) > 1 {
		order := map[string]int{}
		for i, it := range q.Options {
			order[it.ID] = i
		}
		slices.SortFunc(out.Choices, func(a, b string) int { return order[a] - order[b] })
	}
	return out, nil
}

// readCells is qd with the mark cells of cells read again from the
// question draft at ref.
func (d *Doc) readCells(path string, ref draftRef, qd QuestionDraft, cells map[string]bool, q *QuestionState) (QuestionDraft, error) {
	path += "/marks"
	v, err := d.am.Path("drafts", ref.gen, ref.q, "marks").Get()
	if err != nil {
		return qd, amError("read "+path, err)
	}
	if v.Kind() != automerge.KindMap {
		return qd, malformed(path, "not a map")
	}
	m := v.Map()
	qd.Marks = maps.Clone(qd.Marks)
	if qd.Marks == nil {
		qd.Marks = map[string]marks.Mark{}
	}
	for key := range cells {
		mv, err := m.Get(key)
		if err != nil {
			return qd, amError("read "+path+"/"+key, err)
		}
		if mv.Kind() == automerge.KindVoid {
			delete(qd.Marks, key)
			continue
		}
		mk, err := readCell(path+"/"+key, key, mv, q)
		if err != nil {
			return qd, err
		}
		qd.Marks[key] = mk
	}
	return qd, nil
}

// readCell reads the mark register of one cell, named key.
func readCell(path, key string, mv *automerge.Value, q *QuestionState) (marks.Mark, error) {
	cell, err := marks.ParseKey(key)
	if err != nil {
		return "", malformed(path, err.Error())
	}
	if !hasItem(q.Options, cell.Option) || !hasItem(q.Criteria, cell.Criterion) {
		return "", malformed(path, "a cell the question does not describe")
	}
	switch mv.Kind() {
	case automerge.KindNull:
		return marks.Cleared, nil
	case automerge.KindStr:
		m, err := marks.ParseMark(mv.Str())
		if err != nil {
			return "", malformed(path, err.Error())
		}
		return m, nil
	}
	return "", malformed(path, "not a mark or null")
}

func readMarks(path string, v *automerge.Value, q *QuestionState) (map[string]marks.Mark, error) {
	if v.Kind() != automerge.KindMap {
		return nil, malformed(path, "not a map")
	}
	vals, err := v.Map().Values()
	if err != nil {
		return nil, amError("read "+path, err)
	}
	out := make(map[string]marks.Mark, len(vals))
	for key, mv := range vals {
		m, err := readCell(path+"/"+key, key, mv, q)
		if err != nil {
			return nil, err
		}
		out[key] = m
	}
	return out, nil
}
