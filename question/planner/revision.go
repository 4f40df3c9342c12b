package planner

import (
	"context"
	"fmt"

	"github.com/accord-crdt/accord/question"
)

// known reports whether rev is a revision the Planner can have read of the
// plan now in snap: the current one, or one since which some block of the
// plan stands unchanged. The Document contract counts an unknown revision
// as a change of every block, so a made-up revision (or another plan's)
// is not known, and nor is one so old that everything has changed since;
// the tools refuse both as stale rather than place anything by them.
func (t *Tools) known(ctx context.Context, doc string, snap Snapshot, rev string) (bool, error) {
	if rev == snap.Revision {
		return true, nil
	}
	for _, b := range snap.Blocks {
		ok, err := t.opts.Document.Unchanged(ctx, doc, b.ID, rev)
		if err != nil {
			return false, fmt.Errorf("planner: read block %q of %q: %w", b.ID, doc, err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// unknownRevision is the refusal of a revision that is not known.
func unknownRevision(field, rev, current string) *question.Refusal {
	return &question.Refusal{Reason: question.Stale, Message: fmt.Sprintf(
		"%s: %q is not the plan's current revision (%s), and nothing in the plan is unchanged since it; call read_plan and use the revision it returns", field, rev, current)}
}

// blockChanged is the refusal of a block that changed since the revision
// the Planner read.
func blockChanged(field, block, rev string) *question.Refusal {
	return &question.Refusal{Reason: question.Stale, Message: fmt.Sprintf(
		"%s: block %s changed since revision %s; call read_plan, review the passage and use the revision it returns", field, block, rev)}
}
