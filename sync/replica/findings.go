package replica

import (
	"context"
	"fmt"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// Research attaches a research request the member started through the
// host's own route to an open decision (question:explore). The server
// checks with the host that the request belongs to the document before it
// commits a running finding, or a settled one if the request had ended.
// focus is what the member typed in Details.
func (c *Client) Research(ctx context.Context, id, request, focus string) (question.Finding, question.Record, error) {
	return c.explore(ctx, &wire.Explore{ID: id, Request: request, Focus: focus})
}

// Investigate attaches an investigation of the codebase, as Research does.
func (c *Client) Investigate(ctx context.Context, id, investigation, focus string) (question.Finding, question.Record, error) {
	return c.explore(ctx, &wire.Explore{ID: id, Investigation: investigation, Focus: focus})
}

// Ask asks a member for their take on an open decision: a running ask
// finding waits for their question:take.
func (c *Client) Ask(ctx context.Context, id, member, focus string) (question.Finding, question.Record, error) {
	return c.explore(ctx, &wire.Explore{ID: id, Member: member, Focus: focus})
}

func (c *Client) explore(ctx context.Context, m *wire.Explore) (question.Finding, question.Record, error) {
	m.Header = c.header(wire.KindExplore)
	return c.findingRequest(ctx, m.Header.RID, m.ID, m)
}

// StopExplore stops a running finding: only its starter may stop research
// or an investigation, only its asker an ask.
func (c *Client) StopExplore(ctx context.Context, id, finding string) (question.Finding, question.Record, error) {
	h := c.header(wire.KindExploreStop)
	return c.findingRequest(ctx, h.RID, id, &wire.ExploreStop{Header: h, ID: id, Finding: finding})
}

// Take answers an ask addressed to this member; stance is "",
// question.Supports or question.Objects.
func (c *Client) Take(ctx context.Context, id, finding, reply string, stance question.Stance) (question.Finding, question.Record, error) {
	h := c.header(wire.KindTake)
	return c.findingRequest(ctx, h.RID, id, &wire.Take{Header: h, ID: id, Finding: finding, Reply: reply, Stance: stance})
}

// Page opens a decision as its own page (question:page): a child document
// whose channel is question:<id>. A retry, or a second member, reaches the
// same page.
func (c *Client) Page(ctx context.Context, id string) (question.Record, error) {
	return c.target(ctx, wire.KindPage, id)
}

func (c *Client) findingRequest(ctx context.Context, rid, id string, m wire.Message) (question.Finding, question.Record, error) {
	r, err := c.do(ctx, rid, m)
	if err != nil {
		return question.Finding{}, question.Record{}, err
	}
	if r.Finding == nil {
		return question.Finding{}, question.Record{}, fmt.Errorf("%w: %s reply without a finding", ErrProtocol, m.FrameKind())
	}
	return *r.Finding, c.recordOf(id, r.Record), nil
}
