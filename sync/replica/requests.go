package replica

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// do sends a request and waits for its reply, bounded by ctx. The request
// waits for a connection if there is none, and is sent again, unchanged,
// on the next connection when one is lost before its reply: the server
// answers a request that had already taken effect as it did (see
// docs/PROTOCOL.md, "Outcomes of a resent request"). Only an ask, which
// the server could not tell from a new one once answered, fails with
// ErrDisconnected instead. A refusal is returned as a *question.Refusal,
// with the reply; but a resent request refused as unavailable is sent
// again, since an earlier send of it may have taken effect.
func (c *Client) do(ctx context.Context, rid string, m wire.Message) (*wire.Reply, error) {
	b, err := wire.Encode(m, c.opts.Format)
	if err != nil {
		return nil, err
	}
	// The server cannot answer a frame it cannot decode with a reply of its
	// rid, so check here what it would check.
	if _, err := wire.Decode(b, c.opts.Format); err != nil {
		return nil, err
	}
	r := &request{ctx: ctx, rid: rid, data: b, reply: make(chan result, 1)}
	refusals := 0 // unavailable refusals of the resent request
	for resent := false; ; resent = true {
		select {
		case c.out <- r:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.ctx.Done():
			return nil, ErrClosed
		}
		res, err := c.await(ctx, r)
		if errors.Is(err, ErrDisconnected) && resendable(m) {
			continue
		}
		// A resent request refused as unavailable applied nothing this
		// time, which says nothing of an earlier send: in a cluster, that
		// one's Write may land after the resend was decided (its node cut
		// off from the store with the Write on its way), and the resend's
		// commit is refused for it. Sent again, the request is decided on
		// the document as it then is, and answered as it took effect.
		if resent && unavailable(err) {
			// Paced like a redial: a store that stays down is not
			// asked again and again at the speed of its refusals.
			t := time.NewTimer(c.backoff(refusals))
			refusals++
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return res, err
			case <-c.ctx.Done():
				t.Stop()
				return nil, ErrClosed
			}
		}
		return res, err
	}
}

// unavailable reports whether err is a refusal as unavailable: a commit
// failed, and nothing of the request was applied.
func unavailable(err error) bool {
	var r *question.Refusal
	return errors.As(err, &r) && r.Reason == question.Unavailable
}

// resendable reports whether a request may be sent again after its
// connection was lost before the reply: every request but an ask.
func resendable(m wire.Message) bool {
	e, ok := m.(*wire.Explore)
	return !ok || e.Member == ""
}

// await waits for the reply to a request sent, and for its effect to show
// in the replica (waitHeads).
func (c *Client) await(ctx context.Context, r *request) (*wire.Reply, error) {
	select {
	case res := <-r.reply:
		if res.err != nil {
			return nil, res.err
		}
		if !res.reply.OK {
			return res.reply, &question.Refusal{Reason: res.reply.Reason, Message: res.reply.Message, Reset: res.reply.Reset}
		}
		if err := c.waitHeads(ctx, res); err != nil {
			return res.reply, err
		}
		return res.reply, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.ctx.Done():
		return nil, ErrClosed
	}
}

// waitHeads waits, bounded by ctx, until the replica of the decision a
// successful reply names holds the heads the reply carries: the server
// announces a request's changes (a reopen's fresh draft, an appended
// option) as question:changes or question:doc frames that may reach the
// client after the reply, and a call returns only once its effect shows
// in the local document. A connection lost meanwhile is redialled; the
// reconnect's catch-up brings the heads, or a rebased document that holds
// the effect under another history.
func (c *Client) waitHeads(ctx context.Context, res result) error {
	r := res.reply
	if r.ID == "" || len(r.Heads) == 0 {
		return nil
	}
	want, err := parseWireHeads(r.Heads)
	if err != nil {
		return fmt.Errorf("%w: reply heads: %v", ErrProtocol, err)
	}
	err = c.waitUntil(ctx, func() bool {
		rep := c.reps[r.ID]
		return rep != nil && (rep.doc.Has(want) || rep.rebases != res.rebases)
	})
	if err != nil && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: waiting for the decision's changes: %w", ErrNoReplica, err)
	}
	return err
}

