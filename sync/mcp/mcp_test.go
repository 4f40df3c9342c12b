package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/mcp"
)

const (
	doc   = "plan-1"
	token = "s3cret-token"
)

// queue is the work of the transport's own tools: items put on a
// document's queue, which take and next hand out one at a time.
type queue struct {
	mu      sync.Mutex
	items   map[string][]string
	changed map[string]chan struct{}
	waiting map[string]int // take calls waiting, by document
}

func newQueue() *queue {
	return &queue{items: map[string][]string{}, changed: map[string]chan struct{}{}, waiting: map[string]int{}}
}

// waiters counts the take calls waiting for doc's next item.
func (q *queue) waiters(d string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting[d]
}

// put adds an item to doc's queue.
func (q *queue) put(d, item string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items[d] = append(q.items[d], item)
	if c := q.changed[d]; c != nil {
		close(c)
		delete(q.changed, d)
	}
}

// take returns the oldest item of doc's queue, waiting for one until ctx
// ends.
func (q *queue) take(ctx context.Context, d string) (string, error) {
	for {
		q.mu.Lock()
		if len(q.items[d]) > 0 {
			item := q.items[d][0]
			q.items[d] = q.items[d][1:]
			q.mu.Unlock()
			return item, nil
		}
		c := q.changed[d]
		if c == nil {
			c = make(chan struct{})
			q.changed[d] = c
		}
		q.waiting[d]++
		q.mu.Unlock()
		var err error
		select {
		case <-c:
		case <-ctx.Done():
			err = ctx.Err()
		}
		q.mu.Lock()
		q.waiting[d]--
		q.mu.Unlock()
		if err != nil {
			return "", err
		}
	}
}

// decode decodes a tool's arguments strictly, as a tool does.
func decode(args json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &question.Refusal{Reason: question.Invalid, Message: "the input does not fit: " + err.Error()}
	}
	return nil
}

// echoed is what echo returns.
type echoed struct {
	Doc  string `json:"doc"`
	Text string `json:"text"`
	N    int    `json:"n"`
}

// taken is what take and next return: an item, or none when next's
// wait_seconds passed.
type taken struct {
	Item *string `json:"item"`
}

const (
	echoInput  = `{"type":"object","properties":{"text":{"type":"string","minLength":1},"n":{"type":"integer","minimum":0}},"required":["text"],"additionalProperties":false}`
	echoOutput = `{"type":"object","properties":{"doc":{"type":"string"},"text":{"type":"string"},"n":{"type":"integer"}},"required":["doc","text","n"]}`
	nextInput  = `{"type":"object","properties":{"wait_seconds":{"type":"integer","minimum":0,"maximum":60}},"additionalProperties":false}`
	takenOut   = `{"type":"object","properties":{"item":{"type":["string","null"]}},"required":["item"]}`
	anyInput   = `{"type":"object"}`
	okOutput   = `{"type":"object","properties":{"ok":{"type":"boolean"}}}`
)

