package storetest

import (
	"context"
	"slices"
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
