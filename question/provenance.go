package question

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
)

// Per-cell provenance: for every accepted draft edit the authority records
// which member made it and when, joined to the hashes of the edit's
// automerge changes, and for each value the edit changed what it replaced.
// From these it keeps, per decision, the last setter of every mark cell,
// choice and written text of every generation (provIndex), updated from
// the cells an edit changed, so an edit's cost does not grow with the
// history.
//
// The record is stored with the change it describes: a stored draft
// chunk or snapshot may be wrapped in a provenance envelope (see
// wrapDraft) holding the edit's cells (a chunk) or the whole index (a
// snapshot, written by compaction and rebase). A rebase replaces the
// automerge history by one change of the authority's own actor, so
// attribution never comes from automerge actors, only from these records.

// CellKind names what a provenance entry is about.
type CellKind string

// Kinds of draft values that carry provenance.
const (
	// CellMark is one mark cell: Cell is its key ("option/criterion") and
	// Value the mark, empty when cleared.
	CellMark CellKind = "mark"
	// CellChoice is a choice. For a single-choice question Cell is empty
	// and Value the chosen option id (empty when none); for a
	// multiple-choice question Cell is an option id and Value "chosen" or
	// empty.
	CellChoice CellKind = "choice"
	// CellText is a written answer. An edit's cell holds what the edit
	// changed, not the whole text (storing that with every keystroke would
	// make provenance cost what the answer weighs): Value is the text it
	// inserted and Was the text it deleted, at character Pos of the text
	// before it.
	CellText CellKind = "text"
)

func (k CellKind) known() bool { return k == CellMark || k == CellChoice || k == CellText }

// ChoiceChosen is the Value of a multiple-choice option that is chosen.
const ChoiceChosen = "chosen"

// CellProvenance says who set one value of a decision's draft, when, by
// which change, and what it replaced.
type CellProvenance struct {
	Generation uint64   `json:"generation"`
	Question   string   `json:"question"`
	Kind       CellKind `json:"kind"`
	Cell       string   `json:"cell,omitempty"`
	Value      string   `json:"value,omitempty"`
	// By is the login of the member whose accepted edit set the value,
	// as the authority knew them (never what a replica claimed).
	By string    `json:"by"`
	At time.Time `json:"at"`
	// Change is the hash of the last automerge change of that edit.
	Change string `json:"change,omitempty"`
	// Was is the value replaced, and WasBy who had set it (empty when
	// nobody had).
	Was   string `json:"was,omitempty"`
	WasBy string `json:"wasBy,omitempty"`
	// Pos is where a written answer's edit inserted and deleted (in
	// characters); 0 for other kinds.
	Pos int `json:"pos,omitempty"`
}

// cellRef identifies one value of a decision's drafts.
type cellRef struct {
	gen        uint64
	q, kind, c string
}

func (p *CellProvenance) ref() cellRef {
	return cellRef{gen: p.Generation, q: p.Question, kind: string(p.Kind), c: p.Cell}
}

// provIndex is the last setter of every value of a decision's drafts.
type provIndex map[cellRef]CellProvenance

func (x provIndex) apply(cells []CellProvenance) provIndex {
	if len(cells) == 0 {
		return x
	}
	if x == nil {
		x = provIndex{}
	}
	for _, c := range cells {
		if c.Kind == CellText {
			// Who wrote last is the written answer's provenance; what
			// their edit inserted and deleted belongs to the edit alone.
			c.Value, c.Was, c.Pos = "", "", 0
		}
		x[c.ref()] = c
	}
	return x
}

// generation returns the entries of one generation, sorted by question,
// kind and cell.
func (x provIndex) generation(g uint64) []CellProvenance {
	var out []CellProvenance
	for r, c := range x {
		if r.gen == g {
			out = append(out, c)
		}
	}
	sortCells(out)
	return out
}

// all returns every entry, sorted.
func (x provIndex) all() []CellProvenance {
	out := slices.Collect(maps.Values(x))
	sortCells(out)
	return out
}

func sortCells(cs []CellProvenance) {
	slices.SortFunc(cs, func(a, b CellProvenance) int {
		return cmp.Or(cmp.Compare(a.Generation, b.Generation), strings.Compare(a.Question, b.Question),
			strings.Compare(string(a.Kind), string(b.Kind)), strings.Compare(a.Cell, b.Cell))
	})
}

