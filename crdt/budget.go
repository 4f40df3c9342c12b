package crdt

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/automerge/automerge-go"
)

// Load refuses a document past these limits, so every state the authority
// keeps must stay within them: a document that loaded once must load again
// with the same code. The authority keeps a running Budget of each
// document and, before a state past a rebase threshold is stored, replaces
// the document's history by a fresh one holding the same values (Rebase).
const (
	// MaxDocumentOps caps the operations Load decodes from a snapshot and
	// its chunks together. Every operation ever made counts: a deleted
	// character stays in the history (and in a compact save) for good.
	MaxDocumentOps = maxChunkOps

	// RebaseOps is the operation count past which the authority rebases a
	// document. A fresh history holds one operation per live value (one
	// per character of every generation's written answers), so after a
	// rebase a document holds far fewer; MaxDocumentOps - RebaseOps
	// (524,288) leaves room for the largest legal edit, a 100,000-character
	// answer replaced whole (200,000 operations), on top of a document just
	// under the threshold.
	RebaseOps = 1 << 19

	// RebaseBytes is the encoded size past which the authority rebases a
	// document, a quarter of MaxDocumentBytes; one batch is at most
	// MaxChangesBytes.
	RebaseBytes = MaxDocumentBytes / 4

	// RebaseChanges is the change count past which the authority rebases a
	// document: Load reads every change's header, so loading grows with
	// their number even where their operations are few (marks set again
	// and again).
	RebaseChanges = 1 << 16

	// CompactOps and CompactRatio make the authority also rebase a
	// document whose history has outgrown its values (Budget.Outgrown):
	// past CompactOps operations, and CompactRatio times what a fresh
	// history of its state holds. automerge's cost per call, on the
	// server and in every replica (an apply, a save, a load), grows with
	// the operations of the objects it touches, deleted characters and
	// overwritten registers included: applying one small edit of a text
	// costs a JavaScript replica about 0.1 ms at 200 changes of that
	// text's history and 0.8 ms at 1,000. A rebase costs each replica one
	// load of the values (about 1 ms for a decision of a few hundred), and
	// a writer with an edit in flight one refusal as stale and a resend;
	// the apply cost that a thousand operations of churn add to every
	// replica is far more than that, so rebasing after about a thousand
	// keeps both small (in the harness's W2 of 2,000 writes at 16
	// writers, 4,096 and 8 gave 222 writes/s and 430 µs of client CPU per
	// received change, these 285-298 and 321-375).
	CompactOps   = 1 << 10
	CompactRatio = 3
)

// Budget is what Load would count of a document as the authority stores it
// (the snapshot it was loaded from or last rebased to, and every change
// since as chunks). It is kept up to date change by change, from the
// operations each incoming batch and each local change holds, never by
// reading the history again. Its counts are upper bounds: a compact
// snapshot of the same changes holds no delete operations.
type Budget struct {
	// Ops counts operations (against MaxDocumentOps).
	Ops int
	// Bytes counts encoded bytes (against MaxDocumentBytes).
	Bytes int
	// Changes counts changes in the history.
	Changes int
	// Actors counts the actors that wrote them.
	Actors int
	// BaseOps is Ops right after the last Rebase (0 if there was none):
	// the size of the values alone, which no rebase can bring down.
	BaseOps int
}

// Err returns an error wrapping ErrBudget (and so ErrTooLarge) when the
// document is past a limit Load enforces, nil otherwise.
func (b Budget) Err() error {
	switch {
	case b.Ops > MaxDocumentOps:
		return errorf(ErrBudget, "%d operations, more than %d", b.Ops, MaxDocumentOps)
	case b.Bytes > MaxDocumentBytes:
		return errorf(ErrBudget, "%d bytes, more than %d", b.Bytes, MaxDocumentBytes)
	}
	return nil
}

// NeedsRebase reports whether the document's history has grown past a
// rebase threshold, or past a limit, and a rebase can be expected to shrink
// it: a document whose values alone are near the threshold is rebased
// again only once its history has doubled them (or crossed a limit).
func (b Budget) NeedsRebase() bool {
	if b.Err() != nil {
		return true
	}
	past := b.Ops > RebaseOps || b.Bytes > RebaseBytes || b.Changes > RebaseChanges
	return past && (b.BaseOps == 0 || b.Ops > 2*b.BaseOps || b.Changes > RebaseChanges)
}

// Outgrown reports whether the history has outgrown the values it holds
// (live: State.LiveOps of the document), so that a rebase would shrink it
// CompactRatio-fold: past CompactOps operations, CompactRatio times the
// values, and twice what the last rebase left (when this process made
// it), so that an estimate of the values that is too low cannot make
// every edit rebase.
func (b Budget) Outgrown(live int) bool {
	return b.Ops > CompactOps && b.Ops > CompactRatio*live && b.Ops > 2*b.BaseOps
}

