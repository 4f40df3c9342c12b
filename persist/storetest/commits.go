package storetest

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/accord-crdt/accord/persist"
)

// testAtomicVisibility commits multi-part Writes while a reader loads the
// document; every load must show all parts of one Write or none of them.
func (h *harness) testAtomicVisibility(t *testing.T) {
	s := h.store(t)
	const generations = 60
	done := make(chan struct{})
	defer func() { <-done }()
	go func() {
		defer close(done)
		for g := 1; g <= generations; g++ {
			v := b(strconv.Itoa(g))
			err := s.Commit(context.Background(), "doc", &persist.Write{
				Records:     []persist.Put{{Key: "x", Value: v}, {Key: "y", Value: v}},
				Projections: []persist.Put{{Key: "x", Value: v}},
				Answers:     []persist.Put{{Key: "x", Value: v}},
				Drafts:      []persist.DraftPut{{Decision: "x", Chunk: v, Snapshot: g%4 == 0}, {Decision: "y", Chunk: v}},
			})
			if err != nil {
				t.Errorf("Commit generation %d: %v", g, err)
				return
			}
		}
	}()
	check := func(d *persist.StoredDocument) (int, bool) {
		if len(d.Records) == 0 {
			if len(d.Projections)+len(d.Answers)+len(d.Drafts) != 0 {
				t.Errorf("partial Write visible: %+v", d)
			}
			return 0, true
		}
		g, err := strconv.Atoi(string(d.Records["x"]))
		if err != nil {
			t.Errorf("record x = %q", d.Records["x"])
			return 0, false
		}
		want := d.Records["x"]
		x := d.Drafts["x"]
		last := x.Snapshot
		if n := len(x.Chunks); n > 0 {
			last = x.Chunks[n-1]
		}
		ok := bytes.Equal(d.Records["y"], want) &&
			bytes.Equal(d.Projections["x"], want) &&
			bytes.Equal(d.Answers["x"], want) &&
			bytes.Equal(last, want) &&
			len(x.Chunks) == g%4 &&
			len(d.Drafts["y"].Chunks) == g
		if !ok {
			t.Errorf("generation %d not visible as a whole: %+v", g, d)
		}
		return g, ok
	}
	prev := 0
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		d, err := s.LoadDocument(context.Background(), "doc")
		if err != nil {
			t.Fatalf("LoadDocument: %v", err)
		}
		g, ok := check(d)
		if !ok {
			return
		}
		if g < prev {
			t.Fatalf("generation went back from %d to %d", prev, g)
		}
		prev = g
	}
	if t.Failed() {
		return
	}
	if g, _ := check(load(t, s, "doc")); g != generations {
		t.Fatalf("final generation %d, want %d", g, generations)
	}
}

func (h *harness) testFailedWriteAppliesNothing(t *testing.T) {
	s := h.store(t)
	before := &persist.Write{
		Records: []persist.Put{{Key: "r", Value: b("1")}},
		Drafts:  []persist.DraftPut{{Decision: "d", Chunk: b("c1")}},
	}
	commit(t, s, "doc", before)
	bad := &persist.Write{
		Records:     []persist.Put{{Key: "r", Value: b("2")}, {Key: "r2", Value: b("2")}},
		Drafts:      []persist.DraftPut{{Decision: "d", Chunk: b("s"), Snapshot: true}},
		Projections: []persist.Put{{Key: "p", Value: b("2")}},
		Answers:     []persist.Put{{Key: "a", Value: b("2")}, {Key: "", Value: b("bad")}},
	}
	if err := s.Commit(context.Background(), "doc", bad); !errors.Is(err, persist.ErrEmptyKey) {
		t.Fatalf("Commit with an empty answer key: %v, want ErrEmptyKey", err)
	}
	expectDocument(t, s, "doc", &persist.StoredDocument{
		Records: map[string][]byte{"r": b("1")},
		Drafts:  map[string]persist.StoredDraft{"d": {Chunks: [][]byte{b("c1")}}},
	})
}

func (h *harness) testIsolation(t *testing.T) {
	s := h.store(t)
	w := func(v string) *persist.Write {
		return &persist.Write{
			Records:     []persist.Put{{Key: "same", Value: b(v)}},
			Drafts:      []persist.DraftPut{{Decision: "same", Chunk: b(v)}},
			Projections: []persist.Put{{Key: "same", Value: b(v)}},
			Answers:     []persist.Put{{Key: "same", Value: b(v)}},
		}
	}
	commit(t, s, "a", w("a"))
	commit(t, s, "b", w("b"))
	commit(t, s, "a", &persist.Write{
		Drafts:  []persist.DraftPut{{Decision: "same", Chunk: b("a-snap"), Snapshot: true}},
		Answers: []persist.Put{{Key: "same"}},
	})
	expectDocument(t, s, "a", &persist.StoredDocument{
		Records:     map[string][]byte{"same": b("a")},
		Drafts:      map[string]persist.StoredDraft{"same": {Snapshot: b("a-snap")}},
		Projections: map[string][]byte{"same": b("a")},
	})
	expectDocument(t, s, "b", &persist.StoredDocument{
		Records:     map[string][]byte{"same": b("b")},
		Drafts:      map[string]persist.StoredDraft{"same": {Chunks: [][]byte{b("b")}}},
		Projections: map[string][]byte{"same": b("b")},
		Answers:     map[string][]byte{"same": b("b")},
	})
	// Ids that look like the layout of a backend are plain ids.
	for _, id := range []string{"a/records", "docs", "records", "snapshot", "\x00", "\xff\xfe"} {
		commit(t, s, id, &persist.Write{Records: []persist.Put{{Key: "snapshot", Value: b(id)}}})
	}
	for _, id := range []string{"a/records", "docs", "records", "snapshot", "\x00", "\xff\xfe"} {
		expectDocument(t, s, id, &persist.StoredDocument{Records: map[string][]byte{"snapshot": b(id)}})
	}
	expectDocument(t, s, "a", &persist.StoredDocument{
		Records:     map[string][]byte{"same": b("a")},
		Drafts:      map[string]persist.StoredDraft{"same": {Snapshot: b("a-snap")}},
		Projections: map[string][]byte{"same": b("a")},
	})
}

