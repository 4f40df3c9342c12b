package planner_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

// read_plan returns what the host's document holds: the revision and the
// blocks the other tools name, cards included, and the decisions that owe
// a review.
func TestReadPlan(t *testing.T) {
	e := newEnv(t)
	id := e.open("reset", false, "p-onb", "p-reset")
	def := tool(t, e, "read_plan")
	out, err := def.Handle(bg, call, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	plan := out.(planner.ReadPlanResult)
	if plan.Revision != e.host.Docs.Revision(doc) || !slices.Equal(plan.Blocks, e.host.Docs.Blocks(doc)) || len(plan.AnchorsPending) != 0 {
		t.Fatalf("read_plan = %+v", plan)
	}
	if b, _ := e.card(id); !slices.Contains(plan.Blocks, b) || b.Kind != planner.Card {
		t.Fatalf("the card %+v is not in %+v", b, plan.Blocks)
	}
	// An edit that breaks the passage shows as anchors_pending.
	if _, err := e.tools.EditPlan(bg, call, planner.EditPlanInput{Revision: plan.Revision, Edits: []planner.BlockEdit{{Op: planner.OpDelete, Block: "p-reset"}}}); err != nil {
		t.Fatal(err)
	}
	if plan, err = e.tools.ReadPlan(bg, call); err != nil || len(plan.AnchorsPending) != 1 || plan.AnchorsPending[0].Decision != id {
		t.Fatalf("after the edit: %+v, %v", plan.AnchorsPending, err)
	}
	// An empty plan has blocks [], never null.
	empty, err := e.tools.ReadPlan(bg, planner.Call{Doc: "empty"})
	if raw, _ := json.Marshal(empty); err != nil || !strings.Contains(string(raw), `"blocks":[]`) {
		t.Fatalf("an empty plan reads %s, %v", raw, err)
	}
	_, err = def.Handle(bg, call, json.RawMessage(`{"doc":"other"}`))
	reason(t, err, question.Invalid)
	_, err = e.tools.ReadPlan(bg, planner.Call{})
	reason(t, err, question.Invalid)
}

// Every tool declares an output schema that is an object, and what it
// returns matches it; FuzzToolInput checks the results of random input
// the same way.
func TestToolOutputSchemasAreObjects(t *testing.T) {
	e := newEnv(t)
	for _, d := range e.tools.Definitions() {
		s := outputSchema(t, d)
		if s.Schema().Type != "object" {
			t.Fatalf("%s: output schema type %q", d.Name, s.Schema().Type)
		}
	}
	for name, input := range map[string]string{
		"read_plan":      `{}`,
		"open_decisions": `{"cards":[{"revision":"r1","key":"k","blocks":["p-onb"],"question":"Q?","response":"text","options":[]}]}`,
		"open_decision":  `{"revision":"r1","key":"s","question":"Q?","block":"h-ops"}`,
	} {
		d := tool(t, e, name)
		out, err := d.Handle(bg, call, json.RawMessage(input))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := matches(outputSchema(t, d), out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// outputSchema resolves a tool's output schema.
func outputSchema(t testing.TB, d planner.ToolDef) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(d.OutputSchema, &s); err != nil {
		t.Fatalf("%s: output schema: %v", d.Name, err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: output schema: %v", d.Name, err)
	}
	return rs
}

// matches reports whether a tool's result encodes as a JSON object that
// fits its output schema.
func matches(schema *jsonschema.Resolved, out any) error {
	raw, err := json.Marshal(out)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("the result is not a JSON object: %s", raw)
	}
	return schema.Validate(v)
}
