package question

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/accord-crdt/accord/persist"
)

// AuditVersion is the version of the audit export's schema
// (docs/AUDIT.md). A reader refuses events of another version.
const AuditVersion = 1

// Audit event types.
const (
	AuditDecision    = "decision"    // the decision as created: key, origin, definition
	AuditAppend      = "append"      // an option or criterion appended (its key in Key)
	AuditAttribution = "attribution" // who last set each value as of the last compaction (decisions older than the audit log only)
	AuditEdit        = "edit"        // an accepted draft edit: member, time, changes, cells
	AuditSave        = "save"        // a save: the answer with its attribution
	AuditReopen      = "reopen"      // a reopen: the generation it opened
	AuditDiscard     = "discard"     // the decision set aside
	AuditFinding     = "finding"     // a finding (research, investigation, ask, take, stop) as it stands
	AuditEnd         = "end"         // the decision as it stands: status and generation
)

// AuditEvent is one line of an audit export.
type AuditEvent struct {
	V          int              `json:"v"`
	Type       string           `json:"type"`
	Decision   string           `json:"decision"`
	Generation uint64           `json:"generation,omitempty"`
	By         string           `json:"by,omitempty"`
	At         *time.Time       `json:"at,omitempty"`
	Key        string           `json:"key,omitempty"`
	Origin     Origin           `json:"origin,omitempty"`
	Definition *Definition      `json:"definition,omitempty"`
	Append     *Appended        `json:"append,omitempty"`
	Changes    []string         `json:"changes,omitempty"`
	Cells      []CellProvenance `json:"cells,omitempty"`
	Answer     *Answer          `json:"answer,omitempty"`
	Why        string           `json:"why,omitempty"`
	Finding    *Finding         `json:"finding,omitempty"`
	Status     Status           `json:"status,omitempty"`
}

// AuditExport is one decision's history as the authority held it when
// Audit was called: its record, its stored draft (the very bytes the
// store holds, shared, never copied) and where to read its audit log.
// Writing it needs no authority, so a slow reader of an export holds up
// nobody's edits.
type AuditExport struct {
	rec    Record
	stored [][]byte // snapshot first, then chunks
	store  persist.Store
	doc    string
	cut    time.Time // log rows of edits after it are left out
	logBad func(error)
}

// auditPage is how many rows of an audit log an export reads at a time.
const auditPage = 256

// auditRow is one row of a decision's audit log: an accepted edit (the
// member, time and change hashes of its provenance record, and the values
// it changed), or, first in every log written since the decision was
// created, a start row saying the log holds every edit. The values leave
// out what every value of an edit shares (member, time, last change), so a
// row costs about what the edit changed.
type auditRow struct {
	V       int         `json:"v"`
	Start   bool        `json:"start,omitempty"`
	By      string      `json:"by,omitempty"`
	At      *time.Time  `json:"at,omitempty"`
	Changes []string    `json:"changes,omitempty"`
	Cells   []auditCell `json:"cells,omitempty"`
}

type auditCell struct {
	Generation uint64   `json:"g"`
	Question   string   `json:"q"`
	Kind       CellKind `json:"k"`
	Cell       string   `json:"c,omitempty"`
	Value      string   `json:"v,omitempty"`
	Was        string   `json:"w,omitempty"`
	WasBy      string   `json:"wb,omitempty"`
	Pos        int      `json:"p,omitempty"`
}

// auditRowVersion is the version of auditRow this code writes.
const auditRowVersion = 1

// auditRowOf is the audit row of an accepted edit's provenance record.
func auditRowOf(rec *provRecord) auditRow {
	row := auditRow{By: rec.By, At: rec.At, Changes: rec.Changes}
	for _, c := range rec.Cells {
		row.Cells = append(row.Cells, auditCell{Generation: c.Generation, Question: c.Question, Kind: c.Kind, Cell: c.Cell,
			Value: c.Value, Was: c.Was, WasBy: c.WasBy, Pos: c.Pos})
	}
	return row
}

