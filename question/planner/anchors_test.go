package planner_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

// W8: a scope holds at most 8 ordinary paragraphs, tables or diagrams in
// one run; decision cards between them are kept; any other block between
// them is an unrelated gap, refused as invalid with a message naming it.
func TestCheckPassageEdges(t *testing.T) {
	blocks := []planner.Block{
		{ID: "t", Kind: planner.Title},
		{ID: "h1", Kind: planner.Heading},
		{ID: "p1", Kind: planner.Paragraph},
		{ID: "p2", Kind: planner.Paragraph},
		{ID: "card-x", Kind: planner.Card, Decision: "x", Link: "p2"},
		{ID: "card-y", Kind: planner.Card, Decision: "y", Link: "p2"},
		{ID: "p3", Kind: planner.Table},
		{ID: "p4", Kind: planner.Diagram},
		{ID: "p5", Kind: planner.Paragraph},
		{ID: "p6", Kind: planner.Paragraph},
		{ID: "p7", Kind: planner.Paragraph},
		{ID: "p8", Kind: planner.Paragraph},
		{ID: "p9", Kind: planner.Paragraph},
		{ID: "h2", Kind: planner.Heading},
		{ID: "q1", Kind: planner.Paragraph},
		{ID: "dup", Kind: planner.Paragraph},
		{ID: "dup", Kind: planner.Paragraph},
	}
	for _, c := range []struct {
		name    string
		passage []string
		reason  question.Reason
		names   string // what the message must name
	}{
		{"one block", []string{"p5"}, "", ""},
		{"8 blocks with cards between", []string{"p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"}, "", ""},
		{"8 blocks, primary not first in the document", []string{"p8", "p2", "p3", "p4", "p5", "p6", "p7", "p1"}, "", ""},
		{"cards between two blocks", []string{"p2", "p3"}, "", ""},
		{"9 blocks", []string{"p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"}, question.TooMany, "at most 8"},
		{"a gap", []string{"p1", "p3"}, question.Invalid, "paragraph p2"},
		{"a heading between", []string{"p9", "q1"}, question.Invalid, "heading h2"},
		{"a heading in the passage", []string{"h2", "q1"}, question.Invalid, "h2 is a heading"},
		{"a card in the passage", []string{"card-x"}, question.Invalid, "card-x is a card"},
		{"a missing block", []string{"p1", "gone"}, question.Invalid, "gone is not in the document"},
		{"a duplicated block", []string{"dup"}, question.Invalid, "appears 2 times"},
		{"a block named twice", []string{"p1", "p1"}, question.Invalid, "named twice"},
		{"empty", nil, question.Invalid, "1 to 8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := planner.CheckPassage(blocks, c.passage)
			if got := question.ReasonOf(err); got != c.reason || (err == nil) != (c.reason == "") {
				t.Fatalf("got %v, want %q", err, c.reason)
			}
			if c.names != "" && !strings.Contains(err.Error(), c.names) {
				t.Fatalf("message %q does not name %q", err, c.names)
			}
		})
	}
}

// commits counts the store's commits and the records each one holds.
func commits(t *testing.T, e *env) *[][]string {
	t.Helper()
	var out [][]string
	e.store.(*memstore.Store).SetBeforeCommit(func(_ string, w *persist.Write) error {
		var ids []string
		for _, r := range w.Records {
			ids = append(ids, r.Key)
		}
		out = append(out, ids)
		return nil
	})
	return &out
}