// compact returns a copy of x whose strings live in one arena (see park.go).
func (x provIndex) compact() provIndex {
	if len(x) == 0 {
		return nil
	}
	var r arena
	out := make(provIndex, len(x))
	for _, c := range x {
		c.Question, c.Cell, c.Value = r.str(c.Question), r.str(c.Cell), r.str(c.Value)
		c.By, c.Change, c.Was, c.WasBy = r.str(c.By), r.str(c.Change), r.str(c.Was), r.str(c.WasBy)
		c.Kind = CellKind(r.str(string(c.Kind)))
		out[c.ref()] = c
	}
	return out
}

// editCells returns the values of generation g that an edit changed from
// before to after, attributed to who at at, with what each replaced and
// who had set that (from index). Only questions whose draft differs are
// compared cell by cell.
func editCells(index provIndex, qs map[string]*crdt.QuestionState, g uint64, before, after crdt.Draft,
	who string, at time.Time, change string) []CellProvenance {
	var out []CellProvenance
	add := func(q string, kind CellKind, cell, was, now string) *CellProvenance {
		c := CellProvenance{Generation: g, Question: strings.Clone(q), Kind: kind, Cell: strings.Clone(cell),
			Value: strings.Clone(now), By: who, At: at, Change: change, Was: strings.Clone(was)}
		c.WasBy = index[c.ref()].By
		out = append(out, c)
		return &out[len(out)-1]
	}
	for q, nd := range after.Questions {
		od := before.Questions[q]
		if od.Equal(nd) {
			continue
		}
		shape := qs[q]
		if od.Text != nd.Text {
			pos, deleted, inserted := textEdit(od.Text, nd.Text)
			add(q, CellText, "", deleted, inserted).Pos = pos
		}
		if !slices.Equal(od.Choices, nd.Choices) {
			if shape != nil && shape.Multiple {
				for _, o := range shape.Options {
					was, now := slices.Contains(od.Choices, o.ID), slices.Contains(nd.Choices, o.ID)
					if was != now {
						add(q, CellChoice, o.ID, chosenValue(was), chosenValue(now))
					}
				}
			} else {
				add(q, CellChoice, "", firstOr(od.Choices), firstOr(nd.Choices))
			}
		}
		for k, m := range nd.Marks {
			if o := od.Marks[k]; o != m {
				add(q, CellMark, k, string(o), string(m))
			}
		}
		for k, o := range od.Marks {
			if _, ok := nd.Marks[k]; !ok && o != marks.Cleared {
				add(q, CellMark, k, string(o), "")
			}
		}
	}
	sortCells(out)
	return out
}

// textEdit returns what turned text before into after, as one splice:
// the characters deleted and inserted at character pos (the longest
// common prefix and suffix stay). Concurrent typing merged into one
// accepted edit shows as the one splice that covers it.
func textEdit(before, after string) (pos int, deleted, inserted string) {
	b, a := []rune(before), []rune(after)
	for pos < len(b) && pos < len(a) && b[pos] == a[pos] {
		pos++
	}
	end := 0
	for end < len(b)-pos && end < len(a)-pos && b[len(b)-1-end] == a[len(a)-1-end] {
		end++
	}
	return pos, string(b[pos : len(b)-end]), string(a[pos : len(a)-end])
}

func chosenValue(b bool) string {
	if b {
		return ChoiceChosen
	}
	return ""
}

func firstOr(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// Provenance returns who set each value of a decision's current draft,
// when, and what it replaced, sorted by question, kind and cell. A value
// no member has set since the draft was laid out has no entry.
func (a *Authority) Provenance(id string) ([]CellProvenance, error) {
	d, ok := a.decisions[id]
	if !ok {
		return nil, a.missing(id)
	}
	return d.prov.generation(d.state.Generation), nil
}

// The provenance envelope of a stored draft chunk or snapshot:
//
//	"AcPv"  magic (automerge's chunks begin 85 6f 4a 83, so a bare
//	        automerge chunk, as stored before provenance existed, is
//	        told apart)
//	uvarint length of the record, then the record: JSON provRecord
//	the automerge bytes, unchanged
//
// The framing never changes; the record carries its own version, and a
// record of a version this code does not know, or one that cannot be
// read, costs only its attribution: the draft still loads.
var provMagic = [4]byte{'A', 'c', 'P', 'v'}

// provVersion is the version of provRecord this code writes.
const provVersion = 1

// maxProvRecord bounds one record's size when reading, before it is
// decoded: a snapshot's record holds the whole index, at most a few
// hundred bytes per value of a document that crdt.Load takes.
const maxProvRecord = crdt.MaxDocumentBytes

// provRecord is what the envelope says: the edit's member, time and
// change hashes and the cells it changed (a chunk), or every entry of the
// index (a snapshot: Whole set).
type provRecord struct {
	V       int              `json:"v"`
	By      string           `json:"by,omitempty"`
	At      *time.Time       `json:"at,omitempty"`
	Changes []string         `json:"changes,omitempty"`
	Whole   bool             `json:"whole,omitempty"`
	Cells   []CellProvenance `json:"cells,omitempty"`
}

// errProvFrame reports an envelope whose framing is damaged: the
// automerge bytes cannot be found, so the draft does not load.
var errProvFrame = errors.New("question: damaged provenance envelope")

// wrapDraft returns body (automerge bytes) wrapped with rec, or body alone
// when rec says nothing.
func wrapDraft(rec *provRecord, body []byte) ([]byte, error) {
	if rec == nil || len(rec.Cells) == 0 && !rec.Whole {
		return body, nil
	}
	rec.V = provVersion
	meta, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(provMagic)+binary.MaxVarintLen64+len(meta)+len(body))
	out = append(out, provMagic[:]...)
	out = binary.AppendUvarint(out, uint64(len(meta)))
	out = append(out, meta...)
	return append(out, body...), nil
}

