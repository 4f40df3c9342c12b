package planner

// The JSON schemas of the tools' results (ToolDef.OutputSchema). Each is
// an object at the top, as MCP requires of structured tool results; lists
// are wrapped in a named field. They are written in the subset that JSON
// Schema draft-07 and 2020-12 read alike, since agents check results with
// either.

const (
	stringOut      = `{"type": "string"}`
	stringsOut     = `{"type": "array", "items": {"type": "string"}}`
	statusOut      = `{"type": "string", "enum": ["open", "settled", "discarded"]}`
	pendingOut     = `{"type": "object", "properties": {"decision": {"type": "string"}, "passage": ` + stringsOut + `, "reason": {"type": "string"}}, "required": ["decision", "passage", "reason"]}`
	pendingListOut = `{"type": "array", "items": ` + pendingOut + `, "description": "decisions whose passage an edit broke; review the passage and call anchor_plan for them"}`
)

const blockOut = `{
  "type": "object",
  "properties": {
    "id": {"type": "string"},
    "kind": {"type": "string", "enum": ["title", "heading", "paragraph", "table", "diagram", "card"]},
    "text": {"type": "string"},
    "decision": {"type": "string", "description": "a card's decision"},
    "link": {"type": "string", "description": "the block a card is linked to"}
  },
  "required": ["id", "kind"]
}`

const readPlanSchema = `{"type": "object", "properties": {}, "additionalProperties": false}`

var readPlanOutput = `{
  "type": "object",
  "properties": {
    "revision": {"type": "string", "description": "the plan's current revision; the other tools take it"},
    "blocks": {"type": "array", "items": ` + blockOut + `},
    "anchors_pending": ` + pendingListOut + `
  },
  "required": ["revision", "blocks", "anchors_pending"]
}`

var openedOutput = `{
  "type": "object",
  "properties": {
    "key": {"type": "string"},
    "id": {"type": "string", "description": "the decision's id"},
    "status": ` + statusOut + `,
    "repeated": {"type": "boolean", "description": "the key was seen before: this is that card"},
    "after": {"type": "string", "description": "the card sits after this block (absent: at the end)"},
    "link": {"type": "string", "description": "the block the card is linked to (absent: unlinked)"}
  },
  "required": ["key", "id", "status"]
}`

var openDecisionsOutput = `{
  "type": "object",
  "properties": {"decisions": {"type": "array", "items": ` + openedOutput + `, "description": "the cards, in the order given"}},
  "required": ["decisions"]
}`

// turnAnswerSchema is the JSON schema of a TurnAnswer, for the results
// that carry saved answers (ask and await_answers).
const turnAnswerSchema = `{
  "type": "object",
  "properties": {
    "decision": {"type": "string"},
    "generation": {"type": "integer"},
    "by": {"type": "string"},
    "savedAt": {"type": "string"},
    "questions": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "question": {"type": "string"},
          "written": {"type": "boolean"},
          "answer": {"type": "string"},
          "chosen": {"type": "array", "items": {"type": "object"}},
          "criteria": {"type": "array", "items": {"type": "object"}}
        },
        "required": ["question"]
      }
    },
    "passage": ` + stringsOut + `,
    "passageDeleted": {"type": "boolean"},
    "findings": {"type": "array", "items": {"type": "object"}}
  },
  "required": ["decision", "generation", "by", "savedAt", "questions"]
}`

var askOutput = `{
  "type": "object",
  "properties": {
    "id": {"type": "string"},
    "status": {"type": "string", "enum": ["answered", "discarded"]},
    "answer": ` + turnAnswerSchema + `
  },
  "required": ["id", "status"]
}`

const suggestOutput = `{"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}`

var anchorPlanOutput = `{
  "type": "object",
  "properties": {
    "revision": ` + stringOut + `,
    "passage": ` + stringsOut + `,
    "decisions": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {"id": {"type": "string"}, "status": ` + statusOut + `, "writeUp": {"type": "string"}},
        "required": ["id", "status"]
      }
    },
    "anchors_pending": ` + pendingListOut + `
  },
  "required": ["revision", "passage", "decisions", "anchors_pending"]
}`

var editPlanOutput = `{
  "type": "object",
  "properties": {
    "revision": {"type": "string", "description": "the plan's revision after the edit"},
    "inserted": {"type": "array", "items": {"type": "string"}, "description": "the ids of the inserted blocks, in edit order"},
    "anchors_pending": ` + pendingListOut + `
  },
  "required": ["revision", "inserted", "anchors_pending"]
}`

var updateDocumentOutput = `{
  "type": "object",
  "properties": {
    "revision": ` + stringOut + `,
    "relinked": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {"decision": {"type": "string"}, "after": {"type": "string"}, "link": {"type": "string"}},
        "required": ["decision", "after", "link"]
      }
    },
    "dropped": ` + stringsOut + `,
    "anchors_pending": ` + pendingListOut + `
  },
  "required": ["revision", "relinked", "dropped", "anchors_pending"]
}`
