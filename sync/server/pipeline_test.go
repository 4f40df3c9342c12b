package server_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// gateStore holds each commit until the test lets it through, and fails
// the commits it is told to.
type gateStore struct {
	persist.Store
	mu      sync.Mutex
	gated   bool
	fail    int
	entered chan struct{} // a commit is waiting at the gate
	pass    chan struct{} // lets one commit through
}

func (g *gateStore) Commit(ctx context.Context, doc string, w *persist.Write) error {
	g.mu.Lock()
	gated, fail := g.gated, g.fail > 0
	if fail {
		g.fail--
	}
	g.mu.Unlock()
	if gated {
		g.entered <- struct{}{}
		<-g.pass
	}
	if fail {
		return errors.New("disk full")
	}
	return g.Store.Commit(ctx, doc, w)
}

func (g *gateStore) set(gated bool, fail int) {
	g.mu.Lock()
	g.gated, g.fail = gated, fail
	g.mu.Unlock()
}

// pending drains the frames a peer has received so far, without waiting.
func (p *peer) pending() []wire.Message {
	var out []wire.Message
	for {
		select {
		case m, ok := <-p.frames:
			if !ok {
				return out
			}
			out = append(out, m)
		default:
			return out
		}
	}
}

func (p *peer) sendEdit(id, rid string, change func(d *crdt.Doc) error) {
	p.t.Helper()
	d := p.docs[id]
	h := d.Heads()
	if err := change(d); err != nil {
		p.t.Fatal(err)
	}
	ch, err := d.ChangesSince(h)
	if err != nil {
		p.t.Fatal(err)
	}
	p.send(&wire.Edit{Header: wire.Header{Kind: wire.KindEdit, RID: rid}, ID: id, Changes: ch})
}

