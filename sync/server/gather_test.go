package server_test

import (
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// longWait is a GroupWait no test waits out: a reply that needs it misses
// the peers' five-second frame timeout.
const longWait = 10 * time.Second

func setMark(cell string, m marks.Mark) func(d *crdt.Doc) error {
	return func(d *crdt.Doc) error { return d.SetMark("q1", cell, "cheap", m) }
}

// sentAll waits until the server has read every frame p sent, and so
// queued them for the document, in order: a frame that fails to decode
// follows them and is counted last (p gets an error frame for it).
func sentAll(t *testing.T, ts *testServer, p *peer) {
	t.Helper()
	want := ts.srv.Stats().FramesIn + 1
	if err := p.ws.WriteMessage(websocket.BinaryMessage, []byte{0xc1}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the frames to be read", func() bool { return ts.srv.Stats().FramesIn >= want })
}

// awaitReply reads p's frames until the reply to rid, which must be OK.
func awaitReply(t *testing.T, p *peer, rid string) {
	t.Helper()
	if r := p.reply(rid); !r.OK {
		t.Fatalf("%s refused: %s %s", rid, r.Reason, r.Message)
	}
}

// twoEditors returns ana and cy on a fresh decision, both having edited
// it just now, so that both count as its recent editors. cy's first edit
// already waits for ana's second.
func twoEditors(t *testing.T, ts *testServer) (ana, cy *peer, id string) {
	t.Helper()
	ana = dial(t, ts, "ana", wire.Binary)
	cy = dial(t, ts, "cy", wire.Binary)
	id = ana.create("k1").ID
	cy.expect(wire.KindDoc)
	if r := ana.edit(id, setMark("email", marks.Yes)); !r.OK {
		t.Fatalf("ana's first edit: %+v", r)
	}
	cy.sendEdit(id, "c0", setMark("sms", marks.No))
	sentAll(t, ts, cy)
	ana.sendEdit(id, "a0", setMark("email", marks.Partly))
	awaitReply(t, cy, "c0")
	awaitReply(t, ana, "a0")
	return ana, cy, id
}

// TestGroupWaitsForTheOtherEditor: while two members edit a decision, an
// edit of one waits in its group for the other's, and both are committed
// together; the group ends as soon as both are in it, long before
// GroupWait. Committed at once, as before gathering, they would take two
// commits.
func TestGroupWaitsForTheOtherEditor(t *testing.T) {
	ts := startServerWith(t, "", server.Options{GroupWait: longWait})
	ana, cy, id := twoEditors(t, ts)

	commits := ts.srv.Stats().Commits
	ana.sendEdit(id, "a1", setMark("email", marks.No))
	sentAll(t, ts, ana)
	// Time enough to decide and commit a1 alone, were it not waiting.
	time.Sleep(100 * time.Millisecond)
	cy.sendEdit(id, "c1", setMark("sms", marks.Yes))
	awaitReply(t, ana, "a1")
	awaitReply(t, cy, "c1")
	if n := ts.srv.Stats().Commits - commits; n != 1 {
		t.Fatalf("the two edits took %d commits, want 1", n)
	}
	// Each has the other's edit.
	for _, p := range []*peer{ana, cy} {
		waitForPeer(t, p, id, func(d *crdt.Doc) bool {
			dr, err := d.Draft()
			m := dr.Questions["q1"].Marks
			return err == nil && m[marks.Key("email", "cheap")] == marks.No && m[marks.Key("sms", "cheap")] == marks.Yes
		})
	}
}

// TestLoneEditorDoesNotWait: a member editing alone (another member only
// watches) is answered at once, whatever GroupWait is.
func TestLoneEditorDoesNotWait(t *testing.T) {
	ts := startServerWith(t, "", server.Options{GroupWait: longWait})
	ana := dial(t, ts, "ana", wire.Binary)
	cy := dial(t, ts, "cy", wire.Binary)
	id := ana.create("k1").ID
	cy.expect(wire.KindDoc)
	for i, m := range []marks.Mark{marks.Yes, marks.No, marks.Partly} {
		if r := ana.edit(id, setMark("email", m)); !r.OK {
			t.Fatalf("edit %d: %+v", i, r)
		}
	}
}

// TestGroupWaitEnds: a gathering group is committed at once when
// something besides a draft edit joins it (a save), and no longer waits
// for an editor whose connection has closed or who has not edited for a
// second.
func TestGroupWaitEnds(t *testing.T) {
	t.Run("save", func(t *testing.T) {
		ts := startServerWith(t, "", server.Options{GroupWait: longWait})
		ana, _, id := twoEditors(t, ts)
		ana.sendEdit(id, "a1", setMark("email", marks.No))
		if r := ana.submit(id); !r.OK {
			t.Fatalf("save: %+v", r)
		}
	})
	t.Run("editor left", func(t *testing.T) {
		ts := startServerWith(t, "", server.Options{GroupWait: longWait})
		ana, cy, id := twoEditors(t, ts)
		cy.ws.Close()
		testutil.Eventually(t, "cy's connection to end", func() bool { return ts.srv.Stats().Connections == 1 })
		if r := ana.edit(id, setMark("email", marks.No)); !r.OK {
			t.Fatalf("edit: %+v", r)
		}
	})
	t.Run("editor paused", func(t *testing.T) {
		ts := startServerWith(t, "", server.Options{GroupWait: longWait})
		ana, _, id := twoEditors(t, ts)
		time.Sleep(1100 * time.Millisecond) // past recentEditor
		if r := ana.edit(id, setMark("email", marks.No)); !r.OK {
			t.Fatalf("edit: %+v", r)
		}
	})
}

// waitForPeer reads p's frames until its replica of id satisfies ok.
func waitForPeer(t *testing.T, p *peer, id string, ok func(d *crdt.Doc) bool) {
	t.Helper()
	for !ok(p.docs[id]) {
		p.next()
	}
}

// TestSparseEditsDoNotWait: two members editing at human rates, an edit
// every few hundred milliseconds between them, are never kept waiting for
// each other: no edit is expected within GroupWait, so each group is
// committed at once. The sleeps set the pace of the edits; a slow machine
// only spaces them further.
func TestSparseEditsDoNotWait(t *testing.T) {
	ts := startServerWith(t, "", server.Options{GroupWait: 40 * time.Millisecond})
	ana, cy, id := twoEditors(t, ts)
	waits := ts.srv.Stats().GatherWaits
	for i, m := range []marks.Mark{marks.No, marks.Yes, marks.Partly, marks.No} {
		time.Sleep(300 * time.Millisecond)
		p, cell := ana, "email"
		if i%2 == 1 {
			p, cell = cy, "sms"
		}
		if r := p.edit(id, setMark(cell, m)); !r.OK {
			t.Fatalf("edit %d: %+v", i, r)
		}
	}
	if n := ts.srv.Stats().GatherWaits - waits; n != 0 {
		t.Fatalf("%d groups of sparse edits waited for more edits; want none", n)
	}
}
