package planner

import (
	"context"
	"fmt"
	"slices"

	"github.com/accord-crdt/accord/question"
)

// ReadPlanInput is the input of read_plan: nothing.
type ReadPlanInput struct{}

// ReadPlanResult is what read_plan returns: the plan as the Planner's
// other tools name it.
type ReadPlanResult struct {
	// Revision is the revision the plan is at; open_decision(s),
	// anchor_plan and edit_plan take it.
	Revision string `json:"revision"`
	// Blocks are the plan's blocks in order, decision cards (kind "card")
	// included; their ids are what the tools' block fields take.
	Blocks []Block `json:"blocks"`
	// AnchorsPending are the decisions whose passage an edit broke, which
	// owe a review with anchor_plan.
	AnchorsPending []PendingAnchor `json:"anchors_pending"`
}

// ReadPlan reads the plan the Planner works on: its revision, its blocks
// and the decisions that owe a review. An agent has no other way to learn
// the revision and block ids its other tools take, so it reads the host's
// own Document, the source every other tool checks against.
func (t *Tools) ReadPlan(ctx context.Context, call Call) (ReadPlanResult, error) {
	if call.Doc == "" {
		return ReadPlanResult{}, refusef("no document")
	}
	snap, err := t.opts.Document.Read(ctx, call.Doc)
	if err != nil {
		return ReadPlanResult{}, fmt.Errorf("planner: read %q: %w", call.Doc, err)
	}
	var recs []question.Record
	if err := t.opts.Authorities.Do(ctx, call.Doc, func(a *question.Authority) error { recs = a.Records(); return nil }); err != nil {
		return ReadPlanResult{}, err
	}
	blocks := slices.Clone(snap.Blocks)
	if blocks == nil {
		blocks = []Block{}
	}
	return ReadPlanResult{Revision: snap.Revision, Blocks: blocks, AnchorsPending: pendingAnchors(recs, snap.Blocks)}, nil
}
