package replica_test

import (
	"testing"

	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/wire"
)

// TestSetPresence: states set faster than the server relays fold into
// the latest, which always reaches the others; a reader publishes too;
// Others lists the standing states and forgets a client that closed.
func TestSetPresence(t *testing.T) {
	url := realServer(t)
	ctx := ctxT(t)
	dial := func(login string, f wire.Format) *replica.Client { return dialAs(t, ctx, url, login, f) }
	ana, ben, rita := dial("ana", wire.Binary), dial("ben", wire.Text), dial("rita", wire.Binary)
	benEvents := collect(t, ben)
	for i := range 50 {
		if err := ana.SetPresence(wire.PresenceState{Decision: "d1", Question: "q1", Selection: []int{i, i}, Editing: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rita.SetPresence(wire.PresenceState{Decision: "d1", Field: "choice"}); err != nil {
		t.Fatal(err)
	}
	if err := ana.SetPresence(wire.PresenceState{Selection: []int{1}}); err == nil {
		t.Fatal("a selection of one number was accepted")
	}
	benEvents.wait(t, "Ana's latest state", func(e replica.Event) bool {
		return e.Kind == wire.KindPresence && e.By == "ana" && e.Presence.State != nil && e.Presence.State.Selection[0] == 49
	})
	benEvents.wait(t, "Rita's state", func(e replica.Event) bool {
		return e.Kind == wire.KindPresence && e.By == "rita" && e.ID == "d1"
	})
	n := 0
	for _, e := range benEvents.kinds() {
		if e == wire.KindPresence {
			n++
		}
	}
	if n > 10 {
		t.Fatalf("%d presence events for 51 states set at once; they should fold", n)
	}
	if others := ben.Others(); len(others) != 2 {
		t.Fatalf("ben sees %+v", others)
	}
	rita.Close()
	benEvents.wait(t, "Rita's leaving", func(e replica.Event) bool {
		return e.Kind == wire.KindPresence && e.By == "rita" && e.Presence.Left
	})
	if others := ben.Others(); len(others) != 1 || others[0].Member != "ana" {
		t.Fatalf("ben sees %+v after Rita left", others)
	}
}
