package question

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/persist"
)

// DamagedError is why one decision of a document could not be loaded from
// the store: its record or draft (or its decision_answers row) is
// unreadable. The decision alone is unavailable; the rest of the document
// loads and works. Err is usually a *persist.CorruptError naming the bucket
// and key, so errors.Is(err, persist.ErrCorrupt) holds.
type DamagedError struct {
	Doc      string
	Decision string
	Err      error
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("question: decision %q of document %q cannot be loaded: %v", e.Decision, e.Doc, e.Err)
}

func (e *DamagedError) Unwrap() error { return e.Err }

// Damaged returns the decisions of the document that could not be loaded
// (at NewAuthority or the last reload), each with its *DamagedError. They
// are left out of Records; every command on one, and Draft, Save,
// ChangesSince and NewSession, is refused as unavailable; their stored
// bytes are never written over, so an operator can repair or restore them.
// The map is a copy; it is empty when nothing is damaged.
func (a *Authority) Damaged() map[string]error {
	out := make(map[string]error, len(a.damaged))
	for id, err := range a.damaged {
		out[id] = err
	}
	return out
}

// missing is the refusal for an id with no loaded decision: unavailable if
// it is damaged, not_found otherwise.
func (a *Authority) missing(id string) *Refusal {
	if err, ok := a.damaged[id]; ok {
		return &Refusal{Reason: Unavailable, Message: fmt.Sprintf("decision %q cannot be read from storage; an operator must repair or restore it", id), Err: err}
	}
	return refuse(NotFound, "no decision %q in this document", id)
}

// damagedKey is the refusal for creating a card with the stable key of a
// damaged decision, or nil.
func (a *Authority) damagedKey(key string) *Refusal {
	if id, ok := a.damagedKeys[key]; ok {
		return a.missing(id)
	}
	return nil
}

// markDamaged records that decision id could not be loaded, and logs it.
func (a *Authority) markDamaged(id, key string, err error) {
	de := &DamagedError{Doc: a.opts.Doc, Decision: id, Err: err}
	a.damaged[id] = de
	if key != "" {
		a.damagedKeys[key] = id
	}
	a.opts.Logger.Error("question: decision cannot be loaded; it is unavailable until repaired",
		"doc", a.opts.Doc, "decision", id, "err", err)
}

// loadDecision reads one decision's record and draft. needsMarks reports a
// draft stored before criteria existed, which load gives a marks map. Every
// error is a *persist.CorruptError naming the bucket and key; key is the
// record's stable key when the record could be read.
func (a *Authority) loadDecision(id string, raw []byte, sd *persist.StoredDocument) (d *decision, key string, needsMarks crdt.Heads, err error) {
	bucket := "docs/" + a.opts.Doc
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, "", nil, &persist.CorruptError{Bucket: bucket + "/records", Key: id, Err: err}
	}
	if rec.ID != id {
		return nil, "", nil, &persist.CorruptError{Bucket: bucket + "/records", Key: id, Err: fmt.Errorf("record names id %q", rec.ID)}
	}
	draft, ok := sd.Drafts[id]
	if !ok {
		return nil, rec.Key, nil, &persist.CorruptError{Bucket: bucket + "/drafts", Key: id, Err: fmt.Errorf("no draft for record")}
	}
	doc, err := a.loadStored(draft, crdt.Carried{})
	if err != nil {
		return nil, rec.Key, nil, &persist.CorruptError{Bucket: bucket + "/drafts", Key: id, Err: err}
	}
	before := doc.Heads()
	added, err := doc.EnsureMarks()
	if err != nil {
		return nil, rec.Key, nil, &persist.CorruptError{Bucket: bucket + "/drafts", Key: id, Err: err}
	}
	if added {
		needsMarks = before
	}
	st, err := doc.State()
	if err != nil {
		return nil, rec.Key, nil, &persist.CorruptError{Bucket: bucket + "/drafts", Key: id, Err: err}
	}
	draft.Chunks = slices.Clip(draft.Chunks)
	_, _, prov, _ := unwrapStored(draft.Snapshot, draft.Chunks, true, func(err error) {
		// Attribution is lost for what the record described; the draft
		// itself loaded.
		a.opts.Logger.Warn("question: a provenance record cannot be read; its attribution is left out",
			"doc", a.opts.Doc, "decision", id, "err", err)
	})
	return &decision{rec: &rec, doc: doc, state: st, stored: draft, prov: prov}, rec.Key, needsMarks, nil
}

// readableAnswers returns the decision_answers rows that loadAnswers
// accepts, and for each it refuses, the decision it is stored under and why.
func (a *Authority) readableAnswers(stored map[string][]byte) (map[string][]byte, map[string]error) {
	ok := make(map[string][]byte, len(stored))
	bad := map[string]error{}
	for id, raw := range stored {
		if err := a.loadAnswers(map[string][]byte{id: raw}); err != nil {
			bad[id] = err
			continue
		}
		ok[id] = raw
	}
	if len(bad) == 0 {
		return stored, nil
	}
	return ok, bad
}
