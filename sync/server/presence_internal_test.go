package server

import (
	"testing"
	"time"

	"github.com/accord-crdt/accord/sync/wire"
)

// TestPresenceRightAfterTheWelcome: a member that publishes its presence
// as soon as its welcome is out (a replica sends its state again after a
// reconnect) is relayed, however late the document goroutine finishes
// joining its connection; and the connection gets its welcome first, then
// its presence id.
func TestPresenceRightAfterTheWelcome(t *testing.T) {
	h := newPresenceHub(&Options{PresenceRate: 10, PresenceSilence: time.Minute})
	c := &conn{}
	relayed := make(chan bool)
	h.add(c, func() {
		c.qmu.Lock()
		c.queue = append(c.queue, queued{frame: frame{data: []byte("welcome")}})
		c.qmu.Unlock()
		// The member reads the welcome and publishes at once, while the
		// document goroutine that queued it is held up.
		go func() {
			relayed <- h.publish(c, &wire.Presence{State: &wire.PresenceState{Decision: "d1"}}, time.Now())
		}()
		time.Sleep(20 * time.Millisecond)
	})
	if !<-relayed {
		t.Fatal("the presence published right after the welcome was dropped")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.flushAt.Stop()
	h.conns[c].quiet.Stop()
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if len(c.queue) != 2 || string(c.queue[0].data) != "welcome" || !c.queue[1].presence {
		t.Fatalf("the connection's frames: %+v; want the welcome, then its presence id", c.queue)
	}
}
