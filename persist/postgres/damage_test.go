package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/accord-crdt/accord/internal/pgtest"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/postgres"
)

// TestDamagedRow: a value changed under the store (by hand, a bad restore,
// a disk below a server without data checksums) is refused with a
// *persist.CorruptError naming its table, document and key; only its
// document fails to load (or its decision's audit log to read), every
// other one loads as before.
func TestDamagedRow(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).Database(t)
	ctx := context.Background()
	s := open(t, url, "accord")
	full := func(v string) *persist.Write {
		return &persist.Write{
			Records:     []persist.Put{{Key: "q1", Value: []byte("rec " + v)}, {Key: "q2", Value: []byte("rec2 " + v)}},
			Projections: []persist.Put{{Key: "q1", Value: []byte("proj " + v)}},
			Answers:     []persist.Put{{Key: "q1", Value: []byte("ans " + v)}},
			Drafts:      []persist.DraftPut{{Decision: "q1", Chunk: []byte("snap " + v), Snapshot: true}, {Decision: "q1", Chunk: []byte("chunk " + v)}},
			Audit:       []persist.Put{{Key: "q1", Value: []byte("audit " + v)}, {Key: "q2", Value: []byte("audit2 " + v)}},
		}
	}
	docs := []string{"plan-1", "plan-2", "plan-3", "plan-4", "plan-5"}
	for _, doc := range docs {
		mustCommit(t, s, doc, full(doc))
	}
	cases := []struct {
		doc, table, key, damage string
		audit                   bool
	}{
		{"plan-1", "items", "record/q1", `UPDATE accord.items SET value = 'garbage' WHERE doc = 'plan-1' AND kind = 'record' AND key = 'q1'`, false},
		{"plan-2", "items", "snapshot/q1", `UPDATE accord.items SET value = substring(value FROM 2) WHERE doc = 'plan-2' AND kind = 'snapshot'`, false},
		// A value moved to another key is no longer the value of its place.
		{"plan-3", "items", "answer/q9", `UPDATE accord.items SET key = 'q9' WHERE doc = 'plan-3' AND kind = 'answer'`, false},
		{"plan-4", "chunks", "q1/", `UPDATE accord.chunks SET value = 'x' WHERE doc = 'plan-4'`, false},
		{"plan-5", "audit", "q1/", `UPDATE accord.audit SET value = 'forged' WHERE doc = 'plan-5' AND decision = 'q1'`, true},
	}
	for _, c := range cases {
		if n := sql(t, url, c.damage); n != 1 {
			t.Fatalf("%s: damaged %d rows, want 1", c.doc, n)
		}
	}
	for _, c := range cases {
		var err error
		if c.audit {
			_, err = s.ReadAudit(ctx, c.doc, "q1", 0, 10)
		} else {
			_, err = s.LoadDocument(ctx, c.doc)
		}
		var ce *persist.CorruptError
		if !errors.As(err, &ce) || !errors.Is(err, persist.ErrCorrupt) || !errors.Is(err, postgres.ErrChecksum) {
			t.Fatalf("%s: %v, want a CorruptError wrapping ErrChecksum", c.doc, err)
		}
		if ce.Bucket != "accord."+c.table+"/"+c.doc || !strings.HasPrefix(ce.Key, c.key) {
			t.Errorf("%s: CorruptError names bucket %q key %q, want %q and %q…", c.doc, ce.Bucket, ce.Key, "accord."+c.table+"/"+c.doc, c.key)
		}
	}
	// plan-5's document itself is whole, and so is its other audit log.
	if d := mustLoad(t, s, "plan-5"); string(d.Records["q1"]) != "rec plan-5" {
		t.Fatalf("plan-5 = %+v", d)
	}
	if rows, err := s.ReadAudit(ctx, "plan-5", "q2", 0, 10); err != nil || len(rows) != 1 {
		t.Fatalf("plan-5's undamaged audit log: %v, %v", rows, err)
	}
	// The neighbours of the damaged documents load, also those written
	// after the damage, and the list of documents is whole.
	mustCommit(t, s, "plan-6", full("plan-6"))
	if d := mustLoad(t, s, "plan-6"); string(d.Drafts["q1"].Chunks[0]) != "chunk plan-6" {
		t.Fatalf("plan-6 = %+v", d)
	}
	ids, err := s.Documents(ctx)
	if err != nil || len(ids) != 6 {
		t.Fatalf("Documents = %q, %v", ids, err)
	}
	// A damaged document is repaired by writing over the damage, or
	// removed with DeleteDocument.
	mustCommit(t, s, "plan-1", &persist.Write{Records: []persist.Put{{Key: "q1", Value: []byte("restored")}}})
	if d := mustLoad(t, s, "plan-1"); string(d.Records["q1"]) != "restored" {
		t.Fatalf("plan-1 after the repair: %q", d.Records["q1"])
	}
	if err := s.DeleteDocument(ctx, "plan-2"); err != nil {
		t.Fatal(err)
	}
	if d := mustLoad(t, s, "plan-2"); len(d.Records) != 0 {
		t.Fatalf("plan-2 after its delete: %+v", d)
	}
}
