package server

// The findings commands (question:explore, question:explore-stop,
// question:take): the host's checks (Host.Work, CancelWork, KnownMember),
// then the authority's decision, then the reply, question:meta and the
// host's notice (Host.FindingsChanged) once durable.

import (
	"context"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// explore attaches started work or asks a member (question:explore). The
// host's check comes first, then the commit; the reply and question:meta
// follow the durable commit.
func (d *document) explore(ctx context.Context, c *conn, m *wire.Explore) {
	var res question.FindingResult
	var err error
	set := 0
	for _, s := range []string{m.Request, m.Investigation, m.Member} {
		if s != "" {
			set++
		}
	}
	switch {
	case set != 1:
		err = &question.Refusal{Reason: question.Invalid, Message: "question:explore names exactly one of request, investigation and member"}
	case m.Member != "":
		if !d.s.opts.Host.KnownMember(d.id, m.Member) {
			err = &question.Refusal{Reason: question.NotFound, Message: m.Member + " is not a member of this document"}
			break
		}
		res, err = d.auth.Ask(ctx, c.member, question.AskRequest{ID: m.ID, Member: m.Member, Focus: m.Focus})
	default:
		req := question.ExploreRequest{ID: m.ID, Kind: question.FindingResearch, Ref: m.Request, Focus: m.Focus}
		if m.Investigation != "" {
			req.Kind, req.Ref = question.FindingSpike, m.Investigation
		}
		res, err = d.auth.Explore(ctx, c.member, req, d.checkWork)
	}
	d.findingDone(c, m.Header, m.ID, res, err)
}

func (d *document) exploreStop(ctx context.Context, c *conn, m *wire.ExploreStop) {
	res, err := d.auth.ExploreStop(ctx, c.member, m.ID, m.Finding, d.cancelWork)
	d.findingDone(c, m.Header, m.ID, res, err)
}

func (d *document) take(ctx context.Context, c *conn, m *wire.Take) {
	res, err := d.auth.Take(ctx, c.member, question.TakeRequest{ID: m.ID, Finding: m.Finding, Reply: m.Reply, Stance: m.Stance})
	d.findingDone(c, m.Header, m.ID, res, err)
}

// findingDone replies to a findings request and, unless it changed
// nothing, announces question:meta and tells the host, whose research
// watcher then posts any notice the change owes.
func (d *document) findingDone(c *conn, h wire.Header, id string, res question.FindingResult, err error) {
	if err != nil {
		d.replyTo(c, d.refusal(h, id, err))
		return
	}
	rec, f := res.Record, res.Finding
	d.replyTo(c, &wire.Reply{Header: h, ID: id, OK: true, Record: &rec, Finding: &f, Repeated: res.Repeated})
	if res.Repeated {
		return
	}
	d.broadcast(nil, &wire.Event{Header: wire.Header{Kind: wire.KindMeta}, ID: id, Record: &rec, By: c.member.Login})
	d.afterFlush = append(d.afterFlush, func(durable bool) {
		if durable {
			d.s.opts.Host.FindingsChanged(d.id)
		}
	})
}

func (d *document) checkWork(ctx context.Context, kind question.FindingKind, ref string) (question.Work, error) {
	return d.s.opts.Host.Work(ctx, d.id, kind, ref)
}

func (d *document) cancelWork(ctx context.Context, kind question.FindingKind, ref string) (question.Work, error) {
	return d.s.opts.Host.CancelWork(ctx, d.id, kind, ref)
}
