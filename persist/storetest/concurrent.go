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
