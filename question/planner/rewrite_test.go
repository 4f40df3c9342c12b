package planner_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

// openOther opens a card someone other than the Planner raised (a person,
// Chat or a workflow), with a passage, and places it in the document.
func (e *env) openOther(key string, origin question.Origin, passage ...string) string {
	e.t.Helper()
	var id string
	e.do(func(a *question.Authority) error {
		out, err := a.Create(bg, ben, []question.CreateRequest{{
			Key: string(origin) + ":" + key, Origin: origin, Revision: e.host.Docs.Revision(doc), Passage: passage,
			Definition: question.Definition{Questions: []question.Question{{Text: "What about " + key + "?", Response: question.Text, Options: []question.Option{}}}},
		}})
		if err != nil {
			return err
		}
		id = out[0].Record.ID
		return nil
	})
	if err := e.host.Docs.Place(bg, doc, []planner.Placement{{Decision: id, After: passage[0], Link: passage[0]}}); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// rewrite replaces the whole document through update_document.
func (e *env) rewrite(blocks ...planner.NewBlock) planner.UpdateDocumentResult {
	e.t.Helper()
	res, err := e.tools.UpdateDocument(bg, call, planner.UpdateDocumentInput{Blocks: blocks})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func keep(id string, kind planner.BlockKind) planner.NewBlock {
	return planner.NewBlock{ID: id, Kind: kind, Text: "kept " + id}
}

func fresh(kind planner.BlockKind, text string) planner.NewBlock {
	return planner.NewBlock{Kind: kind, Text: text}
}

// quiesce runs jobs and turns until nothing is left to do.
func (e *env) quiesce() {
	e.t.Helper()
	for range 6 {
		e.jobs()
		e.clock.Advance(planner.DefaultCap + 1)
		e.step()
		e.host.Chat.FinishAll(doc)
	}
}

// turnsOf counts the turns that carried an answer, with its passage left
// to the write-up (deferred) and without (own).
func turnsOf(turns []planner.Turn, id string, gen uint64) (deferred, own int) {
	for _, t := range turns {
		for _, a := range t.Answers {
			if a.Decision == id && a.Generation == gen {
				if len(a.Passage) > 0 {
					deferred++
				} else {
					own++
				}
			}
		}
	}
	return deferred, own
}

// W10: a whole-document rewrite outside any Planner turn keeps the
// Planner's cards linked (the surviving block, else the nearest surviving
// heading above, else the first section), drops (not fails) the write-up
// of a deleted passage and hands its answer to a turn of its own; other
// cards keep owing a review, which edit_plan reports.
func TestWholeDocumentRewrite(t *testing.T) {
	e := newEnv(t)
	a := e.open("a", false, "p-onb")   // passage deleted
	c := e.open("c", false, "p-ops")   // survives
	d := e.open("d", false, "p-reset") // rewritten into a new block, answered later
	single, err := e.tools.OpenDecision(bg, call, planner.SingleDecision{Revision: e.host.Docs.Revision(doc), Key: "s", Question: "Who runs it?", Block: "h-ops"})
	if err != nil {
		t.Fatal(err)
	}
	p := e.openOther("p", question.FromPerson, "p-reset")
	w := e.openOther("w", question.FromWorkflow, "intro")
	ch := e.openOther("ch", question.FromChat, "p-ops")
	e.save(ana, a, "Invite links")
	e.save(ana, c, "In shifts")
	e.clock.Advance(planner.DefaultCap + 1)
	e.step() // a's and c's answers reach a turn that leaves their passages to the write-ups
	e.host.Chat.FinishAll(doc)
	e.save(ben, p, "Reset by email")

	res := e.rewrite(
		keep("title", planner.Title),
		fresh(planner.Paragraph, "We launch in May."), // intro rewritten
		keep("h-onb", planner.Heading),
		fresh(planner.Paragraph, "Resets go by email."), // p-onb deleted, p-reset rewritten
		keep("p-ops", planner.Paragraph),                // h-ops deleted
	)
	if !slices.Equal(res.Dropped, []string{a, d}) {
		t.Fatalf("dropped = %v, want %s and %s", res.Dropped, a, d)
	}
	links := map[string]string{}
	for _, r := range res.Relinked {
		links[r.Decision] = r.Link
	}
	if len(links) != 3 || links[a] != "h-onb" || links[d] != "h-onb" || links[single.ID] != "h-onb" {
		t.Fatalf("relinked = %+v", res.Relinked)
	}
	for id, want := range map[string]string{a: "h-onb", d: "h-onb", single.ID: "h-onb", c: "p-ops", ch: "p-ops", p: "p-reset", w: "intro"} {
		if _, card := cardOf(e, id); card.Link != want {
			t.Fatalf("card of %s is linked to %q, want %q", id, card.Link, want)
		}
	}
	if got := pendingIDs(res.AnchorsPending); !slices.Equal(got, pendingIDs([]planner.PendingAnchor{{Decision: p}, {Decision: w}})) {
		t.Fatalf("anchors_pending = %+v", res.AnchorsPending)
	}
	ra := e.record(a)
	if len(ra.Passage) != 0 || ra.WriteUp.State != question.JobDropped || !strings.Contains(ra.WriteUp.Note, "rewrite") {
		t.Fatalf("a: passage %v, job %+v", ra.Passage, ra.WriteUp)
	}
	if rc := e.record(c); !slices.Equal(rc.Passage, []string{"p-ops"}) || rc.WriteUp.State != question.JobPending {
		t.Fatalf("c: passage %v, job %+v", rc.Passage, rc.WriteUp)
	}
	if rp := e.record(p); !slices.Equal(rp.Passage, []string{"p-reset"}) || rp.WriteUp.State != question.JobPending {
		t.Fatalf("a person's card changed: passage %v, job %+v", rp.Passage, rp.WriteUp)
	}
	// edit_plan keeps reporting what other cards owe.
	er, err := e.tools.EditPlan(bg, call, planner.EditPlanInput{Revision: e.host.Docs.Revision(doc), Edits: []planner.BlockEdit{{Op: planner.OpEdit, Block: "p-ops", Text: "We run it daily."}}})
	if err != nil || !slices.Equal(pendingIDs(er.AnchorsPending), pendingIDs(res.AnchorsPending)) {
		t.Fatalf("edit_plan: %+v, %v", er, err)
	}
	// d, answered after the rewrite, has no write-up; its answer is the
	// Planner's to act on.
	e.save(ana, d, "Email only")
	if rd := e.record(d); rd.WriteUp != nil {
		t.Fatalf("d queued a write-up into a deleted passage: %+v", rd.WriteUp)
	}
	e.quiesce()
	turns := e.turnsRun()
	for _, x := range []struct {
		id            string
		deferred, own int
	}{{a, 1, 1}, {c, 1, 0}, {d, 0, 1}} {
		if df, own := turnsOf(turns, x.id, 1); df != x.deferred || own != x.own {
			t.Fatalf("%s reached %d deferred and %d own turns, want %d and %d", x.id, df, own, x.deferred, x.own)
		}
	}
	for _, tn := range turns {
		for _, x := range tn.Answers {
			if x.Decision == a && len(x.Passage) == 0 && (!x.PassageDeleted || !strings.Contains(tn.Prompt, "deleted its passage")) {
				t.Fatalf("the own turn of %s does not say its passage was deleted: %+v\n%s", a, x, tn.Prompt)
			}
		}
	}
	if df, own := turnsOf(turns, p, 1); df+own != 0 {
		t.Fatal("a person's decision reached a Planner turn")
	}
	snap, _ := e.host.Docs.Read(bg, doc)
	if snap.Has(planner.Receipt{Decision: a, Generation: 1}) || !snap.Has(planner.Receipt{Decision: c, Generation: 1}) {
		t.Fatalf("receipts = %v", snap.Receipts)
	}
	if rp := e.record(p); rp.WriteUp.State != question.JobFailed {
		t.Fatalf("the person's write-up into its broken passage: %+v", rp.WriteUp)
	}
	// Repeating the rewrite's rules changes nothing more.
	before := e.host.Docs.Blocks(doc)
	again, err := e.tools.Rewritten(bg, doc, before, before)
	if err != nil || len(again.Dropped) != 0 || len(again.Relinked) != 0 || !slices.Equal(e.host.Docs.Blocks(doc), before) {
		t.Fatalf("again: %+v, %v", again, err)
	}
}

// W10, as a property: random whole-document rewrites (inserts, deletes,
// rewrites and moves of blocks) among saves, reopens, write-ups and turns.
// After each rewrite the Planner's cards follow the rules and other cards
// are untouched; at the end no answer of the Planner's cards is lost or
// carried out twice: each final answer reaches a turn; it is written by
// its write-up, or handed to a turn of its own (its write-up dropped, or
// none), or its write-up failed and waits for a Retry; a turn that left it
// to a write-up is followed by one of its own only when that write-up was
// dropped unwritten; no turn carries an answer twice.
func TestRewriteProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		e := newEnvOn(rt)
		defer e.d.Close()
		n := 0
		prose := func() []string {
			var out []string
			for _, b := range e.host.Docs.Blocks(doc) {
				if b.Kind.Prose() {
					out = append(out, b.ID)
				}
			}
			return out
		}
		passage := func(rt *rapid.T) []string {
			ps := prose()
			if len(ps) == 0 {
				return nil
			}
			first := rapid.SampledFrom(ps).Draw(rt, "block")
			out := []string{first}
			blocks := e.host.Docs.Blocks(doc)
			i := slices.IndexFunc(blocks, func(b planner.Block) bool { return b.ID == first })
			for j := i + 1; j < len(blocks); j++ {
				if blocks[j].Kind == planner.Card {
					continue
				}
				if blocks[j].Kind.Prose() && rapid.Bool().Draw(rt, "two") {
					out = append(out, blocks[j].ID)
				}
				break
			}
			return out
		}
		byStatus := func(s question.Status) []string {
			var ids []string
			e.do(func(a *question.Authority) error {
				for _, r := range a.Records() {
					if r.Status == s && !strings.HasPrefix(r.Key, "planner:ask:") {
						ids = append(ids, r.ID)
					}
				}
				return nil
			})
			return ids
		}
		rt.Repeat(map[string]func(*rapid.T){
			"open": func(rt *rapid.T) {
				if p := passage(rt); p != nil {
					n++
					e.open(fmt.Sprintf("k%d", n), rapid.Bool().Draw(rt, "choice"), p...)
				}
			},
			"openOther": func(rt *rapid.T) {
				if p := passage(rt); p != nil {
					n++
					e.openOther(fmt.Sprintf("o%d", n), rapid.SampledFrom([]question.Origin{question.FromPerson, question.FromChat, question.FromWorkflow}).Draw(rt, "origin"), p...)
				}
			},
			"openSingle": func(rt *rapid.T) {
				var heads []string
				for _, b := range e.host.Docs.Blocks(doc) {
					if b.Kind != planner.Card {
						heads = append(heads, b.ID)
					}
				}
				n++
				in := planner.SingleDecision{Revision: e.host.Docs.Revision(doc), Key: fmt.Sprintf("s%d", n), Question: "Who?"}
				if len(heads) > 0 {
					in.Block = rapid.SampledFrom(heads).Draw(rt, "block")
				}
				if _, err := e.tools.OpenDecision(bg, call, in); err != nil {
					rt.Fatal(err)
				}
			},
			"save": func(rt *rapid.T) {
				ids := byStatus(question.Open)
				if len(ids) == 0 {
					rt.Skip("nothing open")
				}
				id := rapid.SampledFrom(ids).Draw(rt, "decision")
				rec := e.record(id)
				answer := "Email link"
				if rec.Definition.Questions[0].Written() {
					answer = fmt.Sprintf("answer %d", rec.Generation)
				}
				e.save(ana, id, answer)
			},
			"reopen": func(rt *rapid.T) {
				ids := byStatus(question.Settled)
				if len(ids) == 0 {
					rt.Skip("nothing settled")
				}
				e.reopen(rapid.SampledFrom(ids).Draw(rt, "decision"))
			},
			"jobs": func(rt *rapid.T) {
				// Not at every turn: answers then wait in their write-ups
				// when a rewrite comes.
				if rapid.IntRange(0, 3).Draw(rt, "run jobs") == 0 {
					e.jobs()
				}
			},
			"turn": func(rt *rapid.T) {
				e.clock.Advance(planner.DefaultCap + 1)
				e.step()
				e.host.Chat.FinishAll(doc)
			},
			"rewrite": func(rt *rapid.T) { e.checkRewrite(rt) },
		})
		e.quiesce()
		e.checkNoAnswerLost(rt)
	})
}

