package cluster_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/natstest"
)

// TestHandlerForwardsToTheOwner: a host request about a document goes to
// the node holding its lease, path and query unchanged, whichever node
// received it; a request about no document is served where it arrived.
func TestHandlerForwardsToTheOwner(t *testing.T) {
	c := natstest.RunCluster(t, 3)
	a := startNode(t, "a", c.URL(0))
	b := startNode(t, "b", c.URL(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if node, _, err := a.router.Owner(ctx, "plan"); err != nil || node != "a" {
		t.Fatalf("owner = %q, %v; want a", node, err)
	}
	api := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, name+" "+r.URL.Path+"?"+r.URL.RawQuery)
		})
	}
	docOf := func(r *http.Request) string { return r.URL.Query().Get("doc") }
	// Each node's API, mounted beside its sync endpoint (the Router's URL
	// names the node's origin).
	a.mux.Handle("/api/", a.router.Handler(docOf, api("a")))
	b.mux.Handle("/api/", b.router.Handler(docOf, api("b")))
	get := func(base, path string) (int, string) {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	for _, tc := range []struct{ base, path, want string }{
		{b.hs.URL, "/api/plan?doc=plan", "a /api/plan?doc=plan"}, // forwarded to the owner
		{a.hs.URL, "/api/plan?doc=plan", "a /api/plan?doc=plan"},
		{b.hs.URL, "/api/session", "b /api/session?"}, // no document: here
	} {
		if code, body := get(tc.base, tc.path); code != http.StatusOK || body != tc.want {
			t.Errorf("GET %s on %s = %d %q, want %q", tc.path, tc.base, code, body, tc.want)
		}
	}
	// A request forwarded to a node that no longer owns the document is
	// refused, never forwarded again.
	req := httptest.NewRequest(http.MethodGet, "/api/plan?doc=plan", nil)
	req.Header.Set("Accord-Forwarded-To", "b")
	rec := httptest.NewRecorder()
	b.router.Handler(docOf, api("b")).ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("forwarded to a node that does not own the document: %d %q", rec.Code, rec.Body.String())
	}
}
