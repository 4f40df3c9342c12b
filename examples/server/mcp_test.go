package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/sync/replica"
)

type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func mcpAgent(t *testing.T, addr, token string) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), waitTime)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: "http://" + addr + "/mcp?doc=" + demoDoc, HTTPClient: &http.Client{Transport: bearerRT{token}}, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func mcpCall(t *testing.T, cs *sdk.ClientSession, name string, args, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTime)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	txt := res.Content[0].(*sdk.TextContent).Text
	if res.IsError {
		t.Fatalf("%s: tool error %s", name, txt)
	}
	if _, ok := res.StructuredContent.(map[string]any); !ok {
		t.Fatalf("%s: structured content %T is not a JSON object (MCP requires one): %s", name, res.StructuredContent, txt)
	}
	if err := json.Unmarshal([]byte(txt), out); err != nil {
		t.Fatalf("%s: %v in %s", name, err, txt)
	}
}

// The example serves the Planner's tools at /mcp behind its bearer token:
// an agent opens a decision and it appears in the page's plan; a save made
// through the sync protocol (as the page saves) reaches the agent's
// await_answers exactly once, also after the agent's connection drops and
// it calls again on a new one.
func TestMCPEndpoint(t *testing.T) {
	t.Setenv("ACCORD_MCP_TOKEN", "example-token")
	s := newTestServer(t)
	base := "http://" + s.addr

	resp, err := http.Post(base+"/mcp?doc="+demoDoc, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the token: %s", resp.Status)
	}

	agent := mcpAgent(t, s.addr, "example-token")
	// Every tool of the Planner is served, each with its schema and
	// description.
	list, err := agent.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		if tl.InputSchema == nil || tl.OutputSchema == nil || tl.Description == "" {
			t.Fatalf("tool %s has no schema or description", tl.Name)
		}
	}
	slices.Sort(names)
	want := []string{"anchor_plan", "ask", "await_answers", "edit_plan", "open_decision", "open_decisions", "read_plan", "suggest_choice", "update_document"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	// The agent reads the plan the page shows.
	var plan planner.ReadPlanResult
	mcpCall(t, agent, "read_plan", map[string]any{}, &plan)
	var shown planView
	getJSON(t, base+"/api/plan?member=rita", &shown)
	if plan.Revision != shown.Revision || len(plan.Blocks) != len(shown.Blocks) || plan.Blocks[2].ID != shown.Blocks[2].ID {
		t.Fatalf("read_plan %+v is not the page's plan %+v", plan, shown)
	}
	var opened planner.OpenedDecisions
	mcpCall(t, agent, "open_decisions", map[string]any{"cards": []map[string]any{{
		"revision": plan.Revision, "key": "welcome", "blocks": []string{"b3"},
		"question": "What should the welcome screen say?", "response": "text", "options": []any{},
	}}}, &opened)
	id := opened.Decisions[0].ID
	var page struct {
		Blocks []struct{ Kind, Decision, Link string } `json:"blocks"`
	}
	getJSON(t, base+"/api/plan?member=rita", &page)
	found := false
	for _, b := range page.Blocks {
		found = found || (b.Kind == "decision" && b.Decision == id && b.Link == "b3")
	}
	if !found {
		t.Fatalf("the agent's card is not in the page's plan: %+v", page.Blocks)
	}

	// The agent waits; ana saves the answer in the page.
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
	defer ana.Close()
	answerAndSave(t, ana, id, "Welcome aboard", "ana's page")
	var first planner.Awaited
	select {
	case first = <-got:
	case <-time.After(waitTime):
		t.Fatal("the save never reached the agent")
	}
	if first.Turn == nil || len(first.Turn.Answers) != 1 || first.Turn.Answers[0].Decision != id || first.Turn.Answers[0].Questions[0].Answer != "Welcome aboard" {
		t.Fatalf("turn = %+v", first.Turn)
	}

	// The connection drops before the agent finished the turn: on a new
	// one it gets the same turn, then, once done, nothing more.
	agent.Close()
	again := mcpAgent(t, s.addr, "example-token")
	var second planner.Awaited
	mcpCall(t, again, "await_answers", map[string]any{"wait_seconds": 5}, &second)
	if second.Turn == nil || second.Turn.ID != first.Turn.ID {
		t.Fatalf("after the drop: %+v, want turn %s", second.Turn, first.Turn.ID)
	}
	var third planner.Awaited
	mcpCall(t, again, "await_answers", map[string]any{"done": first.Turn.ID, "wait_seconds": 1}, &third)
	if third.Turn != nil {
		t.Fatalf("a second turn came: %+v", third.Turn)
	}
	var chat struct {
		Notices []struct{ ID, Text string } `json:"notices"`
	}
	getJSON(t, base+"/api/chat?member=rita", &chat)
	n := 0
	for _, no := range chat.Notices {
		if no.ID == first.Turn.ID {
			n++
		}
		if strings.HasPrefix(no.ID, "reply-turn") {
			t.Fatalf("the demo Planner took the agent's turn: %+v", no)
		}
	}
	if n != 1 {
		t.Fatalf("the turn's notice appears %d times: %+v", n, chat.Notices)
	}
}

