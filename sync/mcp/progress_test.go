package mcp_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/accord-crdt/accord/sync/mcp"
)

// A call that waits for people (await_answers, ask) and whose request
// carries a progress token hears every ProgressInterval that it is still
// running, with the progress rising: a client such as the TypeScript SDK
// resets its 60-second request timeout on each (resetTimeoutOnProgress).
// A request without a token hears nothing, a call that returns quickly
// nothing either, and none comes after the call returned.
func TestMCPLongCallsSendProgress(t *testing.T) {
	const interval = 100 * time.Millisecond
	r := newRig(t, func(o *mcp.Options) { o.ProgressInterval = interval })
	var mu sync.Mutex
	var heard []*sdk.ProgressNotificationParams
	since := func(n int) []*sdk.ProgressNotificationParams {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(heard[n:])
	}
	cs, err := r.agentWith(token, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, req.Params)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	ask := map[string]any{"key": "run", "question": "Start a new run?", "options": []map[string]any{{"label": "Yes"}, {"label": "No"}}}
	for _, tc := range []struct {
		name  string
		tool  string
		args  any
		token any           // the request's progress token; nil: none
		limit time.Duration // how long the client lets the call run (ask waits for a person)
		least int           // progress notifications at least; 0: none
	}{
		{"await_answers with a token", "await_answers", map[string]any{"wait_seconds": 1}, "await-1", 10 * time.Second, 3},
		{"ask with a token", "ask", ask, "ask-1", time.Second, 3},
		{"await_answers without a token", "await_answers", map[string]any{"wait_seconds": 1}, nil, 10 * time.Second, 0},
		{"a quick call", "read_plan", map[string]any{}, "read-1", 10 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := len(since(0))
			ctx, cancel := context.WithTimeout(context.Background(), tc.limit)
			defer cancel()
			params := &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args}
			if tc.token != nil {
				params.SetProgressToken(tc.token)
			}
			_, _ = cs.CallTool(ctx, params) // ask ends cancelled by the client
			// The client handles notifications apart from results: the
			// last may be handled just after the result.
			time.Sleep(2 * interval)
			got := since(start)
			if len(got) < tc.least || (tc.least == 0 && len(got) != 0) {
				t.Fatalf("%d progress notifications, want %d or more (none if 0)", len(got), tc.least)
			}
			for i, p := range got {
				if p.ProgressToken != tc.token || p.Progress != float64(i+1) || !strings.Contains(p.Message, tc.tool+" is still waiting") {
					t.Errorf("notification %d: token %v, progress %v, message %q", i, p.ProgressToken, p.Progress, p.Message)
				}
			}
			// None comes once the call returned.
			time.Sleep(5 * interval)
			if after := since(start); len(after) != len(got) {
				t.Fatalf("%d progress notifications after the call returned", len(after)-len(got))
			}
		})
	}
}
