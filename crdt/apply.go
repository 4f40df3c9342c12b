package crdt

import (
	"errors"
	"fmt"
	"slices"

	"github.com/automerge/automerge-go"
)

// Merge applies every change of o that d lacks.
func (d *Doc) Merge(o *Doc) error {
	_, err := d.am.Merge(o.am)
	d.heads = headsCache{}
	d.seqs, d.known = nil, nil
	d.budgetKnown, d.marks = false, nil
	return amError("merge", err)
}

// Holds reports whether d already holds every change of a batch (as
// ChangesSince encodes it): a batch resent after its reply was lost. It
// applies nothing; an empty batch, or one that does not parse, is not
// held.
func (d *Doc) Holds(batch []byte) bool {
	if len(batch) == 0 || len(batch) > MaxChangesBytes {
		return false
	}
	chunks, err := splitChunks(batch)
	if err != nil {
		return false
	}
	parsed, err := parseChangeList(chunks)
	if err != nil {
		return false
	}
	for _, c := range parsed {
		if !d.Has(Heads{c.hash}) {
			return false
		}
	}
	return true
}

// ChangesSince returns the changes made after heads, encoded as one batch
// (each change in automerge's binary form, concatenated). Empty heads
// return every change.
func (d *Doc) ChangesSince(heads Heads) ([]byte, error) {
	if !d.Has(heads) {
		return nil, errorf(ErrMissingDeps, "heads %v are not all in the document", heads)
	}
	chs, err := d.am.Changes(toAM(heads)...)
	if err != nil {
		return nil, amError("changes", err)
	}
	if len(chs) == 0 {
		return nil, nil
	}
	return automerge.SaveChanges(chs), nil
}

// ApplyChanges applies a batch of encoded changes (as ChangesSince returns)
// and returns the hashes of those that were new to d. Every change must
// depend only on changes already in d or in the batch; otherwise
// nothing is applied and the error wraps ErrMissingDeps.
func (d *Doc) ApplyChanges(batch []byte) ([]ChangeHash, error) {
	fresh, _, err := d.applyChecked(batch, false)
	return fresh, err
}

// ApplyEdit applies a member's draft edit like ApplyChanges, and refuses
// (wrapping ErrShape, nothing applied) a batch with any operation that is
// not a draft value edit: it may set or clear mark registers and choices
// and splice written answers, of any generation, and nothing else. The
// authority applies every change from a member through it.
func (d *Doc) ApplyEdit(batch []byte) ([]ChangeHash, error) {
	fresh, _, err := d.applyChecked(batch, true)
	return fresh, err
}

// applyChecked applies a batch within MaxChangesBytes (applyBatch) and
// returns what the checks learned of it.
func (d *Doc) applyChecked(batch []byte, edit bool) ([]ChangeHash, batchCheck, error) {
	if len(batch) == 0 {
		return nil, batchCheck{}, nil
	}
	if len(batch) > MaxChangesBytes {
		return nil, batchCheck{}, errorf(ErrTooLarge, "change batch of %d bytes exceeds %d", len(batch), MaxChangesBytes)
	}
	return d.applyBatch(batch, edit)
}

// AppliedEdit is what ApplyEditState applied.
type AppliedEdit struct {
	// Fresh are the hashes of the batch's changes new to the document.
	Fresh []ChangeHash
	// Changes holds those changes' chunks, concatenated in the batch's
	// order: the same changes as ChangesSince of the heads before the
	// edit, without reading the history for them.
	Changes []byte
	// State is the document's State after the edit.
	State *State
}

