package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// document is one open document. Its goroutine (run) owns the authority
// and every connection's membership; all commands of the document are
// decided there, one at a time, in arrival order.
//
// Commits are pipelined: the goroutine applies a group of commands in
// memory (the authority writes through pipeStore, which only collects
// their Writes), commits the group's Writes in one durable transaction,
// and only then sends the group's replies and broadcasts, in order
// (accepted draft edits' changes excepted: see commitNext). While that
// commit runs it decides the next group, committed and announced once the
// first commit ends, so the fsync of one group never holds up the
// deciding of the next. If a commit fails, every reply of its group and of
// the groups decided since becomes an "unavailable" refusal, their
// broadcasts are dropped, and the authority reloads from the store:
// nothing is acknowledged or announced before it is durable.
type document struct {
	s     *Server
	id    string
	inbox chan op
	quit  chan struct{}
	qonce sync.Once
	// wake asks the goroutine to queue more join frames: a joining conn's
	// write pump drained what was queued (conn.pop).
	wake chan struct{}

	refs    int  // attached connections; guarded by s.mu
	stopped bool // removed from s.docs; guarded by s.mu

	// Owned by run.
	auth    *question.Authority
	loadErr error
	pipe    *pipeStore
	// conns maps each joined connection to its join's number: a broadcast
	// reaches only the connections that had joined when it was decided,
	// so none arrives before its welcome or repeats its catch-up.
	conns map[*conn]uint64
	joins uint64
	// hellos wait for the end of the current group: a welcome describes
	// only committed state, so it is built after the group's commit.
	hellos []pendingJoin
	// joining holds the decisions each new conn has still to be sent.
	joining map[*conn]*joinCursor
	held    []delivery
	// committing is the group whose Writes (commitW) the store is
	// committing now; the result arrives on commitDone. pending are the
	// groups decided since, whose Writes wait in pipe for the next commit.
	committing  *stage
	pending     []*stage
	commitW     *persist.Write
	commitStart time.Time
	commitDone  chan error
	// coalesced caches the group's coalesced frames, by their parts.
	coalesced map[string]*encoded
	// catch caches each decision's catch-up frames (catchUp).
	catch map[string]*catchEntry
	// afterFlush holds steps waiting for the group's commit: Do's
	// callers and the authority's handoffs to blocking asks.
	afterFlush []func(durable bool)
	// sessions holds each connection's automerge sync sessions, by
	// decision; they point into the authority's documents (pinning them
	// until the connection leaves), so a reload drops them all.
	sessions map[*conn]map[string]*crdt.Session
}

type op struct {
	c     *conn
	msg   wire.Message
	leave bool
	// do runs a host's function on the authority (Server.Do); done hears
	// its result once its effects are durable.
	do   func(a *question.Authority) error
	done chan error
	// rights changes the conn's member (Server.Reauthorize).
	rights *rightsChange
}

// delivery is a frame waiting for its group's commit.
type delivery struct {
	to     *conn // nil: every connection joined by then except `except`
	except *conn
	joins  uint64 // for a broadcast: the joins decided before it
	msg    *encoded
	// reply is set for replies, so a failed commit can turn them into
	// refusals.
	reply *wire.Reply
	// early marks an accepted draft edit's changes, which may leave
	// before the group's commit.
	early bool
}

type pendingJoin struct {
	c       *conn
	have    map[string][]string
	deflate bool
}

// joinCursor is a join in progress: the decisions of the welcome, in its
// order, of which the first next were sent. rest holds those not sent yet.
type joinCursor struct {
	have    map[string][]string
	deflate bool // the hello asked for compressed documents
	ids     []string
	next    int
	rest    map[string]struct{}
}

// Join pacing: at most joinWindow join frames (or about joinWindowBytes)
// wait in a conn's outbox; the write pump asks for more when a quarter
// is left. The window keeps the socket busy while bounding what one
// joiner holds in memory, whatever the size of the document.
const (
	joinWindow      = 32
	joinWindowBytes = 1 << 20
)

func newDocument(s *Server, id string) *document {
	return &document{s: s, id: id, inbox: make(chan op, inboxSize), quit: make(chan struct{}), wake: make(chan struct{}, 1), commitDone: make(chan error, 1),
		conns: map[*conn]uint64{}, joining: map[*conn]*joinCursor{}, sessions: map[*conn]map[string]*crdt.Session{}}
}

