package server

// The commands a connection sends, decided on the document goroutine:
// each applies to the authority and holds its reply and broadcasts.

import (
	"context"
	"errors"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// refusal builds a failed reply; a reset carries the accepted document.
func (d *document) refusal(h wire.Header, id string, err error) *wire.Reply {
	r := &wire.Reply{Header: h, ID: id}
	var ref *question.Refusal
	if errors.As(err, &ref) {
		r.Reason, r.Message, r.Reset = ref.Reason, ref.Message, ref.Reset
	} else {
		r.Reason, r.Message = question.Unavailable, "the server could not complete the request"
		d.s.opts.Logger.Error("request failed", "doc", d.id, "kind", h.Kind, "err", err)
	}
	if r.Reset && id != "" {
		r.Doc, _ = d.auth.Save(id)
	}
	return r
}

func (d *document) create(ctx context.Context, c *conn, m *wire.Create) {
	reqs := make([]question.CreateRequest, len(m.Cards))
	for i, card := range m.Cards {
		reqs[i] = question.CreateRequest{Key: card.Key, Origin: card.Origin, Definition: card.Definition, Revision: card.Revision, Passage: card.Passage}
	}
	out, err := d.auth.Create(ctx, c.member, reqs)
	if err != nil {
		d.replyTo(c, d.refusal(m.Header, "", err))
		return
	}
	r := &wire.Reply{Header: m.Header, OK: true}
	for _, o := range out {
		r.Records = append(r.Records, o.Record)
	}
	d.replyTo(c, r)
	for _, o := range out {
		if o.Repeated {
			continue
		}
		rec := o.Record
		d.broadcast(nil, &wire.Event{Header: wire.Header{Kind: wire.KindCreated}, ID: rec.ID, Record: &rec, By: c.member.Login})
		d.hold(outgoing{msg: d.catchUp(rec.ID, nil), joins: d.joins})
	}
}

func (d *document) edit(ctx context.Context, c *conn, m *wire.Edit) {
	res, err := d.auth.Edit(ctx, c.member, m.ID, m.Changes)
	if err != nil {
		d.replyTo(c, d.refusal(m.Header, m.ID, err))
		return
	}
	if res.Rebased {
		d.gather.other = true // everyone loads the decision again: no wait
		// The history was replaced: every member, the editor too, gets
		// the whole rebased document (before the reply, so the editor's
		// replica holds the heads the reply names), after the commit.
		d.broadcastDoc(m.ID)
		d.replyTo(c, &wire.Reply{Header: m.Header, ID: m.ID, OK: true, Heads: heads(res.Heads)})
		return
	}
	d.replyTo(c, &wire.Reply{Header: m.Header, ID: m.ID, OK: true, Heads: heads(res.Heads), Repeated: res.Repeated})
	if res.Repeated {
		return // nothing changed: no one to tell, nothing for a gather to wait for
	}
	d.noteEdit(c, time.Now())
	if len(res.Changes) > 0 {
		d.broadcastEdit(c, &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: m.ID, Changes: res.Changes, Heads: heads(res.Heads), By: c.member.Login, Cells: res.Cells})
	}
}

func (d *document) submitAnswers(ctx context.Context, c *conn, m *wire.Submit) {
	reqs := make([]question.SubmitRequest, len(m.Items))
	for i, it := range m.Items {
		h, err := parseHeads(it.Heads)
		if err != nil {
			d.replyTo(c, &wire.Reply{Header: m.Header, Reason: question.Invalid, Message: "heads of " + it.ID + " are malformed"})
			return
		}
		reqs[i] = question.SubmitRequest{ID: it.ID, Heads: h}
	}
	out, err := d.auth.Submit(ctx, c.member, reqs)
	if err != nil {
		d.replyTo(c, d.refusal(m.Header, "", err))
		return
	}
	r := &wire.Reply{Header: m.Header, OK: true}
	for _, s := range out {
		res := wire.SubmitResult{ID: s.ID, OK: s.Err == nil, Repeated: s.Repeated}
		if s.Err != nil {
			var ref *question.Refusal
			if errors.As(s.Err, &ref) {
				res.Reason, res.Message = ref.Reason, ref.Message
			}
		} else {
			rec := s.Record
			res.Record = &rec
		}
		r.Results = append(r.Results, res)
	}
	d.replyTo(c, r)
	for _, res := range r.Results {
		if res.OK && !res.Repeated {
			d.broadcast(nil, &wire.Event{Header: wire.Header{Kind: wire.KindResolved}, ID: res.ID, Record: res.Record, Answer: res.Record.Answer, By: c.member.Login})
		}
	}
}

