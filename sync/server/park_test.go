package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// TestParkedWhileConnected: a document nobody edits for
// Options.ParkIdle parks its decision while its members stay connected,
// and the server reclaims the memory. The next edit wakes it: it is
// accepted and stored, every member converges on it, and a member who
// joins once it parked again is sent it.
func TestParkedWhileConnected(t *testing.T) {
	ts := startWith(t, setup{tune: func(o *server.Options) { o.ParkIdle = 20 * time.Millisecond }})
	ctx := testCtx(t, time.Minute)
	ana := join(t, ts.url, "plan-p", "ana", wire.Binary, nil)
	ben := join(t, ts.url, "plan-p", "ben", wire.Text, nil)
	id := create(t, ana, matrixCard("p", 3, 2, false, true))
	hasReplica(t, ben, id)
	if err := ana.SetMark(id, "q1", "o0", "c0", marks.Yes); err != nil {
		t.Fatal(err)
	}
	if err := ana.Flush(ctx, id); err != nil {
		t.Fatal(err)
	}
	reclaims := ts.srv.Stats().Reclaims
	testutil.Eventually(t, "the idle document's decision to park", func() bool { return ts.srv.Stats().LiveDecisions == 0 })
	testutil.Eventually(t, "the parked decision's memory to be reclaimed", func() bool { return ts.srv.Stats().Reclaims > reclaims })
	if st := ts.srv.Stats(); st.Connections != 2 || st.Documents != 1 {
		t.Fatalf("%d connections and %d documents once parked, want the 2 members on 1 document", st.Connections, st.Documents)
	}

	if err := ben.SetMark(id, "q1", "o1", "c1", marks.No); err != nil {
		t.Fatal(err)
	}
	if err := ben.SetText(id, "note", "edited while parked"); err != nil {
		t.Fatal(err)
	}
	if err := ben.Flush(ctx, id); err != nil {
		t.Fatalf("the edit of the parked decision: %v", err)
	}
	want, heads := draftOf(t, ben, id)
	q := want.Questions["q1"]
	if q.Marks["o0/c0"] != marks.Yes || q.Marks["o1/c1"] != marks.No || want.Questions["note"].Text != "edited while parked" {
		t.Fatalf("ben's draft after the edit: %+v", want)
	}
	testutil.Eventually(t, "ana and ben to converge on the edit", func() bool {
		return converged([]*replica.Client{ana, ben}, id, want, heads)
	})

	testutil.Eventually(t, "the decision to park again", func() bool { return ts.srv.Stats().LiveDecisions == 0 })
	cy := join(t, ts.url, "plan-p", "cy", wire.Binary, nil)
	testutil.Eventually(t, "cy, joining the parked decision, to converge", func() bool {
		return converged([]*replica.Client{ana, ben, cy}, id, want, heads)
	})

	for _, c := range []*replica.Client{ana, ben, cy} {
		c.Close()
	}
	ts.stop()
	d, h, err := stored(t, ts.path, "plan-p").Draft(id)
	if err != nil || !h.Equal(heads) || !d.Equal(want) {
		t.Fatalf("stored: %+v at %v (%v), want %+v at %v", d, h, err, want, heads)
	}
}

// TestParkingSparesSyncSessions: parking a document leaves live the
// decision a connection's question:sync session pins, parks the others,
// and parks that one too once the connection left.
func TestParkingSparesSyncSessions(t *testing.T) {
	ts := startServerWith(t, "", server.Options{ParkIdle: -1})
	ana := dial(t, ts, "ana", wire.Binary)
	synced, other := ana.create("k1"), ana.create("k2")
	live := func() (live, pinned int) {
		if err := ts.srv.Do(context.Background(), "plan-1", func(a *question.Authority) error {
			live, pinned = a.Live()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return live, pinned
	}
	if l, _ := live(); l != 2 {
		t.Fatalf("%d decisions live after their creation, want 2", l)
	}
	ben := dial(t, ts, "ben", wire.Binary)
	empty, err := crdt.Load(nil, nil, crdt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := empty.NewSession().Generate()
	ben.send(&wire.Sync{Header: wire.Header{Kind: wire.KindSync}, ID: synced.ID, Msg: msg})
	ben.expect(wire.KindSync)
	if err := server.Park(context.Background(), ts.srv, "plan-1"); err != nil {
		t.Fatal(err)
	}
	if l, p := live(); l != 1 || p != 1 {
		t.Fatalf("%d live and %d pinned once parked, want the synced decision alone", l, p)
	}
	if r := ana.edit(other.ID, func(d *crdt.Doc) error { return d.SetMark("q1", "sms", "cheap", marks.Yes) }); !r.OK {
		t.Fatalf("the edit of the parked decision: %s %s", r.Reason, r.Message)
	}
	ben.ws.Close()
	testutil.Eventually(t, "the session to end with ben's connection", func() bool { _, p := live(); return p == 0 })
	if err := server.Park(context.Background(), ts.srv, "plan-1"); err != nil {
		t.Fatal(err)
	}
	if l, _ := live(); l != 0 {
		t.Fatalf("%d decisions live once parked without a session, want 0", l)
	}
	testutil.Eventually(t, "Stats to count no live decision", func() bool { return ts.srv.Stats().LiveDecisions == 0 })
}

// TestUnusedDecisionParksBesideAnEditedOne: while a member keeps editing
// one decision of a document, its other decision, unused, parks.
func TestUnusedDecisionParksBesideAnEditedOne(t *testing.T) {
	ts := startServerWith(t, "", server.Options{ParkIdle: 20 * time.Millisecond})
	ana := dial(t, ts, "ana", wire.Binary)
	edited := ana.create("k1")
	ana.create("k2")
	live := func() int {
		var n int
		if err := ts.srv.Do(context.Background(), "plan-1", func(a *question.Authority) error {
			n, _ = a.Live() // reads nothing of the decisions: no use of them
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ms := []marks.Mark{marks.Yes, marks.No}
	deadline := time.Now().Add(time.Minute)
	for i := 0; live() != 1; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("after %d edits of one decision, %d decisions live, want 1", i, live())
		}
		if r := ana.edit(edited.ID, func(d *crdt.Doc) error { return d.SetMark("q1", "sms", "cheap", ms[i%2]) }); !r.OK {
			t.Fatalf("edit %d: %s %s", i, r.Reason, r.Message)
		}
	}
}