func getJSON(t *testing.T, u string, out any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(fmt.Errorf("GET %s: %w", u, err))
	}
}

// The demo's whole-document rewrite keeps the Planner's cards linked: the
// rollout card, whose paragraph was rewritten into a new block, moves to
// the Rollout heading; the recovery card keeps its surviving paragraph;
// both write-ups' passages are dropped.
func TestMCPDemoRewriteKeepsThePlannersCardsLinked(t *testing.T) {
	s := newTestServer(t)
	ids := s.startDemo()
	// Rewriting is a write: a reader, or nobody, is refused and nothing
	// changes.
	var start planView
	testutil.EventuallyWithin(t, waitTime, "the demo's four cards", func() (bool, string) {
		getJSON(t, s.url("/api/plan?member=rita"), &start)
		n := 0
		for _, b := range start.Blocks {
			if b.Kind == "decision" {
				n++
			}
		}
		return n == 4, fmt.Sprint(n, " cards")
	})
	for q, want := range map[string]int{"": http.StatusUnauthorized, "?member=rita": http.StatusForbidden} {
		resp, err := http.Post(s.url("/api/demo/rewrite"+q), "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var now planView
		getJSON(t, s.url("/api/plan?member=rita"), &now)
		if resp.StatusCode != want || now.Revision != start.Revision {
			t.Fatalf("rewrite%s: %s, revision %s then %s", q, resp.Status, start.Revision, now.Revision)
		}
	}
	resp, err := http.Post(s.url("/api/demo/rewrite?member=ana"), "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res planner.UpdateDocumentResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("rewrite: %s, %v", resp.Status, err)
	}
	if len(res.Dropped) != 2 || len(res.Relinked) != 1 || res.Relinked[0].Decision != ids["rollout"] || res.Relinked[0].Link != "b7" {
		t.Fatalf("rewrite = %+v", res)
	}
	var plan planView
	getJSON(t, s.url("/api/plan?member=rita"), &plan)
	links := map[string]string{}
	prev := map[string]string{}
	last := ""
	for _, b := range plan.Blocks {
		if b.Kind == "decision" {
			links[b.Decision], prev[b.Decision] = b.Link, last
			continue
		}
		last = b.ID
	}
	if links[ids["rollout"]] != "b7" || prev[ids["rollout"]] != "b7" || links[ids["recovery"]] != "b5" || links[ids["onboarding"]] != "b3" {
		t.Fatalf("cards after the rewrite: links %v, after %v", links, prev)
	}
}

// answerAndSave writes an answer into decision id's written question as
// the member c is dialled as, once the decision has reached c, and saves
// it; what is missing is named in the failure.
func answerAndSave(t *testing.T, c *replica.Client, id, text, where string) {
	t.Helper()
	testutil.EventuallyWithin(t, waitTime, "the decision to reach "+where, func() (bool, string) {
		rec, ok := c.Record(id)
		return ok && c.SetText(id, rec.Definition.Questions[0].ID, text) == nil, ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitTime)
	defer cancel()
	if err := c.Flush(ctx, id); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Submit(ctx, id); err != nil || !res[0].OK {
		t.Fatalf("save: %+v %v", res, err)
	}
}

// Over real HTTP the example's MCP endpoint refuses in words of its own a
// request without the token, one whose token is not valid (which leaves
// one warning in the log, naming the document), and one naming a
// document the server does not hold: a mistyped ?doc=, which would
// otherwise connect and read an empty plan at r0. An agent on the Go SDK
// reads the same words. An agent that connects adds nothing to the log at
// info: the SDK's lines of each session are debug.
func TestMCPRefusalsAndLog(t *testing.T) {
	t.Setenv("ACCORD_MCP_TOKEN", "example-token")
	logs := &syncBuffer{}
	s := startServerLogging(t, t.TempDir(), "127.0.0.1:0", slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	for _, tc := range []struct {
		name, token, doc string
		status           int
		says             string
		logs             string // the one line the refusal logs; "": none
	}{
		{"no token", "", demoDoc, http.StatusUnauthorized, "a bearer token is required", ""},
		{"a token that is not valid", "exampel-token", demoDoc, http.StatusUnauthorized, "the bearer token is not valid", "doc=" + demoDoc},
		{"a mistyped document", "example-token", "plan-l", http.StatusNotFound, `there is no document "plan-l" here`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := logs.String()
			status, body := postInitialize(t, s.url("/mcp?doc="+tc.doc), tc.token)
			if status != tc.status || !strings.Contains(string(body), strings.ReplaceAll(tc.says, `"`, `\"`)) {
				t.Fatalf("%d %s, want %d saying %q", status, body, tc.status, tc.says)
			}
			var lines []string
			for _, l := range strings.Split(strings.TrimPrefix(logs.String(), before), "\n") {
				if strings.Contains(l, "mcp") || strings.Contains(l, "token") {
					lines = append(lines, l)
				}
			}
			switch {
			case tc.logs == "" && len(lines) != 0:
				t.Fatalf("logged %q, want nothing", lines)
			case tc.logs != "" && (len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], tc.logs) || strings.Contains(lines[0], tc.token)):
				t.Fatalf("logged %q, want one warning naming %s (and not the token)", lines, tc.logs)
			}

			// An agent on the Go SDK reads the same words.
			c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), waitTime)
			defer cancel()
			cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{
				Endpoint: s.url("/mcp?doc=" + tc.doc), HTTPClient: &http.Client{Transport: bearerRT{tc.token}}, MaxRetries: -1,
			}, nil)
			if err == nil {
				cs.Close()
				t.Fatal("the agent connected")
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("the agent's error %q does not say %q", err, tc.says)
			}
		})
	}

	before := logs.String()
	agent := mcpAgent(t, s.addr, "example-token")
	var plan planner.ReadPlanResult
	mcpCall(t, agent, "read_plan", map[string]any{}, &plan)
	agent.Close()
	if len(plan.Blocks) == 0 {
		t.Fatal("the sample plan reads empty")
	}
	for _, l := range strings.Split(strings.TrimPrefix(logs.String(), before), "\n") {
		if strings.Contains(l, "session") || strings.Contains(l, "mcp") {
			t.Errorf("an agent's session logged at info: %s", l)
		}
	}
}

