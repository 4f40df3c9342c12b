package main

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/accord-crdt/accord/question"
)

func getAudit(t *testing.T, srv *testServer, method, query, auth string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, srv.url("/admin/audit"+query), nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s /admin/audit: %v", method, err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// TestAuditEndpoint: GET /admin/audit answers a decision's history as
// NDJSON to a bearer of ACCORD_ADMIN_TOKEN only, and the export replays.
func TestAuditEndpoint(t *testing.T) {
	const token = "s3cret-admin-token"
	t.Setenv("ACCORD_ADMIN_TOKEN", token)
	srv := startServer(t, t.TempDir(), "127.0.0.1:0")
	ids := srv.startDemo()
	var id string
	for _, v := range ids {
		id = v
		break
	}
	if id == "" {
		t.Fatal("the demo opened no decision")
	}
	q := "?decision=" + id
	for _, tc := range []struct {
		method, query, auth string
		want                int
	}{
		{http.MethodGet, q, "", http.StatusUnauthorized},
		{http.MethodGet, q, "Bearer wrong", http.StatusUnauthorized},
		{http.MethodPost, q, "Bearer " + token, http.StatusMethodNotAllowed},
		{http.MethodGet, "", "Bearer " + token, http.StatusBadRequest},
		{http.MethodGet, "?decision=nope", "Bearer " + token, http.StatusNotFound},
	} {
		if res := getAudit(t, srv, tc.method, tc.query, tc.auth); res.StatusCode != tc.want {
			t.Errorf("%s %s with %q: %d, want %d", tc.method, tc.query, tc.auth, res.StatusCode, tc.want)
		}
	}
	res := getAudit(t, srv, http.MethodGet, q, "Bearer "+token)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("audit: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	st, err := question.ReplayAudit(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the export does not replay: %v\n%s", err, body)
	}
	if st.Decision != id || st.Status != question.Open {
		t.Fatalf("replayed %+v", st)
	}
}

// TestAuditEndpointDisabledWithoutToken: no ACCORD_ADMIN_TOKEN, no endpoint.
func TestAuditEndpointDisabledWithoutToken(t *testing.T) {
	t.Setenv("ACCORD_ADMIN_TOKEN", "")
	srv := newTestServer(t)
	if res := getAudit(t, srv, http.MethodGet, "?decision=x", "Bearer "); res.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /admin/audit without a configured token: %d, want 404", res.StatusCode)
	}
}

// TestMemberAuditEndpoint: GET /api/audit gives any signed-in member,
// a reader too, the history of a decision of their document, as the
// admin's endpoint does; nobody signed in gets 401, and a decision the
// document does not hold 404.
func TestMemberAuditEndpoint(t *testing.T) {
	t.Setenv("ACCORD_ADMIN_TOKEN", "")
	srv := newTestServer(t)
	id := srv.startDemo()["recovery"]
	get := func(query string) *http.Response {
		t.Helper()
		res, err := http.Get(srv.url("/api/audit" + query))
		if err != nil {
			t.Fatalf("GET /api/audit%s: %v", query, err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"?decision=" + id, http.StatusUnauthorized},
		{"?member=rita&decision=nope", http.StatusNotFound},
		{"?member=rita", http.StatusBadRequest},
	} {
		if res := get(tc.query); res.StatusCode != tc.want {
			t.Errorf("GET /api/audit%s: %d, want %d", tc.query, res.StatusCode, tc.want)
		}
	}
	res := get("?member=rita&decision=" + id)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/x-ndjson" ||
		res.Header.Get("Content-Disposition") != `attachment; filename="`+id+`.audit.ndjson"` {
		t.Fatalf("a reader's audit: %d %s %s", res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"))
	}
	st, err := question.ReplayAudit(res.Body)
	if err != nil {
		t.Fatalf("the export does not replay: %v", err)
	}
	if st.Decision != id || st.Status != question.Open {
		t.Fatalf("replayed %+v", st)
	}
}
