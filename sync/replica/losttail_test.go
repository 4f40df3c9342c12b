package replica_test

import (
	"context"
	"strings"
	"testing"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/wire"
)

// TestLostTailIsMergedNotRebased: the server fans a member's edit out
// before committing it (early fan-out), then loses it: it crashed, or, in
// a cluster, the node that took over never stored it. The replica that
// received it, and made an edit of its own meanwhile, reconnects and
// gets a document lacking heads it took as accepted but holding those it
// knows were stored. That is the same history with a lost tail, not a
// rebase: the replica merges it and offers both changes again, so when
// the author offers its original too, the written answer holds each
// splice once (carrying the values over as fresh edits would insert the
// other member's text a second time).
func TestLostTailIsMergedNotRebased(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	ana := connect(t, s, "ana", replica.Options{})
	must(t, ana.SetText(id, "note", "stored."))
	flush(t, ana, id)

	// Ben's edit, fanned out to ana but never stored by the server.
	saved, err := s.auth.Save(id)
	must(t, err)
	bens, err := crdt.Load(saved, nil, crdt.Options{Actor: "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"})
	must(t, err)
	before := bens.Heads()
	must(t, bens.SpliceText("note", len("stored."), 0, " <ben>"))
	early, err := bens.ChangesSince(before)
	must(t, err)
	s.inject(&wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: id, Changes: early, Heads: wireHeads(bens.Heads()), By: "ben"})
	testutil.Eventually(t, "ana to hold ben's early edit", func() bool { return strings.Contains(draftOf(t, ana, id).Questions["note"].Text, "<ben>") })

	// ana goes offline, types, and comes back to a server without ben's
	// edit.
	s.setDown("ana", true)
	s.drop("ana")
	testutil.Eventually(t, "ana to go offline", func() bool { return !ana.Connected() })
	must(t, ana.SpliceText(id, "note", len("stored."), 0, " <ana>")) // before ben's text
	s.setDown("ana", false)
	flush(t, ana, id)

	// Ben reconnects too and offers his original change.
	s.mu.Lock()
	_, err = s.auth.Edit(context.Background(), question.Member{Login: "ben", Write: true}, id, early)
	s.mu.Unlock()
	must(t, err)
	text := s.draft(id).Questions["note"].Text
	for _, tok := range []string{"<ben>", "<ana>"} {
		if n := strings.Count(text, tok); n != 1 {
			t.Fatalf("server text %q holds %s %d times, want once", text, tok, n)
		}
	}
	converged(t, s, ana, id)
}