// replace makes a foreground rewrite through edit_plan: the blocks are
// deleted and new paragraphs inserted after the block before them.
func (e *env) replace(after string, del []string, texts ...string) ([]string, []planner.PendingAnchor) {
	e.t.Helper()
	// One insert at a time: each goes after the one before it.
	var ids []string
	for i, txt := range texts {
		at := after
		if i > 0 {
			at = ids[i-1]
		}
		res, err := e.tools.EditPlan(bg, call, planner.EditPlanInput{Revision: e.host.Docs.Revision(doc), Edits: []planner.BlockEdit{{Op: planner.OpInsert, After: at, Kind: planner.Paragraph, Text: txt}}})
		if err != nil {
			e.t.Fatal(err)
		}
		ids = append(ids, res.Inserted...)
	}
	var pending []planner.PendingAnchor
	for _, id := range del {
		res, err := e.tools.EditPlan(bg, call, planner.EditPlanInput{Revision: e.host.Docs.Revision(doc), Edits: []planner.BlockEdit{{Op: planner.OpDelete, Block: id}}})
		if err != nil {
			e.t.Fatal(err)
		}
		pending = res.AnchorsPending
	}
	return ids, pending
}

func pendingIDs(p []planner.PendingAnchor) []string {
	var out []string
	for _, a := range p {
		out = append(out, a.Decision)
	}
	slices.Sort(out)
	return out
}

func cardOf(e *env, id string) (int, planner.Block) {
	for i, b := range e.host.Docs.Blocks(doc) {
		if b.Kind == planner.Card && b.Decision == id {
			return i, b
		}
	}
	e.t.Fatalf("no card of %s", id)
	return -1, planner.Block{}
}

func indexOf(e *env, id string) int {
	return slices.IndexFunc(e.host.Docs.Blocks(doc), func(b planner.Block) bool { return b.ID == id })
}

// W6, W7: after a foreground rewrite edit_plan reports anchors_pending;
// anchor_plan moves every decision sharing the scope to the reviewed
// passage together, in one durable commit, keeps receipts and jobs, and a
// later write-up writes into the new passage keeping the earlier answer.
func TestAnchorPlanReanchorsTheScopeTogether(t *testing.T) {
	e := newEnv(t)
	a := e.open("a", false, "p-onb", "p-reset")
	b := e.open("b", true, "p-reset")
	c := e.open("c", false, "p-ops")
	e.save(ana, a, "Invite links")
	if r := e.jobs(); r.Applied != 1 {
		t.Fatalf("report %+v", r)
	}
	ids, pending := e.replace("p-reset", []string{"p-onb", "p-reset"}, "People join from a link.", "Resets go by email or SMS.")
	if got := pendingIDs(pending); !slices.Equal(got, pendingIDs([]planner.PendingAnchor{{Decision: a}, {Decision: b}})) {
		t.Fatalf("anchors_pending = %+v", pending)
	}
	rev := e.host.Docs.Revision(doc)
	before, _ := e.host.Docs.Read(bg, doc)
	seen := commits(t, e)
	// Naming one decision of the scope moves the whole scope.
	out, err := e.tools.AnchorPlan(bg, call, planner.AnchorInput{Revision: rev, Decisions: []string{b}, Blocks: ids})
	if err != nil {
		t.Fatal(err)
	}
	if len(*seen) != 1 || !slices.Equal((*seen)[0], []string{a, b}) {
		t.Fatalf("commits = %v, want one holding %s and %s", *seen, a, b)
	}
	if len(out.Decisions) != 2 || len(out.AnchorsPending) != 0 {
		t.Fatalf("anchor_plan = %+v", out)
	}
	for _, id := range []string{a, b} {
		rec := e.record(id)
		if !slices.Equal(rec.Passage, ids) || rec.Reviewed != rev {
			t.Fatalf("%s: passage %v reviewed %q", id, rec.Passage, rec.Reviewed)
		}
		i, card := cardOf(e, id)
		if card.Link != ids[0] || i <= indexOf(e, ids[0]) || i > indexOf(e, ids[1]) {
			t.Fatalf("card of %s at %d linked to %s; blocks %+v", id, i, card.Link, e.host.Docs.Blocks(doc))
		}
		if got := e.host.Docs.Anchors(doc)[id]; !slices.Equal(got, ids) {
			t.Fatalf("write-up link of %s = %v", id, got)
		}
	}
	if rc := e.record(c); !slices.Equal(rc.Passage, []string{"p-ops"}) || rc.Reviewed != "" {
		t.Fatalf("an unrelated decision moved: %+v", rc.Passage)
	}
	after, _ := e.host.Docs.Read(bg, doc)
	if !slices.Equal(before.Receipts, after.Receipts) || e.record(a).WriteUp.State != question.JobDone {
		t.Fatalf("receipts %v -> %v", before.Receipts, after.Receipts)
	}
	// Anchoring again changes nothing and commits nothing.
	if _, err := e.tools.AnchorPlan(bg, call, planner.AnchorInput{Revision: rev, Decisions: []string{a, b}, Blocks: ids}); err != nil || len(*seen) != 1 {
		t.Fatalf("repeat: %v, %d commits", err, len(*seen))
	}
	// The next save writes into the new passage and keeps the earlier answer.
	e.save(ben, b, "SMS code")
	if r := e.jobs(); r.Applied != 1 {
		t.Fatalf("report %+v", r)
	}
	got := e.host.Docs.Text(doc, ids[0])
	if !strings.Contains(got, "Decided: Invite links (saved by @ana)") || strings.Contains(e.host.Docs.Text(doc, ids[1]), "Decided") {
		t.Fatalf("new passage: %q / %q", got, e.host.Docs.Text(doc, ids[1]))
	}
}

