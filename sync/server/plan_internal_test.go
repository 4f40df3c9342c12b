package server

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/sync/wire"
)

// TestPlanKeepsEachDecisionsOrder is a property of a commit group's
// delivery: for random groups of replies, events, draft-edit changes,
// authority changes and decision-less frames to a few connections, every
// connection gets exactly the frames meant for it (not its own edits'
// changes), each once; the frames about one decision, and every frame
// relative to a decision-less one, keep the order they were decided in;
// consecutive changes of a decision are coalesced when nothing about it
// lies between; and sending the early items first, then the rest, keeps
// all of that.
func TestPlanKeepsEachDecisionsOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nConns := rapid.IntRange(1, 4).Draw(t, "conns")
		d := &document{conns: map[*conn]uint64{}, joining: map[*conn]*joinCursor{}}
		var conns []*conn
		for range nConns {
			c := &conn{}
			conns = append(conns, c)
			d.conns[c] = 0
		}
		ids := []string{"x", "y", "z"}
		n := rapid.IntRange(0, 30).Draw(t, "frames")
		held := make([]delivery, n)
		for i := range held {
			id := rapid.SampledFrom(ids).Draw(t, "id")
			var h delivery
			switch rapid.IntRange(0, 4).Draw(t, "sort") {
			case 0: // a reply to one connection
				h = delivery{to: rapid.SampledFrom(conns).Draw(t, "to"), msg: &encoded{msg: &wire.Reply{ID: id}}}
			case 1: // an event to everyone
				h = delivery{msg: &encoded{msg: &wire.Event{ID: id}}}
			case 2: // an edit's changes to everyone but its author
				h = delivery{except: rapid.SampledFrom(conns).Draw(t, "author"), msg: &encoded{msg: &wire.Changes{ID: id}}, early: true}
			case 3: // the authority's changes (reopen, append) to everyone
				h = delivery{msg: &encoded{msg: &wire.Changes{ID: id}}}
			case 4: // a frame about no decision
				h = delivery{to: rapid.SampledFrom(conns).Draw(t, "to"), msg: &encoded{msg: &wire.Error{}}}
			}
			held[i] = h
		}
		idx := map[*delivery]int{}
		for i := range held {
			idx[&held[i]] = i
		}
		plan := d.planGroup(held)
		for ci, c := range conns {
			var want []int
			for i, h := range held {
				if h.to == c || h.to == nil && h.except != c {
					want = append(want, i)
				}
			}
			items := plan[c]
			flat := func(items []planItem) []int {
				var out []int
				for _, it := range items {
					if it.h != nil {
						out = append(out, idx[it.h])
					}
					for _, p := range it.parts {
						out = append(out, idx[p])
					}
				}
				return out
			}
			got := flat(items)
			if sorted := slices.Sorted(slices.Values(got)); !slices.Equal(sorted, want) {
				t.Fatalf("conn %d gets %v, want %v", ci, sorted, want)
			}
			// Coalesced runs hold changes of one decision only.
			for _, it := range items {
				for _, p := range it.parts {
					if p.msg.msg.(*wire.Changes).ID != it.parts[0].msg.msg.(*wire.Changes).ID {
						t.Fatalf("conn %d: a run mixes decisions", ci)
					}
				}
			}
			// The order sent: early items, then the rest.
			early := earlyItems(items)
			var sentItems []planItem
			for k, it := range items {
				if early[k] {
					if !allEarly(it.parts) {
						t.Fatalf("conn %d: non-edit changes sent early", ci)
					}
					sentItems = append(sentItems, it)
				}
			}
			for k, it := range items {
				if !early[k] {
					sentItems = append(sentItems, it)
				}
			}
			for _, order := range [][]int{got, flat(sentItems)} {
				pos := map[int]int{}
				for p, i := range order {
					pos[i] = p
				}
				for _, a := range want {
					for _, b := range want {
						if a >= b {
							continue
						}
						ida, _ := decisionsIn(held[a].msg.msg)
						idb, _ := decisionsIn(held[b].msg.msg)
						about := len(ida) == 0 || len(idb) == 0 || ida[0] == idb[0]
						if about && pos[a] > pos[b] {
							t.Fatalf("conn %d: frame %d (%T %v) goes after frame %d (%T %v)", ci, a, held[a].msg.msg, ida, b, held[b].msg.msg, idb)
						}
					}
				}
			}
			// Maximal coalescing: two changes items of one decision are
			// never adjacent among that decision's frames.
			for k := 1; k < len(items); k++ {
				if len(items[k].parts) == 0 {
					continue
				}
				id := items[k].parts[0].msg.msg.(*wire.Changes).ID
				for j := k - 1; j >= 0; j-- {
					var m wire.Message
					if items[j].h != nil {
						m = items[j].h.msg.msg
					} else {
						m = items[j].parts[0].msg.msg
					}
					pids, all := decisionsIn(m)
					if all || len(pids) > 0 && pids[0] == id {
						if len(items[j].parts) > 0 {
							t.Fatalf("conn %d: two runs of %s not coalesced", ci, id)
						}
						break
					}
				}
			}
		}
	})
}

// TestEarlyChangesWaitForAReplyBeforeThem is the case the order property
// once found: a reply about decision x to one connection, then another
// member's accepted edit of x. The edit's changes may not leave early for
// that connection, or they would overtake the reply decided before them.
func TestEarlyChangesWaitForAReplyBeforeThem(t *testing.T) {
	a, b := &conn{}, &conn{}
	d := &document{conns: map[*conn]uint64{a: 0, b: 0}, joining: map[*conn]*joinCursor{}}
	held := []delivery{
		{to: a, msg: &encoded{msg: &wire.Reply{ID: "x"}}},
		{except: b, msg: &encoded{msg: &wire.Changes{ID: "x"}}, early: true},
	}
	plan := d.planGroup(held)
	if early := earlyItems(plan[a]); len(early) != 2 || early[0] || early[1] {
		t.Fatalf("early items for the replied-to connection: %v, want none", early)
	}
	// Without the reply ahead of them they may leave early.
	plan = d.planGroup(held[1:])
	if early := earlyItems(plan[a]); len(early) != 1 || !early[0] {
		t.Fatalf("early items with nothing ahead: %v, want the changes", early)
	}
}
