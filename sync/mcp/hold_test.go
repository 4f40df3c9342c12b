package mcp_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/sync/mcp"
)

// Hold says who holds a document: nobody at first; the agent, waiting,
// while its call of a Holds tool waits; after the call returned, the
// agent until the session timeout has passed since; then nobody again.
// OnHold tells each change as it happens.
func TestMCPHold(t *testing.T) {
	const timeout = 1500 * time.Millisecond
	var told atomic.Int32
	r := newRig(t, func(o *mcp.Options) {
		o.SessionTimeout = timeout
		o.OnHold = func(d string) {
			if d == doc {
				told.Add(1)
			}
		}
	})
	if _, held := r.h.Hold(doc); held || r.h.Attached(doc) {
		t.Fatal("held before any agent called")
	}
	cs := r.mustAgent()
	done := make(chan struct{})
	go func() {
		defer close(done)
		ok(t, cs, "next", map[string]any{"wait_seconds": 1}, nil)
	}()
	testutil.Eventually(t, "the call to wait", func() bool { return r.h.Awaiting(doc) })
	if hold, held := r.h.Hold(doc); !held || !hold.Waiting || !hold.Until.IsZero() || told.Load() < 1 {
		t.Fatalf("while waiting: %+v %v, told %d times", hold, held, told.Load())
	}
	<-done
	returned := time.Now()
	hold, held := r.h.Hold(doc)
	if !held || hold.Waiting || hold.Until.Before(returned.Add(timeout-time.Second)) || hold.Until.After(returned.Add(timeout)) || told.Load() < 2 {
		t.Fatalf("after the call returned at %s: %+v %v, told %d times", returned.Format(time.StampMilli), hold, held, told.Load())
	}
	time.Sleep(time.Until(hold.Until))
	if hold, held := r.h.Hold(doc); held || r.h.Attached(doc) {
		t.Fatalf("held after the timeout: %+v", hold)
	}
}
