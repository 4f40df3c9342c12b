package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// TestSyncSessionPinsUntilLeave: a connection's question:sync session pins
// its decision's document in the authority (so it is never parked under
// it), and the pin goes when the connection leaves.
func TestSyncSessionPinsUntilLeave(t *testing.T) {
	ts := startServer(t, "")
	ana := dial(t, ts, "ana", wire.Binary)
	rec := ana.create("k1")
	ana.edit(rec.ID, func(d *crdt.Doc) error { return d.SetMark("q1", "sms", "cheap", marks.No) })
	pinned := func() int {
		var n int
		if err := ts.srv.Do(context.Background(), "plan-1", func(a *question.Authority) error {
			_, n = a.Live()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := pinned(); n != 0 {
		t.Fatalf("%d pinned before any sync", n)
	}
	ben := dial(t, ts, "ben", wire.Binary)
	empty, err := crdt.Load(nil, nil, crdt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := empty.NewSession().Generate()
	ben.send(&wire.Sync{Header: wire.Header{Kind: wire.KindSync}, ID: rec.ID, Msg: msg})
	ben.expect(wire.KindSync)
	if n := pinned(); n != 1 {
		t.Fatalf("%d pinned while ben syncs, want 1", n)
	}
	ben.ws.Close()
	testutil.Eventually(t, "the session to unpin its decision after the connection left", func() bool { return pinned() == 0 })
}

// TestIdleDocumentUnloads: a document stays loaded while a member is
// connected, unloads once nobody has been for Options.IdleUnload, and
// the next member to join loads what was committed.
func TestIdleDocumentUnloads(t *testing.T) {
	const idle = 50 * time.Millisecond
	ts := startServerWith(t, "", server.Options{IdleUnload: idle})
	ana := dial(t, ts, "ana", wire.Binary)
	rec := ana.create("k1")
	time.Sleep(4 * idle)
	if n := ts.srv.Stats().Documents; n != 1 {
		t.Fatalf("%d documents loaded while ana is connected, want 1", n)
	}
	ana.ws.Close()
	testutil.Eventually(t, "the idle document to unload", func() bool { return ts.srv.Stats().Documents == 0 })
	ben := dial(t, ts, "ben", wire.Text)
	if d, ok := ben.expect(wire.KindDoc).(*wire.Doc); !ok || d.ID != rec.ID {
		t.Fatalf("ben's join: %+v, want the document of %s", d, rec.ID)
	}
	if n := ts.srv.Stats().Documents; n != 1 {
		t.Fatalf("%d documents loaded after ben joined, want 1", n)
	}
}

func TestDoRunsOnTheDocumentAndAnnounces(t *testing.T) {
	ts := startServer(t, "")
	ana := dial(t, ts, "ana", wire.Binary)
	var _ planner.Authorities = ts.srv // the server drives answer delivery
	planner := question.Member{Login: "planner", Write: true}
	err := ts.srv.Do(context.Background(), "plan-1", func(a *question.Authority) error {
		_, err := a.Create(context.Background(), planner, []question.CreateRequest{{Key: "p1", Origin: question.FromPlanner,
			Definition: question.Definition{Questions: []question.Question{{Text: "How should onboarding work?", Response: question.Text}}}}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ev := ana.expect(wire.KindCreated).(*wire.Event)
	if ev.Record.Origin != question.FromPlanner {
		t.Fatalf("created %+v", ev.Record)
	}
	ana.expect(wire.KindDoc)
	// The effects were durable before Do returned.
	sd, err := ts.store.LoadDocument(context.Background(), "plan-1")
	if err != nil || len(sd.Records) != 1 {
		t.Fatalf("stored %d records (%v)", len(sd.Records), err)
	}
}
