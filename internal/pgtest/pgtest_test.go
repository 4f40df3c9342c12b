package pgtest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/accord-crdt/accord/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func exec(t *testing.T, url, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
}

func query(t *testing.T, url, sql string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestServer: a database of a server outlives a restart, and Stop ends
// the server (Stop fails unless its directory is gone too).
func TestServer(t *testing.T) {
	s, err := pgtest.Start(pgtest.Options{})
	if errors.Is(err, pgtest.ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	url := s.Database(t)
	exec(t, url, "CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)")
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if n := query(t, url, "SELECT n FROM kept"); n != 7 {
		t.Fatalf("after a restart: %d, want 7", n)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(context.Background(), url); err == nil {
		t.Fatal("connected to a stopped server")
	}
}

// TestShared: one server for the package, a new database per call.
func TestShared(t *testing.T) {
	s := pgtest.Shared(t)
	if s != pgtest.Shared(t) {
		t.Fatal("Shared returned two servers")
	}
	a, b := s.Database(t), s.Database(t)
	if a == b {
		t.Fatal("two databases share a URL")
	}
	exec(t, a, "CREATE TABLE only_here (n int)")
	if n := query(t, b, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_here'"); n != 0 {
		t.Fatal("a table of one database is in another")
	}
}
