package planner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

func (e *env) count() int {
	var n int
	e.do(func(a *question.Authority) error { n = len(a.Records()); return nil })
	return n
}

func (e *env) card(id string) (planner.Block, bool) {
	for _, b := range e.host.Docs.Blocks(doc) {
		if b.Kind == planner.Card && b.Decision == id {
			return b, true
		}
	}
	return planner.Block{}, false
}

// after returns the id of the block right before the decision's card.
func (e *env) after(id string) string {
	prev := ""
	for _, b := range e.host.Docs.Blocks(doc) {
		if b.Kind == planner.Card && b.Decision == id {
			return prev
		}
		if b.Kind != planner.Card {
			prev = b.ID
		}
	}
	return "<no card>"
}

func written(key string, blocks ...string) planner.CardInput {
	return planner.CardInput{Revision: "r1", Key: key, Blocks: blocks, Question: "How about " + key + "?", Response: "text", Options: []planner.Label{}}
}

// P1, P2, P3, P4: up to ten cards in one durable batch, each with its
// revision, key and passage, placed beside its primary block; written
// cards are exactly text/[]/false.
func TestOpenDecisionsBatch(t *testing.T) {
	e := newEnv(t)
	var cards []planner.CardInput
	for i := range question.MaxBatch {
		c := written(fmt.Sprintf("k%d", i), "p-onb", "p-reset")
		if i%2 == 1 {
			c = planner.CardInput{Revision: "r1", Key: fmt.Sprintf("k%d", i), Blocks: []string{"p-reset"}, Question: "Which reset?",
				Options: []planner.Label{{Label: "Email"}, {Label: "SMS"}}, Criteria: []planner.Label{{Label: "Cheap"}}}
		}
		cards = append(cards, c)
	}
	ctx, cancel := context.WithTimeout(bg, 2*time.Second) // P4: it never waits for answers
	defer cancel()
	out, err := e.tools.OpenDecisions(ctx, call, cards)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != question.MaxBatch || e.count() != question.MaxBatch {
		t.Fatalf("opened %d, stored %d", len(out), e.count())
	}
	for i, o := range out {
		rec := e.record(o.ID)
		if rec.Revision != "r1" || rec.Key != "planner:"+cards[i].Key || strings.Join(rec.Passage, ",") != strings.Join(cards[i].Blocks, ",") ||
			rec.Origin != question.FromPlanner || rec.Status != question.Open {
			t.Fatalf("card %d: %+v", i, rec)
		}
		q := rec.Definition.Questions[0]
		if i%2 == 0 && (q.Response != question.Text || q.Options == nil || len(q.Options) != 0 || q.Multiple) {
			t.Fatalf("written card %d: %+v", i, q)
		}
		if i%2 == 1 && (len(q.Criteria) != 1 || q.Criteria[0].ID == "") {
			t.Fatalf("choice card %d: %+v", i, q)
		}
		if b, ok := e.card(o.ID); !ok || b.Link != cards[i].Blocks[0] || e.after(o.ID) != cards[i].Blocks[0] {
			t.Fatalf("card %d placed %+v after %q", i, b, e.after(o.ID))
		}
	}
	_, err = e.tools.OpenDecisions(bg, call, append(cards, written("k10", "p-onb")))
	reason(t, err, question.TooMany)
	_, err = e.tools.OpenDecisions(bg, call, nil)
	reason(t, err, question.Invalid)
}