// appendAudit stages row as the next row of decision id's audit log.
func (t *txn) appendAudit(id string, row auditRow) error {
	row.V = auditRowVersion
	b, err := json.Marshal(row)
	if err != nil {
		return err
	}
	t.write.Audit = append(t.write.Audit, persist.Put{Key: id, Value: b})
	return nil
}

// readAuditRow decodes a row of an audit log.
func readAuditRow(b []byte) (*auditRow, error) {
	var row auditRow
	if err := json.Unmarshal(b, &row); err != nil {
		return nil, fmt.Errorf("audit row: %w", err)
	}
	if row.V != auditRowVersion {
		return nil, fmt.Errorf("audit row of version %d; this build reads %d", row.V, auditRowVersion)
	}
	for _, c := range row.Cells {
		if !c.Kind.known() {
			return nil, fmt.Errorf("audit row: unknown cell kind %q", c.Kind)
		}
	}
	return &row, nil
}

// record is the provenance record an edit's row was made from.
func (row *auditRow) record() *provRecord {
	rec := &provRecord{By: row.By, At: row.At, Changes: row.Changes}
	var at time.Time
	if row.At != nil {
		at = *row.At
	}
	var change string
	if len(row.Changes) > 0 {
		change = row.Changes[len(row.Changes)-1]
	}
	for _, c := range row.Cells {
		rec.Cells = append(rec.Cells, CellProvenance{Generation: c.Generation, Question: c.Question, Kind: c.Kind, Cell: c.Cell,
			Value: c.Value, By: row.By, At: at, Change: change, Was: c.Was, WasBy: c.WasBy, Pos: c.Pos})
	}
	return rec
}

// Audit returns the history of a decision, for WriteTo. It is cheap: the
// record is copied, the stored draft shared, and the audit log is read
// only as WriteTo writes it.
func (a *Authority) Audit(id string) (*AuditExport, error) {
	d, ok := a.decisions[id]
	if !ok {
		return nil, a.missing(id)
	}
	parts := append([][]byte{d.stored.Snapshot}, d.stored.Chunks...)
	doc := a.opts.Doc
	log := a.opts.Logger
	return &AuditExport{rec: d.rec.Clone(), stored: parts, store: a.opts.Store, doc: doc, cut: a.opts.Now().UTC(),
		logBad: func(err error) {
			log.Warn("question: audit export: a provenance record cannot be read; its edit is left out", "doc", doc, "decision", id, "err", err)
		}}, nil
}

// WriteTo writes the export as NDJSON, one AuditEvent a line, in the
// order of time as far as it is known: the decision, its appends, then
// edits, saves, reopens, a discard and findings merged by time, and an
// end event. Edits are read from the decision's audit log a page at a
// time as they are written; every accepted edit since the decision was
// created is there, whatever compaction and rebase did to the draft. A
// decision created before the log existed has no start row: its export
// is taken from the stored draft instead, with an attribution event for
// what its last compaction kept.
func (x *AuditExport) WriteTo(ctx context.Context, w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	rec := &x.rec
	emit := func(e AuditEvent) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		e.V, e.Decision = AuditVersion, rec.ID
		return enc.Encode(e)
	}
	created := rec.CreatedAt
	def := rec.Definition
	if err := emit(AuditEvent{Type: AuditDecision, Generation: 1, By: rec.CreatedBy, At: &created, Key: rec.Key,
		Origin: rec.Origin, Definition: &def}); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(rec.Appended)) {
		if ap := rec.Appended[k]; ap.At.IsZero() {
			if err := emit(AuditEvent{Type: AuditAppend, Key: k, Append: &ap}); err != nil {
				return err
			}
		}
	}
	lifecycle := x.lifecycle()
	next := 0
	flushUntil := func(t *time.Time) error {
		for ; next < len(lifecycle) && (t == nil || !lifecycle[next].At.After(*t)); next++ {
			if err := emit(lifecycle[next]); err != nil {
				return err
			}
		}
		return nil
	}
	edit := func(pr *provRecord) error {
		if err := flushUntil(pr.At); err != nil {
			return err
		}
		e := AuditEvent{Type: AuditEdit, By: pr.By, At: pr.At, Changes: pr.Changes, Cells: pr.Cells}
		if len(pr.Cells) > 0 {
			e.Generation = pr.Cells[0].Generation
		}
		return emit(e)
	}
	logged, err := x.logEdits(ctx, edit)
	if err != nil {
		return fmt.Errorf("question: audit export of %q: %w", rec.ID, err)
	}
	if !logged {
		if err := x.draftEdits(emit, edit); err != nil {
			return err
		}
	}
	if err := flushUntil(nil); err != nil {
		return err
	}
	if err := emit(AuditEvent{Type: AuditEnd, Generation: rec.Generation, Status: rec.Status}); err != nil {
		return err
	}
	return bw.Flush()
}

