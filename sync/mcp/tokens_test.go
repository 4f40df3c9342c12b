package mcp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/accord-crdt/accord/question/delivery"
	"github.com/accord-crdt/accord/question/delivery/memhost"
	"github.com/accord-crdt/accord/sync/mcp"
)

// TestTokensLimitedToDocuments checks the bearer tokens: a missing or
// unknown token is refused with 401, a token limited to documents is
// refused with 403 on any other, and the main token and an unlimited one
// reach every document.
func TestTokensLimitedToDocuments(t *testing.T) {
	host := memhost.New()
	tools, err := delivery.NewTools(delivery.ToolsOptions{Authorities: delivery.NewLocal(nil), Document: host.Docs, Editor: host.Docs})
	if err != nil {
		t.Fatal(err)
	}
	h, err := mcp.NewHandler(mcp.Options{Tools: tools, Token: "main", Tokens: map[string][]string{
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
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp?doc="+tc.doc,
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if tc.want == 0 && (res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden) {
			t.Errorf("token %q on %s: %d, want it served", tc.token, tc.doc, res.StatusCode)
		}
		if tc.want != 0 && res.StatusCode != tc.want {
			t.Errorf("token %q on %s: %d, want %d", tc.token, tc.doc, res.StatusCode, tc.want)
		}
	}
}
