package replica_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/wire"
)

func undo(t *testing.T, c *replica.Client, id string) replica.UndoResult {
	t.Helper()
	res, err := c.Undo(ctxT(t), id)
	if err != nil {
		t.Fatalf("undo: %v", err)
	}
	return res
}

func redo(t *testing.T, c *replica.Client, id string) replica.UndoResult {
	t.Helper()
	res, err := c.Redo(ctxT(t), id)
	if err != nil {
		t.Fatalf("redo: %v", err)
	}
	return res
}

// typeText types s at pos one character at a time.
func typeText(t *testing.T, c *replica.Client, id string, pos int, s string) {
	t.Helper()
	for i, r := range []rune(s) {
		if err := c.SpliceText(id, "note", pos+i, 0, string(r)); err != nil {
			t.Fatal(err)
		}
	}
}

func textOf(t *testing.T, c *replica.Client, id string) string {
	t.Helper()
	return draftOf(t, c, id).Questions["note"].Text
}

// TestUndoThroughTheServer: Ana undoes and redoes her marks, choices,
// typing and why against a real server; Ben sees every undo as an edit
// of hers; an undo of a value Ben changed since is skipped and names him;
// a save and a reopen empty the stacks.
func TestUndoThroughTheServer(t *testing.T) {
	url := realServer(t)
	ctx := ctxT(t)
	ana, ben := dialAs(t, ctx, url, "ana", wire.Binary), dialAs(t, ctx, url, "ben", wire.Text)
	recs, err := ana.Create(ctx, wire.Card{Key: "k", Definition: definition()})
	if err != nil {
		t.Fatal(err)
	}
	id := recs[0].ID
	ready(t, ben, id)
	sees := func(c *replica.Client, what string, ok func(d crdt.Draft) bool) {
		t.Helper()
		testutil.Eventually(t, what, func() bool { return ok(draftOf(t, c, id)) })
	}
	markIs := func(m marks.Mark) func(d crdt.Draft) bool {
		return func(d crdt.Draft) bool { return d.Questions["pick"].Marks["bolt/cost"] == m }
	}

	// A mark: undone, redone, and skipped once Ben changed it.
	if err := ana.SetMark(id, "pick", "bolt", "cost", marks.Yes); err != nil {
		t.Fatal(err)
	}
	want := replica.UndoGroup{Kind: "mark", Question: "pick", Cell: "bolt/cost", To: "yes"}
	if st := ana.UndoState(id); st.Undo == nil || *st.Undo != want || st.Redo != nil || st.Cleared != "" {
		t.Fatalf("undo state %+v", st)
	}
	if res := undo(t, ana, id); !res.Done || res.Group != want || res.By != "ana" {
		t.Fatalf("undo %+v", res)
	}
	if d := draftOf(t, ana, id); d.Questions["pick"].Marks["bolt/cost"] != marks.Cleared {
		t.Fatal("the undo is not in the replica when Undo returns")
	}
	sees(ben, "ben to see the mark undone", func(d crdt.Draft) bool {
		m, ok := d.Questions["pick"].Marks["bolt/cost"]
		return ok && m == marks.Cleared
	})
	redo(t, ana, id)
	sees(ben, "ben to see the mark redone", markIs(marks.Yes))
	if err := ben.SetMark(id, "pick", "bolt", "cost", marks.No); err != nil {
		t.Fatal(err)
	}
	sees(ana, "ana to see Ben's mark", markIs(marks.No))
	if res := undo(t, ana, id); res.Done || res.By != "ben" || res.Group != want {
		t.Fatalf("undo of a mark Ben changed: %+v, want skipped by ben", res)
	}
	sees(ana, "Ben's mark to stay", markIs(marks.No))
	if _, err := ana.Undo(ctx, id); !errors.Is(err, replica.ErrNothingToUndo) {
		t.Fatalf("nothing left to undo: %v", err)
	}

	// A choice.
	if err := ana.Choose(id, "pick", "pg", true); err != nil {
		t.Fatal(err)
	}
	if res := undo(t, ana, id); !res.Done || res.Group != (replica.UndoGroup{Kind: "choice", Question: "pick", To: "pg"}) {
		t.Fatalf("undo of a choice %+v", res)
	}
	redo(t, ana, id)
	sees(ben, "ben to see the choice redone", func(d crdt.Draft) bool { return slices.Equal(d.Questions["pick"].Choices, []string{"pg"}) })

	// Typing, with Ben's typing inside it arriving before the undo.
	typeText(t, ana, id, 0, "hello")
	flush(t, ana, id)
	sees(ben, "ben to see ana's typing", func(d crdt.Draft) bool { return d.Questions["note"].Text == "hello" })
	if err := ben.SpliceText(id, "note", 2, 0, "X"); err != nil {
		t.Fatal(err)
	}
	sees(ana, "ana to see ben's X", func(d crdt.Draft) bool { return d.Questions["note"].Text == "heXllo" })
	if res := undo(t, ana, id); !res.Done || res.Group != (replica.UndoGroup{Kind: "text", Question: "note", To: "hello"}) {
		t.Fatalf("undo of typing %+v", res)
	}
	if got := textOf(t, ana, id); got != "X" {
		t.Fatalf("after the undo ana has %q, want %q", got, "X")
	}
	sees(ben, "ben to see the typing undone", func(d crdt.Draft) bool { return d.Questions["note"].Text == "X" })
	redo(t, ana, id)
	if got := textOf(t, ana, id); got != "heXllo" {
		t.Fatalf("after the redo ana has %q, want %q", got, "heXllo")
	}
	sees(ben, "ben to see the typing redone", func(d crdt.Draft) bool { return d.Questions["note"].Text == "heXllo" })

	// A save empties the stacks; then a why is a group.
	if res, err := ana.Submit(ctx, id); err != nil || !res[0].OK {
		t.Fatalf("submit %+v %v", res, err)
	}
	if st := ana.UndoState(id); st.Undo != nil || st.Redo != nil || st.Cleared != "save" {
		t.Fatalf("undo state after a save %+v", st)
	}
	if _, err := ana.SetWhy(ctx, id, "Cheapest."); err != nil {
		t.Fatal(err)
	}
	whyGroup := replica.UndoGroup{Kind: "why", To: "Cheapest."}
	if st := ana.UndoState(id); st.Undo == nil || *st.Undo != whyGroup || st.Cleared != "" {
		t.Fatalf("undo state after a why %+v", st)
	}
	if res := undo(t, ana, id); !res.Done || res.Group != whyGroup {
		t.Fatalf("undo of a why %+v", res)
	}
	if rec, _ := ana.Record(id); rec.Why != "" {
		t.Fatalf("why after its undo %q", rec.Why)
	}
	redo(t, ana, id)
	testutil.Eventually(t, "ben to see the why again", func() bool { rec, _ := ben.Record(id); return rec.Why == "Cheapest." })
	if _, err := ben.SetWhy(ctx, id, "Simplest."); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "ana to see ben's why", func() bool { rec, _ := ana.Record(id); return rec.Why == "Simplest." })
	if res := undo(t, ana, id); res.Done || res.By != "ben" {
		t.Fatalf("undo of a why ben replaced %+v", res)
	}
	if rec, _ := ana.Record(id); rec.Why != "Simplest." {
		t.Fatalf("ben's why became %q", rec.Why)
	}

	// A reopen empties them too; a discard likewise.
	if _, err := ana.SetWhy(ctx, id, "Ours."); err != nil {
		t.Fatal(err)
	}
	if _, err := ben.Reopen(ctx, id); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "ana's stacks to empty on the reopen", func() bool {
		st := ana.UndoState(id)
		return st.Undo == nil && st.Cleared == "reopen"
	})
	if err := ana.SetMark(id, "pick", "pg", "ops", marks.Partly); err != nil {
		t.Fatal(err)
	}
	flush(t, ana, id) // else the discard refuses it, with a reset
	if _, err := ben.Discard(ctx, id); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyWithin(t, testutil.Patience, "ana's stacks to empty on the discard", func() (bool, string) {
		st := ana.UndoState(id)
		rec, _ := ana.Record(id)
		return st.Undo == nil && st.Cleared == "discard", fmt.Sprintf("state %+v, record %s %d", st, rec.Status, rec.Generation)
	})
}

