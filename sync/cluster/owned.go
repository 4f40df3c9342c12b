package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/accord-crdt/accord/question"
)

// ErrNotOwner is returned by OwnerOnly.Do for a document whose lease this
// node does not hold: its work belongs on the node that decides for it.
var ErrNotOwner = errors.New("cluster: this node does not hold the document's lease")

// Doer runs host work on a document's authority: sync/server.Server's Do,
// question/planner's Authorities.
type Doer interface {
	Do(ctx context.Context, doc string, fn func(a *question.Authority) error) error
}

// OwnerOnly is a Doer (and so a question/planner Authorities) that runs
// host work only for documents whose lease this node holds, and refuses
// the rest with ErrNotOwner, applying nothing. Each node of a cluster
// runs its own answer Driver on an OwnerOnly: a driver whose node is not
// the owner never loads the document, so it neither claims turns there nor
// fences the owner's commits by committing under it. The calls Skip picks
// (the Driver's own, planner.FromDriver) are skipped without an error
// instead, fn not run: the Driver then sees nothing due and looks again
// at its next poll, rather than logging a failure every retry on every
// node that is not the owner. Options.Acquired wakes it when this node
// takes the lease.
//
// Exactly-once delivery across nodes does not rest on this check, which
// can be stale by the time the work commits: every claim and every mark is
// a fenced Write (FencedStore), so two nodes can never both claim one
// row, and a turn claimed by a node that died is found claimed, under its
// id, by the next owner, which asks Chat whether that id was accepted.
// What the host must provide is a Chat shared by the nodes whose Accept
// happens once per turn id cluster-wide (docs/SCALING.md).
type OwnerOnly struct {
	// Skip, if set, picks the calls that, for a document whose lease
	// this node does not hold, return nil without running fn rather than
	// ErrNotOwner: work that polls and looks again later, such as the
	// answer Driver's (a host sets planner.FromDriver).
	Skip func(ctx context.Context) bool

	r     *Router
	inner Doer
}

var _ Doer = (*OwnerOnly)(nil)

// NewOwnerOnly runs inner's work for the documents r holds; set Skip
// before the first Do.
func NewOwnerOnly(r *Router, inner Doer) *OwnerOnly { return &OwnerOnly{r: r, inner: inner} }

// Do runs fn on doc's authority if this node holds doc's lease.
func (o *OwnerOnly) Do(ctx context.Context, doc string, fn func(a *question.Authority) error) error {
	if !o.r.Owns(doc) {
		if o.Skip != nil && o.Skip(ctx) {
			return nil
		}
		return fmt.Errorf("cluster: %q: %w", doc, ErrNotOwner)
	}
	return o.inner.Do(ctx, doc, fn)
}
