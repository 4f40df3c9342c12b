package mcp_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/accord-crdt/accord/sync/mcp"
)

// A call of a Long tool (the Planner's await_answers and ask) whose
// request carries a progress token hears every ProgressInterval that it
// is still running, with the progress rising: a client such as the
// TypeScript SDK resets its 60-second request timeout on each
// (resetTimeoutOnProgress). A request without a token hears nothing, a
// call of a tool that is not Long nothing either, and none comes after
// the call returned.
func TestMCPLongCallsSendProgress(t *testing.T) {
	const interval = 100 * time.Millisecond
	slow := mcp.Tool{
		Name: "slow", Description: "Take a while, without waiting for anyone.",
		InputSchema: json.RawMessage(anyInput), OutputSchema: json.RawMessage(okOutput),
		Call: func(ctx context.Context, _ string, _ json.RawMessage) (any, error) {
			time.Sleep(5 * interval)
			return map[string]bool{"ok": true}, nil
		},
	}
	r := newRig(t, func(o *mcp.Options) {
		o.ProgressInterval = interval
		o.Tools = append(o.Tools, slow)
	})
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

	for _, tc := range []struct {
		name  string
		tool  string
		args  any
		token any           // the request's progress token; nil: none
		limit time.Duration // how long the client lets the call run (take waits for an item)
		least int           // progress notifications at least; 0: none
	}{
		{"next with a token", "next", map[string]any{"wait_seconds": 1}, "next-1", 10 * time.Second, 3},
		{"take with a token", "take", map[string]any{}, "take-1", time.Second, 3},
		{"next without a token", "next", map[string]any{"wait_seconds": 1}, nil, 10 * time.Second, 0},
		{"a quick call", "echo", map[string]any{"text": "x"}, "echo-1", 10 * time.Second, 0},
		{"a slow call of a tool that is not Long", "slow", map[string]any{}, "slow-1", 10 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := len(since(0))
			ctx, cancel := context.WithTimeout(context.Background(), tc.limit)
			defer cancel()
			params := &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args}
			if tc.token != nil {
				params.SetProgressToken(tc.token)
			}
			_, _ = cs.CallTool(ctx, params) // take ends cancelled by the client
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