// TestUndoStacksKept: the stacks survive a reconnect and, with Dir, a
// restart; an undo made offline goes to the server on connecting.
func TestUndoStacksKept(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	dir := t.TempDir()
	ana := connect(t, s, "ana", replica.Options{Dir: dir})
	ready(t, ana, id)
	if err := ana.SetMark(id, "pick", "bolt", "cost", marks.Yes); err != nil {
		t.Fatal(err)
	}
	typeText(t, ana, id, 0, "draft one")
	undo(t, ana, id)
	typeText(t, ana, id, 0, "two")
	flush(t, ana, id)
	want := ana.UndoState(id)
	if want.Undo == nil || want.Undo.To != "two" {
		t.Fatalf("undo state %+v", want)
	}

	s.drop("ana")
	testutil.Eventually(t, "ana to reconnect", func() bool { return ana.Connected() })
	flush(t, ana, id)
	if got := ana.UndoState(id); !sameUndoState(got, want) {
		t.Fatalf("after a reconnect %+v, want %+v", got, want)
	}

	ana.Close()
	s.setDown("ana", true)
	again := connect(t, s, "ana", replica.Options{Dir: dir, Background: true})
	if got := again.UndoState(id); !sameUndoState(got, want) {
		t.Fatalf("after a restart %+v, want %+v", got, want)
	}
	// Offline, the restored stacks work.
	undo(t, again, id)
	undo(t, again, id)
	if d := draftOf(t, again, id); d.Questions["note"].Text != "" || d.Questions["pick"].Marks["bolt/cost"] != marks.Cleared {
		t.Fatalf("after the undos %+v", d.Questions)
	}
	redo(t, again, id)
	s.setDown("ana", false)
	flush(t, again, id)
	if d := s.draft(id); d.Questions["pick"].Marks["bolt/cost"] != marks.Yes || d.Questions["note"].Text != "" {
		t.Fatalf("server draft %+v", d.Questions)
	}
	// And the state after them is stored too.
	want = again.UndoState(id)
	again.Close()
	third := connect(t, s, "ana", replica.Options{Dir: dir, Background: true})
	if got := third.UndoState(id); !sameUndoState(got, want) || got.Redo == nil {
		t.Fatalf("after a second restart %+v, want %+v", got, want)
	}
}

