package main

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/accord-crdt/accord/question/planner"
)

type planView struct {
	Revision string `json:"revision"`
	Blocks   []struct {
		ID, Kind, Text, Decision, Link string
	} `json:"blocks"`
}

// A restart keeps the plan (an edit, a card, the revision), the Chat
// history and the turn Chat accepted that the agent has not finished: the
// agent gets that same turn after the restart, and only it.
func TestMCPPlanAndChatSurviveARestart(t *testing.T) {
	t.Setenv("ACCORD_MCP_TOKEN", "example-token")
	s := newTestServer(t)
	base := "http://" + s.addr
	agent := mcpAgent(t, s.addr, "example-token")
	var plan planView
	getJSON(t, base+"/api/plan?member=rita", &plan)
	var edited planner.EditPlanResult
	mcpCall(t, agent, "edit_plan", map[string]any{"revision": plan.Revision, "edits": []map[string]any{{"op": "edit", "block": "b8", "text": "Existing users switch in June."}}}, &edited)
	var opened planner.OpenedDecisions
	mcpCall(t, agent, "open_decisions", map[string]any{"cards": []map[string]any{{
		"revision": edited.Revision, "key": "welcome", "blocks": []string{"b3"},
		"question": "What should the welcome screen say?", "response": "text", "options": []any{},
	}}}, &opened)
	id := opened.Decisions[0].ID

	got := make(chan planner.Awaited, 1)
	go func() {
		var out planner.Awaited
		ctx, cancel := context.WithTimeout(context.Background(), waitTime)
		defer cancel()
		res, err := agent.CallTool(ctx, &sdk.CallToolParams{Name: "await_answers", Arguments: map[string]any{}})
		if err == nil && !res.IsError {
			err = json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &out)
		}
		if err != nil {
			t.Error(err)
		}
		got <- out
	}()
	ana, err := dialAs(t, context.Background(), "ws://"+s.addr+"/sync?"+url.Values{"doc": {demoDoc}, "member": {"ana"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	answerAndSave(t, ana, id, "Welcome aboard", "ana")
	ana.Close()
	var turn planner.Awaited
	select {
	case turn = <-got:
	case <-time.After(waitTime):
		t.Fatal("the save never reached the agent")
	}
	if turn.Turn == nil {
		t.Fatal("no turn")
	}
	var before planView
	getJSON(t, base+"/api/plan?member=rita", &before)
	agent.Close()

	s.stop()
	s = startServer(t, s.dir, s.addr)
	var after planView
	getJSON(t, base+"/api/plan?member=rita", &after)
	if after.Revision != before.Revision || len(after.Blocks) != len(before.Blocks) {
		t.Fatalf("plan after the restart: %+v\nbefore: %+v", after, before)
	}
	for i, b := range after.Blocks {
		if b != before.Blocks[i] {
			t.Fatalf("block %d after the restart: %+v, before %+v", i, b, before.Blocks[i])
		}
	}
	cards := 0
	for _, b := range after.Blocks {
		if b.ID == "b8" && b.Text != "Existing users switch in June." {
			t.Fatalf("the edit was lost: %q", b.Text)
		}
		if b.Decision == id {
			cards++
		}
	}
	if cards != 1 {
		t.Fatalf("%d cards of %s after the restart", cards, id)
	}
	var chat struct {
		Notices []struct{ ID, Text string } `json:"notices"`
	}
	getJSON(t, base+"/api/chat?member=rita", &chat)
	n := 0
	for _, no := range chat.Notices {
		if no.ID == turn.Turn.ID {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the turn's notice appears %d times after the restart: %+v", n, chat.Notices)
	}
	again := mcpAgent(t, s.addr, "example-token")
	var pending planner.Awaited
	mcpCall(t, again, "await_answers", map[string]any{"wait_seconds": 5}, &pending)
	if pending.Turn == nil || pending.Turn.ID != turn.Turn.ID || len(pending.Turn.Answers) != 1 || pending.Turn.Answers[0].Decision != id {
		t.Fatalf("after the restart: %+v, want turn %s", pending.Turn, turn.Turn.ID)
	}
	var none planner.Awaited
	mcpCall(t, again, "await_answers", map[string]any{"done": turn.Turn.ID, "wait_seconds": 1}, &none)
	if none.Turn != nil {
		t.Fatalf("a second turn came: %+v", none.Turn)
	}
}
