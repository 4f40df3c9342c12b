package server

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
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
// deciding of the next. While several connections edit together, a group
// of draft edits gathers for a moment before its commit (gather.go). If a
// commit fails, every reply of its group and of the groups decided since
// becomes an "unavailable" refusal, their broadcasts are dropped, and the
// authority reloads from the store: nothing is acknowledged or announced
// before it is durable.
type document struct {
	s     *Server
	id    string
	inbox chan op
	quit  chan struct{}
	qonce sync.Once
	// ended closes once the goroutine has returned and the document is
	// forgotten (Server.forget).
	ended chan struct{}
	// wake asks the goroutine to queue more join frames: a joining conn's
	// write pump drained what was queued (conn.pop).
	wake chan struct{}

	refs    int  // attached connections; guarded by s.mu
	stopped bool // removed from s.docs; guarded by s.mu
	// live is how many of its decisions have a live automerge document
	// (Stats.LiveDecisions), as the goroutine last saw.
	live atomic.Int32

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
	held    []outgoing
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
	// presence relays the connections' presence, apart from the goroutine.
	presence *presenceHub
	// sessions holds each connection's automerge sync sessions, by
	// decision; they point into the authority's documents (pinning them
	// until the connection leaves), so a reload drops them all.
	sessions map[*conn]map[string]*crdt.Session
	// gather is the group forming for the next commit, and recent each
	// connection's last accepted edit (see gather.go).
	gather gathering
	recent map[*conn]time.Time
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

func newDocument(s *Server, id string) *document {
	return &document{s: s, id: id, inbox: make(chan op, inboxSize), quit: make(chan struct{}), ended: make(chan struct{}), wake: make(chan struct{}, 1), commitDone: make(chan error, 1),
		conns: map[*conn]uint64{}, joining: map[*conn]*joinCursor{}, sessions: map[*conn]map[string]*crdt.Session{}, recent: map[*conn]time.Time{},
		gather:   gathering{editors: map[*conn]bool{}},
		presence: newPresenceHub(&s.opts)}
}

// inboxSize is how many ops wait for a document before their senders
// block (7 KiB per open document). A group still takes up to MaxGroup
// ops: each one the goroutine takes lets a blocked sender's in. A read
// pump that blocks stops reading its socket, as a throttled one does.
const inboxSize = 128

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
		QuietRebase: d.s.opts.QuietRebase > 0,
		Durable:     func(settle func(bool)) { d.afterFlush = append(d.afterFlush, settle) },
		ImplementationActive: func(id string) bool {
			return d.s.opts.Host.ImplementationActive(d.id, id)
		},
	})
	if d.loadErr != nil {
		d.s.opts.Logger.Error("cannot load document", "doc", d.id, "err", d.loadErr)
	} else if len(d.auth.Records()) > 0 {
		d.s.reclaimSoon() // the load checked every decision's document and parked it
	}
	idle := time.NewTimer(d.s.opts.IdleUnload)
	defer idle.Stop()
	// quiet fires once the document has had no command for QuietRebase.
	quiet := time.NewTimer(d.s.opts.QuietRebase)
	defer quiet.Stop()
	if d.s.opts.QuietRebase < 0 {
		quiet.Stop()
	}
	// park fires every ParkIdle, to park the decisions unused since.
	park := time.NewTimer(d.s.opts.ParkIdle)
	defer park.Stop()
	if d.s.opts.ParkIdle < 0 {
		park.Stop()
	}
	defer d.endGather()
	for {
		if d.loadErr == nil {
			live, _ := d.auth.Live()
			d.live.Store(int32(live))
		}
		var inbox chan op
		if d.accepting() {
			inbox = d.inbox
		}
		select {
		case o := <-inbox:
			d.handle(ctx, o)
			n := 1 + d.drain(ctx, d.s.opts.MaxGroup-1)
			d.seal(n)
			d.commitGathered()
			if d.s.opts.QuietRebase > 0 {
				quiet.Reset(d.s.opts.QuietRebase)
			}
		case <-park.C:
			if d.quiet() {
				d.park()
			} // else a commit runs: they are parked next time
			park.Reset(d.s.opts.ParkIdle)
		case <-quiet.C:
			if !d.quiet() {
				// A commit still runs: wait for another quiet spell.
				quiet.Reset(d.s.opts.QuietRebase)
				continue
			}
			if d.rebaseDue(ctx) {
				d.seal(1)
				d.commitNext()
			}
		case err := <-d.commitDone:
			d.finishCommit(ctx, err)
			d.commitGathered()
		case <-d.gatherFired():
			d.commitGathered()
		case <-d.wake:
		case <-idle.C:
			if d.quiet() && len(d.conns) == 0 && d.s.tryUnload(d) {
				d.s.reclaimSoon()
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

// rebaseDue rebases the decisions whose history outgrew their values
// while they were being edited (question.Options.QuietRebase), and sends
// every connection the rebased document once the rebase is durable. It
// reports whether it rebased any.
func (d *document) rebaseDue(ctx context.Context) bool {
	if d.loadErr != nil {
		return false
	}
	done := false
	for _, id := range d.auth.RebaseDue() {
		rebased, err := d.auth.Rebase(ctx, id)
		if err != nil {
			d.s.opts.Logger.Warn("cannot rebase a decision", "doc", d.id, "decision", id, "err", err)
			continue
		}
		if rebased {
			d.broadcastDoc(id)
			done = true
		}
	}
	return done
}

// park parks the documents of the decisions unused since the last park
// that nothing holds live (sync sessions pin theirs), has their memory
// reclaimed, and drops the catch-up frames cached at heads a decision has
// moved on from: the next joiner would not be sent them.
func (d *document) park() {
	if d.loadErr != nil {
		return
	}
	if live, _ := d.auth.Live(); d.auth.ParkUnused() < live {
		d.s.reclaimSoon()
	}
	for id, e := range d.catch {
		if _, cur, err := d.auth.Draft(id); err != nil || cur.String() != e.heads {
			delete(d.catch, id)
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
	return d.pendingOps() < d.s.opts.MaxGroup
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

func (d *document) handle(ctx context.Context, o op) {
	if o.leave {
		delete(d.conns, o.c)
		delete(d.joining, o.c)
		for _, sess := range d.sessions[o.c] {
			d.auth.ReleaseSession(sess) // unpins the decision's document
		}
		delete(d.sessions, o.c)
		delete(d.recent, o.c)
		return
	}
	if _, edit := o.msg.(*wire.Edit); !edit {
		d.gather.other = true
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
		d.s.opts.Host.Opened(d.id, o.c.member.Login)
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
			d.hold(outgoing{msg: d.catchUp(r.ID, nil), joins: d.joins})
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