// Overdue reports whether the history has outgrown the values twice
// over: Outgrown's thresholds, each doubled. An authority that leaves
// rebases for a quiet moment (question.Options.QuietRebase) still
// rebases an overdue document at once, so a decision edited without a
// pause keeps a bounded history.
func (b Budget) Overdue(live int) bool {
	return b.Ops > 2*CompactOps && b.Ops > 2*CompactRatio*live && b.Ops > 4*b.BaseOps
}

// budgetMark is the budget at one revision, kept for Rollback.
type budgetMark struct {
	heads Heads
	b     Budget
}

// maxBudgetMarks bounds the revisions Rollback can restore a budget for
// without counting the history again; the authority rolls back at most a
// command's few changes.
const maxBudgetMarks = 8

// Budget returns the document's running budget.
func (d *Doc) Budget() Budget {
	if !d.budgetKnown {
		d.budget = d.countBudget()
		d.budgetKnown = true
	}
	b := d.budget
	if seqs, err := d.seqCounts(); err == nil {
		b.Actors = len(seqs)
	}
	return b
}

// countBudget counts the budget from the whole history, encoded as
// changes: the fallback when a document was forked or merged, whose form
// as stored is unknown. It is an upper bound of what Load counts of any
// snapshot and chunks of the same changes.
func (d *Doc) countBudget() Budget {
	chs, err := d.am.Changes()
	if err != nil {
		return Budget{Ops: MaxDocumentOps + 1} // unreadable: never trust it
	}
	var b Budget
	for _, c := range chs {
		raw := c.Save()
		n, err := changeOps(raw)
		if err != nil {
			return Budget{Ops: MaxDocumentOps + 1}
		}
		b.Ops += n
		b.Bytes += len(raw)
	}
	b.Changes = len(chs)
	b.BaseOps = d.budget.BaseOps
	return b
}

// markBudget remembers the budget at the current revision (heads, sorted),
// before a change.
func (d *Doc) markBudget(heads Heads) {
	if !d.budgetKnown {
		return
	}
	if n := len(d.marks); n > 0 && d.marks[n-1].heads.Equal(heads) {
		return
	}
	if len(d.marks) == maxBudgetMarks {
		d.marks = slices.Delete(d.marks, 0, 1)
	}
	d.marks = append(d.marks, budgetMark{heads: slices.Clone(heads), b: d.budget})
}

// rollbackBudget restores the budget of an earlier revision.
func (d *Doc) rollbackBudget(heads Heads) {
	for i := len(d.marks) - 1; i >= 0; i-- {
		if d.marks[i].heads.Equal(heads) {
			d.budget = d.marks[i].b
			d.marks = d.marks[:i]
			return
		}
	}
	d.marks = nil
	d.budgetKnown = false
}

// addBudget adds a change (or batch of changes) to the running budget.
func (d *Doc) addBudget(ops, bytes, changes int) {
	if !d.budgetKnown {
		return
	}
	d.budget.Ops += ops
	d.budget.Bytes += bytes
	d.budget.Changes += changes
}

// changeOps counts the operations of one change chunk (one of this
// document's own, already checked), from its action column alone.
func changeOps(c []byte) (int, error) {
	body, err := chunkBody(c)
	if err != nil {
		return 0, err
	}
	r := leb{b: skipDeps(body)}
	r.bytes() // actor
	r.uint()  // seq
	r.uint()  // start op
	r.int()   // time
	r.bytes() // message
	for n := r.count(len(r.b)); n > 0 && r.err == nil; n-- {
		r.bytes()
	}
	cols := r.layout()
	r.fill(cols)
	if r.err != nil {
		return 0, r.err
	}
	for _, col := range cols {
		if col.spec&^colDeflate != colAction {
			continue
		}
		data := col.data
		if col.spec&colDeflate != 0 {
			if data, err = inflate(data); err != nil {
				return 0, err
			}
		}
		a := runs{r: leb{b: data}}
		n := 0
		for !a.done() {
			if a.left == 0 {
				a.row()
				n++
				continue
			}
			if a.lit {
				a.row()
				n++
				continue
			}
			n += int(a.left) // a repeated run: count it whole
			a.left = 0
		}
		return n, a.r.err
	}
	return 0, nil
}

// rebaseMessage marks the first change of a rebased document's history.
// The change's message goes on, after a newline, with the clock of the
// history the rebase replaced (see RebaseClock).
const rebaseMessage = "rebase"

// maxRebaseClock bounds the actors a rebase message names; a history with
// more names only the maxRebaseClock most recent writers (by their last
// change's place in the history).
const maxRebaseClock = 256