// TestDraftEditsFanOutBeforeTheCommit: while a group's commit is held at
// the store, the other members already have its accepted draft edits,
// and nothing else: not the editor's reply, not an append's event or
// changes, not an edit of the same decision decided after that event
// (which keeps its place), while an edit of another decision does go
// early. If the commit then fails, the editor is refused with a reset and
// the members who saw the edit are disconnected, to offer it again with
// their heads.
func TestDraftEditsFanOutBeforeTheCommit(t *testing.T) {
	g := &gateStore{entered: make(chan struct{}), pass: make(chan struct{})}
	ts := startWith(t, setup{tune: func(o *server.Options) {
		g.Store = o.Store
		o.Store = g
		o.Outbox = 64
	}})
	ana := dial(t, ts, "ana", wire.Binary)
	ben := dial(t, ts, "ben", wire.Text)
	x := ana.create("x").ID
	b := ana.create("b").ID
	ben.expect(wire.KindDoc)
	ben.expect(wire.KindDoc)
	ana.pending()

	g.set(true, 0)
	ana.sendEdit(x, "e1", func(d *crdt.Doc) error { return d.SetMark("q1", "email", "cheap", marks.Yes) })
	<-g.entered // the group's commit is waiting
	if m := ben.next(); m.FrameKind() != wire.KindChanges || m.(*wire.Changes).ID != x {
		t.Fatalf("ben got %s before the commit, want x's changes", m.FrameKind())
	}
	if got := ana.pending(); len(got) != 0 {
		t.Fatalf("ana got %s before her edit was durable", got[0].FrameKind())
	}

	// Queue a second group while the first waits: an append to x, an
	// edit of x after it, an edit of b.
	want := ts.srv.Stats().FramesIn + 4
	ana.send(&wire.Append{Header: wire.Header{Kind: wire.KindOption, RID: "o1"}, ID: x, Question: "q1", Key: "k1", Label: "Letter"})
	ana.sendEdit(x, "e2", func(d *crdt.Doc) error { return d.SetMark("q1", "sms", "cheap", marks.No) })
	ana.sendEdit(b, "e3", func(d *crdt.Doc) error { return d.SetMark("q1", "sms", "cheap", marks.Partly) })
	// A frame that does not decode, read after the others were queued.
	if err := ana.ws.WriteMessage(websocket.BinaryMessage, []byte{0xc1}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the frames to be read", func() bool { return ts.srv.Stats().FramesIn >= want })
	g.pass <- struct{}{} // the first commit goes through
	if r := ana.expect(wire.KindEdit).(*wire.Reply); r.RID != "e1" || !r.OK {
		t.Fatalf("ana's first reply: %+v", r)
	}
	<-g.entered // the second group's commit is waiting
	if m := ben.next(); m.FrameKind() != wire.KindChanges || m.(*wire.Changes).ID != b {
		t.Fatalf("ben got %s before the second commit, want b's changes", m.FrameKind())
	}
	if got := ben.pending(); len(got) != 0 {
		t.Fatalf("ben got %s before the second commit", got[0].FrameKind())
	}
	if got := ana.pending(); len(got) != 0 {
		t.Fatalf("ana got %s before the second commit", got[0].FrameKind())
	}
	g.set(false, 0)
	g.pass <- struct{}{}
	if ev := ben.next(); ev.FrameKind() != wire.KindOptionAdded {
		t.Fatalf("ben got %s after the commit, want the option", ev.FrameKind())
	}
	if ch := ben.next().(*wire.Changes); ch.ID != x || len(ch.ByAll) != 1 {
		t.Fatalf("ben's x changes after the commit: %+v", ch)
	}
	for _, rid := range []string{"o1", "e2", "e3"} {
		for {
			if r, ok := ana.next().(*wire.Reply); ok {
				if r.RID != rid || !r.OK {
					t.Fatalf("ana's reply %+v, want %s", r, rid)
				}
				break
			}
		}
	}

	// A failed commit: ben saw the edit, so he is disconnected.
	g.set(false, 1)
	ana.sendEdit(x, "e4", func(d *crdt.Doc) error { return d.SetMark("q1", "email", "cheap", marks.No) })
	if r := ana.expect(wire.KindEdit).(*wire.Reply); r.RID != "e4" || r.OK || r.Reason != question.Unavailable || !r.Reset {
		t.Fatalf("ana's reply to the failed commit: %+v", r)
	}
	if !closedSoon(ben) {
		t.Fatal("ben, who saw changes the store lacks, stayed connected")
	}
}

// TestNextGroupIsDecidedWhileACommitRuns: while one group's commit is
// held at the store, the document goes on deciding ops (a host's Do runs
// meanwhile), but the group decided then, a second member's edit of the
// same decision, is announced to nobody, not even its early changes,
// until that commit ends; then it is committed next, its changes leaving
// early as the second commit starts. A failed commit refuses the group
// decided on top of it too: both editors are refused with a reset, the
// watcher who saw their changes is disconnected, and the store holds
// neither.
func TestNextGroupIsDecidedWhileACommitRuns(t *testing.T) {
	for _, failFirst := range []bool{false, true} {
		t.Run(map[bool]string{false: "second commit fails", true: "first commit fails"}[failFirst], func(t *testing.T) {
			g := &gateStore{entered: make(chan struct{}), pass: make(chan struct{})}
			ts := startWith(t, setup{tune: func(o *server.Options) {
				g.Store = o.Store
				o.Store = g
			}})
			ana := dial(t, ts, "ana", wire.Binary)
			ben := dial(t, ts, "ben", wire.Text)
			cy := dial(t, ts, "cy", wire.Binary)
			x := ana.create("x").ID
			ben.expect(wire.KindDoc)
			cy.expect(wire.KindDoc)

			g.set(true, map[bool]int{true: 1}[failFirst])
			ana.sendEdit(x, "e1", func(d *crdt.Doc) error { return d.SetMark("q1", "email", "cheap", marks.Yes) })
			<-g.entered
			if m := cy.next(); m.FrameKind() != wire.KindChanges || m.(*wire.Changes).By != "ana" {
				t.Fatalf("cy got %s, want ana's changes", m.FrameKind())
			}
			ben.sendEdit(x, "e2", func(d *crdt.Doc) error { return d.SetMark("q1", "sms", "cheap", marks.No) })
			// A host's function sees ben's edit decided while the first
			// commit still waits.
			decided := func() bool {
				seen := make(chan bool, 1)
				go ts.srv.Do(context.Background(), "plan-1", func(a *question.Authority) error {
					dr, _, err := a.Draft(x)
					seen <- err == nil && dr.Questions["q1"].Marks["sms/cheap"] == marks.No
					return nil
				})
				select {
				case ok := <-seen:
					return ok
				case <-time.After(5 * time.Second):
					t.Fatal("nothing was decided while the commit ran")
				}
				return false
			}
			testutil.Eventually(t, "ben's edit to be decided", decided)
			if got := cy.pending(); len(got) != 0 {
				t.Fatalf("cy got %s of a group decided while a commit ran", got[0].FrameKind())
			}
			for _, p := range []*peer{ana, ben} {
				for _, m := range p.pending() {
					if r, ok := m.(*wire.Reply); ok {
						t.Fatalf("reply %s before its commit", r.RID)
					}
				}
			}
			if failFirst {
				g.set(false, 1)
				g.pass <- struct{}{}
			} else {
				g.set(true, 1)
				g.pass <- struct{}{} // the first commit goes through
				if r := ana.expect(wire.KindEdit).(*wire.Reply); r.RID != "e1" || !r.OK {
					t.Fatalf("ana's reply: %+v", r)
				}
				<-g.entered // the second group's commit: ben's changes leave now
				if m := cy.next(); m.FrameKind() != wire.KindChanges || m.(*wire.Changes).By != "ben" {
					t.Fatalf("cy got %s as the second commit started, want ben's changes", m.FrameKind())
				}
				g.set(false, 1)
				g.pass <- struct{}{}
			}
			refused := []*peer{ben}
			if failFirst {
				refused = []*peer{ana, ben}
			}
			for _, p := range refused {
				r := p.expect(wire.KindEdit).(*wire.Reply)
				if r.OK || r.Reason != question.Unavailable || !r.Reset {
					t.Fatalf("reply %s after the failed commit: %+v", r.RID, r)
				}
			}
			if !closedSoon(cy) {
				t.Fatal("cy, who saw changes the store lacks, stayed connected")
			}
			// A connection that joins the document while it drains is
			// closed too, for its client to redial (as the replica does):
			// dee dials once the failed document has stopped.
			testutil.Eventually(t, "the failed document to stop", func() bool { return ts.srv.Stats().Documents == 0 })
			late := dial(t, ts, "dee", wire.Binary)
			late.expect(wire.KindDoc)
			draft, err := late.docs[x].State()
			if err != nil {
				t.Fatal(err)
			}
			got := draft.Drafts[draft.Generation].Questions["q1"].Marks
			want := map[string]marks.Mark{"email/cheap": marks.Yes}
			if failFirst {
				want = map[string]marks.Mark{}
			}
			if len(got) != len(want) || got["email/cheap"] != want["email/cheap"] {
				t.Fatalf("the store holds marks %v, want %v", got, want)
			}
		})
	}
}

// TestFailedCommitClosesTheDocument: a failed commit refuses its group
// and then closes every connection of the document with 1013, the editor's
// and a reader's too (not only those sent early changes), and unloads
// it: in a cluster the failure may be a fenced commit, and clients must
// redial to reach the document's owner. The next connection loads what
// the store holds.
func TestFailedCommitClosesTheDocument(t *testing.T) {
	g := &gateStore{entered: make(chan struct{}), pass: make(chan struct{})}
	ts := startWith(t, setup{tune: func(o *server.Options) {
		g.Store = o.Store
		o.Store = g
	}})
	ana := dial(t, ts, "ana", wire.Binary)
	x := ana.create("x").ID
	if r := ana.edit(x, func(d *crdt.Doc) error { return d.SetMark("q1", "email", "cheap", marks.Yes) }); !r.OK {
		t.Fatalf("edit: %+v", r)
	}
	ben := dial(t, ts, "ben", wire.Text)
	ben.expect(wire.KindDoc)

	g.set(false, 1)
	ana.sendEdit(x, "e2", func(d *crdt.Doc) error { return d.SetMark("q1", "sms", "cheap", marks.No) })
	if r := ana.expect(wire.KindEdit).(*wire.Reply); r.RID != "e2" || r.OK || r.Reason != question.Unavailable || !r.Reset {
		t.Fatalf("ana's reply to the failed commit: %+v", r)
	}
	for _, p := range []*peer{ana, ben} {
		if code := closedWith(t, p); code != server.CloseCommitFailed {
			t.Fatalf("closed with %d after a failed commit, want %d", code, server.CloseCommitFailed)
		}
	}
	testutil.Eventually(t, "the document to be unloaded", func() bool { return ts.srv.Stats().Documents == 0 })
	cy := dial(t, ts, "cy", wire.Binary)
	cy.expect(wire.KindDoc)
	st, err := cy.docs[x].State()
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Drafts[st.Generation].Questions["q1"].Marks; len(got) != 1 || got["email/cheap"] != marks.Yes {
		t.Fatalf("the reloaded document holds marks %v, want only the committed one", got)
	}
}
