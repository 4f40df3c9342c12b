package question

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/accord-crdt/accord/crdt"
)

// CreateRequest asks for one decision card.
type CreateRequest struct {
	// Key is the caller's stable key: creating with a key seen before
	// returns that card, whatever became of it.
	Key        string
	Origin     Origin
	Definition Definition
	// Revision is the document revision the creator read.
	Revision string
	// Passage holds related block addresses, primary first.
	Passage []string
}

// Created is the outcome of one CreateRequest.
type Created struct {
	Record Record
	// Repeated is true when the key named an existing card.
	Repeated bool
}

// Create opens decisions: one card, or a batch of up to MaxBatch that
// commits all or none. Records, drafts and projections commit before
// Create returns, so nothing is announced before it is durable.
func (a *Authority) Create(ctx context.Context, who Member, reqs []CreateRequest) ([]Created, error) {
	if r := canWrite(who); r != nil {
		return nil, r
	}
	if len(reqs) == 0 {
		return nil, refuse(Invalid, "no decisions to open")
	}
	if len(reqs) > MaxBatch {
		return nil, refuse(TooMany, "at most %d decisions open in one batch; got %d", MaxBatch, len(reqs))
	}
	t, err := a.begin(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Created, len(reqs))
	seen := map[string]bool{}
	for i, req := range reqs {
		req.Key = strings.TrimSpace(req.Key)
		if req.Key == "" || len(req.Key) > MaxKeyLen {
			return nil, t.fail(refuse(Invalid, "card %d needs a stable key of 1 to %d bytes", i+1, MaxKeyLen))
		}
		if seen[req.Key] {
			return nil, t.fail(refuse(Invalid, "key %q is used twice in one batch", req.Key))
		}
		seen[req.Key] = true
		if r := a.damagedKey(req.Key); r != nil {
			return nil, t.fail(r)
		}
		if id, ok := a.byKey[req.Key]; ok {
			out[i] = Created{Record: a.decisions[id].rec.Clone(), Repeated: true}
			continue
		}
		switch req.Origin {
		case FromPlanner, FromPerson, FromChat, FromWorkflow:
		case "":
			req.Origin = FromPerson
		default:
			return nil, t.fail(refuse(Invalid, "unknown origin %q", req.Origin))
		}
		if len(req.Passage) > MaxPassageBlocks {
			return nil, t.fail(refuse(TooMany, "a passage names at most %d blocks", MaxPassageBlocks))
		}
		def, r := normalizeDefinition(req.Definition, a.opts.NewID)
		if r != nil {
			r.Message = "card " + itoa(i+1) + ": " + r.Message
			return nil, t.fail(r)
		}
		id := a.opts.NewID()
		if _, taken := a.decisions[id]; taken || a.damaged[id] != nil {
			return nil, t.fail(refuse(Invalid, "id source repeated %q", id))
		}
		doc, err := crdt.New(crdt.Options{Actor: a.actor, Now: a.opts.Now})
		if err == nil {
			for _, q := range def.Questions {
				if err = doc.AddQuestion(shapeOf(q)); err != nil {
					break
				}
			}
		}
		if err == nil {
			err = doc.StartGeneration(1)
		}
		var st *crdt.State
		if err == nil {
			st, err = doc.State()
		}
		if err != nil {
			return nil, t.fail(&Refusal{Reason: Invalid, Message: "cannot lay out the draft", Err: err})
		}
		rec := &Record{
			ID: id, Key: req.Key, Origin: req.Origin, Status: Open, Definition: def, Generation: 1,
			Revision: req.Revision, Passage: append([]string(nil), req.Passage...),
			CreatedBy: who.Login, CreatedAt: a.opts.Now().UTC(),
		}
		t.created[id] = &decision{rec: rec, doc: doc, state: st}
		t.records[id] = rec
		if err := t.appendAudit(id, auditRow{Start: true}); err != nil {
			return nil, t.fail(draftRefusal(err))
		}
		if err := t.persistDraft(id, nil); err != nil {
			return nil, t.fail(draftRefusal(err))
		}
		out[i] = Created{Record: rec.Clone()}
	}
	if err := t.commit(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// Edited is the outcome of an accepted draft edit.
type Edited struct {
	// Heads is the accepted draft's revision after the edit.
	Heads crdt.Heads
	// Changes holds the changes that were new to the authority, encoded
	// once, to forward to every other replica. It is empty when Rebased.
	Changes []byte
	// Draft is the accepted draft of the current generation.
	Draft crdt.Draft
	// Rebased reports that the edit took the decision's history past a
	// rebase threshold and the authority replaced its document by one with
	// a fresh history holding the same values (the edit's included): no
	// replica can apply changes to it, so every member, the editor too,
	// must be sent the whole new document (Authority.Save) to replace
	// theirs. See docs/PROTOCOL.md, "Rebase".
	Rebased bool
	// Repeated is true when the authority held every change already: a
	// batch resent after its reply was lost, accepted then. Nothing
	// changed now.
	Repeated bool
	// Cells are the values the edit changed, attributed to its member,
	// with what each replaced and who had set that.
	Cells []CellProvenance
}

// Edit applies a replica's changes (crdt.Doc.ChangesSince encoding) to a
// decision's shared draft. They are checked first: an edit may change only
// draft values (crdt.Doc.ApplyEdit: never the draft's layout or the
// definition side), and only the current generation's; a mark must sit on
// a cell the definition describes and be yes, partly, no or null; a choice
// must name an option; a single-choice question holds one choice. A
// refused edit is not merged, and its refusal carries Reset so the replica
// returns to the accepted draft. Reasons: invalid; stale (an edit of an
// older generation, or one made against a history the authority has since
// rebased); too_large (the document would pass what crdt.Load takes, even
// after a rebase); resolved; forbidden; unavailable.
func (a *Authority) Edit(ctx context.Context, who Member, id string, changes []byte) (Edited, error) {
	if r := canWrite(who); r != nil {
		r.Reset = true
		return Edited{}, r
	}
	d, r := a.lookup(id)
	if r != nil {
		return Edited{}, r
	}
	if d.rec.Status != Open {
		// Changes the authority accepted while the decision was open,
		// resent after their reply was lost: they were accepted, and
		// still are.
		if d, r := a.use(id); r == nil && d.doc.Holds(changes) {
			return Edited{Heads: d.heads(), Draft: d.state.Drafts[d.state.Generation], Repeated: true}, nil
		}
		return Edited{}, &Refusal{Reason: Resolved, Message: "the decision is " + string(d.rec.Status) + "; reopen it to change the answer", Reset: true}
	}
	t, err := a.begin(ctx)
	if err != nil {
		return Edited{}, err
	}
	if d, r = a.use(id); r != nil {
		return Edited{}, t.fail(r)
	}
	before := d.doc.Heads()
	t.touch(id)
	// The State after the edit is built on the last one read, re-reading
	// only the drafts the edit changes (crdt.Doc.ApplyEditState).
	ap, err := d.doc.ApplyEditState(changes)
	if err != nil && len(ap.Fresh) == 0 {
		return Edited{}, t.fail(applyRefusal(d.doc, err))
	}
	if len(ap.Fresh) == 0 {
		t.end()
		return Edited{Heads: before, Draft: d.state.Drafts[d.state.Generation], Repeated: len(changes) > 0}, nil
	}
	if err != nil {
		return Edited{}, t.fail(&Refusal{Reason: Invalid, Message: editMessage(err), Reset: true, Err: err})
	}
	if r := a.checkEdit(d, ap.State); r != nil {
		return Edited{}, t.fail(r)
	}
	t.states[id] = ap.State
	at := a.opts.Now().UTC()
	rec := &provRecord{By: who.Login, At: &at, Changes: hashStrings(ap.Fresh)}
	rec.Cells = editCells(d.prov, d.state.Questions, d.state.Generation, d.state.Drafts[d.state.Generation],
		ap.State.Drafts[ap.State.Generation], who.Login, at, rec.Changes[len(rec.Changes)-1])
	if err := t.stageEdit(id, rec); err != nil {
		return Edited{}, t.fail(draftRefusal(err))
	}
	if d.editors == nil {
		d.editors = map[string]bool{}
	}
	d.editors[who.Login] = true
	if err := t.persistChanges(id, before, ap.Changes); err != nil {
		return Edited{}, t.fail(draftRefusal(err))
	}
	_, rebased := t.rebased[id]
	newChanges := ap.Changes
	if err := t.commit(ctx); err != nil {
		return Edited{}, err
	}
	d = a.decisions[id]
	if rebased {
		newChanges = nil
	}
	return Edited{Heads: d.heads(), Changes: newChanges, Draft: d.state.Drafts[d.state.Generation], Rebased: rebased, Cells: rec.Cells}, nil
}

// applyRefusal is the refusal of a batch crdt.Doc.ApplyEdit refused.
func applyRefusal(doc *crdt.Doc, err error) *Refusal {
	switch {
	case errors.Is(err, crdt.ErrMissingDeps) && doc.Rebased():
		return &Refusal{Reason: Stale, Reset: true, Err: err,
			Message: "the edit was made against a history the server has replaced (rebased); load the decision's document again and redo the edit on it"}
	case errors.Is(err, crdt.ErrBudget):
		return &Refusal{Reason: TooLarge, Reset: true, Err: err, Message: editMessage(err)}
	}
	return &Refusal{Reason: Invalid, Message: editMessage(err), Reset: true, Err: err}
}

// checkEdit validates a document's State st after a replica's changes
// were applied.
func (a *Authority) checkEdit(d *decision, st *crdt.State) *Refusal {
	if !d.state.SameShape(st) {
		return &Refusal{Reason: Invalid, Message: "an edit may change only the shared draft, not the definition", Reset: true}
	}
	for g, old := range d.state.Drafts {
		if g != d.state.Generation && !old.Equal(st.Drafts[g]) {
			return &Refusal{Reason: Stale, Message: "the edit was made to an earlier draft; the decision has been reopened since", Reset: true}
		}
	}
	for _, q := range d.rec.Definition.Questions {
		qd := st.Drafts[st.Generation].Questions[q.ID]
		if q.Written() {
			if n := utf8.RuneCountInString(qd.Text); n > MaxAnswerText {
				return &Refusal{Reason: Invalid, Message: "the written answer is longer than the limit", Reset: true}
			}
		}
	}
	return nil
}

func editMessage(err error) string {
	switch {
	case errors.Is(err, crdt.ErrMissingDeps):
		return "the edit depends on changes the server never accepted; sync from the accepted draft"
	case errors.Is(err, crdt.ErrShape):
		msg := err.Error()
		if i := strings.Index(msg, "crdt: edit changes the document's shape: "); i >= 0 {
			msg = msg[i+len("crdt: edit changes the document's shape: "):]
		}
		return "an edit may change only the draft's values: " + msg
	case errors.Is(err, crdt.ErrBudget):
		return "the edit holds more operations than a decision's document may"
	case errors.Is(err, crdt.ErrTooLarge):
		return "the edit is too large"
	}
	msg := err.Error()
	if i := strings.Index(msg, "crdt: malformed input: "); i >= 0 {
		msg = msg[i+len("crdt: malformed input: "):]
	}
	return "the edit is not a valid change of the draft: " + msg
}
