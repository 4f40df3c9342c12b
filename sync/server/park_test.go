package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
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
	for deadline := time.Now().Add(10 * time.Second); pinned() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the session still pins its decision after the connection left")
		}
	}
}