// P1, P3: a batch with one malformed card opens nothing, and says why.
func TestOpenDecisionsAllOrNone(t *testing.T) {
	e := newEnv(t)
	bad := map[string]planner.CardInput{
		"options missing":  {Revision: "r1", Key: "x", Blocks: []string{"p-onb"}, Question: "Q?", Response: "text"},
		"options given":    {Revision: "r1", Key: "x", Blocks: []string{"p-onb"}, Question: "Q?", Response: "text", Options: []planner.Label{{Label: "a"}}},
		"multiple":         {Revision: "r1", Key: "x", Blocks: []string{"p-onb"}, Question: "Q?", Response: "text", Options: []planner.Label{}, Multiple: true},
		"criteria":         {Revision: "r1", Key: "x", Blocks: []string{"p-onb"}, Question: "Q?", Response: "text", Options: []planner.Label{}, Criteria: []planner.Label{{Label: "c"}}},
		"unknown response": {Revision: "r1", Key: "x", Blocks: []string{"p-onb"}, Question: "Q?", Response: "number", Options: []planner.Label{}},
		"no blocks":        {Revision: "r1", Key: "x", Question: "Q?", Response: "text", Options: []planner.Label{}},
		"unknown block":    written("x", "nope"),
		"no revision":      {Key: "x", Blocks: []string{"p-onb"}, Question: "Q?", Response: "text", Options: []planner.Label{}},
		"no key":           written(" ", "p-onb"),
	}
	for name, c := range bad {
		_, err := e.tools.OpenDecisions(bg, call, []planner.CardInput{written("good", "p-onb"), c})
		var r *question.Refusal
		if !errors.As(err, &r) || r.Reason != question.Invalid || r.Message == "" {
			t.Fatalf("%s: got %v, want an invalid refusal with a reason", name, err)
		}
		if n := e.count(); n != 0 {
			t.Fatalf("%s: %d cards opened from a refused batch", name, n)
		}
	}
	// Through the tool definition, a written card without "options" is
	// refused, and with "options": [] accepted.
	def := tool(t, e, "open_decisions")
	_, err := def.Handle(bg, call, json.RawMessage(`{"cards":[{"revision":"r1","key":"j","blocks":["p-onb"],"question":"Q?","response":"text","multiple":false}]}`))
	reason(t, err, question.Invalid)
	out, err := def.Handle(bg, call, json.RawMessage(`{"cards":[{"revision":"r1","key":"j","blocks":["p-onb"],"question":"Q?","response":"text","options":[],"multiple":false}]}`))
	if err != nil || len(out.(planner.OpenedDecisions).Decisions) != 1 {
		t.Fatalf("tool call = %v, %v", out, err)
	}
}

func tool(t *testing.T, e *env, name string) planner.ToolDef {
	t.Helper()
	for _, d := range e.tools.Definitions() {
		if d.Name == name {
			var schema map[string]any
			if err := json.Unmarshal(d.InputSchema, &schema); err != nil {
				t.Fatalf("schema of %s: %v", name, err)
			}
			return d
		}
	}
	t.Fatalf("no tool %s", name)
	return planner.ToolDef{}
}

// P5, P6: a retried key returns the same card, also once saved or
// discarded; stopping the Planner withdraws nothing.
func TestOpenDecisionsRetryAndStop(t *testing.T) {
	e := newEnv(t)
	ctx, stop := context.WithCancel(bg)
	out, err := e.tools.OpenDecisions(ctx, call, []planner.CardInput{written("a", "p-onb"), written("b", "p-ops")})
	if err != nil {
		t.Fatal(err)
	}
	stop() // Stop Planner
	a, b := out[0].ID, out[1].ID
	if e.record(a).Status != question.Open || e.count() != 2 {
		t.Fatal("stopping the Planner withdrew a card")
	}
	e.save(ana, a, "Invite links")
	e.do(func(q *question.Authority) error { _, err := q.Discard(bg, ben, b); return err })
	again, err := e.tools.OpenDecisions(bg, call, []planner.CardInput{written("a", "gone-block"), written("b", "p-ops"), written("c", "p-ops")})
	if err != nil {
		t.Fatal(err)
	}
	if again[0].ID != a || !again[0].Repeated || again[0].Status != question.Settled ||
		again[1].ID != b || !again[1].Repeated || again[1].Status != question.Discarded || again[2].Repeated {
		t.Fatalf("retry = %+v", again)
	}
	if e.count() != 3 {
		t.Fatalf("%d cards after the retry", e.count())
	}
	// open_decision shares the keys: the same key is the same card.
	one, err := e.tools.OpenDecision(bg, call, planner.SingleDecision{Revision: "r1", Key: "a", Question: "Anything?"})
	if err != nil || one.ID != a || !one.Repeated {
		t.Fatalf("open_decision with a used key = %+v, %v", one, err)
	}
	// A stopped Planner's call still places committed cards.
	ctx, stop = context.WithCancel(bg)
	stopping := &stopOnPlace{Document: e.host.Docs, stop: stop}
	tools, _ := planner.NewTools(planner.ToolsOptions{Authorities: e.local, Document: stopping})
	out, err = tools.OpenDecisions(ctx, call, []planner.CardInput{written("d", "p-onb")})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.card(out[0].ID); !ok {
		t.Fatal("a card committed before Stop was not placed")
	}
}

