package planner_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

// A revision the plan never had (made up, or from the future) is refused
// stale by every tool that takes one, and a block the plan does not hold
// is refused invalid, naming it; nothing is opened, placed or edited. An
// older revision the plan did have is still accepted while the blocks a
// card names are unchanged since it (P8 depends on it), and refused stale
// once one has changed.
func TestToolsRefuseMadeUpRevisionsAndBlocks(t *testing.T) {
	e := newEnv(t)
	old := e.host.Docs.Revision(doc)
	card := "card-" + e.open("setup", false, "p-onb")
	if err := e.host.Docs.Edit(doc, "p-ops", "We run it, in shifts."); err != nil {
		t.Fatal(err)
	}
	rev := e.host.Docs.Revision(doc)
	cards := func(revision string, blocks ...string) string {
		raw, _ := json.Marshal(map[string]any{"cards": []planner.CardInput{{Revision: revision, Key: "k", Blocks: blocks, Question: "Q?", Response: "text", Options: []planner.Label{}}}})
		return string(raw)
	}
	for _, c := range []struct {
		name, tool, input string
		want              question.Reason
		names             string
	}{
		{"open_decisions r0", "open_decisions", cards("r0", "p-onb"), question.Stale, `"r0"`},
		{"open_decisions made up", "open_decisions", cards("whatever", "p-onb"), question.Stale, `"whatever"`},
		{"open_decisions from the future", "open_decisions", cards("r999", "p-onb"), question.Stale, `"r999"`},
		{"open_decisions a changed block", "open_decisions", cards(old, "p-ops"), question.Stale, "block p-ops changed since revision " + old},
		{"open_decisions no such block", "open_decisions", cards(rev, "b3"), question.Invalid, "block b3"},
		{"open_decisions no such block, made-up revision", "open_decisions", cards("r0", "p-onb", "b3"), question.Invalid, "block b3"},
		{"open_decision r0 with a block", "open_decision", `{"revision":"r0","key":"k","question":"Q?","block":"h-ops"}`, question.Stale, `"r0"`},
		{"open_decision made up", "open_decision", `{"revision":"whatever","key":"k","question":"Q?"}`, question.Stale, `"whatever"`},
		{"open_decision no such block", "open_decision", `{"revision":"` + rev + `","key":"k","question":"Q?","block":"b3"}`, question.Invalid, "block b3"},
		{"open_decision a card", "open_decision", `{"revision":"` + rev + `","key":"k","question":"Q?","block":"` + card + `"}`, question.Invalid, card},
		{"anchor_plan made up", "anchor_plan", `{"revision":"whatever","decisions":["d1"],"blocks":["p-onb"]}`, question.Stale, `"whatever"`},
		{"anchor_plan no such block", "anchor_plan", `{"revision":"` + rev + `","decisions":["d1"],"blocks":["b3"]}`, question.Invalid, "block b3"},
		{"edit_plan r0", "edit_plan", `{"revision":"r0","edits":[{"op":"edit","block":"p-onb","text":"x"}]}`, question.Stale, `"r0"`},
		{"edit_plan an older revision", "edit_plan", `{"revision":"` + old + `","edits":[{"op":"edit","block":"p-onb","text":"x"}]}`, question.Stale, rev},
		{"edit_plan no such block", "edit_plan", `{"revision":"` + rev + `","edits":[{"op":"edit","block":"b3","text":"x"}]}`, question.Invalid, "b3"},
		{"edit_plan after no such block", "edit_plan", `{"revision":"` + rev + `","edits":[{"op":"insert","after":"b3","kind":"paragraph","text":"x"}]}`, question.Invalid, "b3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := tool(t, e, c.tool).Handle(bg, call, json.RawMessage(c.input))
			var r *question.Refusal
			if question.ReasonOf(err) != c.want || !errors.As(err, &r) || !strings.Contains(r.Message, c.names) {
				t.Fatalf("got %v, want %s naming %s", err, c.want, c.names)
			}
			if n := e.count(); n != 1 || e.host.Docs.Revision(doc) != rev {
				t.Fatalf("a refused call changed something: %d decisions, revision %s (was %s)", n, e.host.Docs.Revision(doc), rev)
			}
		})
	}
	// The older revision is still good for a passage unchanged since it.
	out, err := e.tools.OpenDecisions(bg, call, []planner.CardInput{written("older", "p-reset")})
	if err != nil || len(out) != 1 || out[0].Link != "p-reset" {
		t.Fatalf("a card at revision r1 on an unchanged passage: %+v, %v", out, err)
	}
	// A retry of a key is never refused: it returns its card.
	again, err := e.tools.OpenDecisions(bg, call, []planner.CardInput{written("older", "b3")})
	if err != nil || again[0].ID != out[0].ID || !again[0].Repeated {
		t.Fatalf("a retried key: %+v, %v", again, err)
	}
	one, err := e.tools.OpenDecision(bg, call, planner.SingleDecision{Revision: "whatever", Key: "older", Question: "Q?", Block: "b3"})
	if err != nil || one.ID != out[0].ID || !one.Repeated || one.Link != "p-reset" {
		t.Fatalf("a retried key through open_decision: %+v, %v", one, err)
	}
}