// provenance answers question:provenance: who set each value of the
// decision's current draft. Reading it changes nothing, so a reader may ask.
func (d *document) provenance(c *conn, m *wire.Target) {
	ps, err := d.auth.Provenance(m.ID)
	if err != nil {
		d.replyTo(c, d.refusal(m.Header, "", err))
		return
	}
	d.replyTo(c, &wire.Reply{Header: m.Header, ID: m.ID, OK: true, Provenance: ps})
}

func (d *document) target(ctx context.Context, c *conn, m *wire.Target) {
	if m.Kind == wire.KindProvenance {
		d.provenance(c, m)
		return
	}
	var before crdt.Heads
	if _, h, err := d.auth.Draft(m.ID); err == nil {
		before = h
	}
	var res question.Applied
	var err error
	var event wire.Kind
	switch m.Kind {
	case wire.KindReopen:
		res, err = d.auth.Reopen(ctx, c.member, m.ID, m.Generation)
		event = wire.KindReopened
	case wire.KindDiscard:
		res, err = d.auth.Discard(ctx, c.member, m.ID)
		event = wire.KindDiscarded
	case wire.KindExpand, wire.KindPage:
		res.Record, err = d.auth.Expand(ctx, c.member, m.ID, func(ctx context.Context, channel string) error {
			return d.s.opts.Host.EnsureChannel(ctx, d.id, channel)
		})
		event = wire.KindMeta
	}
	if err != nil {
		d.replyTo(c, d.refusal(m.Header, m.ID, err))
		return
	}
	// The event and the authority's changes go before the reply, and the
	// reply names the heads after them: a client returns from the request
	// once its replica holds those heads (a reopen's fresh generation), so
	// its next edit builds on them. A repeated request changed nothing
	// and announces nothing.
	rec := res.Record
	if !res.Repeated {
		d.broadcast(nil, &wire.Event{Header: wire.Header{Kind: event}, ID: m.ID, Record: &rec, By: c.member.Login})
		d.broadcastChanges(m.ID, before, c.member.Login)
	}
	d.replyTo(c, &wire.Reply{Header: m.Header, ID: m.ID, OK: true, Record: &rec, Heads: d.headsOf(m.ID), Repeated: res.Repeated})
}

// headsOf returns a decision's accepted heads, as the wire carries them.
func (d *document) headsOf(id string) []string {
	_, cur, err := d.auth.Draft(id)
	if err != nil {
		return nil
	}
	return heads(cur)
}

// broadcastDoc announces a decision's whole accepted document to every
// connection: after a rebase, whose new history no member holds.
func (d *document) broadcastDoc(id string) {
	saved, err := d.auth.Save(id)
	if err != nil {
		return
	}
	_, cur, _ := d.auth.Draft(id)
	d.broadcast(nil, &wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: id, Doc: saved, Heads: heads(cur)})
}

// broadcastChanges announces the authority's own changes since before
// (a reopen's fresh generation, an append) to every connection.
func (d *document) broadcastChanges(id string, before crdt.Heads, by string) {
	ch, err := d.auth.ChangesSince(id, before)
	if question.ReasonOf(err) == question.Stale { // rebased meanwhile
		d.broadcastDoc(id)
		return
	}
	if err != nil || len(ch) == 0 {
		return
	}
	_, cur, _ := d.auth.Draft(id)
	d.broadcast(nil, &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: id, Changes: ch, Heads: heads(cur), By: by})
}