func sameUndoState(a, b replica.UndoState) bool {
	eq := func(x, y *replica.UndoGroup) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return eq(a.Undo, b.Undo) && eq(a.Redo, b.Redo) && a.Cleared == b.Cleared
}

// TestUndoClearedByRebaseAndReset: taking a rebased document, or being
// reset by a refused edit, empties the stacks.
func TestUndoClearedByRebaseAndReset(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	ana := connect(t, s, "ana", replica.Options{})
	ready(t, ana, id)
	typeText(t, ana, id, 0, "abc")
	flush(t, ana, id)
	s.rebase(id, true)
	testutil.Eventually(t, "the stacks to empty on the rebase", func() bool {
		st := ana.UndoState(id)
		return st.Undo == nil && st.Cleared == "rebase"
	})
	if err := ana.SetMark(id, "pick", "bolt", "cost", marks.Yes); err != nil {
		t.Fatal(err)
	}
	flush(t, ana, id)

	s2 := newFakeServer(t)
	id2 := s2.create("k2")
	ben := connect(t, s2, "ben", replica.Options{})
	ready(t, ben, id2)
	if err := ben.SetMark(id2, "pick", "bolt", "cost", marks.Yes); err != nil {
		t.Fatal(err)
	}
	flush(t, ben, id2)
	s2.mu.Lock()
	s2.refuseEdits = true
	s2.mu.Unlock()
	if err := ben.SetMark(id2, "pick", "pg", "cost", marks.No); err != nil {
		t.Fatal(err)
	}
	var ref *question.Refusal
	if err := ben.Flush(ctxT(t), id2); !errors.As(err, &ref) || !ref.Reset {
		t.Fatalf("flush: %v, want a reset", err)
	}
	if st := ben.UndoState(id2); st.Undo != nil || st.Redo != nil || st.Cleared != "reset" {
		t.Fatalf("undo state after a reset %+v", st)
	}
}