func (c *Client) header(kind wire.Kind) wire.Header {
	return wire.Header{Kind: kind, RID: c.newRID()}
}

// Submit saves the drafts of one or more decisions (question:submit). Each
// claims the revision the replica displays when Submit is called; edits
// not yet accepted are flushed first and their replies awaited, so the
// claimed revision is an accepted one. Changes of other members that
// arrive meanwhile are not claimed: the member never saw them, and the
// server refuses the save as stale if they changed the draft. If a
// flushed edit is refused, Submit returns the refusal and submits
// nothing. Otherwise each decision's outcome is in its SubmitResult.
func (c *Client) Submit(ctx context.Context, ids ...string) ([]wire.SubmitResult, error) {
	if len(ids) == 0 {
		return nil, refusal(question.Invalid, "nothing to save")
	}
	h := c.header(wire.KindSubmit)
	m := &wire.Submit{Header: h}
	c.mu.Lock()
	for _, id := range ids {
		rep := c.reps[id]
		if rep == nil {
			c.mu.Unlock()
			return nil, ErrNoReplica
		}
		m.Items = append(m.Items, wire.SubmitItem{ID: id, Heads: wireHeads(rep.doc.Heads())})
	}
	c.mu.Unlock()
	if err := c.Flush(ctx, ids...); err != nil {
		return nil, err
	}
	r, err := c.do(ctx, h.RID, m)
	if err != nil {
		return nil, err
	}
	return r.Results, nil
}

// Reopen returns a settled decision to open with a fresh draft. It
// reopens the saved answer the client holds: one saved again since is
// refused as stale.
func (c *Client) Reopen(ctx context.Context, id string) (question.Record, error) {
	g, err := c.settledGeneration(id)
	if err != nil {
		return question.Record{}, err
	}
	h := c.header(wire.KindReopen)
	r, err := c.do(ctx, h.RID, &wire.Target{Header: h, ID: id, Generation: g})
	if err != nil {
		return question.Record{}, err
	}
	return c.recordOf(id, r.Record), nil
}

// settledGeneration is the generation of the saved answer the client
// holds for a decision: what a reopen or a why acts on, so that the
// server tells a resent one from a new one. A decision the client holds
// but not as settled is refused here as not_settled: sent without a
// generation, the request would act on whatever answer the server has
// meanwhile, which its member never saw. 0 for a decision it does not
// hold: the server decides.
func (c *Client) settledGeneration(id string) (uint64, error) {
	rec, ok := c.Record(id)
	switch {
	case !ok:
		return 0, nil
	case rec.Status != question.Settled:
		return 0, refusal(question.NotSettled, "the decision is %s here; only a settled decision can be reopened or given a why", rec.Status)
	}
	return rec.Generation, nil
}

// Discard sets a decision aside, keeping its history.
func (c *Client) Discard(ctx context.Context, id string) (question.Record, error) {
	return c.target(ctx, wire.KindDiscard, id)
}

// Expand turns a decision into a page (a child document).
func (c *Client) Expand(ctx context.Context, id string) (question.Record, error) {
	return c.target(ctx, wire.KindExpand, id)
}

// Provenance returns who set each value of a decision's current draft,
// when, and what it replaced, as the server's authority recorded it.
func (c *Client) Provenance(ctx context.Context, id string) ([]question.CellProvenance, error) {
	h := c.header(wire.KindProvenance)
	r, err := c.do(ctx, h.RID, &wire.Target{Header: h, ID: id})
	if err != nil {
		return nil, err
	}
	return r.Provenance, nil
}

func (c *Client) target(ctx context.Context, kind wire.Kind, id string) (question.Record, error) {
	h := c.header(kind)
	r, err := c.do(ctx, h.RID, &wire.Target{Header: h, ID: id})
	if err != nil {
		return question.Record{}, err
	}
	return c.recordOf(id, r.Record), nil
}

// SetWhy sets, replaces or (empty text) clears a settled decision's why.
// It replaces the why the client displays: if another member changed the
// why since, it is refused as stale (question.ErrStale) and the client
// shows theirs.
// The why it replaces and the why set make an undo group (Undo).
func (c *Client) SetWhy(ctx context.Context, id, text string) (question.Record, error) {
	rec, _ := c.Record(id)
	out, repeated, err := c.setWhy(ctx, id, text, rec.Why)
	if err == nil && !repeated {
		c.mu.Lock()
		c.undoWhy(id, rec.Why, out)
		c.mu.Unlock()
	}
	return out, err
}

