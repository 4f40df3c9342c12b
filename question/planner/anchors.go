package planner

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/accord-crdt/accord/question"
)

// Relinker is implemented by a Document that can move cards and anchors
// after a rewrite. Relink moves each placement's card after its block
// (After, "" for the end), linked to Link, and records each anchor's
// passage as the decision's write-up link; it is idempotent and never adds
// or removes receipts. Tools call it after the authority committed the new
// passages, so the authority is the record of where a decision belongs and
// a repeated call puts the document right again.
type Relinker interface {
	Relink(ctx context.Context, doc string, cards []Placement, anchors []Anchor) error
}

// CheckPassage checks a passage (a write scope) against the document's
// blocks (requirement W8): 1 to question.MaxPassageBlocks ordinary blocks
// (paragraphs, tables, diagrams), each present exactly once, forming one
// run in which only decision cards may sit between them. A heading, a
// title or any other block between them is an unrelated gap and is
// refused (invalid, naming the gap); more than eight blocks are refused as
// too_many.
func CheckPassage(blocks []Block, passage []string) error {
	if len(passage) == 0 {
		return refusef("a passage names 1 to %d blocks", question.MaxPassageBlocks)
	}
	if len(passage) > question.MaxPassageBlocks {
		return &question.Refusal{Reason: question.TooMany, Message: fmt.Sprintf("a passage holds at most %d paragraphs, tables or diagrams; got %d", question.MaxPassageBlocks, len(passage))}
	}
	in := map[string]bool{}
	for _, id := range passage {
		if in[id] {
			return refusef("block %s is named twice in the passage", id)
		}
		in[id] = true
	}
	pos := map[string][]int{}
	for i, b := range blocks {
		if in[b.ID] {
			pos[b.ID] = append(pos[b.ID], i)
		}
	}
	first, last := len(blocks), -1
	for _, id := range passage {
		switch p := pos[id]; len(p) {
		case 0:
			return refusef("block %s is not in the document", id)
		case 1:
			if k := blocks[p[0]].Kind; !k.Prose() {
				return refusef("block %s is a %s; a passage holds paragraphs, tables and diagrams", id, k)
			}
			first, last = min(first, p[0]), max(last, p[0])
		default:
			return refusef("block %s appears %d times in the document", id, len(p))
		}
	}
	for _, b := range blocks[first : last+1] {
		if !in[b.ID] && b.Kind != Card {
			return refusef("%s %s lies between the passage's blocks (an unrelated gap); a passage is one run of blocks, decision cards aside", b.Kind, b.ID)
		}
	}
	return nil
}

// PendingAnchor is a decision whose passage no longer stands in the
// document as one passage, so it owes a review (anchor_plan).
type PendingAnchor struct {
	Decision string   `json:"decision"`
	Passage  []string `json:"passage"`
	Reason   string   `json:"reason"`
}

// pendingAnchors lists the decisions (not discarded) whose passage is no
// longer a passage of blocks.
func pendingAnchors(recs []question.Record, blocks []Block) []PendingAnchor {
	out := []PendingAnchor{}
	for _, r := range recs {
		if r.Status == question.Discarded || len(r.Passage) == 0 {
			continue
		}
		if err := CheckPassage(blocks, r.Passage); err != nil {
			reason := err.Error()
			var ref *question.Refusal
			if asRefusal(err, &ref) {
				reason = ref.Message
			}
			out = append(out, PendingAnchor{Decision: r.ID, Passage: slices.Clone(r.Passage), Reason: reason})
		}
	}
	return out
}

// AnchorsPending returns the decisions of doc whose passage a rewrite
// broke and that owe a review with anchor_plan; never nil.
func (t *Tools) AnchorsPending(ctx context.Context, doc string) ([]PendingAnchor, error) {
	snap, err := t.opts.Document.Read(ctx, doc)
	if err != nil {
		return nil, fmt.Errorf("planner: read %q: %w", doc, err)
	}
	var recs []question.Record
	if err := t.opts.Authorities.Do(ctx, doc, func(a *question.Authority) error { recs = a.Records(); return nil }); err != nil {
		return nil, err
	}
	return pendingAnchors(recs, snap.Blocks), nil
}

// AnchorInput is the input of anchor_plan.
type AnchorInput struct {
	// Revision is the document revision at which the Planner reviewed the
	// replacement passage.
	Revision string `json:"revision"`
	// Decisions are the decisions whose passage was replaced; every
	// decision sharing their write scope is re-anchored with them.
	Decisions []string `json:"decisions"`
	// Blocks are the replacement passage's blocks, primary first.
	Blocks []string `json:"blocks"`
}

