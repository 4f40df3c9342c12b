package planner

// The Planner's tools as an agent sees them: their definitions and JSON
// schemas, and the strict decoding of their input.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"

	"github.com/accord-crdt/accord/question"
)

// ToolDef is one tool as an agent sees it: a name, a description, the JSON
// schemas of its input and of its result, and the handler that runs it.
type ToolDef struct {
	Name        string
	Description string
	InputSchema json.RawMessage
	// OutputSchema is the JSON schema of what Handle returns. It is
	// always an object ("type": "object"): MCP carries a tool's result as
	// structured content, which must be a JSON object, and clients such as
	// the official TypeScript SDK check it against this schema.
	OutputSchema json.RawMessage
	// Long marks a call that waits for people, minutes at a time (ask,
	// await_answers): a transport keeps such a call alive, as MCP does
	// with progress notifications.
	Long bool
	// TakesTurns marks await_answers: while an agent's call of it runs,
	// and for a while after it returns, that agent takes the document's
	// Planner turns and counts as the attached Planner (Runtime.Attached).
	TakesTurns bool
	// Handle decodes input strictly (unknown fields are refused) and runs
	// the tool; a refusal is a *question.Refusal. Its result encodes as a
	// JSON object matching OutputSchema.
	Handle func(ctx context.Context, call Call, input json.RawMessage) (any, error)
}

// OpenedDecisions is what open_decisions returns: the cards, in the order
// they were given.
type OpenedDecisions struct {
	Decisions []Opened `json:"decisions"`
}

// Suggested is what suggest_choice returns.
type Suggested struct {
	OK bool `json:"ok"`
}