// tools are the transport's own tools: echo answers at once with the
// document and its input; take (Long) waits for the next item of the
// document's queue; next (Long, Holds) does too, or returns none after
// wait_seconds, as the Planner's await_answers does.
func tools(q *queue) []mcp.Tool {
	return []mcp.Tool{
		{
			Name: "echo", Description: "Echo the text and the document.",
			InputSchema: json.RawMessage(echoInput), OutputSchema: json.RawMessage(echoOutput),
			Call: func(ctx context.Context, d string, args json.RawMessage) (any, error) {
				var in struct {
					Text string `json:"text"`
					N    int    `json:"n"`
				}
				if err := decode(args, &in); err != nil {
					return nil, err
				}
				return echoed{Doc: d, Text: in.Text, N: in.N}, nil
			},
		},
		{
			Name: "take", Description: "Wait for the next item of the document.", Long: true,
			InputSchema: json.RawMessage(anyInput), OutputSchema: json.RawMessage(takenOut),
			Call: func(ctx context.Context, d string, _ json.RawMessage) (any, error) {
				item, err := q.take(ctx, d)
				if err != nil {
					return nil, err
				}
				return taken{Item: &item}, nil
			},
		},
		{
			Name: "next", Description: "Take the document's work: wait for its next item.", Long: true, Holds: true,
			InputSchema: json.RawMessage(nextInput), OutputSchema: json.RawMessage(takenOut),
			Call: func(ctx context.Context, d string, args json.RawMessage) (any, error) {
				var in struct {
					WaitSeconds int `json:"wait_seconds"`
				}
				if err := decode(args, &in); err != nil {
					return nil, err
				}
				if in.WaitSeconds > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Duration(in.WaitSeconds)*time.Second)
					defer cancel()
				}
				item, err := q.take(ctx, d)
				if errors.Is(err, context.DeadlineExceeded) && in.WaitSeconds > 0 {
					return taken{}, nil
				}
				if err != nil {
					return nil, err
				}
				return taken{Item: &item}, nil
			},
		},
	}
}

// faulty are tools that go wrong each in a way of its own: refuse returns
// the refusal its input names, fail a plain error, boom panics, list
// returns an array instead of an object.
func faulty() []mcp.Tool {
	return []mcp.Tool{
		{
			Name: "refuse", Description: "Refuse as told.",
			InputSchema: json.RawMessage(anyInput), OutputSchema: json.RawMessage(okOutput),
			Call: func(ctx context.Context, d string, args json.RawMessage) (any, error) {
				var in struct {
					Reason  question.Reason `json:"reason"`
					Message string          `json:"message"`
				}
				if err := decode(args, &in); err != nil {
					return nil, err
				}
				return nil, fmt.Errorf("wrapped: %w", &question.Refusal{Reason: in.Reason, Message: in.Message})
			},
		},
		{
			Name: "fail", Description: "Fail.",
			InputSchema: json.RawMessage(anyInput), OutputSchema: json.RawMessage(okOutput),
			Call: func(context.Context, string, json.RawMessage) (any, error) {
				return nil, errors.New("the disk is full")
			},
		},
		{
			Name: "boom", Description: "Panic.",
			InputSchema: json.RawMessage(anyInput), OutputSchema: json.RawMessage(okOutput),
			Call: func(context.Context, string, json.RawMessage) (any, error) { panic("boom") },
		},
		{
			Name: "list", Description: "Return an array.",
			InputSchema: json.RawMessage(anyInput), OutputSchema: json.RawMessage(okOutput),
			Call: func(context.Context, string, json.RawMessage) (any, error) { return []string{"a"}, nil },
		},
	}
}

// rig is the transport on a real HTTP listener, serving the tools of
// its own tests.
type rig struct {
	t      *testing.T
	q      *queue
	h      *mcp.Handler
	srv    *httptest.Server
	awaits atomic.Int32 // OnAwait calls for doc
}