// Anchored is what anchor_plan returns.
type Anchored struct {
	Revision string   `json:"revision"`
	Passage  []string `json:"passage"`
	// Decisions are every decision re-anchored, the whole scope.
	Decisions []AnchoredDecision `json:"decisions"`
	// AnchorsPending are the decisions that still owe a review.
	AnchorsPending []PendingAnchor `json:"anchors_pending"`
}

// AnchoredDecision is one re-anchored decision and its write-up's state,
// which re-anchoring never changes.
type AnchoredDecision struct {
	ID      string            `json:"id"`
	Status  question.Status   `json:"status"`
	WriteUp question.JobState `json:"writeUp,omitempty"`
}

// AnchorPlan re-anchors decisions after a foreground rewrite (W6, W7,
// W9): the Planner reviewed the replacement passage at a revision, and
// every decision sharing the named decisions' write scope moves to it
// together, in one durable commit of the authority: their saved write-up
// links and the future scope of their write-ups. The passage must be one
// passage of the document (CheckPassage) whose blocks have not changed
// since the revision reviewed (else stale; a revision the plan cannot
// have been read at is stale too). Receipts stay as they are, so
// an unwritten answer is never claimed as applied, and failed write-ups
// stay failed: a Retry keeps the job's id and writes into the passage
// reviewed here with the saved answers. Cards then move beside the new
// passage's primary block (when the Document is a Relinker).
func (t *Tools) AnchorPlan(ctx context.Context, call Call, in AnchorInput) (Anchored, error) {
	if call.Doc == "" {
		return Anchored{}, refusef("no document")
	}
	switch {
	case in.Revision == "":
		return Anchored{}, refusef("anchor_plan needs the document revision at which you reviewed the passage (field revision)")
	case len(in.Decisions) == 0:
		return Anchored{}, refusef("anchor_plan needs the decisions whose passage you replaced (field decisions)")
	case len(in.Blocks) == 0:
		return Anchored{}, refusef("anchor_plan needs the replacement passage's blocks (field blocks)")
	}
	snap, err := t.opts.Document.Read(ctx, call.Doc)
	if err != nil {
		return Anchored{}, fmt.Errorf("planner: read %q: %w", call.Doc, err)
	}
	if err := CheckPassage(snap.Blocks, in.Blocks); err != nil {
		return Anchored{}, prefix(err, "blocks: ")
	}
	if known, err := t.known(ctx, call.Doc, snap, in.Revision); err != nil {
		return Anchored{}, err
	} else if !known {
		return Anchored{}, unknownRevision("revision", in.Revision, snap.Revision)
	}
	for _, b := range in.Blocks {
		ok, err := t.opts.Document.Unchanged(ctx, call.Doc, b, in.Revision)
		if err != nil {
			return Anchored{}, fmt.Errorf("planner: read block %q of %q: %w", b, call.Doc, err)
		}
		if !ok {
			return Anchored{}, &question.Refusal{Reason: question.Stale, Message: fmt.Sprintf("block %s changed since revision %s; read the passage again and review it", b, in.Revision)}
		}
	}
	var recs, all []question.Record
	err = t.opts.Authorities.Do(ctx, call.Doc, func(a *question.Authority) error {
		var err error
		if recs, err = a.Anchor(ctx, t.who, question.AnchorRequest{Decisions: in.Decisions, Passage: in.Blocks, Revision: in.Revision}); err != nil {
			return err
		}
		all = a.Records()
		return nil
	})
	if err != nil {
		return Anchored{}, err
	}
	out := Anchored{Revision: in.Revision, Passage: slices.Clone(in.Blocks), Decisions: []AnchoredDecision{}, AnchorsPending: pendingAnchors(all, snap.Blocks)}
	cards := make([]Placement, 0, len(recs))
	anchors := make([]Anchor, 0, len(recs))
	for _, r := range recs {
		d := AnchoredDecision{ID: r.ID, Status: r.Status}
		if r.WriteUp != nil {
			d.WriteUp = r.WriteUp.State
		}
		out.Decisions = append(out.Decisions, d)
		cards = append(cards, Placement{Decision: r.ID, After: in.Blocks[0], Link: in.Blocks[0]})
		anchors = append(anchors, Anchor{Decision: r.ID, Blocks: slices.Clone(in.Blocks)})
	}
	if rl, ok := t.opts.Document.(Relinker); ok {
		if err := rl.Relink(context.WithoutCancel(ctx), call.Doc, cards, anchors); err != nil {
			return out, fmt.Errorf("planner: move the cards in %q (the anchors are saved; call anchor_plan again): %w", call.Doc, err)
		}
	}
	return out, nil
}