// logEdits passes each edit of the decision's audit log to edit, in
// order, and reports whether the log holds the whole history (it begins
// with a start row). It passes nothing when it does not.
func (x *AuditExport) logEdits(ctx context.Context, edit func(*provRecord) error) (bool, error) {
	var after uint64
	started := false
	for {
		rows, err := x.store.ReadAudit(ctx, x.doc, x.rec.ID, after, auditPage)
		if err != nil {
			return false, err
		}
		for _, row := range rows {
			after = row.Seq
			r, err := readAuditRow(row.Value)
			if err != nil {
				x.logBad(err)
				continue
			}
			switch {
			case r.Start:
				started = true
			case !started:
				return false, nil
			case r.At != nil && r.At.After(x.cut):
				return true, nil
			default:
				if err := edit(r.record()); err != nil {
					return true, err
				}
			}
		}
		if len(rows) < auditPage {
			return started, nil
		}
	}
}

// draftEdits writes what the stored draft holds of a decision's edits:
// the attribution its last compaction kept, then the record of each chunk
// since, one at a time.
func (x *AuditExport) draftEdits(emit func(AuditEvent) error, edit func(*provRecord) error) error {
	for i, part := range x.stored {
		meta, _, err := splitDraft(part)
		if err != nil {
			return fmt.Errorf("question: audit export of %q: %w", x.rec.ID, err)
		}
		if meta == nil {
			continue
		}
		pr, err := readProvRecord(meta)
		if err != nil {
			x.logBad(err)
			continue
		}
		if i == 0 || pr.Whole {
			for _, g := range generationsOf(pr.Cells) {
				if err := emit(AuditEvent{Type: AuditAttribution, Generation: g, Cells: cellsOf(pr.Cells, g)}); err != nil {
					return err
				}
			}
			continue
		}
		if err := edit(pr); err != nil {
			return err
		}
	}
	return nil
}

// lifecycle returns the record's appends (those with a time), saves,
// reopens, discard and findings as events sorted by time (a save before
// the reopen of the same instant; appends of one instant by key).
func (x *AuditExport) lifecycle() []AuditEvent {
	rec := &x.rec
	var out []AuditEvent
	save := func(a Answer, why string) {
		a = a.Clone()
		at := a.At
		out = append(out, AuditEvent{Type: AuditSave, Generation: a.Generation, By: a.By, At: &at, Answer: &a, Why: why})
	}
	for _, h := range rec.History {
		save(h.Answer, h.Why)
		at := h.ReopenedAt
		out = append(out, AuditEvent{Type: AuditReopen, Generation: h.Generation + 1, By: h.ReopenedBy, At: &at})
	}
	if rec.Answer != nil {
		save(*rec.Answer, rec.Why)
	}
	if rec.Status == Discarded {
		at := rec.DiscardedAt
		out = append(out, AuditEvent{Type: AuditDiscard, Generation: rec.Generation, By: rec.DiscardedBy, At: &at})
	}
	for _, k := range slices.Sorted(maps.Keys(rec.Appended)) {
		if ap := rec.Appended[k]; !ap.At.IsZero() {
			at := ap.At
			out = append(out, AuditEvent{Type: AuditAppend, By: ap.By, At: &at, Key: k, Append: &ap})
		}
	}
	for _, f := range rec.Findings {
		at := f.At
		out = append(out, AuditEvent{Type: AuditFinding, By: f.By, At: &at, Finding: &f})
	}
	slices.SortStableFunc(out, func(a, b AuditEvent) int { return a.At.Compare(*b.At) })
	return out
}

