package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// TestCloseDocument drops a document's connections and unloads it; the
// edits it acknowledged are in the store, and the next connection loads
// the document afresh and finds them. Another document is untouched.
func TestCloseDocument(t *testing.T) {
	ts := startServer(t, "")
	ana := dial(t, ts, "ana", wire.Binary)
	rec := ana.create("k1")
	q := rec.Definition.Questions[0].ID
	if r := ana.edit(rec.ID, func(d *crdt.Doc) error { return d.Choose(q, "sms", true) }); !r.OK {
		t.Fatalf("edit: %+v", r)
	}
	if err := ts.srv.Do(context.Background(), "other", func(*question.Authority) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n := ts.srv.Stats().Documents; n != 2 {
		t.Fatalf("%d documents loaded, want 2", n)
	}

	ts.srv.CloseDocument("plan-1")
	deadline := time.Now().Add(10 * time.Second)
	for closed := false; !closed; {
		select {
		case _, open := <-ana.frames:
			closed = !open
		case <-time.After(time.Until(deadline)):
			t.Fatal("the connection stayed open")
		}
	}
	testutil.Eventually(t, "one document loaded after CloseDocument", func() bool { return ts.srv.Stats().Documents == 1 })

	ben := dial(t, ts, "ben", wire.Binary)
	doc := ben.expect(wire.KindDoc).(*wire.Doc)
	d, err := crdt.Load(doc.Doc, nil, crdt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	draft, err := d.Draft()
	if err != nil || len(draft.Questions[q].Choices) != 1 || draft.Questions[q].Choices[0] != "sms" {
		t.Fatalf("after reloading: %+v %v", draft.Questions, err)
	}
}

// closedWith waits for p's connection to end and returns its close code.
func closedWith(t *testing.T, p *peer) int {
	t.Helper()
	if !closedSoon(p) {
		t.Fatal("the connection stayed open")
	}
	return p.closeCode
}

// TestHandOffCommitsFirst: HandOff closes the document's connections with
// 1012 and returns only once what the document accepted is committed;
// the edit decided before it is acknowledged, and stored.
func TestHandOffCommitsFirst(t *testing.T) {
	g := &gateStore{entered: make(chan struct{}), pass: make(chan struct{})}
	ts := startWith(t, setup{tune: func(o *server.Options) {
		g.Store = o.Store
		o.Store = g
	}})
	ana := dial(t, ts, "ana", wire.Binary)
	x := ana.create("x").ID
	g.set(true, 0)
	ana.sendEdit(x, "e1", func(d *crdt.Doc) error { return d.SetMark("q1", "email", "cheap", marks.Yes) })
	<-g.entered
	handed := make(chan error, 1)
	go func() { handed <- ts.srv.HandOff(context.Background(), "plan-1") }()
	select {
	case err := <-handed:
		t.Fatalf("HandOff returned (%v) while a commit was held", err)
	case <-time.After(100 * time.Millisecond):
	}
	g.set(false, 0)
	g.pass <- struct{}{}
	select {
	case err := <-handed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("HandOff did not return after the commit")
	}
	if r := ana.expect(wire.KindEdit).(*wire.Reply); r.RID != "e1" || !r.OK {
		t.Fatalf("the edit decided before the handoff: %+v", r)
	}
	if code := closedWith(t, ana); code != server.CloseMoved {
		t.Fatalf("closed with %d, want %d", code, server.CloseMoved)
	}
	ben := dial(t, ts, "ben", wire.Binary)
	ben.expect(wire.KindDoc)
	st, err := ben.docs[x].State()
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Drafts[st.Generation].Questions["q1"].Marks; got["email/cheap"] != marks.Yes {
		t.Fatalf("after the handoff the store holds marks %v", got)
	}
	// A document not loaded hands off at once.
	if err := ts.srv.HandOff(context.Background(), "nothing"); err != nil {
		t.Fatal(err)
	}
}
