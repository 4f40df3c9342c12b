package question

// Anchors: where a decision's passage is in the plan document. A record's
// Passage is both the link of its saved write-ups and the future write
// scope of its write-up job (the job keeps no copy: it reads the passage
// when it runs), so moving the passage moves both in one commit.
//
// Two commands change passages after creation:
//   - Anchor, after the Planner reviewed a replacement passage
//     (anchor_plan): every decision of the scope moves to it together;
//   - DropPassages, after a whole-document rewrite deleted the passage of
//     a Planner's card: the passage is cleared and its write-up dropped.
//
// Neither claims that an unwritten answer was applied (receipts live in the
// document and are never touched here) and neither retries failed work.

import (
	"context"
	"slices"
	"strings"
)

// JobDropped is the state of a write-up whose passage a whole-document
// rewrite deleted: nothing is left to write into, and it did not fail.
// The answer reaches the Planner as a turn of its own instead.
const JobDropped JobState = "dropped"

// AnchorRequest moves decisions to one reviewed passage.
type AnchorRequest struct {
	// Decisions are the decisions whose passage was replaced; every
	// decision sharing a block with them (transitively) moves with them.
	Decisions []string
	// Passage is the reviewed replacement passage, in document order.
	Passage []string
	// Revision is the document revision the Planner reviewed it at.
	Revision string
}

// Anchor moves the passage of the named decisions, and of every decision
// sharing their write scope, to one reviewed passage, in one commit: their
// saved write-up links and the future scope of their write-ups move
// together. Jobs keep their state: a pending write-up will write into the
// new passage, a failed one stays failed until someone retries it
// (RetryJob, which keeps its id), a done one stays done. Discarded
// decisions keep the passage they had. Anchoring to the passage they
// already have at the same revision changes nothing.
//
// The caller checks the passage against the document (one run of at most
// MaxPassageBlocks ordinary blocks; see package planner); the authority
// checks its shape.
func (a *Authority) Anchor(ctx context.Context, who Member, req AnchorRequest) ([]Record, error) {
	if r := canWrite(who); r != nil {
		return nil, r
	}
	if len(req.Decisions) == 0 {
		return nil, refuse(Invalid, "name the decisions to anchor")
	}
	if req.Revision == "" || len(req.Revision) > MaxKeyLen {
		return nil, refuse(Invalid, "anchoring needs the document revision the passage was reviewed at")
	}
	if r := checkPassage(req.Passage); r != nil {
		return nil, r
	}
	for _, id := range req.Decisions {
		d, r := a.lookup(id)
		if r != nil {
			return nil, r
		}
		switch {
		case d.rec.Status == Discarded:
			return nil, refuse(Resolved, "decision %q is discarded; its passage stays as it was", id)
		case len(d.rec.Passage) == 0:
			return nil, refuse(Invalid, "decision %q has no write scope to anchor (its card was opened without a passage)", id)
		}
	}
	ids := a.scope(req.Decisions)
	t, err := a.begin(ctx)
	if err != nil {
		return nil, err
	}
	changed := false
	for _, id := range ids {
		cur := a.decisions[id].rec
		if slices.Equal(cur.Passage, req.Passage) && cur.Reviewed == req.Revision {
			continue
		}
		rec := t.record(id)
		rec.Passage, rec.Reviewed = slices.Clone(req.Passage), req.Revision
		changed = true
	}
	if !changed {
		t.abort()
	} else if err := t.commit(ctx); err != nil {
		return nil, err
	}
	out := make([]Record, len(ids))
	for i, id := range ids {
		out[i] = a.decisions[id].rec.Clone()
	}
	return out, nil
}

func checkPassage(p []string) *Refusal {
	if len(p) == 0 {
		return refuse(Invalid, "a passage names 1 to %d blocks", MaxPassageBlocks)
	}
	if len(p) > MaxPassageBlocks {
		return refuse(TooMany, "a passage names at most %d blocks; got %d", MaxPassageBlocks, len(p))
	}
	seen := map[string]bool{}
	for _, b := range p {
		switch {
		case strings.TrimSpace(b) == "" || len(b) > MaxKeyLen:
			return refuse(Invalid, "a block address is 1 to %d bytes", MaxKeyLen)
		case seen[b]:
			return refuse(Invalid, "block %s is named twice in the passage", b)
		}
		seen[b] = true
	}
	return nil
}

// scope returns the named decisions and every decision (not discarded)
// whose passage shares a block with one of them, transitively, in creation
// order.
func (a *Authority) scope(named []string) []string {
	in := map[string]bool{}
	blocks := map[string]bool{}
	for _, id := range named {
		in[id] = true
		for _, b := range a.decisions[id].rec.Passage {
			blocks[b] = true
		}
	}
	for grew := true; grew; {
		grew = false
		for _, id := range a.order {
			r := a.decisions[id].rec
			if in[id] || r.Status == Discarded {
				continue
			}
			if slices.ContainsFunc(r.Passage, func(b string) bool { return blocks[b] }) {
				in[id], grew = true, true
				for _, b := range r.Passage {
					blocks[b] = true
				}
			}
		}
	}
	var out []string
	for _, id := range a.order {
		if in[id] {
			out = append(out, id)
		}
	}
	return out
}

// DropPassages clears the passages of decisions whose passage a
// whole-document rewrite deleted, in one commit, and drops (JobDropped,
// not failed) their pending or failed write-ups, noting why. A dropped
// write-up's answer still reaches the Planner as a turn of its own: a
// decision_answers row still waiting carries it (the turn is built later,
// without the passage); a row already handed to a turn, or claimed by one,
// which left the passage to the write-up, waits again for a turn of its
// own. Decisions without a passage are left alone.
func (a *Authority) DropPassages(ctx context.Context, ids []string, note string) ([]Record, error) {
	for _, id := range ids {
		if _, r := a.lookup(id); r != nil {
			return nil, r
		}
	}
	t, err := a.begin(ctx)
	if err != nil {
		return nil, err
	}
	now := a.opts.Now().UTC()
	var out []string
	for _, id := range ids {
		if len(a.decisions[id].rec.Passage) == 0 || slices.Contains(out, id) {
			continue
		}
		rec := t.record(id)
		rec.Passage = nil
		out = append(out, id)
		j := rec.WriteUp
		if j == nil || (j.State != JobPending && j.State != JobFailed) {
			continue
		}
		j.State, j.Note, j.EndedAt = JobDropped, note, now
		if rec.Origin != FromPlanner || rec.Status != Settled || rec.Answer == nil || rec.Answer.Generation != j.Generation {
			continue
		}
		ans := rec.Answer
		switch r, ok := t.row(id); {
		case !ok && !a.Awaited(id), ok && r.State == RowClaimed && r.Generation == ans.Generation:
			// Handed to a turn that left the passage to the write-up, or
			// claimed by one that may have (its content was fixed at the
			// claim): the row leaves that turn and waits for one of its
			// own: marking the claimed turn delivered leaves it be, and a
			// restarted claimed turn does not carry it.
			t.putRow(id, &AnswerRow{Decision: id, Generation: ans.Generation, By: ans.By, SavedAt: ans.At, State: RowWaiting})
		}
	}
	if len(out) == 0 {
		t.abort()
		return nil, nil
	}
	if err := t.commit(ctx); err != nil {
		return nil, err
	}
	recs := make([]Record, len(out))
	for i, id := range out {
		recs[i] = a.decisions[id].rec.Clone()
	}
	return recs, nil
}