func generationsOf(cells []CellProvenance) []uint64 {
	var gs []uint64
	for _, c := range cells {
		if !slices.Contains(gs, c.Generation) {
			gs = append(gs, c.Generation)
		}
	}
	slices.Sort(gs)
	return gs
}

func cellsOf(cells []CellProvenance, g uint64) []CellProvenance {
	var out []CellProvenance
	for _, c := range cells {
		if c.Generation == g {
			out = append(out, c)
		}
	}
	return out
}

// AuditState is what ReplayAudit rebuilds from an export: the decision's
// status, generation, who set each value of the current draft, and the
// saved answers by generation.
type AuditState struct {
	Decision   string
	Status     Status
	Generation uint64
	Provenance []CellProvenance
	Answers    map[uint64]Answer
}

// ErrAudit is returned (wrapped) for an export ReplayAudit cannot read.
var ErrAudit = errors.New("question: bad audit export")

// maxAuditLine bounds one line of an export when reading it: an
// attribution event holds one generation's values.
const maxAuditLine = 64 << 20

// ReplayAudit reads an export and rebuilds the decision's state from its
// events alone.
func ReplayAudit(r io.Reader) (*AuditState, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxAuditLine)
	st := &AuditState{Answers: map[uint64]Answer{}}
	index := provIndex{}
	line, ended := 0, false
	for sc.Scan() {
		line++
		var e AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrAudit, line, err)
		}
		if e.V != AuditVersion {
			return nil, fmt.Errorf("%w: line %d: version %d; this build reads %d", ErrAudit, line, e.V, AuditVersion)
		}
		if ended {
			return nil, fmt.Errorf("%w: line %d: an event after the end", ErrAudit, line)
		}
		if line == 1 {
			if e.Type != AuditDecision {
				return nil, fmt.Errorf("%w: the first event is %q, not a decision", ErrAudit, e.Type)
			}
			st.Decision, st.Status, st.Generation = e.Decision, Open, 1
			continue
		}
		if e.Decision != st.Decision {
			return nil, fmt.Errorf("%w: line %d: an event of decision %q in an export of %q", ErrAudit, line, e.Decision, st.Decision)
		}
		switch e.Type {
		case AuditAppend, AuditFinding:
		case AuditAttribution, AuditEdit:
			index = index.apply(e.Cells)
		case AuditSave:
			if e.Answer == nil {
				return nil, fmt.Errorf("%w: line %d: a save without its answer", ErrAudit, line)
			}
			st.Answers[e.Answer.Generation] = *e.Answer
			st.Status = Settled
		case AuditReopen:
			st.Status, st.Generation = Open, e.Generation
		case AuditDiscard:
			st.Status = Discarded
		case AuditEnd:
			if e.Status != st.Status || e.Generation != st.Generation {
				return nil, fmt.Errorf("%w: the events rebuild %s at generation %d, the end says %s at %d", ErrAudit,
					st.Status, st.Generation, e.Status, e.Generation)
			}
			ended = true
		default:
			return nil, fmt.Errorf("%w: line %d: unknown event type %q", ErrAudit, line, e.Type)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAudit, err)
	}
	if !ended {
		return nil, fmt.Errorf("%w: no end event: the export was cut short", ErrAudit)
	}
	st.Provenance = index.generation(st.Generation)
	sortCells(st.Provenance)
	return st, nil
}