func (d *document) appendItem(ctx context.Context, c *conn, m *wire.Append) {
	var before crdt.Heads
	if _, h, err := d.auth.Draft(m.ID); err == nil {
		before = h
	}
	req := question.AppendRequest{ID: m.ID, Question: m.Question, Key: m.Key, Label: m.Label}
	var res question.AppendResult
	var err error
	if m.Kind == wire.KindCriterion {
		res, err = d.auth.AppendCriterion(ctx, c.member, req)
	} else {
		res, err = d.auth.AppendOption(ctx, c.member, req)
	}
	if err != nil {
		d.replyTo(c, d.refusal(m.Header, m.ID, err))
		return
	}
	def := res.Definition
	r := &wire.Reply{Header: m.Header, ID: m.ID, OK: true, Definition: &def, Repeated: res.Repeated}
	ev := &wire.Event{ID: m.ID, Question: m.Question, Definition: &def, By: c.member.Login}
	if m.Kind == wire.KindCriterion {
		crit := question.Criterion(res.Item)
		r.Criterion, ev.Criterion = &crit, &crit
		ev.Kind = wire.KindCriterionAdded
	} else {
		opt := res.Item
		r.Option, ev.Option = &opt, &opt
		ev.Kind = wire.KindOptionAdded
	}
	// As for target: the event and the changes first, then the reply with
	// the heads that hold the new cells.
	if !res.Repeated {
		d.broadcast(nil, ev)
		d.broadcastChanges(m.ID, before, c.member.Login)
	}
	r.Heads = d.headsOf(m.ID)
	d.replyTo(c, r)
}

// why follows the spec's order: commit, announce question:meta, reply.
func (d *document) why(ctx context.Context, c *conn, m *wire.Why) {
	res, err := d.auth.SetWhy(ctx, c.member, m.ID, question.WhyRequest{Generation: m.Generation, Text: m.Text, Seen: m.Seen})
	if err != nil {
		d.replyTo(c, d.refusal(m.Header, m.ID, err))
		return
	}
	rec := res.Record
	if !res.Repeated {
		d.broadcast(nil, &wire.Event{Header: wire.Header{Kind: wire.KindMeta}, ID: m.ID, Record: &rec, By: c.member.Login})
	}
	d.replyTo(c, &wire.Reply{Header: m.Header, ID: m.ID, OK: true, Record: &rec, Repeated: res.Repeated})
}

// sync runs the automerge sync protocol with one connection over one
// decision. Every message is parsed and bounds-checked before automerge
// sees it; changes it carries are edits, checked and committed by the
// authority like question:edit, and only the rest of the message reaches
// the session.
func (d *document) sync(ctx context.Context, c *conn, m *wire.Sync) {
	if _, _, err := d.auth.Draft(m.ID); err != nil {
		c.replyError(c.format, m.RID, string(question.NotFound), "no decision "+m.ID)
		return
	}
	msg, err := crdt.ParseSyncMessage(m.Msg)
	if err != nil {
		c.replyError(c.format, m.RID, string(question.Invalid), err.Error())
		return
	}
	if len(msg.Changes) > 0 {
		var batch []byte
		for _, ch := range msg.Changes {
			batch = append(batch, ch...)
		}
		res, err := d.auth.Edit(ctx, c.member, m.ID, batch)
		if err != nil {
			r := d.refusal(wire.Header{Kind: wire.KindEdit, RID: m.RID}, m.ID, err)
			d.replyTo(c, r)
			return
		}
		if len(res.Changes) > 0 {
			d.broadcastEdit(c, &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: m.ID, Changes: res.Changes, Heads: heads(res.Heads), By: c.member.Login, Cells: res.Cells})
		}
		msg = &crdt.SyncMessage{Heads: msg.Heads, Need: msg.Need, Have: msg.Have}
	}
	byID := d.sessions[c]
	if byID == nil {
		byID = map[string]*crdt.Session{}
		d.sessions[c] = byID
	}
	sess := byID[m.ID]
	if sess == nil {
		if sess, err = d.auth.NewSession(m.ID); err != nil {
			return
		}
		byID[m.ID] = sess
	}
	if err := sess.ReceiveParsed(msg); err != nil {
		c.replyError(c.format, m.RID, string(question.Invalid), err.Error())
		return
	}
	if out, ok := sess.Generate(); ok {
		d.hold(outgoing{to: c, msg: &encoded{msg: &wire.Sync{Header: wire.Header{Kind: wire.KindSync}, ID: m.ID, Msg: out}}})
	}
}