// Definitions returns the tools for a host's agent: read_plan,
// open_decisions, open_decision, ask, suggest_choice and anchor_plan,
// edit_plan and update_document when the host has an Editor, and
// await_answers when it has Turns.
func (t *Tools) Definitions() []ToolDef {
	type cards struct {
		Cards []CardInput `json:"cards"`
	}
	defs := []ToolDef{
		{
			Name:         "read_plan",
			Description:  "Read the plan document: its current revision and its blocks in order (id, kind, text; decision cards are kind \"card\"), and anchors_pending, the decisions that owe a review. The other tools take this revision and these block ids; read the plan again when a tool refuses with \"stale\".",
			InputSchema:  json.RawMessage(readPlanSchema),
			OutputSchema: json.RawMessage(readPlanOutput),
			Handle: handler(func(ctx context.Context, call Call, _ ReadPlanInput) (ReadPlanResult, error) {
				return t.ReadPlan(ctx, call)
			}),
		},
		{
			Name:         "open_decisions",
			Description:  "Open 1 to 10 written or choice decision cards beside your provisional prose, in one durable batch (all or none). Give each the plan revision read_plan returned, a stable key and its related block ids (primary first). Written cards use response \"text\", options [] and multiple false. Returns {\"decisions\": [...]} at once; retrying a key returns the same card. A revision the plan never had, or a block changed since it, is refused \"stale\"; a block the plan does not hold, \"invalid\".",
			InputSchema:  json.RawMessage(openDecisionsSchema),
			OutputSchema: json.RawMessage(openDecisionsOutput),
			Handle: handler(func(ctx context.Context, call Call, in cards) (OpenedDecisions, error) {
				out, err := t.OpenDecisions(ctx, call, in.Cards)
				return OpenedDecisions{Decisions: out}, err
			}),
		},
		{
			Name:         "open_decision",
			Description:  "Open one written decision and get its id at once. Give the plan revision read_plan returned, a stable request key, a concise question, optional context and optionally the one block it concerns (the card goes beside it; beside the first section if it changed since your revision). It cannot confirm an answer; people save it. A revision the plan never had is refused \"stale\"; a block the plan does not hold, \"invalid\".",
			InputSchema:  json.RawMessage(openDecisionSchema),
			OutputSchema: json.RawMessage(openedOutput),
			Handle:       handler(t.OpenDecision),
		},
		{
			Name:         "ask",
			Description:  "Ask people a question and wait for the saved answer. Omit response for a choice (options, optional criteria by label); use response \"text\" with options [] and multiple false for a written answer.",
			InputSchema:  json.RawMessage(askSchema),
			OutputSchema: json.RawMessage(askOutput),
			Long:         true,
			Handle:       handler(t.Ask),
		},
		{
			Name:         "suggest_choice",
			Description:  "Suggest, advisorily, which option of an open choice decision you would pick. It never chooses, marks or saves anything; only people save.",
			InputSchema:  json.RawMessage(suggestSchema),
			OutputSchema: json.RawMessage(suggestOutput),
			Handle: handler(func(ctx context.Context, call Call, in SuggestInput) (Suggested, error) {
				if err := t.Suggest(ctx, call, in); err != nil {
					return Suggested{}, err
				}
				return Suggested{OK: true}, nil
			}),
		},
		{
			Name:         "anchor_plan",
			Description:  "After you rewrote a passage that decisions are anchored to, review the replacement passage and anchor them to it: give the revision you reviewed it at, the decisions whose passage you replaced and the replacement's blocks (primary first; at most 8 paragraphs, tables or diagrams in one run, decision cards between them allowed). Every decision sharing their write scope moves with them, in one commit. It never marks an answer as written and never retries a failed write-up.",
			InputSchema:  json.RawMessage(anchorPlanSchema),
			OutputSchema: json.RawMessage(anchorPlanOutput),
			Handle:       handler(t.AnchorPlan),
		},
	}
	if t.opts.Editor != nil {
		defs = append(defs,
			ToolDef{
				Name:         "edit_plan",
				Description:  "Edit the plan document at its current revision (read_plan): edit a block's text, insert a block after another, or delete a block, all or none. Any other revision is refused \"stale\": read the plan again. The result has the new revision and lists anchors_pending: decisions whose passage your edit replaced; review the new passage and call anchor_plan for them.",
				InputSchema:  json.RawMessage(editPlanSchema),
				OutputSchema: json.RawMessage(editPlanOutput),
				Handle:       handler(t.EditPlan),
			},
			ToolDef{
				Name:         "update_document",
				Description:  "Replace the whole plan document, as a workflow run does. Give a block's id to keep that block; blocks without an id are new. Your own cards stay linked (to the nearest surviving heading when their block went); other cards' passages are reported in anchors_pending.",
				InputSchema:  json.RawMessage(updateDocumentSchema),
				OutputSchema: json.RawMessage(updateDocumentOutput),
				Handle:       handler(t.UpdateDocument),
			},
		)
	}
	if t.opts.Turns != nil {
		defs = append(defs, t.awaitDefinition())
	}
	return defs
}

// handler adapts a typed tool call to a ToolDef handler: the input is
// decoded strictly into In first.
func handler[In, Out any](fn func(ctx context.Context, call Call, in In) (Out, error)) func(context.Context, Call, json.RawMessage) (any, error) {
	return func(ctx context.Context, call Call, input json.RawMessage) (any, error) {
		var in In
		if err := decodeStrict(input, &in); err != nil {
			return nil, err
		}
		out, err := fn(ctx, call, in)
		if err != nil {
			return nil, err
		}
		return out, nil
	}
}

// decodeStrict decodes one JSON value, refusing unknown fields and
// trailing data.
func decodeStrict(input json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &question.Refusal{Reason: question.Invalid, Message: "the input does not fit the tool's schema: " + err.Error(), Err: err}
	}
	if _, err := dec.Token(); err != io.EOF {
		return refusef("the input holds more than one JSON value")
	}
	return nil
}

const labelSchema = `{"type":"object","properties":{"label":{"type":"string","minLength":1,"maxLength":200}},"required":["label"],"additionalProperties":false}`