// isRebaseMessage reports whether msg is the message of a rebase change.
func isRebaseMessage(msg string) bool {
	return msg == rebaseMessage || strings.HasPrefix(msg, rebaseMessage+"\n")
}

// rebaseClock returns d's clock as a rebase message carries it:
// "actor:seq" per actor, the most recent writers first.
func (d *Doc) rebaseClock() (string, error) {
	chs, err := d.am.Changes()
	if err != nil {
		return "", amError("read changes", err)
	}
	type last struct {
		seq uint64
		at  int
	}
	clock := map[string]last{}
	// A history that was itself started by a rebase goes on naming the
	// writers that rebase covered (before every writer of its own): a
	// replica that missed both rebases still learns which of its changes
	// they hold.
	for a, seq := range clockOf(chs) {
		clock[a] = last{seq: seq, at: -1}
	}
	for i, c := range chs {
		a := c.ActorID()
		if l := clock[a]; c.ActorSeq() >= l.seq {
			clock[a] = last{seq: c.ActorSeq(), at: i}
		}
	}
	actors := slices.Collect(maps.Keys(clock))
	slices.SortFunc(actors, func(a, b string) int { return clock[b].at - clock[a].at })
	if len(actors) > maxRebaseClock {
		actors = actors[:maxRebaseClock]
	}
	var b strings.Builder
	for i, a := range actors {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d", a, clock[a].seq)
	}
	return b.String(), nil
}

// RebaseClock returns, for a rebased document, the clock of the history
// its rebase replaced: for each actor (by its hex id), the last of its
// changes that history held. A replica holding that history learns from it
// which of its own changes the rebased document already holds (Covered),
// so that it carries over only what the server never had. nil when d is
// not rebased, or was rebased without a clock. It reads the whole history,
// so it belongs on the rare paths of a rebase.
func (d *Doc) RebaseClock() map[string]uint64 {
	chs, err := d.am.Changes()
	if err != nil {
		return nil
	}
	return clockOf(chs)
}

// clockOf parses the clock in the message of the rebase change among chs
// (the one with no dependencies that starts the history); nil if none.
func clockOf(chs []*automerge.Change) map[string]uint64 {
	for _, c := range chs {
		msg := c.Message()
		if c.ActorSeq() != 1 || len(c.Dependencies()) != 0 || !isRebaseMessage(msg) {
			continue
		}
		_, list, ok := strings.Cut(msg, "\n")
		if !ok {
			return nil
		}
		clock := map[string]uint64{}
		for _, e := range strings.Split(list, ",") {
			a, n, ok := strings.Cut(e, ":")
			seq, err := strconv.ParseUint(n, 10, 64)
			if !ok || err != nil || a == "" {
				return nil
			}
			clock[a] = seq
		}
		return clock
	}
	return nil
}

// Covered returns the heads of the part of d's history that clock (a
// RebaseClock) covers: for each actor it names, its change of d with that
// sequence number, or its last one when d holds fewer. A change's
// dependencies were in the history before it, so these heads and their
// ancestors are all covered.
func (d *Doc) Covered(clock map[string]uint64) Heads {
	if len(clock) == 0 {
		return nil
	}
	chs, err := d.am.Changes()
	if err != nil {
		return nil
	}
	type last struct {
		seq  uint64
		hash ChangeHash
	}
	best := map[string]last{}
	for _, c := range chs {
		a := c.ActorID()
		want, ok := clock[a]
		if !ok || c.ActorSeq() > want {
			continue
		}
		if b, seen := best[a]; !seen || c.ActorSeq() > b.seq {
			best[a] = last{c.ActorSeq(), ChangeHash(c.Hash())}
		}
	}
	out := make([]ChangeHash, 0, len(best))
	for _, b := range best {
		out = append(out, b.hash)
	}
	return sortHeads(out)
}

