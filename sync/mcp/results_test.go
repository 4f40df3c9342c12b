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
	result := func(name string, args, out any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := call(ctx, cs, name, args)
		check(name, res, err, out)
	}

	var echo echoed
	result("echo", map[string]any{"text": "hello"}, &echo)
	if echo.Doc != doc || echo.Text != "hello" {
		t.Fatalf("echo = %+v", echo)
	}
	r.q.put(doc, "one")
	r.q.put(doc, "two")
	var took, next, none taken
	result("take", map[string]any{}, &took)
	result("next", map[string]any{}, &next)
	if took.Item == nil || *took.Item != "one" || next.Item == nil || *next.Item != "two" {
		t.Fatalf("take = %+v, next = %+v", took, next)
	}
	result("next", map[string]any{"wait_seconds": 1}, &none) // the item is null
	if none.Item != nil {
		t.Fatalf("next after the queue ran out = %+v", none)
	}

	if names := slices.Sorted(maps.Keys(schemas)); !slices.Equal(names, slices.Sorted(maps.Keys(called))) {
		t.Fatalf("the server lists %v; this test called %v", names, slices.Sorted(maps.Keys(called)))
	}
}
