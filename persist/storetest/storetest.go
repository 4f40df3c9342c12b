package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/accord-crdt/accord/persist"
)

// DefaultChecks is the number of random sequences the property test runs
// when Options.Checks is zero.
const DefaultChecks = 200

// Options configure RunWithOptions. The zero value runs every test that
// needs nothing beyond open.
type Options struct {
	// Reopen, if set, closes s (unless it is closed already) and opens the
	// same storage again, returning the new Store. The property test then
	// interleaves reopens with commits, and the Close test checks that
	// every acknowledged Write survived.
	Reopen func(t *testing.T, s persist.Store) persist.Store

	// Checks is the number of random sequences the property test runs;
	// zero means DefaultChecks.
	Checks int
}

// Run runs the conformance suite against the Stores that open returns. open
// must return a new, empty Store each time it is called.
func Run(t *testing.T, open func(t *testing.T) persist.Store) {
	t.Helper()
	RunWithOptions(t, open, Options{})
}

// RunWithOptions is Run with options; see Options.
func RunWithOptions(t *testing.T, open func(t *testing.T) persist.Store, opts Options) {
	t.Helper()
	if opts.Checks == 0 {
		opts.Checks = DefaultChecks
	}
	h := &harness{open: open, opts: opts}
	tests := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"EmptyDocument", h.testEmptyDocument},
		{"PutOverwrite", h.testPutOverwrite},
		{"Answers", h.testAnswers},
		{"DraftChunks", h.testDraftChunks},
		{"DraftSnapshot", h.testDraftSnapshot},
		{"AtomicVisibility", h.testAtomicVisibility},
		{"FailedWriteAppliesNothing", h.testFailedWriteAppliesNothing},
		{"Isolation", h.testIsolation},
		{"DocumentsSorted", h.testDocumentsSorted},
		{"EmptyWrite", h.testEmptyWrite},
		{"CopiesIn", h.testCopiesIn},
		{"CopiesOut", h.testCopiesOut},
		{"EmptyKey", h.testEmptyKey},
		{"CancelledContext", h.testCancelledContext},
		{"Closed", h.testClosed},
		{"CloseWhileCommitting", h.testCloseWhileCommitting},
		{"ConcurrentSameDocument", h.testConcurrentSameDocument},
		{"ConcurrentDifferentDocuments", h.testConcurrentDifferentDocuments},
		{"DeleteDocument", h.testDeleteDocument},
		{"DeleteDocumentInvalid", h.testDeleteDocumentInvalid},
		{"DeleteWhileCommitting", h.testDeleteWhileCommitting},
		{"AuditLog", h.testAuditLog},
		{"Property", h.testProperty},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t)
		})
	}
}

type harness struct {
	open func(t *testing.T) persist.Store
	opts Options
}

