package server

import (
	"runtime"
	"time"

	"github.com/accord-crdt/accord/crdt"
)

// Parking a document's decisions (Options.ParkIdle) or unloading it
// drops automerge documents, whose memory lives in the C allocator: a
// finalizer frees it once a collection found the document unreachable,
// and the allocator then keeps it for reuse. Left alone, the resident set
// of a server whose documents went idle stays at what they held live
// (measured: 100 parked documents of the peers' shape freed 25 MB of C
// heap and the resident set went from 97 to 94 MB; trimmed, to 57 MB).
// So once documents drop theirs, the server collects, and a moment later,
// the finalizers having run, trims the allocator.
const (
	// reclaimDelay gathers the documents that go idle about together
	// into one collection and trim.
	reclaimDelay = time.Second
	// finalizerGrace is how long after the collection the trim waits:
	// the collection only queues the finalizers, which run on a
	// goroutine of their own. Memory freed later is trimmed with the
	// next reclaim.
	finalizerGrace = time.Second
)

// reclaimSoon schedules a collection and a trim of the C allocator
// (crdt.TrimAllocator), unless one is scheduled and its collection has
// not run yet: that collection finds what was dropped before it.
func (s *Server) reclaimSoon() {
	if !s.reclaiming.CompareAndSwap(false, true) {
		return
	}
	time.AfterFunc(reclaimDelay, func() {
		s.reclaiming.Store(false) // what is dropped from now on needs a collection of its own
		runtime.GC()
		time.AfterFunc(finalizerGrace, func() {
			crdt.TrimAllocator()
			s.stats.reclaims.Add(1)
		})
	})
}

// trimEvery bounds how often commits have the C allocator trimmed.
const trimEvery = 10 * time.Second

// trimSoon has the C allocator trimmed within trimEvery, unless a trim
// is due already. While documents are edited, automerge's transient
// memory (each edit's checks and reads, each join's saves) is freed
// between the live documents' allocations, and the allocator keeps it
// resident; a trim takes a few milliseconds.
func (s *Server) trimSoon() {
	if !s.trimming.CompareAndSwap(false, true) {
		return
	}
	time.AfterFunc(trimEvery, func() {
		s.trimming.Store(false)
		crdt.TrimAllocator()
	})
}
