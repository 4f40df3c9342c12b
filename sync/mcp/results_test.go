package mcp_test

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/sync/mcp"
)

// outputSchemas lists the tools and resolves each one's declared output
// schema, failing unless it is there and describes an object.
func outputSchemas(t *testing.T, cs *sdk.ClientSession) map[string]*jsonschema.Resolved {
	t.Helper()
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*jsonschema.Resolved{}
	for _, tl := range list.Tools {
		raw, err := json.Marshal(tl.OutputSchema)
		if err != nil || tl.OutputSchema == nil {
			t.Fatalf("%s declares no output schema", tl.Name)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("output schema of %s: %v", tl.Name, err)
		}
		if s.Type != "object" {
			t.Fatalf("output schema of %s has type %q, want object", tl.Name, s.Type)
		}
		if out[tl.Name], err = s.Resolve(nil); err != nil {
			t.Fatalf("output schema of %s: %v", tl.Name, err)
		}
	}
	return out
}

// Every tool's result reaches the agent as structured content that is a
// JSON object (MCP requires one; the official TypeScript SDK throws on an
// array) matching the output schema the tool declares, with the same JSON
// as its text. The walk calls every tool the server lists, so a new tool
// must be added here.
func TestMCPResultsAreObjectsMatchingTheirSchemas(t *testing.T) {
	r := newRig(t)
	cs := r.mustAgent()
	schemas := outputSchemas(t, cs)
	called := map[string]bool{}
	// check checks the result of a tool call that must succeed, its
	// structured content above all, and decodes it into out.
	check := func(name string, res *sdk.CallToolResult, err error, out any) {
		t.Helper()
		called[name] = true
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			t.Fatalf("%s: tool error %s", name, text(res))
		}
		obj, isObject := res.StructuredContent.(map[string]any)
		if !isObject {
			t.Fatalf("%s: structured content %T is not a JSON object: %s", name, res.StructuredContent, text(res))
		}
		if err := schemas[name].Validate(obj); err != nil {
			t.Fatalf("%s: the result does not match the declared output schema: %v\n%s", name, err, text(res))
		}
		var fromText any
		if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil || !reflect.DeepEqual(fromText, any(obj)) {
			t.Fatalf("%s: the text %s is not the structured content %v (%v)", name, text(res), obj, err)
		}
		if err := json.Unmarshal([]byte(text(res)), out); err != nil {
			t.Fatal(err)
		}
	}
	result := func(ctx context.Context, name string, args, out any) {
		t.Helper()
		res, err := call(ctx, cs, name, args)
		check(name, res, err, out)
	}
	bg := context.Background()

	var plan planner.ReadPlanResult
	result(bg, "read_plan", map[string]any{}, &plan)
	if plan.Revision != r.host.Docs.Revision(doc) || len(plan.Blocks) != 3 || plan.Blocks[2].ID != "p-onb" {
		t.Fatalf("read_plan = %+v", plan)
	}
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
	var option string
	_ = r.local.Do(bg, doc, func(a *question.Authority) error {
		rec, _ := a.Record(choice)
		option = rec.Definition.Questions[0].Options[0].ID
		return nil
	})
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
	type answer struct {
		res *sdk.CallToolResult
		err error
	}
	asked := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		res, err := call(ctx, cs, "ask", map[string]any{"key": "region", "question": "Which region?", "response": "text", "options": []any{}})
		asked <- answer{res, err}
	}()
	var askID string
	eventually(t, "the ask to wait", func() bool {
		var waiting bool
		_ = r.local.Do(bg, doc, func(a *question.Authority) error {
			askID, waiting = a.Lookup("planner:ask:region")
			waiting = waiting && a.Awaited(askID)
			return nil
		})
		return waiting
	})
	r.save(askID, "eu-west")
	select {
	case got := <-asked:
		var a planner.Asked
		check("ask", got.res, got.err, &a)
		if a.Status != "answered" || a.Answer == nil || a.Answer.Questions[0].Answer != "eu-west" {
			t.Fatalf("ask = %+v", a)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ask never returned")
	}

	// await_answers with a turn, then without one.
	r.save(written, "Invite links")
	var turn mcp.Awaited
	result(bg, "await_answers", map[string]any{}, &turn)
	if turn.Turn == nil || turn.Turn.Answers[0].Decision != written {
		t.Fatalf("await_answers = %+v", turn)
	}
	var none mcp.Awaited
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

	if names := slices.Sorted(maps.Keys(schemas)); !slices.Equal(names, slices.Sorted(maps.Keys(called))) {
		t.Fatalf("the server lists %v; this test called %v", names, slices.Sorted(maps.Keys(called)))
	}
}