// store opens a Store that is closed when t ends.
func (h *harness) store(t *testing.T) persist.Store {
	t.Helper()
	s := h.open(t)
	if s == nil {
		t.Fatal("open returned a nil Store")
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func commit(t testing.TB, s persist.Store, doc string, w *persist.Write) {
	t.Helper()
	if err := s.Commit(context.Background(), doc, w); err != nil {
		t.Fatalf("Commit(%q): %v", doc, err)
	}
}

func load(t testing.TB, s persist.Store, doc string) *persist.StoredDocument {
	t.Helper()
	d, err := s.LoadDocument(context.Background(), doc)
	if err != nil {
		t.Fatalf("LoadDocument(%q): %v", doc, err)
	}
	return d
}

func documents(t testing.TB, s persist.Store) []string {
	t.Helper()
	ids, err := s.Documents(context.Background())
	if err != nil {
		t.Fatalf("Documents: %v", err)
	}
	return ids
}

func expectDocument(t testing.TB, s persist.Store, doc string, want *persist.StoredDocument) {
	t.Helper()
	if diff := diffDocument(load(t, s, doc), want); diff != "" {
		t.Fatalf("LoadDocument(%q) differs:\n%s", doc, diff)
	}
}

func expectDocuments(t testing.TB, s persist.Store, want ...string) {
	t.Helper()
	got := documents(t, s)
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("Documents = %q, want %q", got, want)
	}
}

func b(s string) []byte { return []byte(s) }

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

func (h *harness) testDocumentsSorted(t *testing.T) {
	s := h.store(t)
	ids := []string{"plan-2", "b", "plan-10", "a", "Z", "a/b", "\xff", "plan-1", "a"}
	for _, id := range ids {
		commit(t, s, id, &persist.Write{Answers: []persist.Put{{Key: "k", Value: b(id)}}})
	}
	want := slices.Compact(slices.Sorted(slices.Values(ids)))
	expectDocuments(t, s, want...)
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

// testCloseWhileCommitting closes the Store under 16 committing goroutines.
// Each Commit returns nil or ErrClosed; with Reopen, every acknowledged Write
// is there afterwards, and at most the one in flight besides.
func (h *harness) testCloseWhileCommitting(t *testing.T) {
	s := h.store(t)
	const writers = 16
	var acked [writers]int
	var wg sync.WaitGroup
	progress := make(chan struct{}, writers*4)
	for g := range writers {
		wg.Go(func() {
			doc := fmt.Sprintf("doc-%02d", g)
			for i := 0; ; i++ {
				k := strconv.Itoa(i)
				err := s.Commit(context.Background(), doc, &persist.Write{Records: []persist.Put{{Key: k, Value: b(k)}}})
				switch {
				case err == nil:
					acked[g] = i + 1
					select {
					case progress <- struct{}{}:
					default:
					}
				case errors.Is(err, persist.ErrClosed):
					return
				default:
					t.Errorf("writer %d: Commit: %v", g, err)
					return
				}
			}
		})
	}
	for range writers * 4 {
		<-progress
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close under load: %v", err)
	}
	wg.Wait()
	if h.opts.Reopen == nil || t.Failed() {
		return
	}
	s = h.opts.Reopen(t, s)
	t.Cleanup(func() { _ = s.Close() })
	for g := range writers {
		doc := fmt.Sprintf("doc-%02d", g)
		d := load(t, s, doc)
		for i := range acked[g] {
			if k := strconv.Itoa(i); string(d.Records[k]) != k {
				t.Errorf("%s: acknowledged record %q = %q after reopen", doc, k, d.Records[k])
			}
		}
		if n := len(d.Records); n < acked[g] || n > acked[g]+1 {
			t.Errorf("%s: %d records after reopen, %d acknowledged", doc, n, acked[g])
		}
	}
}

const (
	concurrentWriters = 16
	commitsPerWriter  = 20
)

// concurrentWrite is writer g's i-th Write: a record, a chunk on a decision
// all writers share and a chunk on the writer's own decision.
func concurrentWrite(g, i int) *persist.Write {
	v := b(fmt.Sprintf("%d/%d", g, i))
	own := "w" + strconv.Itoa(g)
	return &persist.Write{
		Records:     []persist.Put{{Key: string(v), Value: v}},
		Projections: []persist.Put{{Key: own, Value: v}},
		Drafts:      []persist.DraftPut{{Decision: "shared", Chunk: v}, {Decision: own, Chunk: v}},
	}
}

func runWriters(t *testing.T, s persist.Store, docOf func(g int) string) {
	t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range concurrentWriters {
		wg.Go(func() {
			<-start
			for i := range commitsPerWriter {
				if err := s.Commit(context.Background(), docOf(g), concurrentWrite(g, i)); err != nil {
					t.Errorf("writer %d commit %d: %v", g, i, err)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// checkWriters checks that every Write of the writers that committed to d
// landed, with each writer's chunks in its commit order.
func checkWriters(t *testing.T, d *persist.StoredDocument, writers []int) {
	t.Helper()
	if got, want := len(d.Records), len(writers)*commitsPerWriter; got != want {
		t.Errorf("%d records, want %d", got, want)
	}
	shared := d.Drafts["shared"].Chunks
	if got, want := len(shared), len(writers)*commitsPerWriter; got != want {
		t.Errorf("%d shared chunks, want %d", got, want)
	}
	next := make(map[int]int)
	for _, c := range shared {
		var g, i int
		if _, err := fmt.Sscanf(string(c), "%d/%d", &g, &i); err != nil {
			t.Fatalf("shared chunk %q: %v", c, err)
		}
		if i != next[g] {
			t.Fatalf("writer %d: shared chunk %d follows chunk %d", g, i, next[g]-1)
		}
		next[g]++
	}
	for _, g := range writers {
		own := "w" + strconv.Itoa(g)
		chunks := d.Drafts[own].Chunks
		if len(chunks) != commitsPerWriter {
			t.Errorf("writer %d: %d chunks, want %d", g, len(chunks), commitsPerWriter)
		}
		for i, c := range chunks {
			if want := fmt.Sprintf("%d/%d", g, i); string(c) != want {
				t.Errorf("writer %d: chunk %d = %q, want %q", g, i, c, want)
				break
			}
		}
		if want := fmt.Sprintf("%d/%d", g, commitsPerWriter-1); string(d.Projections[own]) != want {
			t.Errorf("writer %d: projection %q, want the last Write's %q", g, d.Projections[own], want)
		}
		for i := range commitsPerWriter {
			k := fmt.Sprintf("%d/%d", g, i)
			if string(d.Records[k]) != k {
				t.Errorf("record %q = %q", k, d.Records[k])
			}
		}
	}
}

func (h *harness) testConcurrentSameDocument(t *testing.T) {
	s := h.store(t)
	runWriters(t, s, func(int) string { return "doc" })
	all := make([]int, concurrentWriters)
	for g := range all {
		all[g] = g
	}
	checkWriters(t, load(t, s, "doc"), all)
	expectDocuments(t, s, "doc")
}

func (h *harness) testConcurrentDifferentDocuments(t *testing.T) {
	s := h.store(t)
	docOf := func(g int) string { return fmt.Sprintf("doc-%02d", g) }
	runWriters(t, s, docOf)
	want := make([]string, concurrentWriters)
	for g := range concurrentWriters {
		want[g] = docOf(g)
		checkWriters(t, load(t, s, docOf(g)), []int{g})
	}
	expectDocuments(t, s, want...)
}

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