// inboxSize is how many ops wait for a document before their senders
// block: twice the default group, and about 56 KiB per open document.
const inboxSize = 1024

// wakeJoins asks the document goroutine to queue more join frames. It
// never blocks.
func (d *document) wakeJoins() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// submit hands an op to the document goroutine; false if the conn or the
// document is gone.
func (d *document) submit(o op) bool {
	select {
	case d.inbox <- o:
		return true
	case <-o.c.done:
		return false
	case <-d.quit:
		return false
	}
}

func (d *document) leave(c *conn) {
	select {
	case d.inbox <- op{c: c, leave: true}:
	case <-d.quit:
	}
}

func (d *document) stop() { d.qonce.Do(func() { close(d.quit) }) }

func (d *document) run() {
	ctx := context.Background()
	d.pipe = &pipeStore{Store: d.s.opts.Store}
	d.auth, d.loadErr = question.NewAuthority(ctx, question.Options{
		Store: d.pipe, Doc: d.id, Now: d.s.opts.Now, NewID: d.s.opts.NewID, Logger: d.s.opts.Logger,
		Durable: func(settle func(bool)) { d.afterFlush = append(d.afterFlush, settle) },
		ImplementationActive: func(id string) bool {
			return d.s.opts.ImplementationActive != nil && d.s.opts.ImplementationActive(d.id, id)
		},
	})
	if d.loadErr != nil {
		d.s.opts.Logger.Error("cannot load document", "doc", d.id, "err", d.loadErr)
	}
	idle := time.NewTimer(d.s.opts.IdleUnload)
	defer idle.Stop()
	for {
		var inbox chan op
		if d.accepting() {
			inbox = d.inbox
		}
		select {
		case o := <-inbox:
			d.handle(ctx, o)
			n := 1 + d.drain(ctx, d.s.opts.MaxGroup-1)
			d.seal(n)
			d.commitNext()
		case err := <-d.commitDone:
			d.finishCommit(ctx, err)
			d.commitNext()
		case <-d.wake:
		case <-idle.C:
			if d.quiet() && len(d.conns) == 0 && d.s.tryUnload(d) {
				return
			}
			idle.Reset(d.s.opts.IdleUnload)
			continue
		case <-d.quit:
			if d.committing != nil {
				d.finishCommit(ctx, <-d.commitDone)
			}
			d.seal(d.drain(ctx, -1))
			for d.commitNext(); d.committing != nil; d.commitNext() {
				d.finishCommit(ctx, <-d.commitDone)
			}
			return
		}
		if d.quiet() {
			d.pumpJoins()
			if len(d.conns) == 0 {
				idle.Reset(d.s.opts.IdleUnload)
			}
		}
	}
}

// accepting reports whether the goroutine takes more ops now. While a
// commit runs it goes on deciding the next group (whose frames wait for
// that commit, except early draft edits), up to one group ahead; but
// not while a hello waits or a join is in progress, since welcomes and
// join frames show only committed state and are built when nothing is
// pending.
func (d *document) accepting() bool {
	if d.committing == nil {
		return true
	}
	if len(d.hellos) > 0 || len(d.joining) > 0 {
		return false
	}
	ops := 0
	for _, st := range d.pending {
		ops += st.ops
	}
	return ops < d.s.opts.MaxGroup
}

// quiet reports whether the authority holds exactly what is committed:
// no commit runs and no decided group waits for one.
func (d *document) quiet() bool { return d.committing == nil && len(d.pending) == 0 }

// drain handles up to max more ops already waiting (max < 0: all of them),
// so that they join the current group, and returns how many it handled.
func (d *document) drain(ctx context.Context, max int) int {
	n := 0
	for ; max < 0 || n < max; n++ {
		select {
		case o := <-d.inbox:
			d.handle(ctx, o)
		default:
			return n
		}
	}
	return n
}

// A stage is one group of ops decided together: its held frames, the
// steps waiting for its Writes to be durable, and, once its commit
// starts, what each connection is sent of it, in order (accepted draft
// edits possibly sent already: see commitNext).
type stage struct {
	held  []delivery
	plan  groupPlan
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
		d.announce(st)
		return
	}
	d.pending = append(d.pending, st)
}