// stopOnPlace cancels the Planner's call as the cards are being placed.
type stopOnPlace struct {
	planner.Document
	stop func()
}

func (s *stopOnPlace) Place(ctx context.Context, d string, ps []planner.Placement) error {
	s.stop()
	return s.Document.Place(ctx, d, ps)
}

// P7, P8: open_decision places its written card by the rules and cannot
// take criteria or an answer.
func TestOpenDecisionPlacement(t *testing.T) {
	e := newEnv(t)
	rev := e.host.Docs.Revision(doc)
	single := func(key, block string) planner.Opened {
		t.Helper()
		o, err := e.tools.OpenDecision(bg, call, planner.SingleDecision{Revision: rev, Key: key, Question: "Who owns " + key + "?", Context: "ctx", Block: block})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	named := single("named", "h-ops")
	if b, _ := e.card(named.ID); b.Link != "h-ops" || e.after(named.ID) != "h-ops" {
		t.Fatalf("named block: %+v after %s", b, e.after(named.ID))
	}
	rec := e.record(named.ID)
	if q := rec.Definition.Questions[0]; q.Response != question.Text || len(q.Options) != 0 || q.Multiple || q.Criteria != nil || q.Context != "ctx" ||
		len(rec.Passage) != 0 || rec.Revision != rev {
		t.Fatalf("open_decision record = %+v", rec)
	}
	if err := e.host.Docs.Edit(doc, "p-ops", "We run it, in shifts."); err != nil {
		t.Fatal(err)
	}
	changed := single("changed", "p-ops") // changed since rev: the first section
	if b, _ := e.card(changed.ID); b.Link != "h-onb" || e.after(changed.ID) != "h-onb" {
		t.Fatalf("changed block: %+v after %s", b, e.after(changed.ID))
	}
	if o := single("none", ""); e.after(o.ID) != "h-onb" {
		t.Fatalf("no block: after %s", e.after(o.ID))
	}
	// A block the plan does not hold is refused, naming it: the card is
	// never moved to the first section for it.
	before := e.count()
	_, err := e.tools.OpenDecision(bg, call, planner.SingleDecision{Revision: rev, Key: "missing", Question: "Q?", Block: "nope"})
	if reason(t, err, question.Invalid); !strings.Contains(err.Error(), "nope") || e.count() != before {
		t.Fatalf("missing block: %v, %d cards (was %d)", err, e.count(), before)
	}
	if again := single("named", "p-ops"); again.ID != named.ID || !again.Repeated {
		t.Fatalf("repeat = %+v", again)
	}

	// Without a heading after the title: the first paragraph.
	e.host.Docs.Set("prose", planner.Block{ID: "t", Kind: planner.Title, Text: "T"}, planner.Block{ID: "tbl", Kind: planner.Table},
		planner.Block{ID: "p1", Kind: planner.Paragraph, Text: "x"})
	o, err := e.tools.OpenDecision(bg, planner.Call{Doc: "prose"}, planner.SingleDecision{Revision: "r1", Key: "k", Question: "Q?"})
	if err != nil || o.Link != "p1" {
		t.Fatalf("prose only: %+v, %v", o, err)
	}
	// A title alone: no section; the card trails it, unlinked.
	e.host.Docs.Set("bare", planner.Block{ID: "t", Kind: planner.Title, Text: "T"})
	o, err = e.tools.OpenDecision(bg, planner.Call{Doc: "bare"}, planner.SingleDecision{Revision: "r1", Key: "k", Question: "Q?"})
	bl := e.host.Docs.Blocks("bare")
	if err != nil || o.Link != "" || len(bl) != 2 || bl[1].Kind != planner.Card || bl[1].Link != "" {
		t.Fatalf("title only: %+v %v, blocks %+v", o, err, bl)
	}
	// Headings without a title still count as the first section.
	if got := planner.FirstSection([]planner.Block{{ID: "p", Kind: planner.Paragraph}, {ID: "h", Kind: planner.Heading}}); got != "h" {
		t.Fatalf("FirstSection = %q", got)
	}

	def := tool(t, e, "open_decision")
	for _, input := range []string{
		`{"revision":"r1","key":"x","question":"Q?","answer":"yes"}`,
		`{"revision":"r1","key":"x","question":"Q?","criteria":[{"label":"Cheap"}]}`,
		`{"revision":"r1","key":"x","question":"Q?","confirm":true}`,
	} {
		_, err := def.Handle(bg, call, json.RawMessage(input))
		reason(t, err, question.Invalid)
	}
	if _, ok := e.do2(func(a *question.Authority) (string, bool) { return a.Lookup("planner:x") }); ok {
		t.Fatal("a refused open_decision opened a card")
	}
}

func (e *env) do2(fn func(a *question.Authority) (string, bool)) (string, bool) {
	var s string
	var ok bool
	e.do(func(a *question.Authority) error { s, ok = fn(a); return nil })
	return s, ok
}

// P9, T8: ask waits for a person's answer and gets it back; it starts no
// turn and leaves no row.
func TestAskWaitsAndGetsTheAnswer(t *testing.T) {
	e := newEnv(t)
	type result struct {
		out planner.Asked
		err error
	}
	got := make(chan result, 1)
	go func() {
		out, err := e.tools.Ask(bg, call, planner.AskInput{Key: "region", Question: "Which region?", Response: "text", Options: []planner.Label{}})
		got <- result{out, err}
	}()
	var id string
	testutil.Eventually(t, "the ask's card", func() bool {
		var ok bool
		id, ok = e.do2(func(a *question.Authority) (string, bool) {
			id, ok := a.Lookup("planner:ask:region")
			return id, ok && a.Awaited(id)
		})
		return ok
	})
	select {
	case r := <-got:
		t.Fatalf("ask returned before anyone answered: %+v", r)
	default:
	}
	e.save(ana, id, "eu-west")
	r := <-got
	if r.err != nil || r.out.Status != "answered" || r.out.Answer.Questions[0].Answer != "eu-west" || r.out.Answer.By != "ana" {
		t.Fatalf("ask = %+v, %v", r.out, r.err)
	}
	e.clock.Advance(time.Minute)
	e.step()
	if len(e.rows()) != 0 || len(e.turnsRun()) != 0 {
		t.Fatalf("a waited-for answer left rows %v and turns %v", e.rows(), e.turnsRun())
	}
	// Asking again with the key returns the saved answer at once.
	again, err := e.tools.Ask(bg, call, planner.AskInput{Key: "region", Question: "Which region?", Response: "text", Options: []planner.Label{}})
	if err != nil || again.ID != id || again.Answer.Questions[0].Answer != "eu-west" {
		t.Fatalf("repeated ask = %+v, %v", again, err)
	}
}

// P9, M7: a choice ask proposes criteria by label (ids minted by the
// server); a written ask must be exactly text/[]/false.
func TestAskShapes(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		_, err := e.tools.Ask(ctx, call, planner.AskInput{Key: "c", Question: "Which reset?", Options: []planner.Label{{Label: "Email"}, {Label: "SMS"}},
			Criteria: []planner.Label{{Label: "Cheap"}, {Label: "Easy reset"}}})
		done <- err
	}()
	var id string
	testutil.Eventually(t, "the choice ask", func() bool {
		var ok bool
		id, ok = e.do2(func(a *question.Authority) (string, bool) { return a.Lookup("planner:ask:c") })
		return ok
	})
	q := e.record(id).Definition.Questions[0]
	if q.Response != question.Choice || len(q.Criteria) != 2 || q.Criteria[0].ID == "" || q.Criteria[0].ID == q.Criteria[1].ID || q.Criteria[1].Label != "Easy reset" {
		t.Fatalf("choice ask = %+v", q)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("ask after its turn ended = %v", err)
	}
	for name, in := range map[string]planner.AskInput{
		"options missing": {Question: "Q?", Response: "text"},
		"options given":   {Question: "Q?", Response: "text", Options: []planner.Label{{Label: "a"}}},
		"multiple":        {Question: "Q?", Response: "text", Options: []planner.Label{}, Multiple: true},
		"criteria":        {Question: "Q?", Response: "text", Options: []planner.Label{}, Criteria: []planner.Label{{Label: "x"}}},
	} {
		_, err := e.tools.Ask(bg, call, in)
		reason(t, err, question.Invalid)
		_ = name
	}
	_, err := tool(t, e, "ask").Handle(bg, call, json.RawMessage(`{"question":"Q?","options":[{"label":"a"}],"marks":{"a/b":"yes"}}`))
	reason(t, err, question.Invalid)
}

