package testutil

import (
	"testing"
	"time"
)

// Patience is how long Eventually waits by default: long enough for a
// condition that holds within milliseconds on a quiet machine to hold on
// one whose cores are all busy with other work.
const Patience = 10 * time.Second

// Eventually polls cond until it holds, failing the test after Patience
// with what it was waiting for.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, Patience, what, func() (bool, string) { return cond(), "" })
}

// EventuallyWithin polls check until it reports true, failing the test
// after timeout with what it was waiting for and check's last description
// of why it did not hold yet. Polls start a millisecond apart and back off
// to 50 ms, so a quick condition is seen quickly and a slow one does not
// keep a core busy.
func EventuallyWithin(t testing.TB, timeout time.Duration, what string, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for {
		ok, why := check()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if why != "" {
				t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, why)
			}
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}
