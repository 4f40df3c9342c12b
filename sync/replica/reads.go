package replica

import (
	"fmt"
	"slices"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/question"
)

// Draft returns the replica's draft of the decision's current generation,
// with local changes, and the revision (heads) it is at.
func (c *Client) Draft(id string) (crdt.Draft, crdt.Heads, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rep := c.reps[id]
	if rep == nil {
		if c.records[id] != nil {
			return crdt.Draft{}, nil, ErrNoReplica
		}
		return crdt.Draft{}, nil, refusal(question.NotFound, "no decision %q", id)
	}
	d, err := rep.doc.Draft()
	if err != nil {
		return crdt.Draft{}, nil, fmt.Errorf("replica: %s: %w", id, err)
	}
	return d, rep.doc.Heads(), nil
}

// Accepted returns the last revision of the decision's draft the server
// is known to have accepted, and whether the replica holds local changes
// beyond it.
func (c *Client) Accepted(id string) (heads crdt.Heads, unsent bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rep := c.reps[id]
	if rep == nil {
		return nil, false, refusal(question.NotFound, "no replica of decision %q", id)
	}
	return slices.Clone(rep.accepted), !rep.doc.Heads().Equal(rep.accepted), nil
}

// Record returns a copy of a decision's record.
func (c *Client) Record(id string) (question.Record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := c.records[id]
	if rec == nil {
		return question.Record{}, false
	}
	return rec.Clone(), true
}

// Records returns copies of every record, in the server's order.
func (c *Client) Records() []question.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]question.Record, 0, len(c.order))
	for _, id := range c.order {
		out = append(out, c.records[id].Clone())
	}
	return out
}
