package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/accord-crdt/accord/internal/pgtest"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/postgres"
)

// The package's tests share one PostgreSQL server (pgtest.Shared), each
// test its own database, each Store of the conformance suite its own
// schema in it.
func TestMain(m *testing.M) { pgtest.Main(m) }

var schemas atomic.Int64

// where is the database and schema of every Store the tests opened, for
// reopening.
var where sync.Map // *postgres.Store → location

type location struct{ url, schema string }

// newSchema is a schema name never used before in this process.
func newSchema() string { return fmt.Sprintf("s%d", schemas.Add(1)) }

// open opens a Store on url's schema, closed when t ends.
func open(t testing.TB, url, schema string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	where.Store(s, location{url, schema})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// reopen closes s and opens a new Store on its database and schema, as a
// restarted process would.
func reopen(t *testing.T, s persist.Store) persist.Store {
	t.Helper()
	v, ok := where.Load(s)
	if !ok {
		t.Fatal("reopen of a Store open did not open")
	}
	if err := s.Close(); err != nil && !errors.Is(err, persist.ErrClosed) {
		t.Fatalf("Close: %v", err)
	}
	l := v.(location)
	return open(t, l.url, l.schema)
}

// sql runs statements on url outside the store, as an operator (or a
// damaging disk) would.
func sql(t testing.TB, url, stmt string, args ...any) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, stmt, args...)
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	return tag.RowsAffected()
}
