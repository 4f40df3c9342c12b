package replica_test

import (
	"encoding/json"
	"testing"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/wire"
)

// TestRecordsAreCopies: the client holds a record with every field
// filled, at every depth. Changing everything reachable from the record
// that Record, Records or an event returns leaves the one the client
// holds as it was.
func TestRecordsAreCopies(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("copies")
	ana := connect(t, s, "ana", replica.Options{})
	ready(t, ana, id)
	evs := collect(t, ana)

	var in question.Record
	if err := testutil.Fill(&in); err != nil {
		t.Fatal(err)
	}
	in.ID = id
	// The questions the client holds, so that the definition is newer
	// than its own and adopted.
	in.Definition.Questions[0].ID, in.Definition.Questions[1].ID = "pick", "note"
	s.inject(&wire.Event{Header: wire.Header{Kind: wire.KindMeta}, ID: id, Record: &in, By: "filler"})
	ev := evs.wait(t, "the filled record", func(e replica.Event) bool { return e.By == "filler" })

	held := func() []byte {
		t.Helper()
		rec, ok := ana.Record(id)
		if !ok {
			t.Fatal("the client lost the record")
		}
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	want := held()
	rec, _ := ana.Record(id)
	if zero := testutil.Zeros(rec); len(zero) > 0 {
		t.Fatalf("the record the client holds has zero values at %v", zero)
	}

	var fromList *question.Record
	recs := ana.Records()
	for i := range recs {
		if recs[i].ID == id {
			fromList = &recs[i]
		}
	}
	if fromList == nil || ev.Record == nil {
		t.Fatalf("the record is missing from Records (%v) or its event (%v)", fromList != nil, ev.Record != nil)
	}
	for _, c := range []struct {
		name string
		rec  *question.Record
	}{{"Record", &rec}, {"Records", fromList}, {"the event", ev.Record}} {
		testutil.Mutate(c.rec)
		if got := held(); string(got) != string(want) {
			var now, was question.Record
			if err := json.Unmarshal(got, &now); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &was); err != nil {
				t.Fatal(err)
			}
			t.Fatalf("changing the record from %s changed the client's own at %v", c.name, testutil.Diff(now, was))
		}
	}
}
