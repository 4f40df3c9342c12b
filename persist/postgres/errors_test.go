package postgres

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/accord-crdt/accord/persist"
)

// TestErrors: PostgreSQL's reports of damaged pages are CorruptErrors;
// other errors are not; and a failed transaction's outcome is known
// exactly when it cannot have committed.
func TestErrors(t *testing.T) {
	s := &Store{schema: "accord", log: slog.New(slog.DiscardHandler)}
	for _, code := range []string{"XX001", "XX002"} {
		err := s.fail("load", "plan", &pgconn.PgError{Severity: "ERROR", Code: code, Message: "invalid page in block 3"})
		var ce *persist.CorruptError
		if !errors.As(err, &ce) || !errors.Is(err, persist.ErrCorrupt) || ce.Bucket != "accord" {
			t.Errorf("SQLSTATE %s: %v, want a CorruptError naming the schema", code, err)
		}
	}
	if err := s.fail("load", "plan", &pgconn.PgError{Severity: "ERROR", Code: "42P01"}); errors.Is(err, persist.ErrCorrupt) {
		t.Errorf("an undefined table is not damage: %v", err)
	}

	errorErr := &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "23505"}
	fatal := &pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01"}
	lost := fmt.Errorf("read: %w", errors.New("connection reset by peer"))
	for _, c := range []struct {
		err   error
		known bool
	}{
		{&runError{phase: beforeSend, err: lost}, true},
		{&runError{phase: inStatements, err: errorErr}, true},
		{&runError{phase: inStatements, err: fatal}, true}, // in place of a statement: no commit came
		{&runError{phase: inStatements, err: lost}, false},
		{&runError{phase: atCommit, err: errorErr}, true},
		{&runError{phase: atCommit, err: fatal}, false}, // may follow the commit
		{&runError{phase: atCommit, err: lost}, false},
		{lost, false},
	} {
		if got := outcomeKnown(c.err); got != c.known {
			t.Errorf("outcomeKnown(%#v) = %v, want %v", c.err, got, c.known)
		}
	}
}