// checkRewrite makes a random whole-document rewrite and checks the W10
// rules against the state before it.
func (e *env) checkRewrite(rt *rapid.T) {
	old := e.host.Docs.Blocks(doc)
	var next []planner.NewBlock
	for _, b := range old {
		if b.Kind != planner.Card {
			next = append(next, planner.NewBlock{ID: b.ID, Kind: b.Kind, Text: b.Text})
		}
	}
	kinds := []planner.BlockKind{planner.Heading, planner.Paragraph, planner.Paragraph, planner.Table, planner.Diagram}
	for i, ops := 0, rapid.IntRange(1, 4).Draw(rt, "ops"); i < ops; i++ {
		op := rapid.SampledFrom([]string{"insert", "delete", "rewrite", "move"}).Draw(rt, "op")
		if len(next) == 0 {
			op = "insert"
		}
		switch op {
		case "insert":
			at := rapid.IntRange(0, len(next)).Draw(rt, "at")
			next = slices.Insert(next, at, planner.NewBlock{Kind: rapid.SampledFrom(kinds).Draw(rt, "kind"), Text: "new"})
		case "delete":
			at := rapid.IntRange(0, len(next)-1).Draw(rt, "at")
			next = slices.Delete(next, at, at+1)
		case "rewrite":
			at := rapid.IntRange(0, len(next)-1).Draw(rt, "at")
			next[at] = planner.NewBlock{Kind: next[at].Kind, Text: "rewritten"}
		case "move":
			from := rapid.IntRange(0, len(next)-1).Draw(rt, "from")
			b := next[from]
			next = slices.Delete(next, from, from+1)
			next = slices.Insert(next, rapid.IntRange(0, len(next)).Draw(rt, "to"), b)
		}
	}
	if len(next) == 0 {
		next = append(next, planner.NewBlock{Kind: planner.Paragraph, Text: "new"})
	}
	var before []question.Record
	e.do(func(a *question.Authority) error { before = a.Records(); return nil })
	links := map[string]string{}
	for _, b := range old {
		if b.Kind == planner.Card {
			links[b.Decision] = b.Link
		}
	}
	res := e.rewrite(next...)
	now := e.host.Docs.Blocks(doc)
	alive := map[string]bool{}
	for _, b := range now {
		if b.Kind != planner.Card {
			alive[b.ID] = true
		}
	}
	pending := map[string]bool{}
	for _, p := range res.AnchorsPending {
		pending[p.Decision] = true
	}
	for _, r0 := range before {
		r := e.record(r0.ID)
		_, card := cardOf(e, r0.ID)
		broken := len(r0.Passage) > 0 && planner.CheckPassage(now, r0.Passage) != nil
		if r0.Origin != question.FromPlanner || r0.Status == question.Discarded {
			if !slices.Equal(r.Passage, r0.Passage) || card.Link != links[r0.ID] || !sameJob(r.WriteUp, r0.WriteUp) {
				rt.Fatalf("a %s card changed: %v -> %v, link %q -> %q", r0.Origin, r0.Passage, r.Passage, links[r0.ID], card.Link)
			}
			if r0.Status != question.Discarded && pending[r0.ID] != broken {
				rt.Fatalf("%s owes a review: %v, reported %v", r0.ID, broken, pending[r0.ID])
			}
			continue
		}
		if pending[r0.ID] {
			rt.Fatalf("the Planner's card %s was left owing a review", r0.ID)
		}
		want := links[r0.ID]
		if want != "" && !alive[want] {
			want = ""
			i := slices.IndexFunc(old, func(b planner.Block) bool { return b.ID == links[r0.ID] && b.Kind != planner.Card })
			for j := i - 1; j >= 0; j-- {
				if old[j].Kind == planner.Heading && alive[old[j].ID] {
					want = old[j].ID
					break
				}
			}
			if want == "" {
				want = planner.FirstSection(now)
			}
		}
		if card.Link != want {
			rt.Fatalf("card of %s linked to %q, want %q (was %q)", r0.ID, card.Link, want, links[r0.ID])
		}
		if want != "" {
			i, _ := cardOf(e, r0.ID)
			j := i - 1
			for j >= 0 && now[j].Kind == planner.Card {
				j--
			}
			if j < 0 || now[j].ID != want {
				rt.Fatalf("card of %s is not beside %s", r0.ID, want)
			}
		}
		switch {
		case broken:
			if len(r.Passage) != 0 {
				rt.Fatalf("%s kept its deleted passage %v", r0.ID, r.Passage)
			}
			if j := r0.WriteUp; j != nil && (j.State == question.JobPending || j.State == question.JobFailed) && r.WriteUp.State != question.JobDropped {
				rt.Fatalf("%s's write-up is %s, want dropped", r0.ID, r.WriteUp.State)
			}
		default:
			if !slices.Equal(r.Passage, r0.Passage) || !sameJob(r.WriteUp, r0.WriteUp) {
				rt.Fatalf("%s changed though its passage survived", r0.ID)
			}
		}
	}
}

