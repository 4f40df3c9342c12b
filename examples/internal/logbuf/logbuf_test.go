package logbuf

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestLinesFromConcurrentWriters(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { fmt.Fprintf(&b, "writer=%d msg=hello\n", i) })
	}
	wg.Wait()
	if got := b.Lines("msg=hello"); len(got) != 8 {
		t.Fatalf("%d lines, want 8: %q", len(got), b.String())
	}
	if got := b.Lines("writer=3", "hello"); !slices.Equal(got, []string{"writer=3 msg=hello"}) {
		t.Fatalf("lines with writer=3: %q", got)
	}
	if got := b.Lines("absent"); got != nil {
		t.Fatalf("lines with absent: %q", got)
	}
}
