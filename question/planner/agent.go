package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/accord-crdt/accord/question"
)

// AgentTurns is the host's Chat as an agent outside the host, the remote
// Planner, takes its turns: the turns Chat accepted that have not
// finished (oldest first), Finish, which ends one (false if it was not
// running), and Changed, a channel closed at the next accept or finish of
// a document. memhost.Chat implements it.
type AgentTurns interface {
	Pending(doc string) []Turn
	Finish(doc, id string) bool
	Changed(doc string) <-chan struct{}
}

// AwaitInput is the input of await_answers.
type AwaitInput struct {
	// Done is the id of the turn the agent finished; that turn ends first.
	Done string `json:"done,omitempty"`
	// WaitSeconds bounds the wait; 0 waits until a turn comes or the call
	// is cancelled. On timeout the result has no turn.
	WaitSeconds int `json:"wait_seconds,omitempty"`
}

// Awaited is what await_answers returns.
type Awaited struct {
	// Turn is the next turn; nil when the wait timed out.
	Turn *TurnOut `json:"turn"`
	// Pending counts the turns waiting, this one included.
	Pending int `json:"pending"`
}

// TurnOut is a turn as the agent reads it.
type TurnOut struct {
	ID      string       `json:"id"`
	Notice  string       `json:"notice"`
	Prompt  string       `json:"prompt"`
	Answers []TurnAnswer `json:"answers"`
}

// MaxAwaitSeconds bounds AwaitInput.WaitSeconds.
const MaxAwaitSeconds = 3600

// AwaitAnswers is await_answers: it finishes the turn in.Done, if any,
// then returns the oldest turn Chat accepted that has not finished,
// waiting for one until ctx ends or in.WaitSeconds pass (then with no
// turn). The Driver makes the turns as for any host: the waiting answers
// are claimed under a fresh id, Chat accepts the turn (its notice carries
// that id) and the answers are marked delivered; the agent passes the id
// back as done on its next call, which finishes the turn (Chat is busy
// until then, so no other turn starts meanwhile). An agent whose
// connection dropped after the claim, even after the turn was sent, gets
// the same turn under the same id on its next call, never a second one;
// a call cancelled while it waits changes nothing. It needs
// ToolsOptions.Turns.
func (t *Tools) AwaitAnswers(ctx context.Context, call Call, in AwaitInput) (Awaited, error) {
	turns := t.opts.Turns
	if turns == nil {
		return Awaited{}, &question.Refusal{Reason: question.Unavailable, Message: "this host hands no turns to an agent"}
	}
	if call.Doc == "" {
		return Awaited{}, refusef("no document")
	}
	if in.WaitSeconds < 0 || in.WaitSeconds > MaxAwaitSeconds {
		return Awaited{}, refusef("wait_seconds is 0 to %d", MaxAwaitSeconds)
	}
	if in.Done != "" {
		// Finishing a turn twice (a lost reply to the call that finished
		// it) is harmless: the second does nothing.
		turns.Finish(call.Doc, in.Done)
	}
	if in.WaitSeconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(in.WaitSeconds)*time.Second)
		defer cancel()
	}
	for {
		changed := turns.Changed(call.Doc) // before reading, so no accept slips between
		if p := turns.Pending(call.Doc); len(p) > 0 {
			next := p[0]
			return Awaited{Turn: &TurnOut{ID: next.ID, Notice: next.Notice, Prompt: next.Prompt, Answers: next.Answers}, Pending: len(p)}, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && in.WaitSeconds > 0 {
				return Awaited{}, nil
			}
			return Awaited{}, ctx.Err()
		}
	}
}

// AgentInstructions is what an agent connecting as the Planner of doc is
// told first (MCP's instructions).
func AgentInstructions(doc string) string {
	return "You are the Planner of plan document " + doc + ". Call read_plan for its revision and block ids, open decisions beside your provisional prose, and call await_answers to receive the answers people save. A tool refused as stale means the plan moved: read it again."
}

// awaitDefinition is the ToolDef of await_answers.
func (t *Tools) awaitDefinition() ToolDef {
	return ToolDef{
		Name:         "await_answers",
		Description:  "Wait for the next Planner turn carrying answers people saved to decisions you left open, and get it: {\"turn\": {id, notice, prompt, answers}, \"pending\": n}. Pass the id of the turn you finished as done; until then every call returns that same turn again. With wait_seconds, {\"turn\": null} when none came in time. Cards with a passage are written up by their own write-up; act on the rest.",
		InputSchema:  json.RawMessage(awaitSchema),
		OutputSchema: json.RawMessage(awaitOutput),
		Long:         true,
		TakesTurns:   true,
		Handle:       handler(t.AwaitAnswers),
	}
}

// awaitOutput is the schema of Awaited.
var awaitOutput = `{
  "type": "object",
  "properties": {
    "turn": {
      "type": ["object", "null"],
      "properties": {
        "id": {"type": "string", "description": "pass it back as done once you acted on the turn"},
        "notice": {"type": "string"},
        "prompt": {"type": "string"},
        "answers": {"type": "array", "items": ` + turnAnswerSchema + `}
      },
      "required": ["id", "notice", "prompt", "answers"],
      "description": "the next turn; null when wait_seconds passed without one"
    },
    "pending": {"type": "integer", "minimum": 0, "description": "the turns waiting, this one included"}
  },
  "required": ["turn", "pending"]
}`

var awaitSchema = fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "done": {"type": "string", "maxLength": 200, "description": "the id of the turn you finished; until you pass it, the same turn comes back"},
    "wait_seconds": {"type": "integer", "minimum": 0, "maximum": %d, "description": "give up after this long (0: wait until a turn comes)"}
  },
  "additionalProperties": false
}`, MaxAwaitSeconds)