func TestUndoRefusals(t *testing.T) {
	url := realServer(t)
	ctx := ctxT(t)
	ana, rita := dialAs(t, ctx, url, "ana", wire.Binary), dialAs(t, ctx, url, "rita", wire.Binary)
	recs, err := ana.Create(ctx, wire.Card{Key: "k", Definition: definition()})
	if err != nil {
		t.Fatal(err)
	}
	id := recs[0].ID
	ready(t, rita, id)
	for _, tc := range []struct {
		name string
		c    *replica.Client
		id   string
		redo bool
		want error
	}{
		{"nothing to undo", ana, id, false, replica.ErrNothingToUndo},
		{"nothing to redo", ana, id, true, replica.ErrNothingToRedo},
		{"no such decision", ana, "nope", false, question.ErrNotFound},
		{"a reader", rita, id, false, question.ErrForbidden},
	} {
		f := tc.c.Undo
		if tc.redo {
			f = tc.c.Redo
		}
		if _, err := f(ctx, tc.id); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if st := ana.UndoState("nope"); st != (replica.UndoState{}) {
		t.Fatalf("state of no decision %+v", st)
	}
	ana.Close()
	if _, err := ana.Undo(ctx, id); !errors.Is(err, replica.ErrClosed) {
		t.Fatalf("undo after close: %v", err)
	}
}

// TestUndoServerProperty: two members edit, undo and redo through the
// real server, each typing its own letters; an undo followed at once by a
// redo gives the member's draft as it was (when nothing of the other's
// can arrive in between), and once all is flushed both members hold the
// same draft.
func TestUndoServerProperty(t *testing.T) {
	hs := loginServer(t)
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		ctx := ctxT(t)
		// A few documents in turn: the server keeps at most 1,024 loaded.
		url := "ws" + strings.TrimPrefix(hs.URL, "http") + fmt.Sprintf("/?doc=undo-%d", run%64)
		dial := func(login string) *replica.Client {
			c, err := replica.Dial(ctx, url, replica.Options{Header: http.Header{"X-Login": {login}}, MinBackoff: minBackoff, MaxBackoff: maxBackoff})
			if err != nil {
				rt.Fatal(err)
			}
			return c
		}
		ana, ben := dial("ana"), dial("ben")
		defer ana.Close()
		defer ben.Close()
		recs, err := ana.Create(ctx, wire.Card{Key: fmt.Sprint("k", run), Definition: definition()})
		if err != nil {
			rt.Fatal(err)
		}
		id := recs[0].ID
		members := []*replica.Client{ana, ben}
		letters := []string{"aá", "bβ"}
		ready(t, ben, id)
		draft := func(c *replica.Client) crdt.Draft {
			d, _, err := c.Draft(id)
			if err != nil {
				rt.Fatal(err)
			}
			return d
		}
		// busy[i]: member i changed something the other may not have yet.
		busy := []bool{false, false}
		settle := func() {
			for _, c := range members {
				if err := c.Flush(ctx, id); err != nil {
					rt.Fatal(err)
				}
			}
			testutil.Eventually(t, "the drafts to converge", func() bool { return draft(ana).Equal(draft(ben)) })
			busy[0], busy[1] = false, false
		}
		for range rapid.IntRange(1, 20).Draw(rt, "steps") {
			who := rapid.IntRange(0, 1).Draw(rt, "who")
			c := members[who]
			op := rapid.IntRange(0, 6).Draw(rt, "op")
			busy[who] = busy[who] || op < 6
			switch op {
			case 0:
				m := rapid.SampledFrom([]marks.Mark{marks.Yes, marks.No, ""}).Draw(rt, "mark")
				if err := c.SetMark(id, "pick", rapid.SampledFrom([]string{"bolt", "pg"}).Draw(rt, "option"), "cost", m); err != nil {
					rt.Fatal(err)
				}
			case 1:
				if err := c.Choose(id, "pick", rapid.SampledFrom([]string{"bolt", "pg"}).Draw(rt, "option"), rapid.Bool().Draw(rt, "on")); err != nil {
					rt.Fatal(err)
				}
			case 2, 3:
				text := []rune(draft(c).Questions["note"].Text)
				pos := rapid.IntRange(0, len(text)).Draw(rt, "pos")
				del := rapid.IntRange(0, min(2, len(text)-pos)).Draw(rt, "del")
				ins := rapid.StringOfN(rapid.SampledFrom([]rune(letters[who])), 0, 3, -1).Draw(rt, "ins")
				// pos and del fit the text as read; the other's typing
				// may have arrived since.
				if err := c.SpliceText(id, "note", pos, del, ins); err != nil && !errors.Is(err, crdt.ErrInvalid) {
					rt.Fatal(err)
				}
			case 4, 5:
				redo := rapid.Bool().Draw(rt, "redo")
				f, back := c.Undo, c.Redo
				if redo {
					f, back = c.Redo, c.Undo
				}
				before := draft(c)
				res, err := f(ctx, id)
				if errors.Is(err, replica.ErrNothingToUndo) || errors.Is(err, replica.ErrNothingToRedo) {
					continue
				}
				if err != nil {
					rt.Fatal(err)
				}
				if res.Done && !busy[1-who] && rapid.Bool().Draw(rt, "at once back") {
					if _, err := back(ctx, id); err != nil {
						rt.Fatal(err)
					}
					if d := draft(c); !d.Equal(before) {
						rt.Fatalf("%+v and back gives %+v, want %+v", res.Group, d.Questions, before.Questions)
					}
				}
			default:
				settle()
			}
		}
		settle()
	})
}