// setWhy sets the why, claiming seen as the why the member displays, and
// reports whether the server took it as a repeat of a why already set.
func (c *Client) setWhy(ctx context.Context, id, text, seen string) (question.Record, bool, error) {
	h := c.header(wire.KindWhy)
	g, err := c.settledGeneration(id)
	if err != nil {
		return question.Record{}, false, err
	}
	r, err := c.do(ctx, h.RID, &wire.Why{Header: h, ID: id, Text: text, Generation: g, Seen: &seen})
	if err != nil {
		return question.Record{}, false, err
	}
	return c.recordOf(id, r.Record), r.Repeated, nil
}

// recordOf returns the record held for id once a reply carrying rec was
// adopted; rec itself if none is held.
func (c *Client) recordOf(id string, rec *question.Record) question.Record {
	if held, ok := c.Record(id); ok {
		return held
	}
	if rec != nil {
		return rec.Clone()
	}
	return question.Record{}
}

// AppendOption appends an option to a choice question of an open
// decision (question:option). key is the idempotency token: repeating it
// returns the same option with repeated true. It returns the option and
// the decision's definition as the client now holds it.
func (c *Client) AppendOption(ctx context.Context, id, q, key, label string) (question.Option, question.Definition, bool, error) {
	r, def, err := c.appendItem(ctx, wire.KindOption, id, q, key, label)
	if err != nil {
		return question.Option{}, question.Definition{}, false, err
	}
	if r.Option == nil {
		return question.Option{}, def, r.Repeated, fmt.Errorf("%w: option reply without an option", ErrProtocol)
	}
	return *r.Option, def, r.Repeated, nil
}

// AppendCriterion appends a criterion to a choice question of an open
// decision (question:criterion), like AppendOption.
func (c *Client) AppendCriterion(ctx context.Context, id, q, key, label string) (question.Criterion, question.Definition, bool, error) {
	r, def, err := c.appendItem(ctx, wire.KindCriterion, id, q, key, label)
	if err != nil {
		return question.Criterion{}, question.Definition{}, false, err
	}
	if r.Criterion == nil {
		return question.Criterion{}, def, r.Repeated, fmt.Errorf("%w: criterion reply without a criterion", ErrProtocol)
	}
	return *r.Criterion, def, r.Repeated, nil
}

func (c *Client) appendItem(ctx context.Context, kind wire.Kind, id, q, key, label string) (*wire.Reply, question.Definition, error) {
	h := c.header(kind)
	r, err := c.do(ctx, h.RID, &wire.Append{Header: h, ID: id, Question: q, Key: key, Label: label})
	if err != nil {
		return nil, question.Definition{}, err
	}
	var def question.Definition
	if rec, ok := c.Record(id); ok {
		def = rec.Definition
	} else if r.Definition != nil {
		def = r.Definition.Clone()
	}
	return r, def, nil
}

// Create opens decision cards (1 to 10, all or none) and returns their
// records. Every member then receives question:created and the
// decisions' documents; Create returns once this client holds them, so
// the new decisions are ready to edit. If ctx ends after the server
// created them but before their documents arrived, Create returns the
// records with an error wrapping ErrNoReplica and ctx's error: the
// decisions exist and their documents are still on their way.
func (c *Client) Create(ctx context.Context, cards ...wire.Card) ([]question.Record, error) {
	h := c.header(wire.KindCreate)
	r, err := c.do(ctx, h.RID, &wire.Create{Header: h, Cards: cards})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(r.Records))
	for i, rec := range r.Records {
		ids[i] = rec.ID
	}
	werr := c.waitDocs(ctx, ids)
	out := make([]question.Record, len(r.Records))
	for i, rec := range r.Records {
		out[i] = c.recordOf(rec.ID, &rec)
	}
	if werr != nil {
		return out, fmt.Errorf("%w: %w", ErrNoReplica, werr)
	}
	return out, nil
}
