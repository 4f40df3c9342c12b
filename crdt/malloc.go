package crdt

/*
#include <malloc.h>

static int accordSetArenaMax(int n) {
#ifdef M_ARENA_MAX
	return mallopt(M_ARENA_MAX, n);
#else
	return 0;
#endif
}

static int accordTrim(void) {
#ifdef __GLIBC__
	return malloc_trim(0);
#else
	return 0;
#endif
}
*/
import "C"

// LimitAllocatorArenas caps the C allocator's arenas at n (glibc's
// M_ARENA_MAX; elsewhere it does nothing and reports false).
//
// automerge's core allocates with the C allocator on whichever OS thread
// runs a cgo call, and glibc gives busy threads arenas of their own, up to
// eight per core. Each arena keeps the memory freed into it, so a server
// whose documents churn through many short-lived automerge values grows
// its resident memory far past what it holds: measured on one decision
// edited 20,000 times, 318 MB resident with the default arenas against
// 137 MB with one. A host calls it once, early in main, before it opens
// documents; setting MALLOC_ARENA_MAX in the environment does the same.
func LimitAllocatorArenas(n int) bool {
	if n < 1 {
		n = 1
	}
	return C.accordSetArenaMax(C.int(n)) == 1
}

// TrimAllocator hands the memory the C allocator holds free back to the
// system (glibc's malloc_trim; elsewhere it does nothing), and reports
// whether it handed any back.
//
// A dropped automerge document's memory is freed into the C allocator
// (once a collection has run its finalizer), which keeps it for reuse:
// the process's resident set does not shrink when documents are dropped
// until it is trimmed. Trimming takes a few milliseconds for a heap of
// tens of MB, during which automerge calls on other threads wait for the
// allocator, so a host trims after dropping many documents, not after
// each.
func TrimAllocator() bool { return C.accordTrim() == 1 }
