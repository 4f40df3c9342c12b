package planner_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

// agentCall calls tool name as a transport does for an agent: args,
// encoded, are checked against the tool's input schema first (a misfit is
// refused invalid, naming it), then handed to Handle.
func agentCall(ctx context.Context, t *testing.T, e *env, name string, args any) (any, error) {
	t.Helper()
	d := tool(t, e, name)
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(d.InputSchema, &s); err != nil {
		t.Fatalf("input schema of %s: %v", name, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("input schema of %s: %v", name, err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if err := rs.Validate(v); err != nil {
		return nil, &question.Refusal{Reason: question.Invalid, Message: "the arguments do not fit the schema of " + name + ": " + err.Error()}
	}
	return d.Handle(ctx, call, raw)
}

// await calls await_answers, which must succeed.
func (e *env) await(ctx context.Context, t *testing.T, in planner.AwaitInput) planner.Awaited {
	t.Helper()
	out, err := e.tools.AwaitAnswers(ctx, call, in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// turnDue lets the quiet time pass and runs the driver's pass that makes
// the turn.
func (e *env) turnDue() {
	e.t.Helper()
	e.clock.Advance(5 * time.Second)
	e.step()
}

// The tools an agent is served: await_answers only with Turns, it and ask
// waiting for people (Long), await_answers alone taking the turns.
func TestAgentToolDefinitions(t *testing.T) {
	e := newEnv(t)
	long, takes := map[string]bool{}, map[string]bool{}
	for _, d := range e.tools.Definitions() {
		long[d.Name], takes[d.Name] = d.Long, d.TakesTurns
	}
	if !long["ask"] || !long["await_answers"] || long["read_plan"] || !takes["await_answers"] || takes["ask"] {
		t.Fatalf("long %v, takes turns %v", long, takes)
	}
	bare, err := planner.NewTools(planner.ToolsOptions{Authorities: e.local, Document: e.host.Docs})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range bare.Definitions() {
		if d.Name == "await_answers" || d.TakesTurns {
			t.Fatalf("tools without Turns serve %s", d.Name)
		}
	}
	_, err = bare.AwaitAnswers(bg, call, planner.AwaitInput{})
	reason(t, err, question.Unavailable)
	if s := planner.AgentInstructions(doc); !strings.Contains(s, "Planner of plan document "+doc) || !strings.Contains(s, "await_answers") {
		t.Fatalf("instructions %q", s)
	}
}

// A save reaches the agent's await_answers exactly once: the turn comes
// under its claim id; until the agent passes it back as done every call
// returns it again; afterwards no second turn comes.
func TestAwaitAnswersExactlyOnce(t *testing.T) {
	e := newEnv(t)
	id := e.open("onboarding", false, "p-onb")
	got := make(chan planner.Awaited, 1)
	go func() {
		out, err := e.tools.AwaitAnswers(bg, call, planner.AwaitInput{})
		if err != nil {
			t.Error(err)
		}
		got <- out
	}()
	e.save(ana, id, "Invite links")
	e.turnDue()
	var first planner.Awaited
	select {
	case first = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the save never reached await_answers")
	}
	if first.Turn == nil || first.Pending != 1 || len(first.Turn.Answers) != 1 || first.Turn.Answers[0].Decision != id || first.Turn.Answers[0].Questions[0].Answer != "Invite links" {
		t.Fatalf("turn = %+v", first)
	}
	turns := e.turnsRun()
	if len(turns) != 1 || turns[0].ID != first.Turn.ID || !strings.Contains(first.Turn.Notice, "@ana answered") || first.Turn.Prompt != turns[0].Prompt {
		t.Fatalf("Chat accepted %+v; the agent got %+v", turns, first.Turn)
	}
	// Not finished: the same turn again.
	if again := e.await(bg, t, planner.AwaitInput{}); again.Turn == nil || again.Turn.ID != first.Turn.ID {
		t.Fatalf("second call = %+v", again.Turn)
	}
	// Finished: nothing more.
	if next := e.await(bg, t, planner.AwaitInput{Done: first.Turn.ID, WaitSeconds: 1}); next.Turn != nil {
		t.Fatalf("a second turn came: %+v", next.Turn)
	}
	if n := len(e.turnsRun()); n != 1 || e.host.Chat.Running(doc) != 0 {
		t.Fatalf("%d turns, %d running", n, e.host.Chat.Running(doc))
	}
	if rows := e.rows(); len(rows) != 0 {
		t.Fatalf("rows left: %+v", rows)
	}
	// Finishing it again (a lost reply) does nothing.
	if next := e.await(bg, t, planner.AwaitInput{Done: first.Turn.ID, WaitSeconds: 1}); next.Turn != nil {
		t.Fatalf("finishing twice: %+v", next.Turn)
	}
}

// The agent's call is dropped right after the answers were claimed (and,
// in the second case, right after Chat accepted the turn): its next call
// gets the same turn under the same id, and no second turn is ever made.
func TestAwaitAnswersAfterADrop(t *testing.T) {
	for _, at := range []string{"after the claim", "after the accept"} {
		t.Run(at, func(t *testing.T) {
			e := newEnv(t)
			id := e.open("onboarding", false, "p-onb")
			ctx, drop := context.WithCancel(bg)
			hook := func(string, planner.Turn) error {
				drop()
				return nil
			}
			if at == "after the claim" {
				e.host.Chat.SetBeforeAccept(hook)
			} else {
				e.host.Chat.SetAfterAccept(hook)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = e.tools.AwaitAnswers(ctx, call, planner.AwaitInput{}) // dropped: whatever it returns is lost
			}()
			e.save(ana, id, "Invite links")
			e.turnDue()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the dropped call never returned")
			}
			e.host.Chat.SetBeforeAccept(nil)
			e.host.Chat.SetAfterAccept(nil)
			turns := e.turnsRun()
			if len(turns) != 1 {
				t.Fatalf("%d turns accepted", len(turns))
			}
			claimed := turns[0].ID
			for range 2 {
				got := e.await(bg, t, planner.AwaitInput{WaitSeconds: 5})
				if got.Turn == nil || got.Turn.ID != claimed || len(got.Turn.Answers) != 1 || got.Turn.Answers[0].Decision != id {
					t.Fatalf("after the drop: %+v, want turn %s", got.Turn, claimed)
				}
			}
			if next := e.await(bg, t, planner.AwaitInput{Done: claimed, WaitSeconds: 1}); next.Turn != nil {
				t.Fatalf("a second turn came: %+v", next.Turn)
			}
			e.turnDue()
			if n := len(e.turnsRun()); n != 1 {
				t.Fatalf("%d turns for one save", n)
			}
			if rows := e.rows(); len(rows) != 0 {
				t.Fatalf("rows left: %+v", rows)
			}
		})
	}
}

// Bad input from an agent is refused with the reason and the field or
// value it names, and changes nothing: a misfit of the tool's schema,
// a revision the plan never had (stale), a block it does not hold
// (invalid, never stood in for), a decision it does not hold.
func TestAgentBadInputIsRefused(t *testing.T) {
	e := newEnv(t)
	rev := e.host.Docs.Revision(doc)
	for _, c := range []struct {
		tool   string
		args   any
		reason question.Reason
		names  string
	}{
		{"open_decision", map[string]any{"revision": rev, "key": "k", "question": 5}, question.Invalid, "question"},
		{"open_decision", map[string]any{"revision": rev, "question": "Who?"}, question.Invalid, "key"},
		{"open_decision", map[string]any{"revision": rev, "key": "k", "question": "Who?", "colour": "red"}, question.Invalid, "colour"},
		{"open_decisions", map[string]any{"cards": []any{}}, question.Invalid, "cards"},
		{"open_decisions", map[string]any{"cards": []map[string]any{{"revision": rev, "key": "k", "blocks": []string{"nope"}, "question": "Q?", "response": "text", "options": []any{}}}}, question.Invalid, "block nope"},
		{"open_decisions", map[string]any{"cards": []map[string]any{{"revision": rev, "key": "k", "blocks": []string{"p-onb"}, "question": "Q?", "response": "text", "options": []map[string]any{{"label": "x"}}}}}, question.Invalid, "options"},
		{"open_decisions", map[string]any{"cards": []map[string]any{{"revision": "r0", "key": "k", "blocks": []string{"p-onb"}, "question": "Q?", "response": "text", "options": []any{}}}}, question.Stale, `"r0"`},
		{"open_decisions", map[string]any{"cards": []map[string]any{{"revision": "whatever", "key": "k", "blocks": []string{"p-onb"}, "question": "Q?", "response": "text", "options": []any{}}}}, question.Stale, `"whatever"`},
		{"open_decision", map[string]any{"revision": "whatever", "key": "k", "question": "Who?"}, question.Stale, `"whatever"`},
		{"open_decision", map[string]any{"revision": "r0", "key": "k", "question": "Who?", "block": "h-onb"}, question.Stale, `"r0"`},
		{"open_decision", map[string]any{"revision": rev, "key": "k", "question": "Who?", "block": "b3"}, question.Invalid, "block b3"},
		{"anchor_plan", map[string]any{"revision": "whatever", "decisions": []string{"d1"}, "blocks": []string{"p-onb"}}, question.Stale, `"whatever"`},
		{"anchor_plan", map[string]any{"revision": rev, "decisions": []string{"d1"}, "blocks": []string{"b3"}}, question.Invalid, "block b3"},
		{"edit_plan", map[string]any{"revision": "r0", "edits": []map[string]any{{"op": "edit", "block": "p-onb", "text": "x"}}}, question.Stale, `"r0"`},
		{"edit_plan", map[string]any{"revision": rev, "edits": []map[string]any{{"op": "insert", "after": "b3", "kind": "paragraph", "text": "x"}}}, question.Invalid, "b3"},
		{"anchor_plan", map[string]any{"revision": rev, "decisions": []string{"d1"}, "blocks": []string{}}, question.Invalid, "blocks"},
		{"anchor_plan", map[string]any{"revision": rev, "decisions": []string{"nope"}, "blocks": []string{"p-onb"}}, question.NotFound, "nope"},
		{"suggest_choice", map[string]any{"decision": "nope", "options": []string{"o"}}, question.NotFound, "nope"},
		{"edit_plan", map[string]any{"revision": rev, "edits": []map[string]any{{"op": "nope"}}}, question.Invalid, "op"},
		{"edit_plan", map[string]any{"revision": rev, "edits": []map[string]any{{"op": "delete", "block": "gone"}}}, question.Invalid, "edits[0].block"},
		{"update_document", map[string]any{"blocks": []map[string]any{{"kind": "paragraph", "text": "x", "id": "gone"}}}, question.Invalid, "blocks[0].id"},
		{"await_answers", map[string]any{"wait_seconds": -1}, question.Invalid, "wait_seconds"},
		{"await_answers", map[string]any{"wait_seconds": 5, "colour": "red"}, question.Invalid, "colour"},
		{"ask", map[string]any{"question": "Q?"}, question.Invalid, "options"},
	} {
		t.Run(c.tool+" "+c.names, func(t *testing.T) {
			_, err := agentCall(bg, t, e, c.tool, c.args)
			var r *question.Refusal
			if !errors.As(err, &r) {
				t.Fatalf("not a refusal: %v", err)
			}
			t.Log(r.Message)
			if r.Reason != c.reason || !strings.Contains(r.Message, c.names) {
				t.Fatalf("got %s %q, want %s naming %q", r.Reason, r.Message, c.reason, c.names)
			}
		})
	}
	var recs []question.Record
	e.do(func(a *question.Authority) error { recs = a.Records(); return nil })
	if len(recs) != 0 || e.host.Docs.Revision(doc) != rev {
		t.Fatalf("bad input changed something: %d records, revision %s", len(recs), e.host.Docs.Revision(doc))
	}
}

// Every tool an agent is served returns, for input that fits its schema,
// a result that encodes as a JSON object matching the output schema it
// declares. The walk calls every tool of Definitions, so a new tool must
// be added here.
func TestAgentResultsMatchTheirSchemas(t *testing.T) {
	e := newEnv(t)
	called := map[string]bool{}
	result := func(ctx context.Context, name string, args any, out any) {
		t.Helper()
		got, err := agentCall(ctx, t, e, name, args)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		called[name] = true
		if err := matches(outputSchema(t, tool(t, e, name)), got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		raw, _ := json.Marshal(got)
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatal(err)
		}
	}

	var plan planner.ReadPlanResult
	result(bg, "read_plan", map[string]any{}, &plan)
	var opened planner.OpenedDecisions
	result(bg, "open_decisions", map[string]any{"cards": []map[string]any{
		{"revision": plan.Revision, "key": "written", "blocks": []string{"p-onb"}, "question": "How should onboarding work?", "response": "text", "options": []any{}},
		{"revision": plan.Revision, "key": "choice", "blocks": []string{"p-onb"}, "question": "Which sign-up?", "options": []map[string]any{{"label": "Email"}, {"label": "SSO"}}},
	}}, &opened)
	if len(opened.Decisions) != 2 {
		t.Fatalf("open_decisions = %+v", opened)
	}
	written, choice := opened.Decisions[0].ID, opened.Decisions[1].ID
	var single planner.Opened
	result(bg, "open_decision", map[string]any{"revision": plan.Revision, "key": "owner", "question": "Who owns onboarding?", "block": "h-onb"}, &single)
	if single.Link != "h-onb" {
		t.Fatalf("open_decision = %+v", single)
	}
	option := e.record(choice).Definition.Questions[0].Options[0].ID
	var suggested planner.Suggested
	result(bg, "suggest_choice", map[string]any{"decision": choice, "options": []string{option}}, &suggested)

	result(bg, "read_plan", map[string]any{}, &plan)
	var edited planner.EditPlanResult
	result(bg, "edit_plan", map[string]any{"revision": plan.Revision, "edits": []map[string]any{{"op": "insert", "after": "p-onb", "kind": "paragraph", "text": "Invites come by email."}}}, &edited)
	var anchored planner.Anchored
	result(bg, "anchor_plan", map[string]any{"revision": edited.Revision, "decisions": []string{written}, "blocks": []string{"p-onb", edited.Inserted[0]}}, &anchored)
	if len(anchored.Decisions) != 2 { // the choice shares the written card's scope
		t.Fatalf("anchor_plan = %+v", anchored)
	}

	// ask blocks until ana saves its card; that answer goes to the ask.
	ask := tool(t, e, "ask")
	type answer struct {
		out any
		err error
	}
	asked := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		out, err := ask.Handle(ctx, call, json.RawMessage(`{"key": "region", "question": "Which region?", "response": "text", "options": []}`))
		asked <- answer{out, err}
	}()
	var askID string
	testutil.Eventually(t, "the ask to wait", func() bool {
		var waiting bool
		e.do(func(a *question.Authority) error {
			askID, waiting = a.Lookup("planner:ask:region")
			waiting = waiting && a.Awaited(askID)
			return nil
		})
		return waiting
	})
	e.save(ana, askID, "eu-west")
	select {
	case got := <-asked:
		if got.err != nil {
			t.Fatalf("ask: %v", got.err)
		}
		called["ask"] = true
		if err := matches(outputSchema(t, ask), got.out); err != nil {
			t.Fatalf("ask: %v", err)
		}
		a := got.out.(planner.Asked)
		if a.Status != "answered" || a.Answer == nil || a.Answer.Questions[0].Answer != "eu-west" {
			t.Fatalf("ask = %+v", a)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ask never returned")
	}

	// await_answers with a turn, then without one.
	e.save(ana, written, "Invite links")
	e.turnDue()
	var turn planner.Awaited
	result(bg, "await_answers", map[string]any{}, &turn)
	if turn.Turn == nil || turn.Turn.Answers[0].Decision != written {
		t.Fatalf("await_answers = %+v", turn)
	}
	var none planner.Awaited
	result(bg, "await_answers", map[string]any{"done": turn.Turn.ID, "wait_seconds": 1}, &none)
	if none.Turn != nil {
		t.Fatalf("await_answers after done = %+v", none)
	}

	var rewrite planner.UpdateDocumentResult
	result(bg, "update_document", map[string]any{"blocks": []map[string]any{
		{"id": "title", "kind": "title", "text": "Launch plan"}, {"kind": "heading", "text": "Sign-up"}, {"kind": "paragraph", "text": "People sign up with a link."},
	}}, &rewrite)
	if len(rewrite.Relinked) == 0 {
		t.Fatalf("update_document = %+v", rewrite)
	}

	var names []string
	for _, d := range e.tools.Definitions() {
		names = append(names, d.Name)
	}
	if slices.Sort(names); !slices.Equal(names, slices.Sorted(maps.Keys(called))) {
		t.Fatalf("the tools are %v; this test called %v", names, slices.Sorted(maps.Keys(called)))
	}
}
