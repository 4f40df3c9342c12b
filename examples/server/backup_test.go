package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/accord-crdt/accord/persist/boltstore"
)

func postBackup(t *testing.T, srv *testServer, method, auth string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, srv.url("/admin/backup"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s /admin/backup: %v", method, err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// TestBackupEndpointDisabledWithoutToken: no ACCORD_ADMIN_TOKEN, no endpoint.
func TestBackupEndpointDisabledWithoutToken(t *testing.T) {
	t.Setenv("ACCORD_ADMIN_TOKEN", "")
	srv := newTestServer(t)
	if res := postBackup(t, srv, http.MethodPost, "Bearer "); res.StatusCode != http.StatusNotFound {
		t.Fatalf("POST /admin/backup without a configured token: %d, want 404", res.StatusCode)
	}
}

// TestBackupEndpoint takes a hot copy of a serving server over HTTP,
// refuses it without the token, and restores it the way docs/OPERATIONS.md
// says: stop, put the copy in place of the data file, start.
func TestBackupEndpoint(t *testing.T) {
	const token = "s3cret-admin-token"
	t.Setenv("ACCORD_ADMIN_TOKEN", token)
	dir := t.TempDir()
	srv := startServer(t, dir, "127.0.0.1:0")
	ids := srv.startDemo()

	for _, tc := range []struct {
		method, auth string
		want         int
	}{
		{http.MethodPost, "", http.StatusUnauthorized},
		{http.MethodPost, "Bearer wrong", http.StatusUnauthorized},
		{http.MethodPost, token, http.StatusUnauthorized},
		{http.MethodPost, "Basic " + token, http.StatusUnauthorized},
		{http.MethodGet, "", http.StatusUnauthorized},
		{http.MethodGet, "Bearer " + token, http.StatusMethodNotAllowed},
	} {
		if res := postBackup(t, srv, tc.method, tc.auth); res.StatusCode != tc.want {
			t.Errorf("%s with Authorization %q: %d, want %d", tc.method, tc.auth, res.StatusCode, tc.want)
		}
	}

	res := postBackup(t, srv, http.MethodPost, "Bearer "+token)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("backup: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := strconv.Atoi(res.Header.Get("Content-Length")); n != len(body) || n == 0 {
		t.Fatalf("Content-Length %q, body %d bytes", res.Header.Get("Content-Length"), len(body))
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(backup, body, 0o600); err != nil {
		t.Fatal(err)
	}
	checkDemo := func(path string) {
		t.Helper()
		s, err := boltstore.Open(path, &boltstore.Options{Verify: true})
		if err != nil {
			t.Fatalf("open %s: %v", path, err)
		}
		defer s.Close()
		d, err := s.LoadDocument(context.Background(), demoDoc)
		if err != nil {
			t.Fatal(err)
		}
		for key, id := range ids {
			if d.Records[id] == nil || d.Drafts[id].Snapshot == nil {
				t.Errorf("%s: the demo's %s decision %s is missing", path, key, id)
			}
		}
	}
	checkDemo(backup)

	// Restore: stop, replace the data file, start; the server serves it.
	srv.stop()
	data := filepath.Join(dir, "accord.db")
	if err := os.Remove(data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, body, 0o600); err != nil {
		t.Fatal(err)
	}
	srv = startServer(t, dir, "127.0.0.1:0")
	if res := postBackup(t, srv, http.MethodPost, "Bearer "+token); res.StatusCode != http.StatusOK {
		t.Fatalf("backup after the restore: %d", res.StatusCode)
	}
	srv.stop()
	checkDemo(data)
}
