package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/accord-crdt/accord/examples/internal/signintest"
	"github.com/accord-crdt/accord/internal/natstest"
)

// TestClusterNodesShareTheirSecrets: nodes started on their own data
// folders, with nothing shared by hand, take the cluster's session key
// and MCP token, so a sign-in link and the MCP token that the first node
// printed work on the second. A node configured with a key or token of
// its own that differs from the cluster's says why and refuses sign-ins
// and MCP instead of failing quietly.
func TestClusterNodesShareTheirSecrets(t *testing.T) {
	srv := natstest.RunServer(t)
	url := srv.ClientURL()
	node := func(name, key string) *testServer {
		demo := demoOptions{Cluster: clusterOptions{NATS: url, Node: name, Replicas: 1}, SessionKey: key}
		s := startDemoServer(t, t.TempDir(), "127.0.0.1:0", demo)
		waitHealthy(t, s)
		return s
	}
	a := node("a", "")
	b := node("b", "")
	// Node a's sign-in link signs in on node b.
	signintest.New(plainTransport).SignIn(t, sessionsAt(a.addr).invite("http://"+b.addr, persona{Login: "ben", Name: "Ben", Write: true}))

	raw, err := os.ReadFile(filepath.Join(a.dir, "mcp.token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(raw))
	mcpPost := func(s *testServer, token string) int {
		status, _ := postInitialize(t, s.url("/mcp?doc="+demoDoc), token)
		return status
	}
	for _, s := range []*testServer{a, b} {
		if code := mcpPost(s, token); code != http.StatusOK {
			t.Errorf("the MCP token node a printed, on %s: %d, want 200", s.addr, code)
		}
	}

	t.Setenv("ACCORD_MCP_TOKEN", "not-the-clusters-token")
	c := node("c", strings.Repeat("cd", 32))
	if res := signintest.New(plainTransport).Open(t, sessionsAt(c.addr).invite("http://"+c.addr, persona{Login: "ben", Name: "Ben", Write: true})); res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a sign-in on a node whose key differs from the cluster's: %d, want 503", res.StatusCode)
	}
	if code := mcpPost(c, "not-the-clusters-token"); code != http.StatusServiceUnavailable {
		t.Errorf("MCP on a node whose token differs from the cluster's: %d, want 503", code)
	}
}
