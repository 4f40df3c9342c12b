//go:build linux

package docs

import (
	"context"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/accord-crdt/accord/internal/pgtest"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/postgres"
)

// docs/OPERATIONS.md's PostgreSQL backup and restore run against a
// throwaway server (internal/pgtest) and a database the store made, in
// ACCORD_POSTGRES_URL as the doc says.

// pgBlock is the database of the PostgreSQL block that runs.
var pgBlock struct {
	srv *pgtest.Server
	url string
}

// pgCommit stores doc with its record q at v, as a server would.
func pgCommit(t *testing.T, url, doc, v string) {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Commit(context.Background(), doc, &persist.Write{Records: []persist.Put{{Key: "q", Value: []byte(v)}}}); err != nil {
		t.Fatal(err)
	}
}

// pgExpect checks that the store in url holds exactly want's documents,
// each with its record q at want's value.
func pgExpect(t *testing.T, url string, want map[string]string) {
	t.Helper()
	ctx := context.Background()
	s, err := postgres.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids, err := s.Documents(ctx)
	if err != nil || !slices.Equal(ids, slices.Sorted(maps.Keys(want))) {
		t.Fatalf("documents %q (%v), want %q", ids, err, slices.Sorted(maps.Keys(want)))
	}
	for doc, v := range want {
		d, err := s.LoadDocument(ctx, doc)
		if err != nil || string(d.Records["q"]) != v {
			t.Fatalf("%s: record q = %q (%v), want %q", doc, d.Records["q"], err, v)
		}
	}
}

func pgTool(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
}

// setupPgDump: a database with a document in it.
func setupPgDump(t *testing.T, w *work, dir string) []string {
	pgBlock.srv = pgtest.New(t, pgtest.Options{})
	pgBlock.url = pgBlock.srv.Database(t)
	pgCommit(t, pgBlock.url, "plan-1", "v1")
	return []string{"ACCORD_POSTGRES_URL=" + pgBlock.url}
}

// checkPgDump: the dump restores into a new database, whose store holds
// the document.
func checkPgDump(t *testing.T, w *work, r *blockRun) {
	scratch := pgBlock.srv.Database(t)
	pgTool(t, "pg_restore", "--exit-on-error", "--dbname="+scratch, filepath.Join(r.dir, "accord.dump"))
	pgExpect(t, scratch, map[string]string{"plan-1": "v1"})
}

// setupPgRestore: a database dumped to accord.dump in the block's folder,
// and changed since: plan-1 written again, plan-2 added.
func setupPgRestore(t *testing.T, w *work, dir string) []string {
	env := setupPgDump(t, w, dir)
	pgTool(t, "pg_dump", "--format=custom", "--schema=accord", "--file="+filepath.Join(dir, "accord.dump"), pgBlock.url)
	pgCommit(t, pgBlock.url, "plan-1", "v2")
	pgCommit(t, pgBlock.url, "plan-2", "v2")
	return env
}

// checkPgRestore: the database is as it was dumped.
func checkPgRestore(t *testing.T, w *work, r *blockRun) {
	pgExpect(t, pgBlock.url, map[string]string{"plan-1": "v1"})
}
