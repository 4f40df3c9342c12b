package testutil

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	Eventually(t, "the third poll", func() bool { return calls.Add(1) >= 3 })
	if got := calls.Load(); got != 3 {
		t.Fatalf("polled %d times, want 3", got)
	}
}

func TestEventuallyWithinFailsWithTheLastDescription(t *testing.T) {
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		EventuallyWithin(ft, 20*time.Millisecond, "a condition that never holds", func() (bool, string) { return false, "still false" })
	}()
	<-done
	want := "timed out after 20ms waiting for a condition that never holds: still false"
	if ft.msg != want {
		t.Fatalf("failed with %q, want %q", ft.msg, want)
	}
}

// fatalRecorder records Fatalf's message and ends the goroutine as
// testing.T does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
