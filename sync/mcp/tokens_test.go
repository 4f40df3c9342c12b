package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/accord-crdt/accord/sync/mcp"
)

// readTool serves each document's text from texts.
func readTool(texts map[string]string) mcp.Tool {
	return mcp.Tool{
		Name: "read", Description: "Read the document.",
		InputSchema:  json.RawMessage(`{"type":"object","additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Call: func(_ context.Context, d string, _ json.RawMessage) (any, error) {
			return map[string]string{"text": texts[d]}, nil
		},
	}
}

// TestTokensLimitedToDocuments checks the bearer tokens: a missing or
// unknown token is refused with 401, a token limited to documents is
// refused with 403 on any other, and the main token and an unlimited one
// reach every document.
func TestTokensLimitedToDocuments(t *testing.T) {
	h, err := mcp.NewHandler(mcp.Options{Tools: tools(newQueue()), Token: "main", Tokens: map[string][]string{
		"plan-1-only": {"plan-1"},
		"any":         nil,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, tc := range []struct {
		token, doc string
		want       int
	}{
		{"", "plan-1", http.StatusUnauthorized},
		{"wrong", "plan-1", http.StatusUnauthorized},
		{"plan-1-onl", "plan-1", http.StatusUnauthorized},
		{"plan-1-only", "plan-2", http.StatusForbidden},
		{"plan-1-only", "plan-1", 0},
		{"any", "plan-2", 0},
		{"main", "plan-2", 0},
	} {
		status, _ := postInitialize(t, srv.URL+"/mcp?doc="+tc.doc, tc.token)
		if tc.want == 0 && (status == http.StatusUnauthorized || status == http.StatusForbidden) {
			t.Errorf("token %q on %s: %d, want it served", tc.token, tc.doc, status)
		}
		if tc.want != 0 && status != tc.want {
			t.Errorf("token %q on %s: %d, want %d", tc.token, tc.doc, status, tc.want)
		}
	}
}

// TestSessionBoundToItsToken: a session answers only requests carrying
// the token that opened it. tok-two opens a session on plan-2; the same
// session id under any other token (one limited to plan-1, an unlimited
// one, the main token), by POST, GET or DELETE, is refused and serves
// nothing of plan-2, and the session goes on working for tok-two.
func TestSessionBoundToItsToken(t *testing.T) {
	const secret = "Plan two's secret paragraph."
	read := readTool(map[string]string{"plan-1": "Plan one's paragraph.", "plan-2": secret})
	h, err := mcp.NewHandler(mcp.Options{Tools: []mcp.Tool{read}, Token: "main", Tokens: map[string][]string{
		"tok-one": {"plan-1"},
		"tok-two": {"plan-2"},
		"tok-any": nil,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint:   srv.URL + "/mcp?doc=plan-2",
		HTTPClient: &http.Client{Transport: bearer{token: "tok-two", next: http.DefaultTransport}},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	session := cs.ID()

	// send makes one request on the session as tok would, and returns
	// its status and body.
	send := func(method, tok, doc string) (int, string) {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read","arguments":{}}}`)
		}
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL+"/mcp?doc="+doc, body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if method == http.MethodGet {
			req.Header.Set("Accept", "text/event-stream")
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
		return res.StatusCode, string(b)
	}

	// The request is well formed: under the session's own token it reads
	// plan-2.
	if code, body := send(http.MethodPost, "tok-two", "plan-2"); code != http.StatusOK || !strings.Contains(body, secret) {
		t.Fatalf("tok-two on its own session: %d %q, want 200 and plan-2's blocks", code, body)
	}
	for _, tc := range []struct{ method, token, doc string }{
		{http.MethodPost, "tok-one", "plan-1"},
		{http.MethodPost, "tok-one", "plan-2"},
		{http.MethodPost, "tok-any", "plan-2"},
		{http.MethodPost, "main", "plan-2"},
		{http.MethodGet, "tok-one", "plan-1"},
		{http.MethodDelete, "tok-one", "plan-1"},
		{http.MethodDelete, "tok-any", "plan-2"},
	} {
		code, body := send(tc.method, tc.token, tc.doc)
		if code != http.StatusForbidden && code != http.StatusNotFound {
			t.Errorf("%s by %s naming %s on tok-two's session: %d %q, want 403 or 404", tc.method, tc.token, tc.doc, code, body)
		}
		if strings.Contains(body, secret) {
			t.Errorf("%s by %s naming %s was served plan-2: %q", tc.method, tc.token, tc.doc, body)
		}
	}
	// The refused DELETEs did not end the session.
	var got struct{ Text string }
	ok(t, cs, "read", map[string]any{}, &got)
	if got.Text != secret {
		t.Fatalf("tok-two's session after the refusals reads %q", got.Text)
	}
}

// TestTokensWithSpacesRefused: a token that cannot travel as one word of
// an Authorization header fails the host at start, never an agent later.
func TestTokensWithSpacesRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts mcp.Options
		ok   bool
	}{
		{"one word", mcp.Options{Token: "s3cret", Tokens: map[string][]string{"other": nil}}, true},
		{"a space in Token", mcp.Options{Token: "s3 cret"}, false},
		{"a tab in Tokens", mcp.Options{Tokens: map[string][]string{"s3\tcret": {"plan-1"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Tools = tools(newQueue())
			h, err := mcp.NewHandler(tc.opts)
			if (err == nil) != tc.ok {
				t.Fatalf("NewHandler: %v, want ok %v", err, tc.ok)
			}
			if h != nil {
				h.Close()
			}
		})
	}
}
