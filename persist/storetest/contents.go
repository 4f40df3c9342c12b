package storetest

import (
	"slices"
	"strconv"
	"testing"

	"github.com/accord-crdt/accord/persist"
)

func (h *harness) testEmptyDocument(t *testing.T) {
	s := h.store(t)
	d := load(t, s, "never-written")
	if d.Records == nil || d.Drafts == nil || d.Projections == nil || d.Answers == nil {
		t.Fatalf("LoadDocument of a document never written has nil maps: %+v", d)
	}
	expectDocument(t, s, "never-written", nil)
	expectDocuments(t, s)

	commit(t, s, "other", &persist.Write{Records: []persist.Put{{Key: "r", Value: b("1")}}})
	expectDocument(t, s, "never-written", nil)
}

func (h *harness) testPutOverwrite(t *testing.T) {
	s := h.store(t)
	commit(t, s, "doc", &persist.Write{
		Records:     []persist.Put{{Key: "r1", Value: b("one")}, {Key: "r2", Value: b("two")}},
		Projections: []persist.Put{{Key: "r1", Value: b("p-one")}},
	})
	expectDocument(t, s, "doc", &persist.StoredDocument{
		Records:     map[string][]byte{"r1": b("one"), "r2": b("two")},
		Projections: map[string][]byte{"r1": b("p-one")},
	})

	// Overwrite across Writes, and within one Write the later Put wins.
	commit(t, s, "doc", &persist.Write{
		Records:     []persist.Put{{Key: "r1", Value: b("uno")}, {Key: "r3", Value: b("x")}, {Key: "r3", Value: b("tres")}},
		Projections: []persist.Put{{Key: "r1", Value: b("p-uno")}, {Key: "r2", Value: nil}},
	})
	expectDocument(t, s, "doc", &persist.StoredDocument{
		Records:     map[string][]byte{"r1": b("uno"), "r2": b("two"), "r3": b("tres")},
		Projections: map[string][]byte{"r1": b("p-uno"), "r2": {}},
	})
	if v, ok := load(t, s, "doc").Projections["r2"]; !ok || len(v) != 0 {
		t.Fatalf("projection put with a nil Value: got %q, present %v; want an empty value", v, ok)
	}
}

func (h *harness) testAnswers(t *testing.T) {
	s := h.store(t)
	commit(t, s, "doc", &persist.Write{Answers: []persist.Put{
		{Key: "a1", Value: b("yes")},
		{Key: "a2", Value: b("no")},
		{Key: "a3", Value: []byte{}},
		{Key: "missing", Value: nil},
	}})
	expectDocument(t, s, "doc", &persist.StoredDocument{
		Answers: map[string][]byte{"a1": b("yes"), "a2": b("no"), "a3": {}},
	})
	if _, ok := load(t, s, "doc").Answers["a3"]; !ok {
		t.Fatal("answer with an empty non-nil Value was not stored")
	}

	commit(t, s, "doc", &persist.Write{Answers: []persist.Put{
		{Key: "a1", Value: nil},
		{Key: "a2", Value: b("maybe")},
		{Key: "a4", Value: b("new")},
		{Key: "a4", Value: nil},
		{Key: "a5", Value: nil},
		{Key: "a5", Value: b("back")},
	}})
	expectDocument(t, s, "doc", &persist.StoredDocument{
		Answers: map[string][]byte{"a2": b("maybe"), "a3": {}, "a5": b("back")},
	})
}