func sameJob(x, y *question.Job) bool {
	if x == nil || y == nil {
		return x == y
	}
	return *x == *y
}

// checkNoAnswerLost checks, once everything ran, that every final answer
// of a Planner's card reached the Planner and was carried out exactly
// once, and that no turn carried an answer twice.
func (e *env) checkNoAnswerLost(rt *rapid.T) {
	turns := e.turnsRun()
	type key struct {
		id  string
		gen uint64
	}
	first := map[key]string{} // how an answer first reached a turn
	for _, t := range turns {
		for _, a := range t.Answers {
			k := key{a.Decision, a.Generation}
			how := "own"
			if len(a.Passage) > 0 {
				how = "deferred"
			}
			switch prev := first[k]; {
			case prev == "":
				first[k] = how
			case prev == "deferred" && how == "own":
				first[k] = "deferred+own"
			default:
				rt.Fatalf("answer %v reached turns %s, then %s", k, prev, how)
			}
		}
	}
	snap, _ := e.host.Docs.Read(bg, doc)
	for _, r := range e.records() {
		if r.Origin != question.FromPlanner || r.Status != question.Settled || strings.HasPrefix(r.Key, "planner:ask:") {
			continue
		}
		g := r.Answer.Generation
		deferred, own := turnsOf(turns, r.ID, g)
		if deferred+own == 0 {
			rt.Fatalf("the answer of %s never reached the Planner", r.ID)
		}
		written := snap.Has(planner.Receipt{Decision: r.ID, Generation: g})
		var ok bool
		switch j := r.WriteUp; {
		case j == nil: // saved without a passage: the Planner acts on it
			ok = own == 1 && deferred == 0 && !written
		case j.State == question.JobDropped: // its passage was deleted before it was written
			ok = own == 1 && !written
		case j.State == question.JobDone: // written; a turn after its passage was deleted is its own
			ok = written && (own == 0 || len(r.Passage) == 0)
		case j.State == question.JobFailed: // waits for a Retry
			ok = own == 0 && !written
		}
		if !ok {
			rt.Fatalf("the answer of %s: %d deferred and %d own turns, written %v, job %+v, passage %v", r.ID, deferred, own, written, r.WriteUp, r.Passage)
		}
	}
	for _, row := range e.rows() {
		if row.State != question.RowStale {
			rt.Fatalf("a row was left behind: %+v", row)
		}
	}
}

