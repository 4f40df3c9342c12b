package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/pgtest"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// TestPostgresStore: with ACCORD_POSTGRES_URL the server keeps its
// decisions in PostgreSQL. A decision Ana creates and saves on one server
// is there, settled by her, on a server started afterwards on another
// data folder with the same URL; neither makes a bbolt file of
// decisions, and /admin/backup points to PostgreSQL's tools.
func TestPostgresStore(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{})
	t.Setenv("ACCORD_POSTGRES_URL", db.Database(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	first := newTestServer(t)
	waitHealthy(t, first)
	ana, err := dialAs(t, ctx, "ws://"+first.addr+"/sync?doc="+demoDoc+"&member=ana")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ana.Create(ctx, wire.Card{Key: "engine", Origin: question.FromPerson, Definition: question.Definition{Questions: []question.Question{{
		ID: "q1", Text: "Which storage engine?", Options: []question.Option{{ID: "bolt", Label: "bbolt"}, {ID: "pg", Label: "PostgreSQL"}},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	id := recs[0].ID
	if err := ana.Choose(id, "q1", "pg", true); err != nil {
		t.Fatal(err)
	}
	if res, err := ana.Submit(ctx, id); err != nil || len(res) != 1 || !res[0].OK {
		t.Fatalf("Ana's save: %+v %v", res, err)
	}
	ana.Close()
	code, body, err := request(first, http.MethodPost, "/admin/backup", "")
	if err != nil || code != http.StatusNotFound || !strings.Contains(body, "pg_dump") {
		t.Errorf("POST /admin/backup = %d %q %v, want a 404 pointing to pg_dump", code, body, err)
	}
	first.stop()

	second := newTestServer(t)
	waitHealthy(t, second)
	ben, err := dialAs(t, ctx, "ws://"+second.addr+"/sync?doc="+demoDoc+"&member=ben")
	if err != nil {
		t.Fatal(err)
	}
	defer ben.Close()
	testutil.EventuallyWithin(t, waitTime, "Ana's saved decision on the second server", func() (bool, string) {
		rec, _ := ben.Record(id)
		return rec.Status == question.Settled && rec.Answer != nil && rec.Answer.By == "ana", fmt.Sprintf("%+v", rec)
	})
	for _, dir := range []string{first.dir, second.dir} {
		if _, err := os.Stat(filepath.Join(dir, "accord.db")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: a bbolt file of decisions (%v)", dir, err)
		}
	}
}