// newRig starts the rig; each of adjust changes the handler's options.
func newRig(t *testing.T, adjust ...func(*mcp.Options)) *rig {
	t.Helper()
	r := &rig{t: t, q: newQueue()}
	o := mcp.Options{
		Tools: tools(r.q), Token: token,
		Instructions: func(d string) string { return "You work on " + d + "." },
		OnAwait: func(d string) {
			if d == doc {
				r.awaits.Add(1)
			}
		},
	}
	for _, f := range adjust {
		f(&o)
	}
	var err error
	if r.h, err = mcp.NewHandler(o); err != nil {
		t.Fatal(err)
	}
	r.srv = httptest.NewServer(r.h)
	t.Cleanup(func() {
		r.h.Close()
		r.srv.CloseClientConnections()
		r.srv.Close()
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

// refused calls a tool that must fail and returns its tool error.
func refused(t *testing.T, cs *sdk.ClientSession, name string, args any) mcp.Refused {
	t.Helper()
	res, err := call(context.Background(), cs, name, args)
	if err != nil {
		t.Fatalf("%s: protocol error instead of a tool error: %v", name, err)
	}
	var got mcp.Refused
	if !res.IsError || json.Unmarshal([]byte(text(res)), &got) != nil {
		t.Fatalf("%s: not a tool error: %s", name, text(res))
	}
	return got
}

// An agent lists the tools with their descriptions and schemas, reads
// the session's instructions, and calls a tool, which acts on the
// session's document; an agent without the token is turned away.
func TestMCPAgentListsAndCallsTools(t *testing.T) {
	r := newRig(t)
	cs := r.mustAgent()
	list, err := cs.ListTools(context.Background(), nil)
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
	if want := []string{"echo", "next", "take"}; !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	if got := cs.InitializeResult().Instructions; got != "You work on "+doc+"." {
		t.Fatalf("instructions = %q", got)
	}
	var out echoed
	ok(t, cs, "echo", map[string]any{"text": "hello", "n": 2}, &out)
	if out != (echoed{Doc: doc, Text: "hello", N: 2}) {
		t.Fatalf("echo = %+v", out)
	}
	if _, err := r.agent("wrong"); err == nil {
		t.Fatal("a client with a wrong token connected")
	}
}

// A Holds call waits for the document's work: the agent holds it while
// the call waits (Awaiting), OnAwait runs as it starts, and the item put
// on the queue returns once; a call with wait_seconds returns none when
// nothing came.
func TestMCPHoldingCallGetsTheWork(t *testing.T) {
	r := newRig(t)
	cs := r.mustAgent()
	got := make(chan taken, 1)
	go func() {
		var out taken
		res, err := call(context.Background(), cs, "next", map[string]any{})
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
	testutil.Eventually(t, "next to wait", func() bool { return r.h.Awaiting(doc) })
	if n := r.awaits.Load(); n != 1 {
		t.Fatalf("OnAwait ran %d times", n)
	}
	r.q.put(doc, "turn-1")
	select {
	case out := <-got:
		if out.Item == nil || *out.Item != "turn-1" {
			t.Fatalf("next = %+v", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the item never reached next")
	}
	testutil.Eventually(t, "next to stop waiting", func() bool { return !r.h.Awaiting(doc) })
	var none taken
	ok(t, cs, "next", map[string]any{"wait_seconds": 1}, &none)
	if none.Item != nil {
		t.Fatalf("a second item came: %s", *none.Item)
	}
}

// The agent's connection drops while its Holds call waits: the call
// returns at once on the server too, its tool's context cancelled, and
// takes nothing; the next call, on a fresh connection, gets the work.
func TestMCPDroppedCallStopsWaiting(t *testing.T) {
	r := newRig(t)
	first, err := r.agent(token)
	if err != nil {
		t.Fatal(err)
	}
	ctx, drop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := call(ctx, first, "next", map[string]any{})
		done <- err
	}()
	testutil.Eventually(t, "next to wait", func() bool { return r.h.Awaiting(doc) })
	drop()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the dropped call never returned")
	}
	testutil.Eventually(t, "the dropped call to stop waiting", func() bool { return !r.h.Awaiting(doc) })
	first.Close()
	r.q.put(doc, "turn-1")
	second := r.mustAgent()
	var out taken
	ok(t, second, "next", map[string]any{"wait_seconds": 5}, &out)
	if out.Item == nil || *out.Item != "turn-1" {
		t.Fatalf("after the drop: %+v", out)
	}
}

// Bad tool input, and a tool that refuses, fails, panics or returns what
// is not an object, each get a tool error naming what was wrong, never a
// protocol error or a crash; the server still serves afterwards.
func TestMCPBadInputIsAToolError(t *testing.T) {
	r := newRig(t, func(o *mcp.Options) { o.Tools = append(o.Tools, faulty()...) })
	cs := r.mustAgent()
	for _, c := range []struct {
		tool   string
		args   any
		reason question.Reason
		names  string
	}{
		{"echo", map[string]any{"text": 5}, question.Invalid, "text"},
		{"echo", map[string]any{}, question.Invalid, "text"},
		{"echo", map[string]any{"text": "x", "colour": "red"}, question.Invalid, "colour"},
		{"echo", map[string]any{"text": "x", "n": -1}, question.Invalid, "n"},
		{"next", map[string]any{"wait_seconds": -1}, question.Invalid, "wait_seconds"},
		{"refuse", map[string]any{"reason": "stale", "message": `revision "r0" is not one the plan had`}, question.Stale, `"r0"`},
		{"refuse", map[string]any{"reason": "not_found", "message": "no decision nope"}, question.NotFound, "nope"},
		{"refuse", map[string]any{"colour": "red"}, question.Invalid, "colour"},
		{"fail", map[string]any{}, question.Unavailable, "the disk is full"},
		{"boom", map[string]any{}, question.Unavailable, "boom failed inside the server"},
		{"list", map[string]any{}, question.Unavailable, "list returned a result that is not a JSON object"},
	} {
		t.Run(c.tool+" "+c.names, func(t *testing.T) {
			got := refused(t, cs, c.tool, c.args)
			t.Log(got.Message)
			if got.Reason != c.reason || !strings.Contains(got.Message, c.names) {
				t.Fatalf("got %+v, want %s naming %q", got, c.reason, c.names)
			}
		})
	}
	ok(t, cs, "echo", map[string]any{"text": "still here"}, nil)
}

// Closing the handler (a host shutting down) ends the calls that wait at
// once, each with a tool error saying so.
func TestMCPCloseEndsBlockingCalls(t *testing.T) {
	r := newRig(t)
	cs := r.mustAgent()
	done := make(chan *sdk.CallToolResult, 2)
	for _, name := range []string{"take", "next"} {
		go func() {
			res, err := call(context.Background(), cs, name, map[string]any{})
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
	}
	testutil.Eventually(t, "both calls to wait", func() bool { return r.q.waiters(doc) == 2 })
	r.h.Close()
	for range 2 {
		select {
		case res := <-done:
			if res == nil || !res.IsError || !strings.Contains(text(res), "shutting down") {
				t.Fatalf("a blocking call ended without saying the server shuts down: %+v", res)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not end a blocking call")
		}
	}
}

// NewHandler refuses tools an agent could not be served: none, a tool
// without a name or a call, a name served twice, schemas that are not of
// objects or not schemas at all.
func TestNewHandlerRefusesBadTools(t *testing.T) {
	good := tools(newQueue())[0]
	with := func(f func(*mcp.Tool)) []mcp.Tool {
		c := good
		f(&c)
		return []mcp.Tool{c}
	}
	for name, ts := range map[string][]mcp.Tool{
		"no tools":                     nil,
		"no name":                      with(func(t *mcp.Tool) { t.Name = "" }),
		"no call":                      with(func(t *mcp.Tool) { t.Call = nil }),
		"served twice":                 {good, good},
		"an input schema of a string":  with(func(t *mcp.Tool) { t.InputSchema = json.RawMessage(`{"type":"string"}`) }),
		"an output schema of an array": with(func(t *mcp.Tool) { t.OutputSchema = json.RawMessage(`{"type":"array"}`) }),
		"an input schema not JSON":     with(func(t *mcp.Tool) { t.InputSchema = json.RawMessage(`{`) }),
	} {
		t.Run(name, func(t *testing.T) {
			if h, err := mcp.NewHandler(mcp.Options{Tools: ts}); err == nil {
				h.Close()
				t.Fatal("NewHandler took it")
			}
		})
	}
	h, err := mcp.NewHandler(mcp.Options{Tools: []mcp.Tool{good}})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
}
