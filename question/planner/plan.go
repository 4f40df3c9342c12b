package planner

import (
	"context"
	"errors"
	"fmt"

	"github.com/accord-crdt/accord/question"
)

// Editor is a host's editable plan document, for the Planner's edit_plan
// (a foreground edit inside a Planner turn) and update_document (a
// whole-document rewrite, as a workflow run makes outside any turn).
// Tools serve both when ToolsOptions.Editor is set, adding what anchoring
// needs: edit_plan's result lists anchors_pending, and update_document
// runs Rewritten.
//
// Contract: EditPlan applies every edit or none, only when the document
// is still at in.Revision (else ErrConflict), and returns the revision
// after it and the ids of inserted blocks; an edit naming a block the
// document lacks is refused (*question.Refusal, invalid). UpdateDocument
// replaces the document's ordinary blocks by in.Blocks: a block given with
// the id of a block the document holds keeps that block (it survived),
// one without an id is a new block; decision cards stay in the document.
// It returns the blocks before and after, cards included.
type Editor interface {
	EditPlan(ctx context.Context, doc string, in EditPlanInput) (EditPlanResult, error)
	UpdateDocument(ctx context.Context, doc string, in UpdateDocumentInput) (Rewrite, error)
}

// Edit operations of edit_plan.
const (
	OpEdit   = "edit"   // replace a block's text; it keeps its id
	OpInsert = "insert" // a new block after After ("" first)
	OpDelete = "delete" // remove a block
)

// BlockEdit is one edit of edit_plan.
type BlockEdit struct {
	Op    string    `json:"op"`
	Block string    `json:"block,omitempty"`
	After string    `json:"after,omitempty"`
	Kind  BlockKind `json:"kind,omitempty"`
	Text  string    `json:"text,omitempty"`
}

// EditPlanInput is the input of edit_plan.
type EditPlanInput struct {
	Revision string      `json:"revision"`
	Edits    []BlockEdit `json:"edits"`
}

// EditPlanResult is what edit_plan returns.
type EditPlanResult struct {
	Revision string `json:"revision"`
	// Inserted are the ids of the inserted blocks, in edit order.
	Inserted []string `json:"inserted"`
	// AnchorsPending are the decisions whose passage the edit (or an
	// earlier one) broke: review the replacement passage and call
	// anchor_plan for them.
	AnchorsPending []PendingAnchor `json:"anchors_pending"`
}

// NewBlock is one block of update_document: ID names a block the document
// holds to keep it, "" makes a new one.
type NewBlock struct {
	ID   string    `json:"id,omitempty"`
	Kind BlockKind `json:"kind"`
	Text string    `json:"text"`
}

// UpdateDocumentInput is the input of update_document.
type UpdateDocumentInput struct {
	Blocks []NewBlock `json:"blocks"`
}

// Rewrite is a document before and after a whole-document rewrite.
type Rewrite struct {
	Revision string
	Old, New []Block
}

// UpdateDocumentResult is what update_document returns.
type UpdateDocumentResult struct {
	Revision string `json:"revision"`
	RewriteReport
}

const maxEdits = 100

func checkKind(k BlockKind, field string) error {
	switch k {
	case Title, Heading, Paragraph, Table, Diagram:
		return nil
	case "":
		return refusef("%s is required: title, heading, paragraph, table or diagram", field)
	}
	return refusef("%s is title, heading, paragraph, table or diagram, not %q", field, k)
}

// EditPlan runs the host's edit_plan, a foreground edit, and lists the
// decisions that owe a review afterwards (anchors_pending).
func (t *Tools) EditPlan(ctx context.Context, call Call, in EditPlanInput) (EditPlanResult, error) {
	if t.opts.Editor == nil {
		return EditPlanResult{}, refusef("this host does not edit the plan")
	}
	if call.Doc == "" {
		return EditPlanResult{}, refusef("no document")
	}
	if in.Revision == "" {
		return EditPlanResult{}, refusef("revision is required: the document revision you read")
	}
	if len(in.Edits) == 0 || len(in.Edits) > maxEdits {
		return EditPlanResult{}, refusef("edits holds 1 to %d edits", maxEdits)
	}
	for i, e := range in.Edits {
		f := fmt.Sprintf("edits[%d]", i)
		switch e.Op {
		case OpEdit, OpDelete:
			if e.Block == "" {
				return EditPlanResult{}, refusef("%s.block is required for %q", f, e.Op)
			}
		case OpInsert:
			if err := checkKind(e.Kind, f+".kind"); err != nil {
				return EditPlanResult{}, err
			}
		default:
			return EditPlanResult{}, refusef("%s.op is edit, insert or delete, not %q", f, e.Op)
		}
	}
	res, err := t.opts.Editor.EditPlan(ctx, call.Doc, in)
	if errors.Is(err, ErrConflict) {
		now := "a later one"
		if snap, rerr := t.opts.Document.Read(ctx, call.Doc); rerr == nil {
			now = snap.Revision
		}
		return EditPlanResult{}, &question.Refusal{Reason: question.Stale, Err: err, Message: fmt.Sprintf(
			"revision: %q is not the plan's current revision (%s); call read_plan, then edit again", in.Revision, now)}
	}
	if err != nil {
		return EditPlanResult{}, err
	}
	if res.Inserted == nil {
		res.Inserted = []string{}
	}
	if res.AnchorsPending, err = t.AnchorsPending(ctx, call.Doc); err != nil {
		return res, err
	}
	return res, nil
}

// UpdateDocument runs the host's update_document, a whole-document
// rewrite, then Rewritten.
func (t *Tools) UpdateDocument(ctx context.Context, call Call, in UpdateDocumentInput) (UpdateDocumentResult, error) {
	if t.opts.Editor == nil {
		return UpdateDocumentResult{}, refusef("this host does not edit the plan")
	}
	if call.Doc == "" {
		return UpdateDocumentResult{}, refusef("no document")
	}
	if len(in.Blocks) == 0 {
		return UpdateDocumentResult{}, refusef("blocks is required: the document's new blocks, in order")
	}
	seen := map[string]bool{}
	for i, b := range in.Blocks {
		if err := checkKind(b.Kind, fmt.Sprintf("blocks[%d].kind", i)); err != nil {
			return UpdateDocumentResult{}, err
		}
		if b.ID != "" && seen[b.ID] {
			return UpdateDocumentResult{}, refusef("blocks[%d].id %s is given twice", i, b.ID)
		}
		seen[b.ID] = true
	}
	rw, err := t.opts.Editor.UpdateDocument(ctx, call.Doc, in)
	if err != nil {
		return UpdateDocumentResult{}, err
	}
	rep, err := t.Rewritten(ctx, call.Doc, rw.Old, rw.New)
	if err != nil {
		return UpdateDocumentResult{}, err
	}
	return UpdateDocumentResult{Revision: rw.Revision, RewriteReport: rep}, nil
}
