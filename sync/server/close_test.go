package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/question"
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
	for ts.srv.Stats().Documents != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d documents loaded after CloseDocument, want 1", ts.srv.Stats().Documents)
		}
		time.Sleep(5 * time.Millisecond)
	}

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