// commitNext starts committing the pending groups, unless a commit runs
// already: their Writes in one durable transaction, their frames as one
// group's (planGroup coalesces each decision's changes across them). The
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
	w := d.pipe.take()
	if w.Empty() {
		// Groups that only waited for the commit before them.
		d.announce(g)
		return
	}
	g.plan = d.planGroup(g.held)
	g.early = d.sendEarly(g.plan)
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
		d.failStages(ctx, failed)
		return
	}
	d.s.stats.commits.Add(1)
	if d.s.opts.Committed != nil {
		d.s.opts.Committed(d.id, decisionsOf(w))
	}
	d.announce(g)
}

// announce runs a durable group's waiting steps, then sends what its
// connections have not been sent yet, in order.
func (d *document) announce(g *stage) {
	for _, f := range g.after {
		f(true)
	}
	if g.plan == nil {
		g.plan = d.planGroup(g.held)
	}
	d.sendPlan(g.plan)
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
// their heads.
func (d *document) failStages(ctx context.Context, stages []*stage) {
	if err := d.auth.Reload(ctx); err != nil {
		d.s.opts.Logger.Error("reload failed", "doc", d.id, "err", err)
	}
	d.sessions = map[*conn]map[string]*crdt.Session{}
	var kept []delivery
	for _, st := range stages {
		for _, f := range st.after {
			f(false)
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
			kept = append(kept, delivery{to: h.to, msg: &encoded{msg: r}})
		}
	}
	d.sendPlan(d.planGroup(kept))
	// Closed after their refusals are queued: a conn flushes its queue
	// before it says goodbye.
	for _, st := range stages {
		for c := range st.early {
			c.close()
		}
	}
}

// groupPlan is what each connection is sent of a group, in order.
type groupPlan map[*conn][]planItem

// planItem is one frame of a plan: a delivery, or the changes deliveries
// of one decision coalesced.
type planItem struct {
	h     *delivery   // when parts is empty
	parts []*delivery // coalesced changes, in order
	sent  bool
}

// planGroup orders a group's frames per connection. Each connection gets
// them in the order they were decided, except that the accepted changes
// of one decision are coalesced into one question:changes frame, at the
// place of the first, as long as no other frame about that decision goes
// to that connection in between: a replica applies them in one call, and
// nothing about the decision (a reply, an event, its document) changes
// its place relative to them. A frame about no decision in particular
// ends every run.
func (d *document) planGroup(held []delivery) groupPlan {
	plan := groupPlan{}
	open := map[*conn]map[string]int{} // a conn's runs: decision → item index
	add := func(c *conn, h *delivery) {
		if ch, ok := h.msg.msg.(*wire.Changes); ok {
			if k, ok := open[c][ch.ID]; ok {
				plan[c][k].parts = append(plan[c][k].parts, h)
				return
			}
			if open[c] == nil {
				open[c] = map[string]int{}
			}
			open[c][ch.ID] = len(plan[c])
			plan[c] = append(plan[c], planItem{parts: []*delivery{h}})
			return
		}
		ids, all := decisionsIn(h.msg.msg)
		if all {
			clear(open[c])
		}
		for _, id := range ids {
			delete(open[c], id)
		}
		plan[c] = append(plan[c], planItem{h: h})
	}
	for i := range held {
		h := &held[i]
		if h.to != nil {
			add(h.to, h)
			continue
		}
		ch, _ := h.msg.msg.(*wire.Changes)
		for c, joined := range d.conns {
			if c == h.except || joined > h.joins {
				continue
			}
			if ch != nil && d.joining[c].pending(ch.ID) {
				// The join frame of this decision, built later from the
				// accepted state, carries these changes; sent now they would
				// reach a replica that has not loaded the decision.
				continue
			}
			add(c, h)
		}
	}
	return plan
}

// sendEarly sends, before the group's commit, each connection's runs of
// accepted draft edits that no unsent frame about the same decision
// precedes in its plan, and returns the connections it sent to. A reply,
// an event or an authority's change of the decision ahead of them keeps
// them for after the commit, so the order of a decision's frames never
// changes; frames about other decisions do not hold them.
func (d *document) sendEarly(plan groupPlan) map[*conn]bool {
	var early map[*conn]bool
	for c, items := range plan {
		for k, ok := range earlyItems(items) {
			if !ok {
				continue
			}
			d.sendTo(c, d.encodedItem(&items[k]))
			items[k].sent = true
			if early == nil {
				early = map[*conn]bool{}
			}
			early[c] = true
		}
	}
	return early
}

// message is the frame an item is about (the first, when coalesced).
func (it *planItem) message() wire.Message {
	if it.h != nil {
		return it.h.msg.msg
	}
	return it.parts[0].msg.msg
}

// earlyItems reports which items of one connection's plan may leave
// before the commit: runs of draft edits' changes of a decision that no
// other item about that decision precedes.
func earlyItems(items []planItem) []bool {
	ok := make([]bool, len(items))
	blocked := map[string]bool{}
	all := false
	for k, it := range items {
		if len(it.parts) > 0 && !all && !blocked[it.parts[0].msg.msg.(*wire.Changes).ID] && allEarly(it.parts) {
			ok[k] = true
			continue
		}
		ids, any := decisionsIn(it.message())
		all = all || any
		for _, id := range ids {
			blocked[id] = true
		}
	}
	return ok
}

func allEarly(parts []*delivery) bool {
	for _, h := range parts {
		if !h.early {
			return false
		}
	}
	return true
}

// sendPlan sends what sendEarly did not. Frames and coalesced frames are
// encoded once per format and shared by the connections that get the
// same ones.
func (d *document) sendPlan(plan groupPlan) {
	for c, items := range plan {
		for k := range items {
			if it := &items[k]; !it.sent {
				d.sendTo(c, d.encodedItem(it))
			}
		}
	}
	d.coalesced = nil
}

// encodedItem returns the frame of a plan item; a coalesced one is built
// once for every connection whose item has the same parts.
func (d *document) encodedItem(it *planItem) *encoded {
	switch len(it.parts) {
	case 0:
		return it.h.msg
	case 1:
		return it.parts[0].msg
	}
	if d.coalesced == nil {
		d.coalesced = map[string]*encoded{}
	}
	key := partsKey(it.parts)
	e := d.coalesced[key]
	if e == nil {
		e = &encoded{msg: coalesce(it.parts)}
		d.coalesced[key] = e
	}
	return e
}

func partsKey(parts []*delivery) string {
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&b, "%p,", p)
	}
	return b.String()
}