// W6: anchor_plan is refused, changing nothing, when the passage changed
// since the revision reviewed, is not one passage, or names decisions
// that cannot be anchored.
func TestAnchorPlanRefusals(t *testing.T) {
	e := newEnv(t)
	a := e.open("a", false, "p-onb")
	gone := e.open("gone", false, "p-ops")
	e.do(func(q *question.Authority) error { _, err := q.Discard(bg, ben, gone); return err })
	single, err := e.tools.OpenDecision(bg, call, planner.SingleDecision{Revision: e.host.Docs.Revision(doc), Key: "s", Question: "Who?"})
	if err != nil {
		t.Fatal(err)
	}
	rev := e.host.Docs.Revision(doc)
	if err := e.host.Docs.Edit(doc, "p-reset", "Changed after review."); err != nil {
		t.Fatal(err)
	}
	seen := commits(t, e)
	for _, c := range []struct {
		name   string
		in     planner.AnchorInput
		reason question.Reason
		names  string
	}{
		{"changed since review", planner.AnchorInput{Revision: rev, Decisions: []string{a}, Blocks: []string{"p-reset"}}, question.Stale, "p-reset changed"},
		{"a heading between", planner.AnchorInput{Revision: e.host.Docs.Revision(doc), Decisions: []string{a}, Blocks: []string{"intro", "p-onb"}}, question.Invalid, "heading h-onb"},
		{"a gap", planner.AnchorInput{Revision: e.host.Docs.Revision(doc), Decisions: []string{a}, Blocks: []string{"p-onb", "p-ops"}}, question.Invalid, "paragraph p-reset"},
		{"unknown decision", planner.AnchorInput{Revision: e.host.Docs.Revision(doc), Decisions: []string{"nope"}, Blocks: []string{"p-onb"}}, question.NotFound, "nope"},
		{"discarded", planner.AnchorInput{Revision: e.host.Docs.Revision(doc), Decisions: []string{gone}, Blocks: []string{"p-onb"}}, question.Resolved, "discarded"},
		{"no write scope", planner.AnchorInput{Revision: e.host.Docs.Revision(doc), Decisions: []string{single.ID}, Blocks: []string{"p-onb"}}, question.Invalid, "no write scope"},
		{"no revision", planner.AnchorInput{Decisions: []string{a}, Blocks: []string{"p-onb"}}, question.Invalid, "revision"},
		{"no decisions", planner.AnchorInput{Revision: rev, Blocks: []string{"p-onb"}}, question.Invalid, "decisions"},
		{"no blocks", planner.AnchorInput{Revision: rev, Decisions: []string{a}}, question.Invalid, "blocks"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.tools.AnchorPlan(bg, call, c.in)
			reason(t, err, c.reason)
			if !strings.Contains(err.Error(), c.names) {
				t.Fatalf("message %q does not name %q", err, c.names)
			}
		})
	}
	if len(*seen) != 0 || !slices.Equal(e.record(a).Passage, []string{"p-onb"}) {
		t.Fatalf("a refused anchor_plan changed something: %d commits, passage %v", len(*seen), e.record(a).Passage)
	}
}