func (e *env) records() []question.Record {
	var recs []question.Record
	e.do(func(a *question.Authority) error { recs = a.Records(); return nil })
	return recs
}

// W10: a rewrite that lands while a turn holds the answer's claim (its
// content fixed at the claim, with the passage left to the write-up)
// still hands the answer to a turn of its own, once, whether or not Chat
// had accepted the claimed turn.
func TestRewriteWhileATurnIsClaimed(t *testing.T) {
	for _, accepted := range []bool{false, true} {
		t.Run(fmt.Sprintf("accepted %v", accepted), func(t *testing.T) {
			e := newEnv(t)
			a := e.open("a", false, "p-onb")
			e.save(ana, a, "Invite links")
			e.do(func(q *question.Authority) error { _, err := q.ClaimAnswers(bg, "turn-x", []string{a}); return err })
			if accepted {
				ans, _ := planner.AnswerOf(e.record(a))
				if err := e.host.Chat.Accept(bg, doc, planner.Turn{ID: "turn-x", Doc: doc, Owner: "ana", Answers: []planner.TurnAnswer{ans}}); err != nil {
					t.Fatal(err)
				}
				e.host.Chat.FinishAll(doc)
			}
			res := e.rewrite(keep("title", planner.Title), keep("h-onb", planner.Heading), keep("p-ops", planner.Paragraph))
			if !slices.Equal(res.Dropped, []string{a}) {
				t.Fatalf("dropped = %v", res.Dropped)
			}
			e.quiesce()
			deferred, own := turnsOf(e.turnsRun(), a, 1)
			if want := map[bool]int{false: 0, true: 1}[accepted]; deferred != want || own != 1 {
				t.Fatalf("%d deferred and %d own turns, want %d and 1", deferred, own, want)
			}
			if rows := e.rows(); len(rows) != 0 {
				t.Fatalf("rows left: %+v", rows)
			}
		})
	}
}
