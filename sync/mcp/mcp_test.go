package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/question/planner/memhost"
	"github.com/accord-crdt/accord/sync/mcp"
)

const (
	doc   = "plan-1"
	token = "s3cret-token"
)

var ana = question.Member{Login: "ana", Write: true}

// rig is a host with one document, a driver delivering turns quickly, and
// the MCP handler on a real HTTP listener.
type rig struct {
	t     *testing.T
	host  *memhost.Host
	local *planner.Local
	d     *planner.Driver
	h     *mcp.Handler
	srv   *httptest.Server
}

// newRig starts the rig; each of adjust changes the handler's options.
func newRig(t *testing.T, adjust ...func(*mcp.Options)) *rig {
	t.Helper()
	r := &rig{t: t, host: memhost.New()}
	r.host.Docs.Set(doc,
		planner.Block{ID: "title", Kind: planner.Title, Text: "Launch plan"},
		planner.Block{ID: "h-onb", Kind: planner.Heading, Text: "Onboarding"},
		planner.Block{ID: "p-onb", Kind: planner.Paragraph, Text: "People sign up."},
	)
	r.host.Members.Add(doc, ana)
	r.host.Runtime.SetOwner(doc, "ana")
	store := memstore.New()
	n := 0
	var mu sync.Mutex
	r.local = planner.NewLocal(func(ctx context.Context, d string) (*question.Authority, error) {
		return question.NewAuthority(ctx, question.Options{Store: store, Doc: d, NewID: func() string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("d%d", n)
		}})
	})
	opts := planner.Options{Authorities: r.local, Quiet: 20 * time.Millisecond, Cap: 200 * time.Millisecond, Poll: 50 * time.Millisecond, Retry: 20 * time.Millisecond}
	r.host.Wire(&opts)
	var err error
	if r.d, err = planner.New(opts); err != nil {
		t.Fatal(err)
	}
	r.local.OnChange(r.d.Poke)
	r.host.Runtime.OnChange(func(string) { r.d.PokeAll() })
	tools, err := planner.NewTools(planner.ToolsOptions{Authorities: r.local, Document: r.host.Docs, Editor: r.host.Docs})
	if err != nil {
		t.Fatal(err)
	}
	o := mcp.Options{Tools: tools, Turns: r.host.Chat, Token: token, OnAwait: r.d.Poke}
	for _, f := range adjust {
		f(&o)
	}
	if r.h, err = mcp.NewHandler(o); err != nil {
		t.Fatal(err)
	}
	r.srv = httptest.NewServer(r.h)
	r.d.Watch(doc)
	t.Cleanup(func() {
		r.h.Close()
		r.srv.CloseClientConnections()
		r.srv.Close()
		r.d.Close()
	})
	return r
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}

// agent connects an MCP client session, as an agent would.
func (r *rig) agent(tok string) (*sdk.ClientSession, error) {
	return r.agentWith(tok, nil)
}

// agentWith connects an MCP client session with the client options opts.
func (r *rig) agentWith(tok string, opts *sdk.ClientOptions) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, opts)
	tr := &sdk.StreamableClientTransport{
		Endpoint:   r.srv.URL + "/mcp?doc=" + doc,
		HTTPClient: &http.Client{Transport: bearer{token: tok, next: http.DefaultTransport}},
		MaxRetries: -1,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Connect(ctx, tr, nil)
}

func (r *rig) mustAgent() *sdk.ClientSession {
	r.t.Helper()
	cs, err := r.agent(token)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { cs.Close() })
	return cs
}