// coalesce makes one question:changes frame of several of one decision.
func coalesce(parts []*delivery) *wire.Changes {
	first := parts[0].msg.msg.(*wire.Changes)
	out := &wire.Changes{Header: first.Header, ID: first.ID}
	for _, h := range parts {
		ch := h.msg.msg.(*wire.Changes)
		out.Changes = append(out.Changes, ch.Changes...)
		out.Heads, out.By = ch.Heads, ch.By
		if ch.By != "" && !slices.Contains(out.ByAll, ch.By) {
			out.ByAll = append(out.ByAll, ch.By)
		}
	}
	return out
}

// decisionsIn lists the decisions a frame is about; all reports a frame
// about no decision in particular, which ends every run of changes.
func decisionsIn(m wire.Message) (ids []string, all bool) {
	switch m := m.(type) {
	case *wire.Reply:
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
		for _, r := range m.Records {
			ids = append(ids, r.ID)
		}
		for _, r := range m.Results {
			ids = append(ids, r.ID)
		}
		return ids, len(ids) == 0
	case *wire.Event:
		return []string{m.ID}, false
	case *wire.Doc:
		return []string{m.ID}, false
	case *wire.Changes:
		return []string{m.ID}, false
	case *wire.Sync:
		return []string{m.ID}, false
	}
	return nil, true
}

func (j *joinCursor) pending(id string) bool {
	if j == nil {
		return false
	}
	_, ok := j.rest[id]
	return ok
}

func (d *document) sendTo(c *conn, e *encoded) {
	f, err := e.frame(c.format)
	if err != nil {
		d.s.opts.Logger.Error("encode", "kind", e.msg.FrameKind(), "err", err)
		return
	}
	c.send(f)
}

func (d *document) hold(h delivery) { d.held = append(d.held, h) }

func (d *document) replyTo(c *conn, r *wire.Reply) {
	if !r.OK {
		d.s.refused(string(r.Reason))
	}
	d.hold(delivery{to: c, msg: &encoded{msg: r}, reply: r})
}

func (d *document) broadcast(except *conn, m wire.Message) {
	d.hold(delivery{except: except, msg: &encoded{msg: m}, joins: d.joins})
}

// broadcastEdit announces an accepted draft edit's changes to every
// other connection; they may leave before the group's commit (commitNext).
func (d *document) broadcastEdit(except *conn, m *wire.Changes) {
	d.hold(delivery{except: except, msg: &encoded{msg: m}, joins: d.joins, early: true})
}

