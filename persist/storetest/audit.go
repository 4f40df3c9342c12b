package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/accord-crdt/accord/persist"
)

// readAudit returns every row of a decision's audit log, read page by
// page, checking that positions grow.
func readAudit(t testing.TB, s persist.Store, doc, decision string, page int) []persist.AuditRow {
	t.Helper()
	var all []persist.AuditRow
	var after uint64
	for {
		rows, err := s.ReadAudit(context.Background(), doc, decision, after, page)
		if err != nil {
			t.Fatalf("ReadAudit(%q, %q, %d, %d): %v", doc, decision, after, page, err)
		}
		if len(rows) > page {
			t.Fatalf("ReadAudit(%q, %q, %d, %d) gave %d rows", doc, decision, after, page, len(rows))
		}
		for _, r := range rows {
			if r.Seq <= after {
				t.Fatalf("ReadAudit(%q, %q, after %d) gave a row at %d", doc, decision, after, r.Seq)
			}
			after = r.Seq
		}
		all = append(all, rows...)
		if len(rows) < page {
			return all
		}
	}
}

func expectAudit(t testing.TB, s persist.Store, doc, decision string, want ...string) {
	t.Helper()
	for _, page := range []int{1, 2, 100} {
		var got []string
		for _, r := range readAudit(t, s, doc, decision, page) {
			got = append(got, string(r.Value))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("audit log of %q/%q (pages of %d) = %q, want %q", doc, decision, page, got, want)
		}
	}
}

// testAuditLog: rows append in commit order per decision, survive the
// draft's snapshots, stay out of LoadDocument, are returned as copies,
// are written with their Write or not at all, go with DeleteDocument
// (and not with a neighbour's), and with Reopen are durable.
func (h *harness) testAuditLog(t *testing.T) {
	s := h.store(t)
	ctx := context.Background()
	expectAudit(t, s, "plan", "d1")
	commit(t, s, "plan", &persist.Write{
		Records: []persist.Put{{Key: "d1", Value: b("r")}},
		Drafts:  []persist.DraftPut{{Decision: "d1", Chunk: b("c1")}},
		Audit:   []persist.Put{{Key: "d1", Value: b("a1")}, {Key: "d2", Value: b("x1")}, {Key: "d1", Value: b("a2")}},
	})
	commit(t, s, "plan", &persist.Write{
		Drafts: []persist.DraftPut{{Decision: "d1", Chunk: b("s"), Snapshot: true}},
		Audit:  []persist.Put{{Key: "d1", Value: b("a3")}},
	})
	commit(t, s, "plan-1", &persist.Write{Audit: []persist.Put{{Key: "d1", Value: b("other")}}})
	expectAudit(t, s, "plan", "d1", "a1", "a2", "a3")
	expectAudit(t, s, "plan", "d2", "x1")
	expectAudit(t, s, "plan-1", "d1", "other")
	expectAudit(t, s, "plan", "never")
	expectDocument(t, s, "plan", &persist.StoredDocument{
		Records: map[string][]byte{"d1": b("r")},
		Drafts:  map[string]persist.StoredDraft{"d1": {Snapshot: b("s")}},
	})
	if rows, err := s.ReadAudit(ctx, "plan", "d1", 0, 0); err != nil || len(rows) != 0 {
		t.Fatalf("ReadAudit with limit 0 = %v, %v; want none", rows, err)
	}

	rows := readAudit(t, s, "plan", "d1", 100)
	rows[0].Value[0] = 'X'
	expectAudit(t, s, "plan", "d1", "a1", "a2", "a3")

	bad := &persist.Write{Audit: []persist.Put{{Key: "d1", Value: b("lost")}, {Key: "", Value: b("bad")}}}
	if err := s.Commit(ctx, "plan", bad); !errors.Is(err, persist.ErrEmptyKey) {
		t.Fatalf("Commit with an empty audit key = %v, want ErrEmptyKey", err)
	}
	expectAudit(t, s, "plan", "d1", "a1", "a2", "a3")

	if err := s.DeleteDocument(ctx, "plan"); err != nil {
		t.Fatalf("DeleteDocument: %v", err)
	}
	expectAudit(t, s, "plan", "d1")
	expectAudit(t, s, "plan", "d2")
	expectAudit(t, s, "plan-1", "d1", "other")
	commit(t, s, "plan", &persist.Write{Audit: []persist.Put{{Key: "d1", Value: b("b1")}}})
	expectAudit(t, s, "plan", "d1", "b1")

	if h.opts.Reopen != nil {
		s = h.opts.Reopen(t, s)
		t.Cleanup(func() { _ = s.Close() })
		expectAudit(t, s, "plan", "d1", "b1")
		expectAudit(t, s, "plan-1", "d1", "other")
		commit(t, s, "plan", &persist.Write{Audit: []persist.Put{{Key: "d1", Value: b("b2")}}})
		expectAudit(t, s, "plan", "d1", "b1", "b2")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := s.ReadAudit(ctx, "plan", "d1", 0, 10); !errors.Is(err, persist.ErrClosed) {
		t.Fatalf("ReadAudit after Close = %v, want ErrClosed", err)
	}
}
