package memstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/persist/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) persist.Store { return memstore.New() })
}

func TestFailNextCommit(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	w := &persist.Write{Records: []persist.Put{{Key: "r", Value: []byte("v")}}}

	errDisk := errors.New("disk full")
	s.FailNextCommit(errDisk)
	// Validation comes first and does not use up the failure.
	if err := s.Commit(ctx, "", w); !errors.Is(err, persist.ErrEmptyKey) {
		t.Fatalf("Commit with an empty document = %v, want ErrEmptyKey", err)
	}
	if err := s.Commit(ctx, "doc", w); !errors.Is(err, errDisk) {
		t.Fatalf("Commit = %v, want the injected error", err)
	}
	if ids, _ := s.Documents(ctx); len(ids) != 0 {
		t.Fatalf("failed Commit applied something: Documents = %q", ids)
	}
	if err := s.Commit(ctx, "doc", w); err != nil {
		t.Fatalf("second Commit: %v", err)
	}

	s.FailNextCommit(errDisk)
	s.FailNextCommit(nil)
	if err := s.Commit(ctx, "doc", w); err != nil {
		t.Fatalf("Commit after cancelling the failure: %v", err)
	}
}

func TestBeforeCommit(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()

	entered := make(chan string)
	release := make(chan error)
	s.SetBeforeCommit(func(doc string, w *persist.Write) error {
		entered <- doc
		return <-release
	})

	var wg sync.WaitGroup
	var errHeld error
	wg.Go(func() {
		errHeld = s.Commit(ctx, "held", &persist.Write{Records: []persist.Put{{Key: "r", Value: []byte("v")}}})
	})
	if doc := <-entered; doc != "held" {
		t.Fatalf("hook saw document %q", doc)
	}
	// While the commit is held, nothing of it is visible.
	if d, err := s.LoadDocument(ctx, "held"); err != nil || len(d.Records) != 0 {
		t.Fatalf("held commit visible: %+v, %v", d, err)
	}
	errRefused := errors.New("refused")
	release <- errRefused
	wg.Wait()
	if !errors.Is(errHeld, errRefused) {
		t.Fatalf("Commit = %v, want the hook's error", errHeld)
	}
	if ids, _ := s.Documents(ctx); len(ids) != 0 {
		t.Fatalf("refused Commit applied something: %q", ids)
	}

	s.SetBeforeCommit(nil)
	if err := s.Commit(ctx, "doc", &persist.Write{Records: []persist.Put{{Key: "r", Value: []byte("v")}}}); err != nil {
		t.Fatalf("Commit without a hook: %v", err)
	}
}
