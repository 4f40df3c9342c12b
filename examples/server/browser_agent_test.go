package main

import (
	"fmt"
	"testing"

	"github.com/accord-crdt/accord/question/planner"
)

// The page says when an agent answers as the Planner, so that the demo
// Planner's silence does not look broken: nothing above Chat before; a
// notice while the agent's await_answers call waits; once it returned,
// the time until which the demo Planner is paused, as the reader's clock
// shows the server's hold. A page opened afterwards shows the same.
func TestBrowserPlannerAgentNotice(t *testing.T) {
	t.Setenv("ACCORD_MCP_TOKEN", "browser-token")
	srv := newTestServer(t)
	ana := newBrowser(t, "ana", 1280, 900)
	ana.open(srv, "ana", "")
	ana.waitFor("the plan and Chat", `!!$("block-b3") && !!$("chat")`)
	if ana.exists("planner-agent") {
		t.Fatalf("a notice before any agent called: %q", ana.text("planner-agent"))
	}

	agent := mcpAgent(t, srv.addr, "browser-token")
	done := make(chan struct{})
	go func() {
		defer close(done)
		var out planner.Awaited
		mcpCall(t, agent, "await_answers", map[string]any{"wait_seconds": 3}, &out)
	}()
	ana.waitText("planner-agent", "An agent is answering as the Planner and is waiting for answers; the demo Planner is paused while it waits and for 30 minutes after.")
	<-done

	var c struct {
		Agent *struct{ Until string } `json:"agent"`
	}
	getJSON(t, srv.url("/api/chat?member=rita"), &c)
	if c.Agent == nil || c.Agent.Until == "" {
		t.Fatalf("Chat after the call: %+v", c.Agent)
	}
	var clock string
	ana.eval(fmt.Sprintf(`new Date(%q).toLocaleTimeString([], {hour: "2-digit", minute: "2-digit"})`, c.Agent.Until), &clock)
	want := "An agent is answering as the Planner; the demo Planner is paused until " + clock + "."
	ana.waitText("planner-agent", want)
	ana.waitFor("the notice above Chat's messages", `$("chat").firstElementChild.nextElementSibling === $("planner-agent")`)

	rita := newBrowser(t, "rita", 1280, 900)
	rita.open(srv, "rita", "")
	rita.waitText("planner-agent", want)
}