func (h *harness) testDraftChunks(t *testing.T) {
	s := h.store(t)
	commit(t, s, "doc", &persist.Write{Drafts: []persist.DraftPut{
		{Decision: "d1", Chunk: b("c1")},
		{Decision: "d2", Chunk: b("x1")},
		{Decision: "d1", Chunk: b("c2")},
	}})
	for i := 3; i <= 12; i++ {
		commit(t, s, "doc", &persist.Write{Drafts: []persist.DraftPut{{Decision: "d1", Chunk: b("c" + strconv.Itoa(i))}}})
	}
	commit(t, s, "doc", &persist.Write{Drafts: []persist.DraftPut{{Decision: "d2", Chunk: nil}}})

	want := make([][]byte, 0, 12)
	for i := 1; i <= 12; i++ {
		want = append(want, b("c"+strconv.Itoa(i)))
	}
	expectDocument(t, s, "doc", &persist.StoredDocument{Drafts: map[string]persist.StoredDraft{
		"d1": {Chunks: want},
		"d2": {Chunks: [][]byte{b("x1"), {}}},
	}})
	if got := load(t, s, "doc").Drafts["d1"].Snapshot; len(got) != 0 {
		t.Fatalf("draft with no snapshot: Snapshot = %q, want empty", got)
	}
}

func (h *harness) testDraftSnapshot(t *testing.T) {
	s := h.store(t)
	commit(t, s, "doc", &persist.Write{Drafts: []persist.DraftPut{
		{Decision: "d1", Chunk: b("s0"), Snapshot: true},
		{Decision: "d1", Chunk: b("c1")},
		{Decision: "d1", Chunk: b("c2")},
		{Decision: "other", Chunk: b("o1")},
	}})
	expectDocument(t, s, "doc", &persist.StoredDocument{Drafts: map[string]persist.StoredDraft{
		"d1":    {Snapshot: b("s0"), Chunks: [][]byte{b("c1"), b("c2")}},
		"other": {Chunks: [][]byte{b("o1")}},
	}})

	// A snapshot alone drops every earlier chunk, and only this decision's.
	commit(t, s, "doc", &persist.Write{Drafts: []persist.DraftPut{{Decision: "d1", Chunk: b("s1"), Snapshot: true}}})
	expectDocument(t, s, "doc", &persist.StoredDocument{Drafts: map[string]persist.StoredDraft{
		"d1":    {Snapshot: b("s1")},
		"other": {Chunks: [][]byte{b("o1")}},
	}})
	if got := load(t, s, "doc").Drafts["d1"].Chunks; len(got) != 0 {
		t.Fatalf("chunks after a snapshot alone: %q, want none", got)
	}

	// Chunks before a snapshot in the same Write are dropped; chunks after
	// it are kept, in order; sequence numbers keep counting after compaction.
	commit(t, s, "doc", &persist.Write{Drafts: []persist.DraftPut{
		{Decision: "d1", Chunk: b("c3")},
		{Decision: "d1", Chunk: b("c4")},
		{Decision: "d1", Chunk: b("s2"), Snapshot: true},
		{Decision: "d1", Chunk: b("c5")},
		{Decision: "d1", Chunk: b("c6")},
	}})
	commit(t, s, "doc", &persist.Write{Drafts: []persist.DraftPut{{Decision: "d1", Chunk: b("c7")}}})
	expectDocument(t, s, "doc", &persist.StoredDocument{Drafts: map[string]persist.StoredDraft{
		"d1":    {Snapshot: b("s2"), Chunks: [][]byte{b("c5"), b("c6"), b("c7")}},
		"other": {Chunks: [][]byte{b("o1")}},
	}})

	// Two snapshots in one Write: the last wins.
	commit(t, s, "doc", &persist.Write{Drafts: []persist.DraftPut{
		{Decision: "d1", Chunk: b("s3"), Snapshot: true},
		{Decision: "d1", Chunk: b("c8")},
		{Decision: "d1", Chunk: b("s4"), Snapshot: true},
	}})
	expectDocument(t, s, "doc", &persist.StoredDocument{Drafts: map[string]persist.StoredDraft{
		"d1":    {Snapshot: b("s4")},
		"other": {Chunks: [][]byte{b("o1")}},
	}})

	// More chunks than fit in one byte of a sequence number stay in order.
	for i := range 300 {
		commit(t, s, "big", &persist.Write{Drafts: []persist.DraftPut{{Decision: "d", Chunk: b(strconv.Itoa(i))}}})
	}
	chunks := load(t, s, "big").Drafts["d"].Chunks
	if len(chunks) != 300 {
		t.Fatalf("got %d chunks, want 300", len(chunks))
	}
	for i, c := range chunks {
		if string(c) != strconv.Itoa(i) {
			t.Fatalf("chunk %d = %q, want %q", i, c, strconv.Itoa(i))
		}
	}
}