func (d *document) handle(ctx context.Context, o op) {
	if o.leave {
		delete(d.conns, o.c)
		delete(d.joining, o.c)
		for _, sess := range d.sessions[o.c] {
			d.auth.ReleaseSession(sess) // unpins the decision's document
		}
		delete(d.sessions, o.c)
		return
	}
	if o.do != nil {
		d.runDo(ctx, o)
		return
	}
	if o.rights != nil {
		o.rights.done <- d.changeRights(o.c, o.rights)
		return
	}
	if o.c.closed() {
		return // nobody hears its reply, and nothing was acknowledged
	}
	if d.loadErr != nil {
		o.c.replyError(o.c.format, "", "unavailable", "the document cannot be loaded")
		o.c.close()
		return
	}
	switch m := o.msg.(type) {
	case *wire.Hello:
		d.join(o.c, m)
		if fn := d.s.opts.Opened; fn != nil {
			fn(d.id, o.c.member.Login)
		}
	case *wire.Create:
		d.create(ctx, o.c, m)
	case *wire.Edit:
		d.edit(ctx, o.c, m)
	case *wire.Submit:
		d.submitAnswers(ctx, o.c, m)
	case *wire.Target:
		d.target(ctx, o.c, m)
	case *wire.Append:
		d.appendItem(ctx, o.c, m)
	case *wire.Why:
		d.why(ctx, o.c, m)
	case *wire.Sync:
		d.sync(ctx, o.c, m)
	case *wire.Explore:
		d.explore(ctx, o.c, m)
	case *wire.ExploreStop:
		d.exploreStop(ctx, o.c, m)
	case *wire.Take:
		d.take(ctx, o.c, m)
	default:
		o.c.replyError(o.c.format, headerOf(o.msg).RID, "invalid", "a client cannot send "+string(o.msg.FrameKind()))
	}
}

func headerOf(m wire.Message) wire.Header {
	switch m := m.(type) {
	case *wire.Sync:
		return m.Header
	case *wire.Event:
		return m.Header
	}
	return wire.Header{Kind: m.FrameKind()}
}

func heads(h crdt.Heads) []string {
	out := make([]string, len(h))
	for i, x := range h {
		out[i] = x.String()
	}
	return out
}

func parseHeads(hs []string) (crdt.Heads, error) { return crdt.ParseHeads(strings.Join(hs, ",")) }

// join takes a hello; pumpJoins answers it once the group is committed.
func (d *document) join(c *conn, h *wire.Hello) {
	if c.helloSeen {
		c.replyError(c.format, "", "invalid", "hello was already sent")
		return
	}
	c.helloSeen = true
	d.hellos = append(d.hellos, pendingJoin{c: c, have: h.Have, deflate: h.Deflate})
}

// pumpJoins sends the welcomes of the hellos of the group just committed,
// then, to every conn still joining, join frames (each decision's
// document or the changes the member lacks, in the welcome's order) until
// its join window is full. It runs only between groups, when the
// authority holds exactly what is committed, so no join frame shows
// state that is not durable; the frames are built as they are sent, so
// each is as recent as it can be and the changes broadcast to the conn
// meanwhile (skipped by deliver) are part of it.
func (d *document) pumpJoins() {
	var recs []question.Record
	for _, j := range d.hellos {
		if j.c.closed() {
			continue
		}
		if recs == nil {
			recs = d.auth.Records()
		}
		d.joins++
		d.conns[j.c] = d.joins
		cur := &joinCursor{have: j.have, deflate: j.deflate, ids: make([]string, len(recs)), rest: make(map[string]struct{}, len(recs))}
		for i, r := range recs {
			cur.ids[i] = r.ID
			cur.rest[r.ID] = struct{}{}
		}
		d.joining[j.c] = cur
		j.c.joining.Store(true)
		m := j.c.login()
		if d.sendPaced(j.c, &encoded{msg: &wire.Welcome{
			Header: wire.Header{Kind: wire.KindWelcome}, V: wire.Version, Doc: d.id,
			Member: m.Login, Write: m.Write, Records: recs,
		}}) == 0 {
			// Its records exceed one frame's limits (logged by sendPaced).
			j.c.replyError(j.c.format, "", string(question.Unavailable), "the document's records do not fit in one welcome frame")
			j.c.close()
		}
	}
	d.hellos = nil
	for c, cur := range d.joining {
		for cur.next < len(cur.ids) && c.pacedRoom() > 0 {
			id := cur.ids[cur.next]
			cur.next++
			delete(cur.rest, id)
			e := d.catchUp(id, cur.have[id])
			if cur.deflate {
				e = d.catch[id].deflated(e)
			}
			if n := d.sendPaced(c, e); n > 0 {
				if _, ok := e.msg.(*wire.Doc); ok {
					d.s.metrics.catchUp("doc", n)
				} else {
					d.s.metrics.catchUp("changes", n)
				}
			}
		}
		if cur.next == len(cur.ids) {
			delete(d.joining, c)
			c.joining.Store(false)
		}
	}
}