// splitDraft separates a stored chunk or snapshot into its provenance
// record (nil for a bare automerge chunk) and its automerge bytes. It
// fails only when the framing is damaged; the record is not decoded.
func splitDraft(b []byte) (meta, body []byte, err error) {
	if !bytes.HasPrefix(b, provMagic[:]) {
		return nil, b, nil
	}
	rest := b[len(provMagic):]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > maxProvRecord || n > uint64(len(rest)-k) {
		return nil, nil, errProvFrame
	}
	return rest[k : k+int(n)], rest[k+int(n):], nil
}

// readProvRecord decodes a record found by splitDraft.
func readProvRecord(meta []byte) (*provRecord, error) {
	var rec provRecord
	if err := json.Unmarshal(meta, &rec); err != nil {
		return nil, fmt.Errorf("provenance record: %w", err)
	}
	if rec.V != provVersion {
		return nil, fmt.Errorf("provenance record of version %d; this build reads %d", rec.V, provVersion)
	}
	for _, c := range rec.Cells {
		if !c.Kind.known() {
			return nil, fmt.Errorf("provenance record: unknown cell kind %q", c.Kind)
		}
	}
	return &rec, nil
}

// unwrapStored returns the automerge bytes of a stored draft and, when
// withIndex, the provenance index its records build (a snapshot's whole
// index, then each chunk's cells in order). A record that cannot be read
// is reported through bad and skipped: it costs its attribution, not the
// draft. Only damaged framing fails it.
func unwrapStored(snapshot []byte, chunks [][]byte, withIndex bool, bad func(error)) (body []byte, bodies [][]byte, index provIndex, err error) {
	read := func(b []byte) ([]byte, error) {
		meta, body, err := splitDraft(b)
		if err != nil || meta == nil || !withIndex {
			return body, err
		}
		rec, err := readProvRecord(meta)
		if err != nil {
			if bad != nil {
				bad(err)
			}
			return body, nil
		}
		if rec.Whole {
			index = provIndex{}
		}
		index = index.apply(rec.Cells)
		return body, nil
	}
	if body, err = read(snapshot); err != nil {
		return nil, nil, nil, err
	}
	if len(chunks) > 0 {
		bodies = make([][]byte, len(chunks))
	}
	for i, c := range chunks {
		if bodies[i], err = read(c); err != nil {
			return nil, nil, nil, err
		}
	}
	return body, bodies, index, nil
}

// stageEdit records an accepted edit's provenance in the transaction: the
// record its chunk is stored with, the row the decision's audit log gains,
// and the cells the index gains when it commits.
func (t *txn) stageEdit(id string, rec *provRecord) error {
	if t.edits == nil {
		t.edits = map[string]*provRecord{}
	}
	t.edits[id] = rec
	return t.appendAudit(id, auditRowOf(rec))
}

// wholeRecord is the record a snapshot of decision id is stored with: the
// index as it will be once the transaction commits, or nil when empty.
func (t *txn) wholeRecord(id string) *provRecord {
	index := t.decision(id).prov
	if e := t.edits[id]; e != nil {
		index = maps.Clone(index).apply(e.Cells)
	}
	if len(index) == 0 {
		return nil
	}
	return &provRecord{Whole: true, Cells: index.all()}
}

// applyEdits gives the committed edits' cells to their decisions' indexes.
func (t *txn) applyEdits() {
	for id, e := range t.edits {
		if d := t.a.decisions[id]; d != nil {
			d.prov = d.prov.apply(e.Cells)
		}
	}
}

func hashStrings(hs []crdt.ChangeHash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	return out
}
