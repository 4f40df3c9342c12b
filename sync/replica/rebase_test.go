package replica_test

import (
	"slices"
	"testing"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/wire"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// converged checks that c holds exactly what the server accepted.
func converged(t *testing.T, s *fakeServer, c *replica.Client, id string) {
	t.Helper()
	heads, unsent, err := c.Accepted(id)
	if err != nil || unsent || !heads.Equal(s.heads(id)) {
		t.Fatalf("accepted %v unsent %v err %v; server at %v", heads, unsent, err, s.heads(id))
	}
	if got, want := draftOf(t, c, id), s.draft(id); !got.Equal(want) {
		t.Fatalf("replica draft %+v, server draft %+v", got, want)
	}
}

// TestRebasedDocCarriesLocalEdits: a question:doc whose history lacks the
// replica's accepted heads replaces the replica's document; the values
// the replica changed offline are made again on it and accepted, the
// values others changed on the new history stay, and the old history
// never reaches the server.
func TestRebasedDocCarriesLocalEdits(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	ana := connect(t, s, "ana", replica.Options{})
	ben := connect(t, s, "ben", replica.Options{})
	must(t, ana.SetMark(id, "pick", "bolt", "cost", marks.Yes))
	must(t, ana.SetMark(id, "pick", "pg", "cost", marks.No))
	must(t, ana.Choose(id, "pick", "bolt", true))
	must(t, ana.SetText(id, "note", "hello world"))
	flush(t, ana, id)
	old := s.heads(id)
	testutil.Eventually(t, "ben to hold the accepted draft", func() bool { return draftOf(t, ben, id).Equal(s.draft(id)) })

	s.setDown("ana", true)
	s.drop("ana")
	testutil.Eventually(t, "ana to go offline", func() bool { return !ana.Connected() })
	must(t, ana.SetMark(id, "pick", "bolt", "cost", marks.Partly))
	must(t, ana.SetMark(id, "pick", "bolt", "ops", marks.Yes))
	must(t, ana.Choose(id, "pick", "pg", true))
	must(t, ana.SetText(id, "note", "hello brave world"))

	doc := s.rebase(id, true)
	testutil.Eventually(t, "ben to take the rebased document", func() bool {
		h, _, _ := ben.Accepted(id)
		return h.Equal(doc.Heads())
	})
	// ben edits on the new history meanwhile: another cell, and the text.
	must(t, ben.SetMark(id, "pick", "pg", "ops", marks.Yes))
	must(t, ben.SetText(id, "note", "hello world!"))
	flush(t, ben, id)
	converged(t, s, ben, id)

	s.setDown("ana", false)
	flush(t, ana, id)
	got := s.draft(id).Questions
	wantMarks := map[string]marks.Mark{"bolt/cost": marks.Partly, "bolt/ops": marks.Yes, "pg/cost": marks.No, "pg/ops": marks.Yes}
	if p := got["pick"]; !mapsEqual(p.Marks, wantMarks) || !slices.Equal(p.Choices, []string{"pg"}) {
		t.Fatalf("server pick %+v, want marks %v choices [pg]", p, wantMarks)
	}
	if txt := got["note"].Text; txt != "hello brave world!" {
		t.Fatalf("server text %q, want ana's and ben's edits both", txt)
	}
	if doc.Has(old) {
		t.Fatal("the server's rebased document received the old history")
	}
	converged(t, s, ana, id)
	testutil.Eventually(t, "ben to converge", func() bool { return draftOf(t, ben, id).Equal(s.draft(id)) })
}

func mapsEqual(a, b map[string]marks.Mark) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestStaleEditAfterRebase: an edit made against the old history reaches
// the server after the rebase and is refused as stale with reset and the
// rebased document. Whether the replica got the rebased question:doc first
// or learns of the rebase from the refusal, its unaccepted values carry
// over, Flush reports no reset, and the server ends with them.
func TestStaleEditAfterRebase(t *testing.T) {
	for _, tc := range []struct {
		name     string
		announce bool
	}{{"doc before the refusal", true}, {"refusal first", false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeServer(t)
			id := s.create("k1")
			ana := connect(t, s, "ana", replica.Options{})
			must(t, ana.SetText(id, "note", "draft one"))
			flush(t, ana, id)
			old := s.heads(id)

			gate := make(chan struct{})
			s.mu.Lock()
			s.gate = gate
			s.mu.Unlock()
			edits := s.countFrames(wire.KindEdit)
			must(t, ana.SetMark(id, "pick", "bolt", "cost", marks.Yes))
			testutil.Eventually(t, "the edit to reach the server", func() bool { return s.countFrames(wire.KindEdit) > edits })
			must(t, ana.SetText(id, "note", "draft two")) // waits behind the edit in flight

			doc := s.rebase(id, tc.announce)
			if tc.announce {
				testutil.Eventually(t, "ana to take the rebased document", func() bool {
					h, _, _ := ana.Accepted(id)
					return h.Equal(doc.Heads())
				})
				if d := draftOf(t, ana, id); d.Questions["note"].Text != "draft two" || d.Questions["pick"].Marks["bolt/cost"] != marks.Yes {
					t.Fatalf("after the rebase ana displays %+v", d)
				}
			}
			s.mu.Lock()
			s.gate = nil
			s.mu.Unlock()
			gate <- struct{}{}

			flush(t, ana, id)
			got := s.draft(id).Questions
			if got["note"].Text != "draft two" || got["pick"].Marks["bolt/cost"] != marks.Yes || len(got["pick"].Marks) != 1 {
				t.Fatalf("server draft %+v", got)
			}
			if doc.Has(old) {
				t.Fatal("the server's rebased document received the old history")
			}
			if n := s.countFrames(wire.KindEdit); n < edits+2 {
				t.Fatalf("%d edits, want the refused one and the carried one", n-edits)
			}
			converged(t, s, ana, id)
		})
	}
}

// TestRebaseKeepsAcceptedState: a replica with nothing unaccepted takes the
// rebased document as it is: same draft, the server's heads, nothing to
// send.
func TestRebaseKeepsAcceptedState(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	dir := t.TempDir()
	ana := connect(t, s, "ana", replica.Options{Dir: dir})
	must(t, ana.SetMark(id, "pick", "pg", "ops", marks.No))
	must(t, ana.SetText(id, "note", "kept"))
	flush(t, ana, id)
	want := s.draft(id)
	doc := s.rebase(id, true)
	testutil.Eventually(t, "the rebased document", func() bool {
		h, _, _ := ana.Accepted(id)
		return h.Equal(doc.Heads())
	})
	converged(t, s, ana, id)
	if got := draftOf(t, ana, id); !got.Equal(want) {
		t.Fatalf("draft %+v, want %+v", got, want)
	}
	edits := s.countFrames(wire.KindEdit)
	flush(t, ana, id)
	if n := s.countFrames(wire.KindEdit); n != edits {
		t.Fatalf("%d edits sent after a rebase with nothing to carry", n-edits)
	}
	// Dir holds the rebased document alone: the old history's log lines
	// gave way to a snapshot.
	back := restored(t, s, copyDir(t, dir))
	sameReplica(t, back, ana, id, "after the rebase")
	if _, h, _ := back.Draft(id); !h.Equal(doc.Heads()) {
		t.Fatalf("restored heads %v, want the rebased document's %v", h, doc.Heads())
	}
}
