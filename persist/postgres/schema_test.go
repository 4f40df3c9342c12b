package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/accord-crdt/accord/internal/pgtest"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/postgres"
)

// versions returns the rows of schema's schema_version.
func versions(t *testing.T, url, schema string) []int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, "SELECT version FROM "+pgx.Identifier{schema, "schema_version"}.Sanitize()+" ORDER BY version")
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// TestSchemaMigrates: servers starting at once on an empty database all
// open it (one migrates under the advisory lock, the others wait), the
// schema_version table has one row per migration, and opening again
// migrates nothing.
func TestSchemaMigrates(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).Database(t)
	const servers = 6
	var wg sync.WaitGroup
	errs := make([]error, servers)
	for i := range servers {
		wg.Go(func() {
			s, err := postgres.Open(context.Background(), url, nil)
			if err == nil {
				err = s.Commit(context.Background(), "plan", record("q", "v"))
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent first Opens: %v", err)
	}
	vs := versions(t, url, postgres.DefaultSchema)
	if len(vs) == 0 {
		t.Fatal("no schema_version rows")
	}
	for i, v := range vs {
		if v != i+1 {
			t.Fatalf("schema_version rows %v, want 1 to %d", vs, len(vs))
		}
	}
	open(t, url, postgres.DefaultSchema)
	if again := versions(t, url, postgres.DefaultSchema); len(again) != len(vs) {
		t.Fatalf("a second Open changed schema_version: %v, then %v", vs, again)
	}
}

// TestSchemaTooNew: a schema a newer build migrated is refused, and left
// as it is.
func TestSchemaTooNew(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).Database(t)
	s := open(t, url, "accord")
	mustCommit(t, s, "plan", record("q", "v"))
	s.Close()
	sql(t, url, "INSERT INTO accord.schema_version (version) VALUES (1000)")
	if s, err := postgres.Open(context.Background(), url, nil); !errors.Is(err, postgres.ErrSchemaTooNew) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open of a newer schema = %v, want ErrSchemaTooNew", err)
	}
	sql(t, url, "DELETE FROM accord.schema_version WHERE version = 1000")
	if d := mustLoad(t, open(t, url, "accord"), "plan"); string(d.Records["q"]) != "v" {
		t.Fatalf("plan after the refused Open: %+v", d)
	}
}

// TestSchemas: stores in different schemas of one database are apart.
func TestSchemas(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).Database(t)
	a, b := open(t, url, "team_a"), open(t, url, "team_b")
	mustCommit(t, a, "plan", record("q", "a"))
	mustCommit(t, b, "other", record("q", "b"))
	for _, c := range []struct {
		s    persist.Store
		want string
	}{{a, "plan"}, {b, "other"}} {
		ids, err := c.s.Documents(context.Background())
		if err != nil || len(ids) != 1 || ids[0] != c.want {
			t.Fatalf("Documents = %q, %v; want only %q", ids, err, c.want)
		}
	}
}