// sendPaced queues a join frame and returns its size.
func (d *document) sendPaced(c *conn, e *encoded) int {
	f, err := e.frame(c.format)
	if err != nil {
		d.s.opts.Logger.Error("encode", "doc", d.id, "kind", e.msg.FrameKind(), "err", err)
		return 0
	}
	c.sendPaced(f)
	return len(f.data)
}

// catchUp returns the frame that brings a replica holding have up to the
// accepted document: the missing changes, or the whole document when that
// is smaller or the replica's heads are unknown here. Frames are cached
// per decision at its current heads (which name its content exactly), so
// reconnecting replicas holding the same heads, and every joiner that
// holds none, share one frame, derived and encoded once.
func (d *document) catchUp(id string, have []string) *encoded {
	_, cur, err := d.auth.Draft(id)
	if err != nil {
		return &encoded{msg: &wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: id}}
	}
	at := cur.String()
	e := d.catch[id]
	if e == nil || e.heads != at {
		saved, _ := d.auth.Save(id)
		e = &catchEntry{heads: at, doc: &encoded{msg: &wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: id, Doc: saved, Heads: heads(cur)}},
			size: len(saved)}
		if d.catch == nil {
			d.catch = map[string]*catchEntry{}
		}
		d.catch[id] = e
	}
	if have == nil {
		return e.doc
	}
	key := strings.Join(have, ",")
	if f, ok := e.byHave[key]; ok {
		return f
	}
	f := e.doc
	if h, err := parseHeads(have); err == nil {
		if h.Equal(cur) {
			f = &encoded{msg: &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: id, Heads: heads(cur)}}
		} else if ch, err := d.auth.ChangesSince(id, h); err == nil && len(ch) <= e.size {
			f = &encoded{msg: &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: id, Changes: ch, Heads: heads(cur)}}
		}
	}
	if len(e.byHave) >= maxCatchUps {
		clear(e.byHave) // a crowd of distinct heads: start over
	}
	if e.byHave == nil {
		e.byHave = map[string]*encoded{}
	}
	e.byHave[key] = f
	return f
}

// catchEntry caches a decision's catch-up frames at one set of heads.
type catchEntry struct {
	heads  string
	doc    *encoded // the whole accepted document
	size   int      // bytes of the saved document
	byHave map[string]*encoded
	docZ   *encoded // doc, compressed if that is smaller
}

// deflated returns the frame to send for f to a replica that asked for
// compressed documents: f itself unless it is the whole document and
// DEFLATE makes it smaller.
func (e *catchEntry) deflated(f *encoded) *encoded {
	if e == nil || f != e.doc {
		return f
	}
	if e.docZ == nil {
		m := e.doc.msg.(*wire.Doc)
		e.docZ = e.doc
		if z := wire.DeflateDoc(m.Doc); len(z) < len(m.Doc) {
			e.docZ = &encoded{msg: &wire.Doc{Header: m.Header, ID: m.ID, Doc: z, Heads: m.Heads, Deflated: true}}
		}
	}
	return e.docZ
}

// maxCatchUps bounds the frames cached per decision for distinct heads a
// replica may hold.
const maxCatchUps = 8

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
		d.hold(delivery{msg: d.catchUp(rec.ID, nil), joins: d.joins})
	}
}