// While an agent answers as the Planner, Chat says so (GET /api/chat's
// agent, which the page shows): nothing before; waiting while its
// await_answers call waits; once the call returned, until 30 minutes
// after it, the time before which the demo Planner stays silent.
func TestMCPAgentShownInChat(t *testing.T) {
	t.Setenv("ACCORD_MCP_TOKEN", "example-token")
	s := newTestServer(t)
	type chat struct {
		Agent *struct {
			Waiting     bool
			Until       string
			HoldMinutes int
		} `json:"agent"`
	}
	var c chat
	getJSON(t, s.url("/api/chat?member=rita"), &c)
	if c.Agent != nil {
		t.Fatalf("an agent before any called: %+v", *c.Agent)
	}
	agent := mcpAgent(t, s.addr, "example-token")
	done := make(chan struct{})
	go func() {
		defer close(done)
		var out planner.Awaited
		mcpCall(t, agent, "await_answers", map[string]any{"wait_seconds": 2}, &out)
	}()
	testutil.EventuallyWithin(t, waitTime, "Chat to say an agent waits", func() (bool, string) {
		c = chat{}
		getJSON(t, s.url("/api/chat?member=rita"), &c)
		return c.Agent != nil && c.Agent.Waiting && c.Agent.Until == "" && c.Agent.HoldMinutes == 30, fmt.Sprintf("%+v", c.Agent)
	})
	<-done
	returned := time.Now()
	getJSON(t, s.url("/api/chat?member=rita"), &c)
	if c.Agent == nil || c.Agent.Waiting {
		t.Fatalf("after the call returned: %+v", c.Agent)
	}
	until, err := time.Parse(time.RFC3339, c.Agent.Until)
	if err != nil || until.Before(returned.Add(29*time.Minute)) || until.After(returned.Add(30*time.Minute)) {
		t.Fatalf("until %q, want 30 minutes after %s (%v)", c.Agent.Until, returned.Format(time.RFC3339), err)
	}
}

// postInitialize posts an MCP initialize request to url with token as its
// bearer (none if empty), and returns the status and body of the answer.
func postInitialize(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := plainTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, body
}