func (h *harness) testDocumentsSorted(t *testing.T) {
	s := h.store(t)
	ids := []string{"plan-2", "b", "plan-10", "a", "Z", "a/b", "\xff", "plan-1", "a"}
	for _, id := range ids {
		commit(t, s, id, &persist.Write{Answers: []persist.Put{{Key: "k", Value: b(id)}}})
	}
	want := slices.Compact(slices.Sorted(slices.Values(ids)))
	expectDocuments(t, s, want...)
}

func (h *harness) testCopiesIn(t *testing.T) {
	s := h.store(t)
	rec, proj, ans, snap, chunk := b("rec"), b("proj"), b("ans"), b("snap"), b("chunk")
	w := &persist.Write{
		Records:     []persist.Put{{Key: "k", Value: rec}},
		Projections: []persist.Put{{Key: "k", Value: proj}},
		Answers:     []persist.Put{{Key: "k", Value: ans}},
		Drafts:      []persist.DraftPut{{Decision: "k", Chunk: snap, Snapshot: true}, {Decision: "k", Chunk: chunk}},
	}
	commit(t, s, "doc", w)
	for _, v := range [][]byte{rec, proj, ans, snap, chunk} {
		for i := range v {
			v[i] = 'X'
		}
	}
	w.Records[0].Key = "changed"
	w.Drafts[1].Chunk = b("changed")
	expectDocument(t, s, "doc", &persist.StoredDocument{
		Records:     map[string][]byte{"k": b("rec")},
		Projections: map[string][]byte{"k": b("proj")},
		Answers:     map[string][]byte{"k": b("ans")},
		Drafts:      map[string]persist.StoredDraft{"k": {Snapshot: b("snap"), Chunks: [][]byte{b("chunk")}}},
	})
}

func (h *harness) testCopiesOut(t *testing.T) {
	s := h.store(t)
	commit(t, s, "doc", &persist.Write{
		Records:     []persist.Put{{Key: "k", Value: b("rec")}},
		Projections: []persist.Put{{Key: "k", Value: b("proj")}},
		Answers:     []persist.Put{{Key: "k", Value: b("ans")}},
		Drafts:      []persist.DraftPut{{Decision: "k", Chunk: b("snap"), Snapshot: true}, {Decision: "k", Chunk: b("chunk")}},
	})
	want := &persist.StoredDocument{
		Records:     map[string][]byte{"k": b("rec")},
		Projections: map[string][]byte{"k": b("proj")},
		Answers:     map[string][]byte{"k": b("ans")},
		Drafts:      map[string]persist.StoredDraft{"k": {Snapshot: b("snap"), Chunks: [][]byte{b("chunk")}}},
	}
	d := load(t, s, "doc")
	for _, v := range [][]byte{d.Records["k"], d.Projections["k"], d.Answers["k"], d.Drafts["k"].Snapshot, d.Drafts["k"].Chunks[0]} {
		for i := range v {
			v[i] = 'X'
		}
	}
	d.Drafts["k"].Chunks[0] = b("replaced")
	d.Records["new"] = b("new")
	delete(d.Answers, "k")
	d.Drafts["k"] = persist.StoredDraft{}
	expectDocument(t, s, "doc", want)

	ids := documents(t, s)
	ids[0] = "changed"
	expectDocuments(t, s, "doc")
}