func (d *document) edit(ctx context.Context, c *conn, m *wire.Edit) {
	res, err := d.auth.Edit(ctx, c.member, m.ID, m.Changes)
	if err != nil {
		d.replyTo(c, d.refusal(m.Header, m.ID, err))
		return
	}
	if res.Rebased {
		// The history was replaced: every member, the editor too, gets
		// the whole rebased document (before the reply, so the editor's
		// replica holds the heads the reply names), after the commit.
		d.broadcastDoc(m.ID)
		d.replyTo(c, &wire.Reply{Header: m.Header, ID: m.ID, OK: true, Heads: heads(res.Heads)})
		return
	}
	d.replyTo(c, &wire.Reply{Header: m.Header, ID: m.ID, OK: true, Heads: heads(res.Heads)})
	if len(res.Changes) > 0 {
		d.broadcastEdit(c, &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: m.ID, Changes: res.Changes, Heads: heads(res.Heads), By: c.member.Login})
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
		res := wire.SubmitResult{ID: s.ID, OK: s.Err == nil}
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
		if res.OK {
			d.broadcast(nil, &wire.Event{Header: wire.Header{Kind: wire.KindResolved}, ID: res.ID, Record: res.Record, Answer: res.Record.Answer, By: c.member.Login})
		}
	}
}

func (d *document) target(ctx context.Context, c *conn, m *wire.Target) {
	var before crdt.Heads
	if _, h, err := d.auth.Draft(m.ID); err == nil {
		before = h
	}
	var rec question.Record
	var err error
	var event wire.Kind
	switch m.Kind {
	case wire.KindReopen:
		rec, err = d.auth.Reopen(ctx, c.member, m.ID)
		event = wire.KindReopened
	case wire.KindDiscard:
		rec, err = d.auth.Discard(ctx, c.member, m.ID)
		event = wire.KindDiscarded
	case wire.KindExpand, wire.KindPage:
		rec, err = d.auth.Expand(ctx, c.member, m.ID, func(ctx context.Context, channel string) error {
			if d.s.opts.EnsureChannel == nil {
				return nil
			}
			return d.s.opts.EnsureChannel(ctx, d.id, channel)
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
	// its next edit builds on them.
	d.broadcast(nil, &wire.Event{Header: wire.Header{Kind: event}, ID: m.ID, Record: &rec, By: c.member.Login})
	d.broadcastChanges(m.ID, before, c.member.Login)
	d.replyTo(c, &wire.Reply{Header: m.Header, ID: m.ID, OK: true, Record: &rec, Heads: d.headsOf(m.ID)})
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
	rec, err := d.auth.SetWhy(ctx, c.member, m.ID, m.Text)
	if err != nil {
		d.replyTo(c, d.refusal(m.Header, m.ID, err))
		return
	}
	d.broadcast(nil, &wire.Event{Header: wire.Header{Kind: wire.KindMeta}, ID: m.ID, Record: &rec, By: c.member.Login})
	d.replyTo(c, &wire.Reply{Header: m.Header, ID: m.ID, OK: true, Record: &rec})
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
			d.broadcastEdit(c, &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: m.ID, Changes: res.Changes, Heads: heads(res.Heads), By: c.member.Login})
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
		d.hold(delivery{to: c, msg: &encoded{msg: &wire.Sync{Header: wire.Header{Kind: wire.KindSync}, ID: m.ID, Msg: out}}})
	}
}

// runDo runs a host's function on the authority and announces what it
// changed, as the commands of connections are announced: new decisions
// with their documents, changed records as question:meta, and the
// authority's own draft changes. The caller hears the result once the
// group is durable.
func (d *document) runDo(ctx context.Context, o op) {
	if d.loadErr != nil {
		o.done <- d.loadErr
		return
	}
	before := map[string]question.Record{}
	heads := map[string]crdt.Heads{}
	for _, r := range d.auth.Records() {
		before[r.ID] = r
		_, h, _ := d.auth.Draft(r.ID)
		heads[r.ID] = h
	}
	err := o.do(d.auth)
	for _, r := range d.auth.Records() {
		r := r
		old, existed := before[r.ID]
		switch {
		case !existed:
			d.broadcast(nil, &wire.Event{Header: wire.Header{Kind: wire.KindCreated}, ID: r.ID, Record: &r, By: r.CreatedBy})
			d.hold(delivery{msg: d.catchUp(r.ID, nil), joins: d.joins})
		case !sameRecord(old, r):
			d.broadcast(nil, &wire.Event{Header: wire.Header{Kind: wire.KindMeta}, ID: r.ID, Record: &r})
			d.broadcastChanges(r.ID, heads[r.ID], "")
		}
	}
	d.afterFlush = append(d.afterFlush, func(durable bool) {
		if err == nil && !durable {
			err = &question.Refusal{Reason: question.Unavailable, Message: "the change could not be saved"}
		}
		o.done <- err
	})
}

func sameRecord(a, b question.Record) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
