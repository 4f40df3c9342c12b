package memhost

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

var (
	_ planner.Editor   = (*Documents)(nil)
	_ planner.Relinker = (*Documents)(nil)
)

func invalid(format string, args ...any) error {
	return &question.Refusal{Reason: question.Invalid, Message: fmt.Sprintf(format, args...)}
}

// mint returns a block id the document does not hold.
func (x *document) mint() string {
	for {
		x.minted++
		id := "n" + strconv.FormatUint(x.minted, 10)
		if x.find(id) < 0 {
			return id
		}
	}
}

// EditPlan implements planner.Editor: every edit or none, at the current
// revision only; each applied edit moves the revision on.
func (d *Documents) EditPlan(ctx context.Context, doc string, in planner.EditPlanInput) (planner.EditPlanResult, error) {
	if err := ctx.Err(); err != nil {
		return planner.EditPlanResult{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.doc(doc)
	before := x.clone()
	if in.Revision != revision(x.rev) {
		return planner.EditPlanResult{}, planner.ErrConflict
	}
	// Work on a copy so a refused edit changes nothing.
	work := &document{rev: x.rev, minted: x.minted}
	for _, b := range x.blocks {
		c := *b
		work.blocks = append(work.blocks, &c)
	}
	res := planner.EditPlanResult{Inserted: []string{}}
	for i, e := range in.Edits {
		switch e.Op {
		case planner.OpEdit, planner.OpDelete:
			j := work.find(e.Block)
			if j < 0 || work.blocks[j].Kind == planner.Card {
				return planner.EditPlanResult{}, invalid("edits[%d].block: no block %s to %s", i, e.Block, e.Op)
			}
			work.rev++
			if e.Op == planner.OpDelete {
				work.blocks = slices.Delete(work.blocks, j, j+1)
			} else {
				work.blocks[j].Text, work.blocks[j].changed = e.Text, work.rev
			}
		case planner.OpInsert:
			at := 0
			if e.After != "" {
				j := work.find(e.After)
				if j < 0 {
					return planner.EditPlanResult{}, invalid("edits[%d].after: no block %s", i, e.After)
				}
				at = j + 1
			}
			work.rev++
			id := work.mint()
			work.blocks = slices.Insert(work.blocks, at, &block{Block: planner.Block{ID: id, Kind: e.Kind, Text: e.Text}, changed: work.rev})
			res.Inserted = append(res.Inserted, id)
		default:
			return planner.EditPlanResult{}, invalid("edits[%d].op: %q", i, e.Op)
		}
	}
	x.rev, x.minted, x.blocks = work.rev, work.minted, work.blocks
	res.Revision = revision(x.rev)
	return res, d.commit(doc, x, before)
}

// UpdateDocument implements planner.Editor: the ordinary blocks are
// replaced as one change; a given id the document holds keeps that block
// (its text updated), others are new; each card follows the block it is
// linked to if that block is still there, else goes to the end, still
// naming its old link until Relink moves it.
func (d *Documents) UpdateDocument(ctx context.Context, doc string, in planner.UpdateDocumentInput) (planner.Rewrite, error) {
	if err := ctx.Err(); err != nil {
		return planner.Rewrite{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.doc(doc)
	before := x.clone()
	old := x.snapshot()
	byID := map[string]*block{}
	var cards []*block
	for _, b := range x.blocks {
		if b.Kind == planner.Card {
			cards = append(cards, b)
			continue
		}
		byID[b.ID] = b
	}
	x.rev++
	var next []*block
	used := map[string]bool{}
	for i, nb := range in.Blocks {
		if nb.ID != "" {
			b, ok := byID[nb.ID]
			if !ok || used[nb.ID] {
				x.rev--
				return planner.Rewrite{}, invalid("blocks[%d].id: the document holds no block %s to keep (omit id for a new block)", i, nb.ID)
			}
			used[nb.ID] = true
			c := *b
			if c.Text != nb.Text || c.Kind != nb.Kind {
				c.Text, c.Kind, c.changed = nb.Text, nb.Kind, x.rev
			}
			next = append(next, &c)
			continue
		}
		next = append(next, &block{Block: planner.Block{ID: x.mint(), Kind: nb.Kind, Text: nb.Text}, changed: x.rev})
	}
	var trailing []*block
	for _, c := range cards {
		if i := slices.IndexFunc(next, func(b *block) bool { return b.ID == c.Link && b.Kind != planner.Card }); c.Link != "" && i >= 0 {
			at := i + 1
			for at < len(next) && next[at].Kind == planner.Card {
				at++
			}
			next = slices.Insert(next, at, c)
			continue
		}
		trailing = append(trailing, c)
	}
	x.blocks = append(next, trailing...)
	return planner.Rewrite{Revision: revision(x.rev), Old: old, New: x.snapshot()}, d.commit(doc, x, before)
}

// Relink implements planner.Relinker: each card moves after its block
// (after the cards already there), linked as placed; a card not in the
// document is added. Anchors are recorded; receipts are never touched. A
// card already where it belongs is left alone.
func (d *Documents) Relink(ctx context.Context, doc string, cards []planner.Placement, anchors []planner.Anchor) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.doc(doc)
	before := x.clone()
	for _, p := range cards {
		i := slices.IndexFunc(x.blocks, func(b *block) bool { return b.Kind == planner.Card && b.Decision == p.Decision })
		var card *block
		if i >= 0 {
			card = x.blocks[i]
			if card.Link == p.Link && x.placedAfter(i, p.After) {
				continue
			}
			x.blocks = slices.Delete(x.blocks, i, i+1)
		} else {
			card = &block{Block: planner.Block{ID: "card-" + p.Decision, Kind: planner.Card, Decision: p.Decision}}
		}
		x.rev++
		card.Link, card.changed = p.Link, x.rev
		at := len(x.blocks)
		if j := x.find(p.After); p.After != "" && j >= 0 {
			at = j + 1
			for at < len(x.blocks) && x.blocks[at].Kind == planner.Card {
				at++
			}
		}
		x.blocks = slices.Insert(x.blocks, at, card)
	}
	for _, a := range anchors {
		if !slices.Equal(x.anchors[a.Decision], a.Blocks) {
			x.anchors[a.Decision] = slices.Clone(a.Blocks)
		}
	}
	return d.commit(doc, x, before)
}

// placedAfter reports whether the card at i sits after block after, among
// the cards that follow it ("" means at the end, after ordinary blocks).
func (x *document) placedAfter(i int, after string) bool {
	j := i - 1
	for j >= 0 && x.blocks[j].Kind == planner.Card {
		j--
	}
	if after == "" {
		for _, b := range x.blocks[i+1:] {
			if b.Kind != planner.Card {
				return false
			}
		}
		return true
	}
	return j >= 0 && x.blocks[j].ID == after
}