func (h *harness) testEmptyWrite(t *testing.T) {
	s := h.store(t)
	for _, w := range []*persist.Write{nil, {}, {Records: []persist.Put{}}} {
		if err := s.Commit(context.Background(), "doc", w); err != nil {
			t.Fatalf("Commit(%+v): %v", w, err)
		}
	}
	expectDocuments(t, s)
	expectDocument(t, s, "doc", nil)

	commit(t, s, "doc", &persist.Write{Records: []persist.Put{{Key: "r", Value: b("1")}}})
	commit(t, s, "doc", &persist.Write{})
	expectDocument(t, s, "doc", &persist.StoredDocument{Records: map[string][]byte{"r": b("1")}})
}

func (h *harness) testEmptyKey(t *testing.T) {
	s := h.store(t)
	v := b("v")
	cases := map[string]struct {
		doc string
		w   *persist.Write
	}{
		"document":        {"", &persist.Write{Records: []persist.Put{{Key: "k", Value: v}}}},
		"empty write":     {"", &persist.Write{}},
		"record":          {"doc", &persist.Write{Records: []persist.Put{{Key: "k", Value: v}, {Key: "", Value: v}}}},
		"projection":      {"doc", &persist.Write{Records: []persist.Put{{Key: "k", Value: v}}, Projections: []persist.Put{{Key: "", Value: v}}}},
		"answer":          {"doc", &persist.Write{Answers: []persist.Put{{Key: "", Value: v}}}},
		"answer delete":   {"doc", &persist.Write{Answers: []persist.Put{{Key: ""}}}},
		"draft":           {"doc", &persist.Write{Drafts: []persist.DraftPut{{Decision: "d", Chunk: v}, {Decision: "", Chunk: v}}}},
		"draft snapshot":  {"doc", &persist.Write{Drafts: []persist.DraftPut{{Decision: "", Chunk: v, Snapshot: true}}}},
		"audit":           {"doc", &persist.Write{Records: []persist.Put{{Key: "k", Value: v}}, Audit: []persist.Put{{Key: "", Value: v}}}},
		"record and doc":  {"", &persist.Write{Records: []persist.Put{{Key: "", Value: v}}}},
		"everything else": {"doc", &persist.Write{Records: []persist.Put{{Key: "k", Value: v}}, Drafts: []persist.DraftPut{{Decision: "d", Chunk: v}}, Projections: []persist.Put{{Key: "k", Value: v}}, Answers: []persist.Put{{Key: "k", Value: v}, {Key: ""}}}},
	}
	for name, c := range cases {
		if err := s.Commit(context.Background(), c.doc, c.w); !errors.Is(err, persist.ErrEmptyKey) {
			t.Errorf("%s: Commit = %v, want ErrEmptyKey", name, err)
		}
	}
	expectDocuments(t, s)
	expectDocument(t, s, "doc", nil)
}

func (h *harness) testCancelledContext(t *testing.T) {
	s := h.store(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Commit(ctx, "doc", &persist.Write{Records: []persist.Put{{Key: "k", Value: b("v")}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit with a cancelled context = %v, want context.Canceled", err)
	}
	expectDocuments(t, s)
	expectDocument(t, s, "doc", nil)
}

func (h *harness) testClosed(t *testing.T) {
	s := h.open(t)
	commit(t, s, "doc", &persist.Write{Records: []persist.Put{{Key: "k", Value: b("v")}}})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := context.Background()
	if err := s.Commit(ctx, "doc", &persist.Write{Records: []persist.Put{{Key: "k", Value: b("v")}}}); !errors.Is(err, persist.ErrClosed) {
		t.Errorf("Commit after Close = %v, want ErrClosed", err)
	}
	if err := s.Commit(ctx, "doc", &persist.Write{}); !errors.Is(err, persist.ErrClosed) {
		t.Errorf("Commit of an empty Write after Close = %v, want ErrClosed", err)
	}
	if d, err := s.LoadDocument(ctx, "doc"); !errors.Is(err, persist.ErrClosed) {
		t.Errorf("LoadDocument after Close = %v, %v, want ErrClosed", d, err)
	}
	if ids, err := s.Documents(ctx); !errors.Is(err, persist.ErrClosed) {
		t.Errorf("Documents after Close = %q, %v, want ErrClosed", ids, err)
	}
	if err := s.DeleteDocument(ctx, "doc"); !errors.Is(err, persist.ErrClosed) {
		t.Errorf("DeleteDocument after Close = %v, want ErrClosed", err)
	}
	if err := s.Close(); !errors.Is(err, persist.ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
}
