package server_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// holdDocument blocks plan-1's goroutine until the returned release is
// called, so that the frames sent meanwhile are decided in one group.
func holdDocument(t *testing.T, ts *testServer) (release func()) {
	t.Helper()
	entered, gate := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- ts.srv.Do(context.Background(), "plan-1", func(*question.Authority) error {
			close(entered)
			<-gate
			return nil
		})
	}()
	<-entered
	return func() {
		close(gate)
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// queueEdits sends n edits of one decision without waiting for replies,
// each a new mark over the last; it returns their rids.
func (p *peer) queueEdits(id string, n int, tag string) []string {
	p.t.Helper()
	vals := []marks.Mark{marks.Yes, marks.No}
	var rids []string
	for i := range n {
		d := p.docs[id]
		before := d.Heads()
		cell := []string{"email", "sms"}[i%2]
		if err := d.SetMark("q1", cell, "cheap", vals[i/2%2]); err != nil {
			p.t.Fatal(err)
		}
		ch, err := d.ChangesSince(before)
		if err != nil {
			p.t.Fatal(err)
		}
		rid := tag + strconv.Itoa(i)
		p.send(&wire.Edit{Header: wire.Header{Kind: wire.KindEdit, RID: rid}, ID: id, Changes: ch})
		rids = append(rids, rid)
	}
	return rids
}

// TestEditsOfOneGroupTravelAsOneFrame: edits of two members to one
// decision, decided in one commit group, reach each other member as one
// question:changes frame holding all of them, which applies in one call
// and ends at the server's heads, with by the last author and byAll every
// author; each editor gets only the other's changes, after its own
// replies. A frame about the decision between edits (an append's event)
// splits the run, so nothing changes place relative to it.
func TestEditsOfOneGroupTravelAsOneFrame(t *testing.T) {
	ts := startServer(t, "")
	ana := dial(t, ts, "ana", wire.Binary)
	cy := dial(t, ts, "cy", wire.Binary)
	ben := dial(t, ts, "ben", wire.Text)
	rec := ana.create("k1")
	cy.expect(wire.KindDoc)
	ben.expect(wire.KindDoc)
	id := rec.ID

	release := holdDocument(t, ts)
	anaRIDs := ana.queueEdits(id, 5, "a")
	sentAll(t, ts, ana)
	cyRIDs := cy.queueEdits(id, 3, "c")
	sentAll(t, ts, cy)
	commits := ts.srv.Stats().Commits
	release()

	// Each editor gets its replies and the other's edits as one frame,
	// in the order decided: ana's replies, then cy's changes; for cy,
	// ana's changes, then its replies.
	collect := func(p *peer, rids []string) (order []string, other []*wire.Changes, last []string) {
		t.Helper()
		for len(rids) > 0 || len(other) == 0 {
			switch m := p.next().(type) {
			case *wire.Reply:
				if len(rids) == 0 || m.RID != rids[0] || !m.OK {
					t.Fatalf("reply %+v, want %v", m, rids)
				}
				rids, last = rids[1:], m.Heads
				order = append(order, "reply")
			case *wire.Changes:
				other = append(other, m)
				order = append(order, "changes")
			case *wire.Error:
			default:
				t.Fatalf("unexpected %s", m.FrameKind())
			}
		}
		return order, other, last
	}
	anaOrder, anaGot, _ := collect(ana, anaRIDs)
	cyOrder, cyGot, serverHeads := collect(cy, cyRIDs)
	if ts.srv.Stats().Commits != commits+1 {
		t.Fatalf("the edits took %d commits", ts.srv.Stats().Commits-commits)
	}
	if want := []string{"reply", "reply", "reply", "reply", "reply", "changes"}; !slices.Equal(anaOrder, want) {
		t.Fatalf("ana got %v", anaOrder)
	}
	if want := []string{"changes", "reply", "reply", "reply"}; !slices.Equal(cyOrder, want) {
		t.Fatalf("cy got %v", cyOrder)
	}
	if anaGot[0].By != "cy" || !slices.Equal(anaGot[0].ByAll, []string{"cy"}) {
		t.Fatalf("ana's frame: %+v", anaGot[0])
	}
	if cyGot[0].By != "ana" || !slices.Equal(cyGot[0].ByAll, []string{"ana"}) {
		t.Fatalf("cy's frame: %+v", cyGot[0])
	}

	// ben: one frame with all eight changes.
	m := ben.expect(wire.KindChanges).(*wire.Changes)
	if m.By != "cy" || !slices.Equal(m.ByAll, []string{"ana", "cy"}) || !slices.Equal(m.Heads, serverHeads) {
		t.Fatalf("ben's frame: by %q byAll %v heads %v, want heads %v", m.By, m.ByAll, m.Heads, serverHeads)
	}
	if got := hexHeads(ben.docs[id].Heads()); !slices.Equal(got, serverHeads) {
		t.Fatalf("ben's replica at %v after the frame, want %v", got, serverHeads)
	}
	// The frame's changes apply in one call to the document as it was.
	var fresh crdt.Heads
	if err := ts.srv.Do(testCtx(t, 5*time.Second), "plan-1", func(a *question.Authority) (err error) {
		_, fresh, err = a.Draft(id)
		return err
	}); err != nil || !slices.Equal(hexHeads(fresh), serverHeads) {
		t.Fatalf("server heads %v (%v)", fresh, err)
	}
	for _, p := range []*peer{ana, cy} {
		if got := hexHeads(p.docs[id].Heads()); !slices.Equal(got, serverHeads) {
			t.Fatalf("%v: replica at %v, want %v", p, got, serverHeads)
		}
	}

	// An append between two runs of edits, in one group: ben gets the
	// first run, the append's event, then the append's own changes and
	// the second run together.
	release = holdDocument(t, ts)
	first := ana.queueEdits(id, 2, "x")
	app := &wire.Append{Header: wire.Header{Kind: wire.KindOption, RID: "opt"}, ID: id, Question: "q1", Key: "k-opt", Label: "Letter"}
	ana.send(app)
	sentAll(t, ts, ana)
	release()
	var kinds []wire.Kind
	for len(kinds) < 3 {
		switch m := ben.next().(type) {
		case *wire.Changes, *wire.Event:
			kinds = append(kinds, m.FrameKind())
		}
	}
	if !slices.Equal(kinds, []wire.Kind{wire.KindChanges, wire.KindOptionAdded, wire.KindChanges}) {
		t.Fatalf("ben got %v", kinds)
	}
	for _, rid := range append(first, "opt") {
		for {
			if r, ok := ana.next().(*wire.Reply); ok {
				if r.RID != rid || !r.OK {
					t.Fatalf("reply %+v, want %s", r, rid)
				}
				break
			}
		}
	}
}
