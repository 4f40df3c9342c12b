package server

// The commit pipeline of a document: groups of decided ops, their
// durable commit, and what is sent once it ends (see document).

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// A stage is one group of ops decided together: its held frames, the
// steps waiting for its Writes to be durable, and, once its commit
// starts, what each connection is sent of it, in order (accepted draft
// edits possibly sent already: see commitNext).
type stage struct {
	held  []outgoing
	out   fanout
	after []func(durable bool)
	// early holds the connections sent frames of this stage before its
	// commit; if the commit fails they hold changes the store lacks.
	early map[*conn]bool
	ops   int
}

// seal ends the group of ops just decided. A group that wrote nothing,
// with nothing ahead of it, is announced at once; any other waits for
// the next commit (commitNext).
func (d *document) seal(ops int) {
	st := &stage{held: d.held, after: d.afterFlush, ops: ops}
	d.held, d.afterFlush = nil, nil
	if d.quiet() && d.pipe.pending.Empty() {
		d.endGather()
		d.announce(st)
		return
	}
	d.pending = append(d.pending, st)
	d.gather.noteOp(time.Now())
}

// commitNext starts committing the pending groups, unless a commit runs
// already: their Writes in one durable transaction, their frames as one
// group's (fanOut coalesces each decision's changes across them). The
// document goroutine goes on deciding ops meanwhile (accepting) and hears
// the result on commitDone.
//
// The accepted draft edits' changes go to the other connections now,
// before the commit: a change every holder re-sends on reconnect cannot
// be lost by the server alone. Everything else, and the editor's own
// reply, waits for the commit. Groups decided while a commit runs wait
// for it to end before even their draft edits leave, so that a busy
// document sends few large frames (a replica's cost is mostly per frame
// applied) rather than many small ones.
func (d *document) commitNext() {
	if d.committing != nil || len(d.pending) == 0 {
		return
	}
	g := d.pending[0]
	for _, st := range d.pending[1:] {
		g.held = append(g.held, st.held...)
		g.after = append(g.after, st.after...)
		g.ops += st.ops
	}
	d.pending = nil
	d.endGather()
	w := d.pipe.take()
	if w.Empty() {
		// Groups that only waited for the commit before them.
		d.announce(g)
		return
	}
	g.out = d.fanOut(g.held)
	g.early = d.sendEarly(g.out)
	d.committing, d.commitW, d.commitStart = g, w, time.Now()
	store, id := d.s.opts.Store, d.id
	go func() { d.commitDone <- store.Commit(context.Background(), id, w) }()
}

// finishCommit takes the result of the running commit: on success the
// group's replies and broadcasts go out in order; on failure they are
// refused, together with the groups decided since (the authority reloads
// what is committed, which has neither).
func (d *document) finishCommit(ctx context.Context, err error) {
	g, w := d.committing, d.commitW
	d.committing, d.commitW = nil, nil
	d.s.metrics.committed(g.ops, time.Since(d.commitStart), err == nil)
	if err != nil {
		d.s.opts.Logger.Error("commit failed; refusing the group", "doc", d.id, "err", err)
		d.s.stats.commitFailures.Add(1)
		failed := append([]*stage{g}, d.pending...)
		d.pending = nil
		d.pipe.take()
		// A Write whose outcome is unknown may have landed: its group's
		// requests get no reply, as after a crash, rather than a refusal
		// saying nothing was applied.
		d.failStages(ctx, failed, errors.Is(err, persist.ErrOutcomeUnknown))
		// Every connection redials and loads what the store holds: the
		// failure may mean another node committed to the document (a
		// fenced commit in a cluster), whose owner they then reach.
		d.s.closeDocument(d.id, CloseCommitFailed, "reconnect: the document could not be saved")
		return
	}
	d.s.stats.commits.Add(1)
	d.s.trimSoon()
	d.s.opts.Host.Committed(d.id, decisionsOf(w))
	d.announce(g)
}

// announce runs a durable group's waiting steps, then sends what its
// connections have not been sent yet, in order.
func (d *document) announce(g *stage) {
	for _, f := range g.after {
		f(true)
	}
	if g.out == nil {
		g.out = d.fanOut(g.held)
	}
	d.sendRest(g.out)
}

// decisionsOf lists, sorted and once each, the decisions a Write touches.
func decisionsOf(w *persist.Write) []string {
	var ids []string
	for _, p := range w.Records {
		ids = append(ids, p.Key)
	}
	for _, p := range w.Drafts {
		ids = append(ids, p.Decision)
	}
	for _, p := range w.Projections {
		ids = append(ids, p.Key)
	}
	for _, p := range w.Answers {
		ids = append(ids, p.Key)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// failStages turns groups whose commit failed into refusals: the
// authority reloads from the store, every reply becomes "unavailable"
// (with the accepted document when it reset an edit), broadcasts are
// dropped, and connections sent early changes are closed once their
// refusals are queued: reconnecting, they offer those changes again with
// their heads. With firstUnknown the first stage's Write may have landed
// (persist.ErrOutcomeUnknown): its requests are not answered at all, and
// their clients learn the outcome when they reconnect.
func (d *document) failStages(ctx context.Context, stages []*stage, firstUnknown bool) {
	if err := d.auth.Reload(ctx); err != nil {
		d.s.opts.Logger.Error("reload failed", "doc", d.id, "err", err)
	}
	d.sessions = map[*conn]map[string]*crdt.Session{}
	var kept []outgoing
	for i, st := range stages {
		for _, f := range st.after {
			f(false)
		}
		if i == 0 && firstUnknown {
			continue // the connections close unanswered (see finishCommit)
		}
		for _, h := range st.held {
			if h.reply == nil {
				continue
			}
			r := &wire.Reply{Header: h.reply.Header, ID: h.reply.ID, OK: false, Reason: question.Unavailable,
				Message: "the change could not be saved; nothing was applied", Reset: h.reply.ID != ""}
			if r.Reset {
				r.Doc, _ = d.auth.Save(h.reply.ID)
			}
			d.s.refused(string(r.Reason))
			kept = append(kept, outgoing{to: h.to, msg: &encoded{msg: r}})
		}
	}
	d.sendRest(d.fanOut(kept))
	// Closed after their refusals are queued: a conn flushes its queue
	// before it says goodbye.
	for _, st := range stages {
		for c := range st.early {
			c.closeWith(CloseCommitFailed, "reconnect: the document could not be saved")
		}
	}
}

// pipeStore is the Store the authority writes through: it collects Writes
// for the document goroutine to commit as one group.
type pipeStore struct {
	persist.Store
	pending *persist.Write
}

func (p *pipeStore) Commit(_ context.Context, _ string, w *persist.Write) error {
	if p.pending == nil {
		p.pending = &persist.Write{}
	}
	p.pending.Merge(w)
	return nil
}

func (p *pipeStore) take() *persist.Write {
	w := p.pending
	p.pending = nil
	return w
}

// Close is a no-op: the Server's owner closes the real store.
func (p *pipeStore) Close() error { return nil }
