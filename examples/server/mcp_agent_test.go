package main

// An agent built on the official MCP TypeScript SDK (mcp-agent/agent.mjs,
// @modelcontextprotocol/sdk pinned in mcp-agent/package-lock.json), run by
// Node against the real server. The SDK checks every structured result
// against the tool's output schema and throws on one that is not an
// object, as most agents would.
//
// It needs Node and mcp-agent/node_modules (`npm ci` in
// examples/server/mcp-agent; `make test` runs it). Without them the test
// fails, never skips: CI installs both.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

// tsAgent is the Node process running agent.mjs, read one JSON line (one
// step) at a time.
type tsAgent struct {
	t      *testing.T
	lines  chan string
	errb   *syncBuffer
	exited chan struct{} // closed once node exited; then err is its exit
	err    error
}

// syncBuffer is node's stderr, written by exec's copier while a failing
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startTSAgent starts mcp-agent/agent.mjs against addr, failing the test
// with what to do when Node or the SDK is missing. env adds variables
// (ACCORD_MCP_TIMEOUT_MS, the SDK's request timeout).
func startTSAgent(t *testing.T, addr, token string, env ...string) *tsAgent {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: the MCP TypeScript SDK test needs Node.js 20 or later " +
			"(Debian: apt-get install nodejs npm), then `npm ci` in examples/server/mcp-agent")
	}
	sdkPkg := "mcp-agent/node_modules/@modelcontextprotocol/sdk/package.json"
	raw, err := os.ReadFile(sdkPkg)
	if err != nil {
		t.Fatalf("%s is missing: run `npm ci` in examples/server/mcp-agent (`make test` does) "+
			"to install the pinned @modelcontextprotocol/sdk this test runs", sdkPkg)
	}
	var pkg struct{ Version string }
	_ = json.Unmarshal(raw, &pkg)
	t.Logf("agent: @modelcontextprotocol/sdk %s", pkg.Version)

	cmd := exec.Command(node, "agent.mjs")
	cmd.Dir = "mcp-agent"
	cmd.Env = append(os.Environ(),
		"ACCORD_MCP_URL=http://"+addr+"/mcp?doc="+demoDoc, "ACCORD_MCP_TOKEN="+token)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a := &tsAgent{t: t, lines: make(chan string, 16), errb: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = a.errb
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			a.lines <- sc.Text()
		}
		close(a.lines)
		a.err = cmd.Wait()
		close(a.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // a no-op once it exited
		select {
		case <-a.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("node did not exit")
		}
	})
	return a
}

// step reads the agent's next step, which must be want, into out.
func (a *tsAgent) step(want string, out any) {
	a.t.Helper()
	select {
	case line, ok := <-a.lines:
		if !ok {
			<-a.exited
			a.t.Fatalf("the agent ended before step %q: %v\n%s", want, a.err, a.errb.String())
		}
		var got struct{ Step string }
		if err := json.Unmarshal([]byte(line), &got); err != nil || got.Step != want {
			a.t.Fatalf("the agent said %s, want step %q (%v)\n%s", line, want, err, a.errb.String())
		}
		if err := json.Unmarshal([]byte(line), out); err != nil {
			a.t.Fatalf("step %s: %v", line, err)
		}
	case <-time.After(waitTime):
		a.t.Fatalf("no step %q from the agent within %s\n%s", want, waitTime, a.errb.String())
	}
}

// An agent on the official TypeScript SDK reads the plan, opens a
// decision, and receives the answer a member saves over the sync socket
// exactly once: the SDK accepts every result (objects matching their
// output schemas) and reads a refusal's reason. Its await_answers waits
// several times the SDK's request timeout (1.5 s here, for the default 60
// s; the server's progress every 300 ms, for the default 15 s): the
// progress notifications, with resetTimeoutOnProgress, keep it alive.
func TestMCPTypeScriptAgent(t *testing.T) {
	const timeout = 1500 * time.Millisecond
	t.Setenv("ACCORD_MCP_TOKEN", "example-token")
	t.Setenv("ACCORD_MCP_PROGRESS", "300ms")
	s := newTestServer(t)
	agent := startTSAgent(t, s.addr, "example-token", fmt.Sprintf("ACCORD_MCP_TIMEOUT_MS=%d", timeout.Milliseconds()))

	var tools struct{ Names []string }
	agent.step("tools", &tools)
	if !slices.Contains(tools.Names, "read_plan") || !slices.Contains(tools.Names, "await_answers") {
		t.Fatalf("tools = %v", tools.Names)
	}
	var plan struct {
		Revision, Passage string
		Blocks            int
	}
	agent.step("plan", &plan)
	var shown planView
	getJSON(t, s.url("/api/plan?member=rita"), &shown)
	if plan.Revision != shown.Revision || plan.Blocks != len(shown.Blocks) {
		t.Fatalf("the agent read %+v; the page shows revision %s with %d blocks", plan, shown.Revision, len(shown.Blocks))
	}
	var refused struct {
		Reason  question.Reason
		Message string
	}
	agent.step("refused", &refused)
	if refused.Reason != question.Stale || !strings.Contains(refused.Message, "r0-made-up") {
		t.Fatalf("a made-up revision: %+v", refused)
	}
	var opened struct{ Decision, Link string }
	agent.step("opened", &opened)
	if opened.Link != plan.Passage {
		t.Fatalf("opened %+v, want it beside %s", opened, plan.Passage)
	}

	// ana saves an answer in her replica, as the page does.
	ana, err := dialAs(t, context.Background(), "ws://"+s.addr+"/sync?"+url.Values{"doc": {demoDoc}, "member": {"ana"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer ana.Close()
	answerAndSave(t, ana, opened.Decision, "Welcome aboard", "ana's replica")

	var first struct {
		Turn *struct {
			ID      string
			Answers []planner.TurnAnswer
		}
		Pending  int
		Progress int
		Waited   int64 // ms
	}
	agent.step("turn", &first)
	if first.Turn == nil || len(first.Turn.Answers) != 1 || first.Turn.Answers[0].Decision != opened.Decision ||
		first.Turn.Answers[0].Questions[0].Answer != "Welcome aboard" || first.Pending != 1 {
		t.Fatalf("turn = %+v", first)
	}
	// The turn starts once nobody saved for 5 s: the call outlasted the
	// SDK's timeout, on progress.
	if waited := time.Duration(first.Waited) * time.Millisecond; waited < 2*timeout || first.Progress < 3 {
		t.Fatalf("await_answers waited %s with %d progress notifications; want more than %s, and progress", waited, first.Progress, 2*timeout)
	}
	var after struct {
		Turn    *json.RawMessage
		Pending int
	}
	agent.step("after", &after)
	if after.Turn != nil || after.Pending != 0 {
		t.Fatalf("after the turn was done: %+v", after)
	}
	select {
	case <-agent.exited:
		if agent.err != nil {
			t.Fatalf("node: %v\n%s", agent.err, agent.errb.String())
		}
	case <-time.After(waitTime):
		t.Fatalf("the agent did not exit\n%s", agent.errb.String())
	}

	// One turn carried the answer, and the demo Planner did not take it.
	var chat struct {
		Notices []struct{ ID, Text string } `json:"notices"`
	}
	getJSON(t, s.url("/api/chat?member=rita"), &chat)
	n := 0
	for _, no := range chat.Notices {
		if no.ID == first.Turn.ID {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the turn's notice appears %d times: %+v", n, chat.Notices)
	}
}