// ApplyEditState is ApplyEdit that also returns the changes it applied and
// the document's State after the edit. When the last State the document
// read (State, or ApplyEditState) is of its current revision, it reads
// again only the question drafts the edit's operations change, so an edit
// costs what it changes rather than what the document holds; otherwise it
// reads the whole State. The State returned shares unchanged parts with
// the one it was built on: neither may be modified. An error after the
// changes were applied (the State could not be read) comes with Fresh
// set.
func (d *Doc) ApplyEditState(batch []byte) (AppliedEdit, error) {
	var prev *State
	if m := d.memo; m != nil && m.am == d.am && slices.Equal(m.at, d.amHeads()) {
		prev = m.st
	}
	current := prev != nil
	fresh, bc, err := d.applyChecked(batch, true)
	if err != nil {
		return AppliedEdit{}, err
	}
	if len(fresh) == 0 && current {
		return AppliedEdit{State: prev}, nil
	}
	var st *State
	if current {
		st, err = d.stateAfter(prev, bc.touched)
	} else {
		st, err = d.State()
	}
	if err != nil {
		return AppliedEdit{Fresh: fresh}, err
	}
	return AppliedEdit{Fresh: fresh, Changes: bc.fresh, State: st}, nil
}

// applyRaw applies a batch of concatenated change chunks after checking
// that every dependency is present, and that automerge then really holds
// every change (none parked for lack of dependencies).
func (d *Doc) applyRaw(batch []byte, edit bool) ([]ChangeHash, error) {
	fresh, _, err := d.applyBatch(batch, edit)
	return fresh, err
}

func (d *Doc) applyBatch(batch []byte, edit bool) ([]ChangeHash, batchCheck, error) {
	chunks, err := splitChunks(batch)
	if err != nil {
		return nil, batchCheck{}, err
	}
	fresh, freshIdx, counts, err := d.checkChanges(chunks)
	if err != nil {
		if errors.Is(err, ErrMissingDeps) {
			return nil, batchCheck{}, err
		}
		return nil, batchCheck{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if len(fresh) == 0 {
		return nil, batchCheck{}, nil
	}
	// Changes the document already holds are neither checked, applied nor
	// counted again: a replica that resends what the server already
	// relayed must not make its budget (and so its rebases) grow.
	if len(freshIdx) < len(chunks) {
		kept := make([][]byte, 0, len(freshIdx))
		var b []byte
		for _, i := range freshIdx {
			kept = append(kept, chunks[i])
			b = append(b, chunks[i]...)
		}
		chunks, batch = kept, b
	}
	raw := d.amHeads()
	bc, err := d.checkBatchObjects(chunks, raw, edit)
	if err != nil {
		return nil, batchCheck{}, err
	}
	before := sortHeads(raw)
	d.markBudget(before)
	err = d.am.LoadIncremental(batch)
	d.heads = headsCache{}
	if err != nil {
		if rerr := d.Rollback(before); rerr != nil {
			return nil, batchCheck{}, rerr
		}
		return nil, batchCheck{}, amError("apply changes", err)
	}
	if !d.Heads().Equal(headsAfter(raw, fresh)) {
		if err := d.Rollback(before); err != nil {
			return nil, batchCheck{}, err
		}
		return nil, batchCheck{}, errorf(ErrMalformed, "changes were not applied")
	}
	hashes := make([]ChangeHash, len(fresh))
	for i, c := range fresh {
		hashes[i] = c.hash
	}
	d.seqs = counts
	if d.known != nil {
		for _, h := range hashes {
			d.known[h] = true
		}
	}
	d.advanceObjects(raw, bc.made)
	d.addBudget(bc.ops, len(batch), len(fresh))
	bc.fresh = batch
	return hashes, bc, nil
}

// Rollback drops every change made after heads, by rebuilding d from its
// own history as of heads. It is the undo of a refused ApplyChanges.
func (d *Doc) Rollback(heads Heads) error {
	am, err := d.am.Fork(toAM(heads)...)
	if err != nil {
		return amError("rollback", err)
	}
	if err := am.SetActorID(string(d.actor)); err != nil {
		return amError("rollback", err)
	}
	d.am = am
	d.seqs, d.known = nil, nil
	d.rollbackBudget(heads)
	return nil
}