// W9: re-anchoring never claims an unwritten answer was applied and never
// retries failed work by itself; Retry keeps the failed job's identity and
// writes the saved answers into the passage reviewed by anchor_plan.
func TestAnchorPlanThenRetryWritesTheNewPassage(t *testing.T) {
	e := newEnv(t)
	a := e.open("a", false, "p-ops")
	b := e.open("b", false, "p-ops")
	e.save(ana, a, "In shifts")
	ids, _ := e.replace("p-ops", []string{"p-ops"}, "We run it in two shifts.")
	if r := e.jobs(); r.Failed != 1 {
		t.Fatalf("the write-up into a deleted passage: %+v", r)
	}
	failed := e.record(a).WriteUp
	if failed.State != question.JobFailed || failed.ID != question.WriteUpJobID(a, 1) {
		t.Fatalf("job = %+v", failed)
	}
	e.save(ben, b, "Weekends too") // pending, unwritten, when re-anchored
	out, err := e.tools.AnchorPlan(bg, call, planner.AnchorInput{Revision: e.host.Docs.Revision(doc), Decisions: []string{a}, Blocks: ids})
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]question.JobState{}
	for _, d := range out.Decisions {
		states[d.ID] = d.WriteUp
	}
	if states[a] != question.JobFailed || states[b] != question.JobPending {
		t.Fatalf("anchor_plan reported %+v", out.Decisions)
	}
	snap, _ := e.host.Docs.Read(bg, doc)
	if len(snap.Receipts) != 0 {
		t.Fatalf("re-anchoring claimed answers as written: %v", snap.Receipts)
	}
	if rec := e.record(a).WriteUp; rec.State != question.JobFailed || rec.Attempts != 0 {
		t.Fatalf("re-anchoring changed the failed job: %+v", rec)
	}
	// The pending write-up of b runs into the new passage, with a's saved
	// answer; a's failed job is not retried by itself.
	if r := e.jobs(); r.Applied != 1 || r.Done != 1 {
		t.Fatalf("report %+v", r)
	}
	if rec := e.record(a).WriteUp; rec.State != question.JobFailed {
		t.Fatalf("the failed job ran by itself: %+v", rec)
	}
	if got := e.host.Docs.Text(doc, ids[0]); !strings.Contains(got, "Decided: Weekends too") {
		t.Fatalf("new passage = %q", got)
	}
	snap, _ = e.host.Docs.Read(bg, doc)
	if snap.Has(planner.Receipt{Decision: a, Generation: 1}) {
		t.Fatal("the failed job's answer was claimed as written")
	}
	// Retry: same id, the reviewed passage, the saved answers.
	e.do(func(q *question.Authority) error { _, err := q.RetryJob(bg, ana, a, failed.ID); return err })
	if r := e.jobs(); r.Applied != 1 {
		t.Fatalf("retry: %+v", r)
	}
	rec := e.record(a).WriteUp
	if rec.ID != failed.ID || rec.State != question.JobDone || rec.Attempts != 1 {
		t.Fatalf("retried job = %+v", rec)
	}
	got := e.host.Docs.Text(doc, ids[0])
	if !strings.Contains(got, "Decided: In shifts (saved by @ana)") || !strings.Contains(got, "Decided: Weekends too (saved by @ben)") {
		t.Fatalf("new passage after retry = %q", got)
	}
	snap, _ = e.host.Docs.Read(bg, doc)
	if !snap.Has(planner.Receipt{Decision: a, Generation: 1}) {
		t.Fatalf("receipts = %v", snap.Receipts)
	}
}
