package storetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/accord-crdt/accord/persist"
)

// fullWrite puts one of everything a document holds, under two decisions.
func fullWrite(v string) *persist.Write {
	return &persist.Write{
		Records:     []persist.Put{{Key: "d1", Value: b("rec-" + v)}, {Key: "d2", Value: b("rec2-" + v)}},
		Drafts:      []persist.DraftPut{{Decision: "d1", Chunk: b("snap-" + v), Snapshot: true}, {Decision: "d1", Chunk: b("c-" + v)}, {Decision: "d2", Chunk: b("c2-" + v)}},
		Projections: []persist.Put{{Key: "d1", Value: b("proj-" + v)}},
		Answers:     []persist.Put{{Key: "d1", Value: b("ans-" + v)}},
	}
}

func fullDocument(v string) *persist.StoredDocument {
	return &persist.StoredDocument{
		Records:     map[string][]byte{"d1": b("rec-" + v), "d2": b("rec2-" + v)},
		Drafts:      map[string]persist.StoredDraft{"d1": {Snapshot: b("snap-" + v), Chunks: [][]byte{b("c-" + v)}}, "d2": {Chunks: [][]byte{b("c2-" + v)}}},
		Projections: map[string][]byte{"d1": b("proj-" + v)},
		Answers:     map[string][]byte{"d1": b("ans-" + v)},
	}
}

// testDeleteDocument: a deleted document loads empty and is not listed, its
// neighbours (also those whose ids share its prefix) are untouched, it can
// be written afresh, deleting it again or deleting one never written is
// fine, and with Reopen the delete is durable.
func (h *harness) testDeleteDocument(t *testing.T) {
	s := h.store(t)
	ctx := context.Background()
	for _, doc := range []string{"plan-1", "plan-10", "plan-2", "plan"} {
		commit(t, s, doc, fullWrite(doc))
	}
	if err := s.DeleteDocument(ctx, "plan-1"); err != nil {
		t.Fatalf("DeleteDocument: %v", err)
	}
	expectDocument(t, s, "plan-1", nil)
	expectDocuments(t, s, "plan", "plan-10", "plan-2")
	for _, doc := range []string{"plan-10", "plan-2", "plan"} {
		expectDocument(t, s, doc, fullDocument(doc))
	}
	for _, doc := range []string{"plan-1", "never-written"} {
		if err := s.DeleteDocument(ctx, doc); err != nil {
			t.Fatalf("DeleteDocument(%q) of a missing document = %v, want nil", doc, err)
		}
	}
	expectDocuments(t, s, "plan", "plan-10", "plan-2")

	// Written again, the document starts afresh: no chunk of before.
	commit(t, s, "plan-1", &persist.Write{Drafts: []persist.DraftPut{{Decision: "d1", Chunk: b("new")}}})
	expectDocument(t, s, "plan-1", &persist.StoredDocument{Drafts: map[string]persist.StoredDraft{"d1": {Chunks: [][]byte{b("new")}}}})
	if err := s.DeleteDocument(ctx, "plan-2"); err != nil {
		t.Fatalf("DeleteDocument: %v", err)
	}
	if h.opts.Reopen == nil {
		return
	}
	s = h.opts.Reopen(t, s)
	t.Cleanup(func() { _ = s.Close() })
	expectDocuments(t, s, "plan", "plan-1", "plan-10")
	expectDocument(t, s, "plan-2", nil)
	expectDocument(t, s, "plan-10", fullDocument("plan-10"))
}

func (h *harness) testDeleteDocumentInvalid(t *testing.T) {
	s := h.store(t)
	commit(t, s, "doc", fullWrite("doc"))
	if err := s.DeleteDocument(context.Background(), ""); !errors.Is(err, persist.ErrEmptyKey) {
		t.Errorf("DeleteDocument of an empty id = %v, want ErrEmptyKey", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.DeleteDocument(ctx, "doc"); !errors.Is(err, context.Canceled) {
		t.Errorf("DeleteDocument with a cancelled context = %v, want context.Canceled", err)
	}
	expectDocuments(t, s, "doc")
	expectDocument(t, s, "doc", fullDocument("doc"))
}

// testDeleteWhileCommitting deletes one document while 8 goroutines commit
// to others: the others keep every Write, and the deleted one is gone.
func (h *harness) testDeleteWhileCommitting(t *testing.T) {
	s := h.store(t)
	ctx := context.Background()
	commit(t, s, "gone", fullWrite("gone"))
	const writers, each = 8, 20
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range writers {
		wg.Go(func() {
			<-start
			doc := fmt.Sprintf("doc-%d", g)
			for i := range each {
				k := strconv.Itoa(i)
				if err := s.Commit(ctx, doc, &persist.Write{Records: []persist.Put{{Key: k, Value: b(k)}}}); err != nil {
					t.Errorf("Commit: %v", err)
					return
				}
			}
		})
	}
	close(start)
	if err := s.DeleteDocument(ctx, "gone"); err != nil {
		t.Errorf("DeleteDocument: %v", err)
	}
	wg.Wait()
	expectDocument(t, s, "gone", nil)
	for g := range writers {
		if d := load(t, s, fmt.Sprintf("doc-%d", g)); len(d.Records) != each {
			t.Errorf("doc-%d: %d records, want %d", g, len(d.Records), each)
		}
	}
}