func call(ctx context.Context, cs *sdk.ClientSession, name string, args any) (*sdk.CallToolResult, error) {
	return cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// ok calls a tool that must succeed and decodes its result into out.
func ok(t *testing.T, cs *sdk.ClientSession, name string, args, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := call(ctx, cs, name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error %s", name, text(res))
	}
	if out != nil {
		if err := json.Unmarshal([]byte(text(res)), out); err != nil {
			t.Fatalf("%s: %v in %s", name, err, text(res))
		}
	}
}

// save makes ana save a written answer, as a person does in the page.
func (r *rig) save(id, answer string) {
	r.t.Helper()
	err := r.local.Do(context.Background(), doc, func(a *question.Authority) error {
		rec, _ := a.Record(id)
		saved, err := a.Save(id)
		if err != nil {
			return err
		}
		rep, err := crdt.Load(saved, nil, crdt.Options{})
		if err != nil {
			return err
		}
		h := rep.Heads()
		if err := rep.SetText(rec.Definition.Questions[0].ID, answer); err != nil {
			return err
		}
		ch, err := rep.ChangesSince(h)
		if err != nil {
			return err
		}
		if _, err := a.Edit(context.Background(), ana, id, ch); err != nil {
			return err
		}
		_, heads, err := a.Draft(id)
		if err != nil {
			return err
		}
		out, err := a.Submit(context.Background(), ana, []question.SubmitRequest{{ID: id, Heads: heads}})
		if err != nil {
			return err
		}
		return out[0].Err
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) open(t *testing.T, cs *sdk.ClientSession, key string) string {
	t.Helper()
	var out planner.OpenedDecisions
	ok(t, cs, "open_decisions", map[string]any{"cards": []map[string]any{{
		"revision": r.host.Docs.Revision(doc), "key": key, "blocks": []string{"p-onb"},
		"question": "How should onboarding work?", "response": "text", "options": []any{},
	}}}, &out)
	if len(out.Decisions) != 1 {
		t.Fatalf("opened %+v", out)
	}
	return out.Decisions[0].ID
}

// An agent lists the tools with their schemas and opens decisions over
// MCP; they are in the authority and their cards in the document.
func TestMCPAgentOpensDecisions(t *testing.T) {
	r := newRig(t)
	cs := r.mustAgent()
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		if tl.InputSchema == nil || tl.Description == "" {
			t.Fatalf("tool %s has no schema or description", tl.Name)
		}
	}
	slices.Sort(names)
	want := []string{"anchor_plan", "ask", "await_answers", "edit_plan", "open_decision", "open_decisions", "read_plan", "suggest_choice", "update_document"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	id := r.open(t, cs, "onboarding")
	var single planner.Opened
	ok(t, cs, "open_decision", map[string]any{"revision": r.host.Docs.Revision(doc), "key": "owner", "question": "Who owns onboarding?", "block": "h-onb"}, &single)
	again := r.open(t, cs, "onboarding")
	if again != id {
		t.Fatalf("a retried key made a second card: %s, %s", id, again)
	}
	err = r.local.Do(ctx, doc, func(a *question.Authority) error {
		recs := a.Records()
		if len(recs) != 2 || recs[0].ID != id || recs[0].Origin != question.FromPlanner || recs[1].ID != single.ID {
			return fmt.Errorf("records = %+v", recs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cards := 0
	for _, b := range r.host.Docs.Blocks(doc) {
		if b.Kind == planner.Card {
			cards++
		}
	}
	if cards != 2 {
		t.Fatalf("%d cards in the document", cards)
	}
	// An agent without the token is turned away.
	if _, err := r.agent("wrong"); err == nil {
		t.Fatal("a client with a wrong token connected")
	}
}

func awaitTurn(t *testing.T, cs *sdk.ClientSession, args map[string]any) mcp.Awaited {
	t.Helper()
	var out mcp.Awaited
	ok(t, cs, "await_answers", args, &out)
	return out
}

// A save reaches the agent's await_answers exactly once: the turn comes
// under its claim id; until the agent passes it back as done every call
// returns it again; afterwards no second turn comes.
func TestMCPAwaitAnswersExactlyOnce(t *testing.T) {
	r := newRig(t)
	cs := r.mustAgent()
	id := r.open(t, cs, "onboarding")
	got := make(chan mcp.Awaited, 1)
	go func() {
		var out mcp.Awaited
		res, err := call(context.Background(), cs, "await_answers", map[string]any{})
		if err == nil && !res.IsError {
			err = json.Unmarshal([]byte(text(res)), &out)
		} else if err == nil {
			err = fmt.Errorf("tool error %s", text(res))
		}
		if err != nil {
			t.Error(err)
		}
		got <- out
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !r.h.Awaiting(doc) {
		if time.Now().After(deadline) {
			t.Fatal("await_answers never waited")
		}
		time.Sleep(time.Millisecond)
	}
	r.save(id, "Invite links")
	var first mcp.Awaited
	select {
	case first = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the save never reached await_answers")
	}
	if first.Turn == nil || len(first.Turn.Answers) != 1 || first.Turn.Answers[0].Decision != id || first.Turn.Answers[0].Questions[0].Answer != "Invite links" {
		t.Fatalf("turn = %+v", first.Turn)
	}
	turns := r.host.Chat.Turns(doc)
	if len(turns) != 1 || turns[0].ID != first.Turn.ID || !strings.Contains(first.Turn.Notice, "@ana answered") {
		t.Fatalf("Chat accepted %+v; the agent got %s", turns, first.Turn.ID)
	}
	// Not finished: the same turn again.
	if again := awaitTurn(t, cs, map[string]any{}); again.Turn == nil || again.Turn.ID != first.Turn.ID {
		t.Fatalf("second call = %+v", again.Turn)
	}
	// Finished: nothing more.
	if next := awaitTurn(t, cs, map[string]any{"done": first.Turn.ID, "wait_seconds": 1}); next.Turn != nil {
		t.Fatalf("a second turn came: %+v", next.Turn)
	}
	if n := len(r.host.Chat.Turns(doc)); n != 1 || r.host.Chat.Running(doc) != 0 {
		t.Fatalf("%d turns, %d running", n, r.host.Chat.Running(doc))
	}
	if rows := r.rows(); len(rows) != 0 {
		t.Fatalf("rows left: %+v", rows)
	}
}

func (r *rig) rows() []question.AnswerRow {
	var rows []question.AnswerRow
	_ = r.local.Do(context.Background(), doc, func(a *question.Authority) error { rows = a.AnswerRows(); return nil })
	return rows
}

// The agent's connection drops right after the answers were claimed (and,
// in the second case, right after Chat accepted the turn): its next call,
// on a fresh connection, gets the same turn under the same id, and no
// second turn is ever made.
func TestMCPAwaitAnswersAfterADrop(t *testing.T) {
	for _, at := range []string{"after the claim", "after the accept"} {
		t.Run(at, func(t *testing.T) {
			r := newRig(t)
			first, err := r.agent(token)
			if err != nil {
				t.Fatal(err)
			}
			id := r.open(t, first, "onboarding")
			ctx, drop := context.WithCancel(context.Background())
			hook := func(string, planner.Turn) error {
				drop()
				go first.Close() // the connection goes away
				return nil
			}
			if at == "after the claim" {
				r.host.Chat.SetBeforeAccept(hook)
			} else {
				r.host.Chat.SetAfterAccept(hook)
			}
			done := make(chan error, 1)
			go func() {
				_, err := call(ctx, first, "await_answers", map[string]any{})
				done <- err
			}()
			deadline := time.Now().Add(5 * time.Second)
			for !r.h.Awaiting(doc) {
				if time.Now().After(deadline) {
					t.Fatal("await_answers never waited")
				}
				time.Sleep(time.Millisecond)
			}
			r.save(id, "Invite links")
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the dropped call never returned")
			}
			// The abandoned call stopped waiting on the server too.
			eventually(t, "the dropped call to stop waiting", func() bool { return !r.h.Awaiting(doc) })
			r.host.Chat.SetBeforeAccept(nil)
			r.host.Chat.SetAfterAccept(nil)
			eventually(t, "the turn to be accepted", func() bool { return len(r.host.Chat.Turns(doc)) == 1 })
			claimed := r.host.Chat.Turns(doc)[0].ID

			second := r.mustAgent()
			for range 2 {
				got := awaitTurn(t, second, map[string]any{"wait_seconds": 5})
				if got.Turn == nil || got.Turn.ID != claimed || len(got.Turn.Answers) != 1 || got.Turn.Answers[0].Decision != id {
					t.Fatalf("after the drop: %+v, want turn %s", got.Turn, claimed)
				}
			}
			if next := awaitTurn(t, second, map[string]any{"done": claimed, "wait_seconds": 1}); next.Turn != nil {
				t.Fatalf("a second turn came: %+v", next.Turn)
			}
			if n := len(r.host.Chat.Turns(doc)); n != 1 {
				t.Fatalf("%d turns for one save", n)
			}
			if rows := r.rows(); len(rows) != 0 {
				t.Fatalf("rows left: %+v", rows)
			}
		})
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Bad tool input gets a tool error naming the field, never a protocol
// error or a crash, and changes nothing.
func TestMCPBadInputIsAToolError(t *testing.T) {
	r := newRig(t)
	cs := r.mustAgent()
	rev := r.host.Docs.Revision(doc)
	for _, c := range []struct {
		tool   string
		args   any
		reason question.Reason
		names  string
	}{
		{"open_decision", map[string]any{"revision": rev, "key": "k", "question": 5}, question.Invalid, "question"},
		{"open_decision", map[string]any{"revision": rev, "question": "Who?"}, question.Invalid, "key"},
		{"open_decision", map[string]any{"revision": rev, "key": "k", "question": "Who?", "colour": "red"}, question.Invalid, "colour"},
		{"open_decisions", map[string]any{"cards": []any{}}, question.Invalid, "cards"},
		{"open_decisions", map[string]any{"cards": []map[string]any{{"revision": rev, "key": "k", "blocks": []string{"nope"}, "question": "Q?", "response": "text", "options": []any{}}}}, question.Invalid, "block nope"},
		{"open_decisions", map[string]any{"cards": []map[string]any{{"revision": rev, "key": "k", "blocks": []string{"p-onb"}, "question": "Q?", "response": "text", "options": []map[string]any{{"label": "x"}}}}}, question.Invalid, "options"},
		// Revisions the plan never had are stale; blocks it does not hold
		// are invalid, named, and never stood in for.
		{"open_decisions", map[string]any{"cards": []map[string]any{{"revision": "r0", "key": "k", "blocks": []string{"p-onb"}, "question": "Q?", "response": "text", "options": []any{}}}}, question.Stale, `"r0"`},
		{"open_decisions", map[string]any{"cards": []map[string]any{{"revision": "whatever", "key": "k", "blocks": []string{"p-onb"}, "question": "Q?", "response": "text", "options": []any{}}}}, question.Stale, `"whatever"`},
		{"open_decision", map[string]any{"revision": "whatever", "key": "k", "question": "Who?"}, question.Stale, `"whatever"`},
		{"open_decision", map[string]any{"revision": "r0", "key": "k", "question": "Who?", "block": "h-onb"}, question.Stale, `"r0"`},
		{"open_decision", map[string]any{"revision": rev, "key": "k", "question": "Who?", "block": "b3"}, question.Invalid, "block b3"},
		{"anchor_plan", map[string]any{"revision": "whatever", "decisions": []string{"d1"}, "blocks": []string{"p-onb"}}, question.Stale, `"whatever"`},
		{"anchor_plan", map[string]any{"revision": rev, "decisions": []string{"d1"}, "blocks": []string{"b3"}}, question.Invalid, "block b3"},
		{"edit_plan", map[string]any{"revision": "r0", "edits": []map[string]any{{"op": "edit", "block": "p-onb", "text": "x"}}}, question.Stale, `"r0"`},
		{"edit_plan", map[string]any{"revision": rev, "edits": []map[string]any{{"op": "insert", "after": "b3", "kind": "paragraph", "text": "x"}}}, question.Invalid, "b3"},
		{"anchor_plan", map[string]any{"revision": rev, "decisions": []string{"d1"}, "blocks": []string{}}, question.Invalid, "blocks"},
		{"anchor_plan", map[string]any{"revision": rev, "decisions": []string{"nope"}, "blocks": []string{"p-onb"}}, question.NotFound, "nope"},
		{"suggest_choice", map[string]any{"decision": "nope", "options": []string{"o"}}, question.NotFound, "nope"},
		{"edit_plan", map[string]any{"revision": rev, "edits": []map[string]any{{"op": "nope"}}}, question.Invalid, "op"},
		{"edit_plan", map[string]any{"revision": rev, "edits": []map[string]any{{"op": "delete", "block": "gone"}}}, question.Invalid, "edits[0].block"},
		{"update_document", map[string]any{"blocks": []map[string]any{{"kind": "paragraph", "text": "x", "id": "gone"}}}, question.Invalid, "blocks[0].id"},
		{"await_answers", map[string]any{"wait_seconds": -1}, question.Invalid, "wait_seconds"},
		{"ask", map[string]any{"question": "Q?"}, question.Invalid, "options"},
	} {
		t.Run(c.tool+" "+c.names, func(t *testing.T) {
			res, err := call(context.Background(), cs, c.tool, c.args)
			if err != nil {
				t.Fatalf("protocol error instead of a tool error: %v", err)
			}
			var got mcp.Refused
			if !res.IsError || json.Unmarshal([]byte(text(res)), &got) != nil {
				t.Fatalf("not a tool error: %s", text(res))
			}
			t.Log(got.Message)
			if got.Reason != c.reason || !strings.Contains(got.Message, c.names) {
				t.Fatalf("got %+v, want %s naming %q", got, c.reason, c.names)
			}
		})
	}
	var recs []question.Record
	_ = r.local.Do(context.Background(), doc, func(a *question.Authority) error { recs = a.Records(); return nil })
	if len(recs) != 0 || r.host.Docs.Revision(doc) != rev {
		t.Fatalf("bad input changed something: %d records, revision %s", len(recs), r.host.Docs.Revision(doc))
	}
	// The server still serves.
	r.open(t, cs, "after")
}

// Closing the handler (a host shutting down) ends blocking calls at once
// with a tool error; the decision ask opened stays.
func TestMCPCloseEndsBlockingCalls(t *testing.T) {
	r := newRig(t)
	cs := r.mustAgent()
	done := make(chan *sdk.CallToolResult, 2)
	for _, c := range []struct {
		name string
		args any
	}{
		{"ask", map[string]any{"key": "run", "question": "Start a new run?", "options": []map[string]any{{"label": "Yes"}, {"label": "No"}}}},
		{"await_answers", map[string]any{}},
	} {
		go func() {
			res, err := call(context.Background(), cs, c.name, c.args)
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
	}
	eventually(t, "both calls to block", func() bool {
		var asked bool
		_ = r.local.Do(context.Background(), doc, func(a *question.Authority) error { asked = len(a.Records()) == 1; return nil })
		return asked && r.h.Awaiting(doc)
	})
	r.h.Close()
	for range 2 {
		select {
		case res := <-done:
			if res == nil || !res.IsError {
				t.Fatalf("a blocking call ended without a tool error: %+v", res)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not end a blocking call")
		}
	}
}
