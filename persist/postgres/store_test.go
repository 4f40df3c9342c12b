package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/accord-crdt/accord/internal/pgtest"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/postgres"
	"github.com/accord-crdt/accord/persist/storetest"
)

// checks is the property test's random sequences: each opens a Store on
// a new schema, whose migration costs tens of milliseconds.
func checks() int {
	if raceEnabled {
		return 10
	}
	return 40
}

func TestStore(t *testing.T) {
	url := pgtest.Shared(t).Database(t)
	storetest.RunWithOptions(t, func(t *testing.T) persist.Store {
		return open(t, url, newSchema())
	}, storetest.Options{Reopen: reopen, Checks: checks()})
}

func TestOpenInvalidOptions(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).Database(t)
	for _, o := range []postgres.Options{
		{Schema: "Upper"},
		{Schema: "has space"},
		{Schema: "1digit"},
		{Schema: `quote"`},
		{Schema: strings.Repeat("x", 64)},
		{MaxConns: -1},
		{Timeout: -1},
	} {
		if s, err := postgres.Open(context.Background(), url, &o); err == nil {
			s.Close()
			t.Errorf("Open(%+v) succeeded", o)
		}
	}
	if _, err := postgres.Open(context.Background(), "postgres://%zz", nil); err == nil {
		t.Error("Open of a malformed URL succeeded")
	}
}

// TestOpenUnreachable: no server behind the URL is an error naming where,
// not a hang.
func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	url := srv.URL("no_such_database")
	_, err := postgres.Open(context.Background(), url, nil)
	if err == nil || !strings.Contains(err.Error(), "no_such_database") {
		t.Fatalf("Open of a missing database = %v, want an error naming it", err)
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.Shared(t).Database(t), "accord")
	ctx := context.Background()
	long := strings.Repeat("k", postgres.MaxKeySize+1)
	fit := strings.Repeat("k", postgres.MaxKeySize)
	for name, c := range map[string]struct {
		doc string
		w   *persist.Write
	}{
		"document": {long, &persist.Write{Records: []persist.Put{{Key: "k"}}}},
		"record":   {"doc", &persist.Write{Records: []persist.Put{{Key: long}}}},
		"draft":    {"doc", &persist.Write{Drafts: []persist.DraftPut{{Decision: long}}}},
		"audit":    {"doc", &persist.Write{Audit: []persist.Put{{Key: long}}}},
	} {
		if err := s.Commit(ctx, c.doc, c.w); !errors.Is(err, postgres.ErrKeyTooLong) {
			t.Errorf("%s: Commit = %v, want ErrKeyTooLong", name, err)
		}
	}
	if err := s.DeleteDocument(ctx, long); !errors.Is(err, postgres.ErrKeyTooLong) {
		t.Errorf("DeleteDocument of a long id = %v, want ErrKeyTooLong", err)
	}
	// The longest keys fit the indexes.
	w := &persist.Write{
		Records: []persist.Put{{Key: fit, Value: []byte("v")}},
		Drafts:  []persist.DraftPut{{Decision: fit, Chunk: []byte("c")}},
		Audit:   []persist.Put{{Key: fit, Value: []byte("a")}},
	}
	if err := s.Commit(ctx, fit, w); err != nil {
		t.Fatalf("Commit of the longest keys: %v", err)
	}
	d, err := s.LoadDocument(ctx, fit)
	if err != nil || string(d.Records[fit]) != "v" || len(d.Drafts[fit].Chunks) != 1 {
		t.Fatalf("LoadDocument = %+v, %v", d, err)
	}
	ids, err := s.Documents(ctx)
	if err != nil || len(ids) != 1 || ids[0] != fit {
		t.Fatalf("Documents = %d ids, %v; want the long one", len(ids), err)
	}

	// Too large: refused before anything is read from the values (whose
	// pages are never touched here).
	big := make([]byte, postgres.MaxValueSize+1)
	if err := s.Commit(ctx, "doc", &persist.Write{Records: []persist.Put{{Key: "k", Value: big}}}); !errors.Is(err, postgres.ErrTooLarge) {
		t.Errorf("Commit of a value over MaxValueSize = %v, want ErrTooLarge", err)
	}
	half := make([]byte, postgres.MaxValueSize)
	w = &persist.Write{Records: []persist.Put{{Key: "a", Value: half}}, Drafts: []persist.DraftPut{{Decision: "b", Chunk: half}}}
	if err := s.Commit(ctx, "doc", w); !errors.Is(err, postgres.ErrTooLarge) {
		t.Errorf("Commit of a Write over MaxWriteSize = %v, want ErrTooLarge", err)
	}
	if d, err := s.LoadDocument(ctx, "doc"); err != nil || len(d.Records)+len(d.Drafts) != 0 {
		t.Errorf("after refused Writes: %d records, %d drafts, %v", len(d.Records), len(d.Drafts), err)
	}
}