// Rebase returns a document with a fresh history that holds the same
// values as d: format version, questions with their items, the appended
// map, the generation, and every generation's draft (text, marks including
// cleared registers, choices). Its history is one change, so it holds one
// operation per value. It is proven to load back (through Load and its
// checks) and to read the same State; the result is that loaded copy,
// writing as d's actor, whose Budget is exactly what Load counted.
//
// A rebased document shares no change with d: a replica holding d must
// replace its document with the rebased one, never merge the two (see
// Rebased).
func (d *Doc) Rebase() (*Doc, error) {
	st, err := d.State()
	if err != nil {
		return nil, err
	}
	nd, err := newDoc(automerge.New(), Options{Now: d.now})
	if err != nil {
		return nil, err
	}
	if err := nd.writeState(st); err != nil {
		return nil, err
	}
	clock, err := d.rebaseClock()
	if err != nil {
		return nil, err
	}
	t := d.now()
	nd.heads = headsCache{}
	if _, err := nd.am.Commit(rebaseMessage+"\n"+clock, automerge.CommitOptions{Time: &t}); err != nil {
		return nil, amError("rebase", err)
	}
	saved := nd.am.Save()
	if len(saved) > MaxDocumentBytes {
		return nil, errorf(ErrBudget, "the values alone take %d bytes, more than %d", len(saved), MaxDocumentBytes)
	}
	back, err := Load(saved, nil, Options{Actor: d.actor, Now: d.now})
	if err != nil {
		return nil, fmt.Errorf("crdt: rebased document does not load: %w", err)
	}
	got, err := back.State()
	if err != nil {
		return nil, fmt.Errorf("crdt: rebased document does not read: %w", err)
	}
	if !got.Equal(st) {
		return nil, errorf(ErrMalformed, "rebased document reads differently")
	}
	back.rebased = true
	back.proven = &provenSave{am: back.am, heads: back.amHeads(), saved: saved}
	back.budget.BaseOps = back.budget.Ops
	if err := back.budget.Err(); err != nil {
		return nil, err
	}
	return back, nil
}

// Rebased reports whether d's history was started by Rebase: a change of
// a replica that depends on changes d lacks was most likely made against
// the history the rebase replaced.
func (d *Doc) Rebased() bool { return d.rebased }

// writeState writes st into an empty document, in a fixed order.
func (d *Doc) writeState(st *State) error {
	root := d.am.RootMap()
	if err := root.Set("v", int64(formatVersion)); err != nil {
		return amError("rebase", err)
	}
	qs := automerge.NewMap()
	if err := root.Set("questions", qs); err != nil {
		return amError("rebase", err)
	}
	for _, id := range sortedKeys(st.Questions) {
		q := st.Questions[id]
		shape := QuestionShape{ID: id, Written: q.Written, Multiple: q.Multiple, Options: q.Options, Criteria: q.Criteria}
		if err := writeShape(qs, shape, "rebase"); err != nil {
			return err
		}
	}
	if len(st.Appended) > 0 {
		ap := automerge.NewMap()
		if err := root.Set("appended", ap); err != nil {
			return amError("rebase", err)
		}
		for _, key := range sortedKeys(st.Appended) {
			a := st.Appended[key]
			e := automerge.NewMap()
			if err := ap.Set(key, e); err != nil {
				return amError("rebase", err)
			}
			for _, kv := range [][2]string{{"kind", a.Kind}, {"question", a.Question}, {"id", a.ID}} {
				if err := e.Set(kv[0], kv[1]); err != nil {
					return amError("rebase", err)
				}
			}
		}
	}
	if len(st.Drafts) > 0 {
		drafts := automerge.NewMap()
		if err := root.Set("drafts", drafts); err != nil {
			return amError("rebase", err)
		}
		for _, g := range sortedKeys(st.Drafts) {
			if err := writeDraft(drafts, g, st.Drafts[g], st.Questions); err != nil {
				return err
			}
		}
	}
	if st.Generation > 0 {
		if err := root.Set("generation", st.Generation); err != nil {
			return amError("rebase", err)
		}
	}
	return nil
}

func writeDraft(drafts *automerge.Map, g uint64, dr Draft, shapes map[string]*QuestionState) error {
	gm := automerge.NewMap()
	if err := drafts.Set(genKey(g), gm); err != nil {
		return amError("rebase", err)
	}
	for _, id := range sortedKeys(dr.Questions) {
		q, shape := dr.Questions[id], shapes[id]
		qd := automerge.NewMap()
		if err := gm.Set(id, qd); err != nil {
			return amError("rebase", err)
		}
		if shape.Written {
			if err := qd.Set("text", automerge.NewText(q.Text)); err != nil {
				return amError("rebase", err)
			}
			continue
		}
		mm := automerge.NewMap()
		if err := qd.Set("marks", mm); err != nil {
			return amError("rebase", err)
		}
		for _, k := range sortedKeys(q.Marks) {
			var v any // a cleared register stays a register holding null
			if m := q.Marks[k]; m.Valid() {
				v = string(m)
			}
			if err := mm.Set(k, v); err != nil {
				return amError("rebase", err)
			}
		}
		chosen := automerge.NewMap()
		if err := qd.Set("chosen", chosen); err != nil {
			return amError("rebase", err)
		}
		if shape.Multiple {
			for _, o := range q.Choices {
				if err := chosen.Set(o, true); err != nil {
					return amError("rebase", err)
				}
			}
		} else if len(q.Choices) == 1 {
			if err := qd.Set("choice", q.Choices[0]); err != nil {
				return amError("rebase", err)
			}
		}
	}
	return nil
}

func sortedKeys[K string | uint64, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
