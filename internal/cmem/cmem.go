//go:build linux && cgo

// Package cmem reads the C allocator's figures, for benchmarks that must
// count what automerge's Rust core holds outside Go's heap (it allocates
// with the C library's malloc, which Go's statistics do not see).
package cmem

/*
#include <malloc.h>
*/
import "C"

// Stats returns the bytes the C allocator has handed out and not had back
// (automerge's live memory, in this module), and the bytes it holds free
// for reuse, which stay in the process's resident set until trimmed.
func Stats() (inUse, free int64) {
	mi := C.mallinfo2()
	return int64(mi.uordblks) + int64(mi.hblkhd), int64(mi.fordblks)
}

// Trim hands the C allocator's free memory back to the system.
func Trim() { C.malloc_trim(0) }
