package replica_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/wire"
)

// writer is a peer's document of a decision, making changes the test
// sends to the replica as the server would forward them.
func writer(t testing.TB, s *fakeServer, id string) *crdt.Doc {
	t.Helper()
	s.mu.Lock()
	saved, err := s.auth.Save(id)
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	w, err := crdt.Load(saved, nil, crdt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// markN makes change i of a writer: a mark that differs from the cell's
// current one.
func markN(t testing.TB, w *crdt.Doc, i int) {
	opt, crit := []string{"bolt", "pg"}[i%2], []string{"cost", "ops"}[(i/2)%2]
	if err := w.SetMark("pick", opt, crit, marks.All[(i/4)%3]); err != nil {
		t.Fatal(err)
	}
}

// TestChangesFrameWithSeveralChanges: one question:changes frame carrying
// the concatenated changes of several edits, by several writers, applies
// in one go: the replica reaches the frame's heads and reports one
// changes event.
func TestChangesFrameWithSeveralChanges(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	ana := connect(t, s, "ana", replica.Options{})
	ev := collect(t, ana)
	ben, cat := writer(t, s, id), writer(t, s, id)
	start := ben.Heads()
	markN(t, ben, 0)
	markN(t, ben, 1)
	if err := ben.SetText("note", "ben's"); err != nil {
		t.Fatal(err)
	}
	benCh, err := ben.ChangesSince(start)
	if err != nil {
		t.Fatal(err)
	}
	// cat builds on ben's changes: the batch holds both in causal order.
	if _, err := cat.ApplyChanges(benCh); err != nil {
		t.Fatal(err)
	}
	mid := cat.Heads()
	markN(t, cat, 6)
	if err := cat.Choose("pick", "pg", true); err != nil {
		t.Fatal(err)
	}
	catCh, err := cat.ChangesSince(mid)
	if err != nil {
		t.Fatal(err)
	}
	batch := append(append([]byte{}, benCh...), catCh...)
	s.inject(&wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: id, Changes: batch, Heads: wireHeads(cat.Heads())})
	testutil.Eventually(t, "the batch to apply", func() bool {
		h, unsent, _ := ana.Accepted(id)
		return h.Equal(cat.Heads()) && !unsent
	})
	want, _ := cat.Draft()
	if got := draftOf(t, ana, id); !got.Equal(want) {
		t.Fatalf("draft %+v, want %+v", got, want)
	}
	time.Sleep(20 * time.Millisecond) // any further event would have come by now
	n := 0
	for _, k := range ev.kinds() {
		if k == wire.KindChanges {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d changes events for one frame (%v)", n, ev.kinds())
	}
	if ana.Connected() != true {
		t.Fatal("the batch ended the connection")
	}
}

// BenchmarkReceiveChange measures the replica applying one forwarded
// change (a question:changes frame over loopback, decoded, applied, the
// accepted heads advanced, the event emitted and, with Dir, saved) to a
// decision whose history already holds 100 or 10,000 changes. The cost
// should not grow with the history.
func BenchmarkReceiveChange(b *testing.B) {
	for _, dir := range []bool{false, true} {
		for _, history := range []int{100, 10000} {
			b.Run(fmt.Sprintf("dir=%v/history=%d", dir, history), func(b *testing.B) {
				benchmarkReceive(b, history, dir)
			})
		}
	}
}

// BenchmarkReceiveChangeAmongDecisions is BenchmarkReceiveChange on a
// document that holds other decisions too: a frame for one decision
// should cost nothing for the others.
func BenchmarkReceiveChangeAmongDecisions(b *testing.B) {
	for _, others := range []int{0, 1000} {
		b.Run(fmt.Sprintf("others=%d", others), func(b *testing.B) {
			benchmarkReceiveAmong(b, 100, false, others)
		})
	}
}

func benchmarkReceive(b *testing.B, history int, dir bool) {
	benchmarkReceiveAmong(b, history, dir, 0)
}

func benchmarkReceiveAmong(b *testing.B, history int, dir bool, others int) {
	s := newFakeServer(b)
	for i := range others {
		s.create(fmt.Sprintf("other-%d", i))
	}
	id := s.create("k1")
	w := writer(b, s, id)
	for i := range history {
		markN(b, w, i)
	}
	opts := replica.Options{EventBuffer: 4}
	if dir {
		opts.Dir = b.TempDir()
	}
	ana := connect(b, s, "ana", opts)
	events := ana.Events()
	s.inject(&wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: id, Doc: w.Save(), Heads: wireHeads(w.Heads())})
	testutil.Eventually(b, "the document to be loaded", func() bool { h, _, _ := ana.Accepted(id); return h.Equal(w.Heads()) })
	for len(events) > 0 {
		<-events // the documents' events
	}
	i := history
	for b.Loop() {
		b.StopTimer()
		before := w.Heads()
		markN(b, w, i)
		i++
		ch, err := w.ChangesSince(before)
		if err != nil {
			b.Fatal(err)
		}
		f := &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: id, Changes: ch, Heads: wireHeads(w.Heads())}
		b.StartTimer()
		s.inject(f)
		for e := range events {
			if e.Kind == wire.KindChanges {
				break
			}
		}
	}
	b.StopTimer()
	if h, _, _ := ana.Accepted(id); !h.Equal(w.Heads()) {
		b.Fatalf("the replica is at %v, the writer at %v", h, w.Heads())
	}
}
