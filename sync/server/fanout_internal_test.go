package server

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/sync/wire"
)

// TestFanoutKeepsEachDecisionsOrder is a property of a commit group's
// fan-out: for random groups of replies, events, draft-edit changes,
// authority changes and decision-less frames to a few connections, every
// connection gets exactly the frames meant for it (not its own edits'
// changes), each once; the frames about one decision, and every frame
// relative to a decision-less one, keep the order they were decided in;
// consecutive changes of a decision are coalesced when nothing about it
// lies between; and sending the early frames first, then the rest, keeps
// all of that.
func TestFanoutKeepsEachDecisionsOrder(t *testing.T) {
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
		held := make([]outgoing, n)
		for i := range held {
			id := rapid.SampledFrom(ids).Draw(t, "id")
			var h outgoing
			switch rapid.IntRange(0, 4).Draw(t, "sort") {
			case 0: // a reply to one connection
				h = outgoing{to: rapid.SampledFrom(conns).Draw(t, "to"), msg: &encoded{msg: &wire.Reply{ID: id}}}
			case 1: // an event to everyone
				h = outgoing{msg: &encoded{msg: &wire.Event{ID: id}}}
			case 2: // an edit's changes to everyone but its author
				h = outgoing{except: rapid.SampledFrom(conns).Draw(t, "author"), msg: &encoded{msg: &wire.Changes{ID: id}}, early: true}
			case 3: // the authority's changes (reopen, append) to everyone
				h = outgoing{msg: &encoded{msg: &wire.Changes{ID: id}}}
			case 4: // a frame about no decision
				h = outgoing{to: rapid.SampledFrom(conns).Draw(t, "to"), msg: &encoded{msg: &wire.Error{}}}
			}
			held[i] = h
		}
		idx := map[*outgoing]int{}
		for i := range held {
			idx[&held[i]] = i
		}
		out := d.fanOut(held)
		for ci, c := range conns {
			var want []int
			for i, h := range held {
				if h.to == c || h.to == nil && h.except != c {
					want = append(want, i)
				}
			}
			frames := out[c]
			flat := func(frames []outFrame) []int {
				var held []int
				for _, it := range frames {
					if it.h != nil {
						held = append(held, idx[it.h])
					}
					for _, p := range it.parts {
						held = append(held, idx[p])
					}
				}
				return held
			}
			got := flat(frames)
			if sorted := slices.Sorted(slices.Values(got)); !slices.Equal(sorted, want) {
				t.Fatalf("conn %d gets %v, want %v", ci, sorted, want)
			}
			// Coalesced runs hold changes of one decision only.
			for _, it := range frames {
				for _, p := range it.parts {
					if p.msg.msg.(*wire.Changes).ID != it.parts[0].msg.msg.(*wire.Changes).ID {
						t.Fatalf("conn %d: a run mixes decisions", ci)
					}
				}
			}
			// The order sent: early frames, then the rest.
			early := earlyFrames(frames)
			var sentFrames []outFrame
			for k, it := range frames {
				if early[k] {
					if !allEarly(it.parts) {
						t.Fatalf("conn %d: non-edit changes sent early", ci)
					}
					sentFrames = append(sentFrames, it)
				}
			}
			for k, it := range frames {
				if !early[k] {
					sentFrames = append(sentFrames, it)
				}
			}
			for _, order := range [][]int{got, flat(sentFrames)} {
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
			// Maximal coalescing: two changes frames of one decision are
			// never adjacent among that decision's frames.
			for k := 1; k < len(frames); k++ {
				if len(frames[k].parts) == 0 {
					continue
				}
				id := frames[k].parts[0].msg.msg.(*wire.Changes).ID
				for j := k - 1; j >= 0; j-- {
					var m wire.Message
					if frames[j].h != nil {
						m = frames[j].h.msg.msg
					} else {
						m = frames[j].parts[0].msg.msg
					}
					pids, all := decisionsIn(m)
					if all || len(pids) > 0 && pids[0] == id {
						if len(frames[j].parts) > 0 {
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
	held := []outgoing{
		{to: a, msg: &encoded{msg: &wire.Reply{ID: "x"}}},
		{except: b, msg: &encoded{msg: &wire.Changes{ID: "x"}}, early: true},
	}
	out := d.fanOut(held)
	if early := earlyFrames(out[a]); len(early) != 2 || early[0] || early[1] {
		t.Fatalf("early frames for the replied-to connection: %v, want none", early)
	}
	// Without the reply ahead of them they may leave early.
	out = d.fanOut(held[1:])
	if early := earlyFrames(out[a]); len(early) != 1 || !early[0] {
		t.Fatalf("early frames with nothing ahead: %v, want the changes", early)
	}
}