var openDecisionsSchema = `{
  "type": "object",
  "properties": {
    "cards": {
      "type": "array", "minItems": 1, "maxItems": 10,
      "items": {
        "type": "object",
        "properties": {
          "revision": {"type": "string", "minLength": 1, "description": "the document revision you read"},
          "key": {"type": "string", "minLength": 1, "maxLength": 190, "description": "stable key; a retry returns the same card"},
          "blocks": {"type": "array", "minItems": 1, "maxItems": 8, "items": {"type": "string"}, "description": "related block addresses, primary first"},
          "question": {"type": "string", "minLength": 1},
          "context": {"type": "string"},
          "response": {"type": "string", "enum": ["text"]},
          "options": {"type": "array", "items": ` + labelSchema + `},
          "multiple": {"type": "boolean"},
          "criteria": {"type": "array", "maxItems": 5, "items": ` + labelSchema + `}
        },
        "required": ["revision", "key", "blocks", "question", "options"],
        "additionalProperties": false
      }
    }
  },
  "required": ["cards"],
  "additionalProperties": false
}`

const openDecisionSchema = `{
  "type": "object",
  "properties": {
    "revision": {"type": "string", "minLength": 1, "description": "the document revision you read"},
    "key": {"type": "string", "minLength": 1, "maxLength": 190, "description": "stable request key; repeating it returns the same card"},
    "question": {"type": "string", "minLength": 1},
    "context": {"type": "string"},
    "block": {"type": "string", "description": "the one block the question concerns, such as its section heading"}
  },
  "required": ["revision", "key", "question"],
  "additionalProperties": false
}`

var askSchema = `{
  "type": "object",
  "properties": {
    "key": {"type": "string", "maxLength": 180},
    "question": {"type": "string", "minLength": 1},
    "context": {"type": "string"},
    "response": {"type": "string", "enum": ["text"]},
    "options": {"type": "array", "items": ` + labelSchema + `},
    "multiple": {"type": "boolean"},
    "criteria": {"type": "array", "maxItems": 5, "items": ` + labelSchema + `, "description": "qualities the options are judged against; ids are minted by the server"}
  },
  "required": ["question", "options"],
  "additionalProperties": false
}`

const suggestSchema = `{
  "type": "object",
  "properties": {
    "decision": {"type": "string", "minLength": 1},
    "question": {"type": "string"},
    "options": {"type": "array", "minItems": 1, "items": {"type": "string"}, "description": "the option ids you would pick"}
  },
  "required": ["decision", "options"],
  "additionalProperties": false
}`

const anchorPlanSchema = `{
  "type": "object",
  "properties": {
    "revision": {"type": "string", "minLength": 1, "description": "the document revision at which you reviewed the replacement passage"},
    "decisions": {"type": "array", "minItems": 1, "maxItems": 50, "items": {"type": "string", "minLength": 1}, "description": "decisions whose passage you replaced; the rest of their write scope moves with them"},
    "blocks": {"type": "array", "minItems": 1, "maxItems": 8, "items": {"type": "string", "minLength": 1}, "description": "the replacement passage's blocks, primary first"}
  },
  "required": ["revision", "decisions", "blocks"],
  "additionalProperties": false
}`

const blockKindSchema = `{"type": "string", "enum": ["title", "heading", "paragraph", "table", "diagram"]}`

var editPlanSchema = `{
  "type": "object",
  "properties": {
    "revision": {"type": "string", "minLength": 1, "description": "the document revision you read"},
    "edits": {
      "type": "array", "minItems": 1, "maxItems": 100,
      "items": {
        "type": "object",
        "properties": {
          "op": {"type": "string", "enum": ["edit", "insert", "delete"]},
          "block": {"type": "string", "description": "the block to edit or delete"},
          "after": {"type": "string", "description": "insert after this block; omitted inserts first"},
          "kind": ` + blockKindSchema + `,
          "text": {"type": "string"}
        },
        "required": ["op"],
        "additionalProperties": false
      }
    }
  },
  "required": ["revision", "edits"],
  "additionalProperties": false
}`

var updateDocumentSchema = `{
  "type": "object",
  "properties": {
    "blocks": {
      "type": "array", "minItems": 1, "maxItems": 2000,
      "items": {
        "type": "object",
        "properties": {
          "id": {"type": "string", "description": "an existing block's id to keep it; omit for a new block"},
          "kind": ` + blockKindSchema + `,
          "text": {"type": "string"}
        },
        "required": ["kind", "text"],
        "additionalProperties": false
      }
    }
  },
  "required": ["blocks"],
  "additionalProperties": false
}`
