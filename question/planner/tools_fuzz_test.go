package planner_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/accord-crdt/accord/question"
)

// Every tool decodes any input without panicking: input that does not fit
// its schema is a refusal (invalid), never a crash, and a result is a JSON
// object that fits the tool's output schema.
func FuzzToolInput(f *testing.F) {
	e := newEnvOn(f)
	f.Cleanup(func() { e.d.Close() })
	defs := e.tools.Definitions()
	schemas := make([]*jsonschema.Resolved, len(defs))
	for i, d := range defs {
		schemas[i] = outputSchema(f, d)
	}
	for _, s := range []string{
		`{}`, `null`, `[]`, `{"cards":[{"revision":"r1","key":"k","blocks":["p-onb"],"question":"Q?","response":"text","options":[]}]}`,
		`{"revision":"r1","key":"k","question":"Q?","block":"h-ops"}`, `{"question":"Q?","options":[{"label":"a"}]}`,
		`{"revision":"r1","decisions":["d1"],"blocks":["p-onb"]}`, `{"decision":"d1","options":["o"]}`,
		`{"revision":"r1","edits":[{"op":"insert","after":"p-onb","kind":"paragraph","text":"x"}]}`,
		`{"blocks":[{"kind":"heading","text":"x"},{"id":"p-ops","kind":"paragraph","text":"y"}]}`,
		`{"cards":[{"key":5}]}`, `{"edits":[{"op":"delete"}]} trailing`, "\x00",
	} {
		for i := range defs {
			f.Add(i, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, tool int, input []byte) {
		if tool < 0 {
			tool = -tool
		}
		def, schema := defs[tool%len(defs)], schemas[tool%len(defs)]
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond) // ask blocks
		defer cancel()
		out, err := def.Handle(ctx, call, json.RawMessage(input))
		if err == nil {
			if merr := matches(schema, out); merr != nil {
				t.Fatalf("%s: the result does not fit its output schema: %v", def.Name, merr)
			}
			return
		}
		if !json.Valid(input) && question.ReasonOf(err) != question.Invalid {
			t.Fatalf("%s: input that is not JSON gave %v", def.Name, err)
		}
	})
}
