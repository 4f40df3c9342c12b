package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"sort"
	"sync/atomic"
	"time"
)

// pct is the p-quantile (0 to 1) of d; 0 for none.
func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p)
	return s[i]
}

// ms renders d in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// memtraceOf returns what LOAD_MEMTRACE prints to standard error after
// each collection: this process's memory, the collector's and finalizers'
// progress, and what the clients of the traced server received.
func memtraceOf(traced *atomic.Pointer[child]) func() {
	return func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		var frames, bytes int64
		if c := traced.Load(); c != nil {
			frames, bytes = c.frames.Load(), c.bytes.Load()
		}
		// automerge's results are freed by finalizers: a queue that
		// grows holds C memory the heap figure does not show.
		fin := []metrics.Sample{{Name: "/gc/finalizers/queued:finalizers"}, {Name: "/gc/finalizers/executed:finalizers"}}
		metrics.Read(fin)
		fmt.Fprintf(os.Stderr, "memtrace rss %.0f MB heap %.0f MB gcs %d finalizers waiting %d goroutines %d frames received %d (%.1f MB)\n",
			statusMB("/proc/self/status", "VmRSS:"), float64(ms.HeapInuse)/(1<<20), ms.NumGC, int64(fin[0].Value.Uint64()-fin[1].Value.Uint64()),
			runtime.NumGoroutine(), frames, float64(bytes)/(1<<20))
	}
}