// T1, T8: an ask whose turn has ended no longer takes the answer: the save
// goes to a turn of its own.
func TestAskAfterItsTurnEndedStartsATurn(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	_, err := e.tools.Ask(ctx, call, planner.AskInput{Key: "late", Question: "Which region?", Response: "text", Options: []planner.Label{}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ask = %v", err)
	}
	id, _ := e.do2(func(a *question.Authority) (string, bool) { return a.Lookup("planner:ask:late") })
	e.save(ana, id, "eu-west")
	e.clock.Advance(5 * time.Second)
	e.step()
	if turns := e.turnsRun(); len(turns) != 1 || turns[0].Answers[0].Decision != id {
		t.Fatalf("turns = %+v", turns)
	}
}

// P10: a turn focused on a decision's page cannot create decisions in the
// root document; it may in the page itself.
func TestChildFocusedTurnsCannotCreateInTheRoot(t *testing.T) {
	e := newEnv(t)
	child := planner.Call{Doc: doc, Focus: "question:d9"}
	_, err := e.tools.OpenDecisions(bg, child, []planner.CardInput{written("a", "p-onb")})
	reason(t, err, question.Forbidden)
	_, err = e.tools.OpenDecision(bg, child, planner.SingleDecision{Revision: "r1", Key: "b", Question: "Q?"})
	reason(t, err, question.Forbidden)
	_, err = e.tools.Ask(bg, child, planner.AskInput{Question: "Q?", Response: "text", Options: []planner.Label{}})
	reason(t, err, question.Forbidden)
	if e.count() != 0 {
		t.Fatal("a child-focused turn created a decision in the root")
	}
	e.host.Docs.Set("question:d9", planner.Block{ID: "n", Kind: planner.Paragraph, Text: "Notes"})
	if _, err := e.tools.OpenDecision(bg, planner.Call{Doc: "question:d9", Focus: "question:d9"}, planner.SingleDecision{Revision: "r1", Key: "b", Question: "Q?"}); err != nil {
		t.Fatalf("in its own page: %v", err)
	}
}

// M7, L4: the Planner's only draft input is an advisory suggestion; it
// never marks, chooses or saves.
func TestSuggestChoiceTool(t *testing.T) {
	e := newEnv(t)
	id := e.open("reset", true, "p-reset")
	rec := e.record(id)
	sms := rec.Definition.Questions[0].Options[1].ID
	def := tool(t, e, "suggest_choice")
	if strings.Contains(string(def.InputSchema), "mark") {
		t.Fatal("suggest_choice's schema mentions marks")
	}
	if _, err := def.Handle(bg, call, json.RawMessage(fmt.Sprintf(`{"decision":%q,"options":[%q]}`, id, sms))); err != nil {
		t.Fatal(err)
	}
	_, err := def.Handle(bg, call, json.RawMessage(fmt.Sprintf(`{"decision":%q,"options":[%q],"marks":{"x":"yes"}}`, id, sms)))
	reason(t, err, question.Invalid)
	rec = e.record(id)
	if rec.Suggested == nil || rec.Suggested.Choices[0] != sms || rec.Status != question.Open {
		t.Fatalf("after suggesting: %+v", rec)
	}
	var draftChoices int
	e.do(func(a *question.Authority) error {
		d, _, err := a.Draft(id)
		draftChoices = len(d.Questions["q1"].Choices) + len(d.Questions["q1"].Marks)
		return err
	})
	if draftChoices != 0 {
		t.Fatal("the suggestion wrote into the shared draft")
	}
	for _, d := range e.tools.Definitions() {
		if strings.Contains(d.Name, "save") || strings.Contains(d.Name, "submit") || strings.Contains(d.Name, "mark") {
			t.Fatalf("the Planner has a tool %s", d.Name)
		}
	}
}
