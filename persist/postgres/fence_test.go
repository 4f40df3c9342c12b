package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/accord-crdt/accord/internal/pgtest"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/postgres"
)

func record(k, v string) *persist.Write {
	return &persist.Write{
		Records: []persist.Put{{Key: k, Value: []byte(v)}},
		Drafts:  []persist.DraftPut{{Decision: k, Chunk: []byte(v)}},
		Audit:   []persist.Put{{Key: k, Value: []byte(v)}},
	}
}

func mustLoad(t *testing.T, s persist.Store, doc string) *persist.StoredDocument {
	t.Helper()
	d, err := s.LoadDocument(context.Background(), doc)
	if err != nil {
		t.Fatalf("LoadDocument(%q): %v", doc, err)
	}
	return d
}

func mustCommit(t *testing.T, s persist.Store, doc string, w *persist.Write) {
	t.Helper()
	if err := s.Commit(context.Background(), doc, w); err != nil {
		t.Fatalf("Commit(%q): %v", doc, err)
	}
}

func expectFenced(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, persist.ErrConflict) {
		t.Fatalf("%s: %v, want persist.ErrConflict", what, err)
	}
}

// TestFence: two servers' Stores on one database load the same document;
// the first to commit wins, the other is refused with persist.ErrConflict
// and nothing of its Write lands (neither its record, nor its chunk, nor
// its audit row), and it stays refused until it loads the document again.
func TestFence(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).Database(t)
	ctx := context.Background()
	a, b := open(t, url, "accord"), open(t, url, "accord")
	mustCommit(t, a, "plan", record("q1", "first"))
	mustLoad(t, a, "plan")
	mustLoad(t, b, "plan")

	mustCommit(t, a, "plan", record("q1", "by a"))
	expectFenced(t, b.Commit(ctx, "plan", record("q1", "by b")), "the stale Store's Commit")
	expectFenced(t, b.Commit(ctx, "plan", record("q2", "by b")), "its next Commit, not loaded again")

	c := open(t, url, "accord") // a third server, to look
	d := mustLoad(t, c, "plan")
	if string(d.Records["q1"]) != "by a" || len(d.Records) != 1 {
		t.Fatalf("records after the fenced commits: %q", d.Records)
	}
	if ch := d.Drafts["q1"].Chunks; len(ch) != 2 || string(ch[1]) != "by a" {
		t.Fatalf("chunks after the fenced commits: %q", ch)
	}
	rows, err := c.ReadAudit(ctx, "plan", "q1", 0, 10)
	if err != nil || len(rows) != 2 || string(rows[1].Value) != "by a" {
		t.Fatalf("audit after the fenced commits: %v, %v", rows, err)
	}
	if rows, _ := c.ReadAudit(ctx, "plan", "q2", 0, 10); len(rows) != 0 {
		t.Fatalf("a fenced Write's audit row landed: %v", rows)
	}

	// Loaded again, b writes on top of a's state, and fences a.
	mustLoad(t, b, "plan")
	mustCommit(t, b, "plan", record("q1", "by b"))
	expectFenced(t, a.Commit(ctx, "plan", record("q1", "by a again")), "a's Commit after b's")
	if got := mustLoad(t, c, "plan").Records["q1"]; string(got) != "by b" {
		t.Fatalf("q1 = %q, want b's", got)
	}

	// A delete by one server fences the others that loaded the document,
	// also once it is written afresh: revisions are never reused.
	e := open(t, url, "accord")
	for _, s := range []persist.Store{a, b, e} {
		mustLoad(t, s, "plan")
	}
	if err := a.DeleteDocument(ctx, "plan"); err != nil {
		t.Fatal(err)
	}
	expectFenced(t, b.Commit(ctx, "plan", record("q1", "after the delete")), "a Commit on a deleted document")
	mustCommit(t, a, "plan", record("q1", "afresh"))
	expectFenced(t, e.Commit(ctx, "plan", record("q1", "on the old one")), "a Commit on a document written afresh")
	d = mustLoad(t, c, "plan")
	if len(d.Records) != 1 || string(d.Records["q1"]) != "afresh" || len(d.Drafts["q1"].Chunks) != 1 {
		t.Fatalf("document written afresh: %+v", d)
	}

	// Two servers that both found the document missing: one creates it.
	mustLoad(t, a, "new")
	mustLoad(t, b, "new")
	mustCommit(t, a, "new", record("k", "a"))
	expectFenced(t, b.Commit(ctx, "new", record("k", "b")), "the second creation")
}

// TestFenceRace: eight Stores load the same state and commit at once,
// round after round: exactly one wins each round, and the document holds
// exactly the winners' Writes.
func TestFenceRace(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).Database(t)
	ctx := context.Background()
	const stores, rounds = 8, 10
	var ss []*postgres.Store
	for range stores {
		ss = append(ss, open(t, url, "accord"))
	}
	var winners []string
	for r := range rounds {
		for _, s := range ss {
			mustLoad(t, s, "plan")
		}
		errs := make([]error, stores)
		var wg sync.WaitGroup
		for i, s := range ss {
			wg.Go(func() { errs[i] = s.Commit(ctx, "plan", record(fmt.Sprintf("r%d-s%d", r, i), "v")) })
		}
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
				winners = append(winners, fmt.Sprintf("r%d-s%d", r, i))
			case !errors.Is(err, persist.ErrConflict):
				t.Fatalf("round %d, store %d: %v", r, i, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d commits won, want 1", r, won)
		}
	}
	d := mustLoad(t, ss[0], "plan")
	if len(d.Records) != len(winners) {
		t.Fatalf("%d records, %d winners", len(d.Records), len(winners))
	}
	for _, k := range winners {
		if _, ok := d.Records[k]; !ok {
			t.Fatalf("winner %s missing", k)
		}
	}
}