// RewriteReport says what a whole-document rewrite did to the cards.
type RewriteReport struct {
	// Relinked are the Planner's cards whose block the rewrite deleted or
	// rewrote into a new block, with the block they are linked to now
	// ("" unlinked, at the end).
	Relinked []Placement `json:"relinked"`
	// Dropped are the Planner's decisions whose passage the rewrite broke:
	// their passage is cleared and a pending or failed write-up dropped.
	Dropped []string `json:"dropped"`
	// AnchorsPending are the other decisions, which keep owing a review.
	AnchorsPending []PendingAnchor `json:"anchors_pending"`
}

// Rewritten applies the rules of a whole-document rewrite outside any
// Planner turn (W10), such as a workflow's update_document, given the
// document's blocks before and after it. Nothing reviews such a rewrite,
// so the Planner's own cards stay linked through it:
//
//   - a card whose block survived (same id) keeps it;
//   - one whose block was deleted or rewritten into a new block is linked
//     to the nearest heading above it that survived, else the first
//     section (FirstSection), else it trails the document unlinked;
//   - its passage, if the rewrite broke it (a block gone, or no longer one
//     passage by CheckPassage), is cleared and its write-up dropped, not
//     failed; its answer still reaches the Planner as a turn of its own.
//
// Other cards (a workflow's questions, a person's or Chat's decisions)
// are left as they are and keep owing a review (AnchorsPending). The
// authority's changes are one commit; then the cards move (Relinker).
// Calling it again with the same lists changes nothing more.
func (t *Tools) Rewritten(ctx context.Context, doc string, old, new []Block) (RewriteReport, error) {
	rep := RewriteReport{Relinked: []Placement{}, Dropped: []string{}}
	alive := map[string]bool{}
	for _, b := range new {
		if b.Kind != Card {
			alive[b.ID] = true
		}
	}
	links := map[string]string{} // decision -> the block its card was linked to
	for _, b := range old {
		if b.Kind == Card && b.Decision != "" {
			links[b.Decision] = b.Link
		}
	}
	var drop []string
	var recs []question.Record
	err := t.opts.Authorities.Do(ctx, doc, func(a *question.Authority) error {
		for _, r := range a.Records() {
			if r.Origin != question.FromPlanner || r.Status == question.Discarded {
				continue
			}
			link, ok := links[r.ID]
			if !ok && len(r.Passage) > 0 {
				link, ok = r.Passage[0], true
			}
			if ok && link != "" && !alive[link] {
				to := nearestHeading(old, link, alive)
				if to == "" {
					to = FirstSection(new)
				}
				rep.Relinked = append(rep.Relinked, Placement{Decision: r.ID, After: to, Link: to})
			}
			if len(r.Passage) > 0 && CheckPassage(new, r.Passage) != nil {
				drop = append(drop, r.ID)
			}
		}
		if len(drop) > 0 {
			if _, err := a.DropPassages(ctx, drop, "a rewrite of the whole document deleted its passage"); err != nil {
				return err
			}
		}
		recs = a.Records()
		return nil
	})
	if err != nil {
		return RewriteReport{}, err
	}
	rep.Dropped = append(rep.Dropped, drop...)
	rep.AnchorsPending = pendingAnchors(recs, new)
	if rl, ok := t.opts.Document.(Relinker); ok && len(rep.Relinked) > 0 {
		if err := rl.Relink(context.WithoutCancel(ctx), doc, rep.Relinked, nil); err != nil {
			return rep, fmt.Errorf("planner: relink cards in %q after a rewrite: %w", doc, err)
		}
	}
	return rep, nil
}

// nearestHeading returns the nearest heading above block id in blocks that
// is still alive, or "".
func nearestHeading(blocks []Block, id string, alive map[string]bool) string {
	i := slices.IndexFunc(blocks, func(b Block) bool { return b.ID == id && b.Kind != Card })
	for i--; i >= 0; i-- {
		if blocks[i].Kind == Heading && alive[blocks[i].ID] {
			return blocks[i].ID
		}
	}
	return ""
}

func asRefusal(err error, r **question.Refusal) bool { return errors.As(err, r) }
