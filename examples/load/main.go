// Command load measures the collaboration server under load: fan-out
// latency, writes per second until every client converges, reconnect
// catch-up, memory, cold load, and acknowledged writes kept across a
// SIGKILL. It starts the server as a child process (this same binary with
// -serve) on a fresh bbolt file, so its memory is measured alone, and
// drives it from clients over loopback: in this process for latency, and
// for throughput in driver processes (this binary with -drive, one per 64
// writers unless -procs says otherwise; procs.go).
//
// The workload: one document with one choice decision of 10 options × 5
// criteria; for latency one writer sets a mark every 20 ms; for throughput
// every client writes at once, each writer count on a document of its
// own. A client the server drops (a slow consumer whose outbox filled)
// reconnects as the page does, and the runs report how many did.
//
// -w5 runs W5 instead, many documents at human rates (w5.go), once per
// document count, each on a fresh server: D documents of -w5-members
// members (5), each member a sync/replica client writing one mark a
// second (± 50%, uniform) for -w5-seconds (30), all documents at once.
// The members live in driver processes (200 to a process, at least 2;
// -w5-procs sets the count). It reports fan-out p50 / p99 / max (from
// a write's making until the last other member of its document shows
// it), writes seen by every other member against those planned, server
// CPU per write, the server's peak RSS and its RSS growth per open
// document and per connection, the clients' CPU per received change, and
// the load average at the start and end of each run.
//
//	go run ./load                      # the default runs
//	go run ./load -clients 2,16 -writes 512
//	go run ./load -writers 256 -procs 4   # 256 writers in 4 driver processes
//	go run ./load -nodes 3             # 3 nodes on JetStream R3 beside 1 bbolt node (cluster.go)
//	go run ./load -w5 10,100           # W5 alone, with 10 and then 100 documents
//
// LOAD_CPUPROFILE=path writes a CPU profile of this process (with -w5,
// of each driver process, to path.w5-N).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	serve := flag.Bool("serve", false, "run as the server child")
	addr := flag.String("addr", "", "server address (with -serve)")
	data := flag.String("data", "", "data folder (with -serve)")
	clients := flag.String("clients", "2,16,64,256", "client counts for the fan-out runs")
	latencyWrites := flag.Int("latency-writes", 200, "writes per fan-out run")
	writes := flag.Int("writes", 2048, "writes per throughput run")
	writers := flag.String("writers", "64,256", "writer counts for the throughput runs")
	missed := flag.Int("missed", 1000, "writes a client misses before reconnecting")
	kill := flag.Int("kill-writes", 2000, "writes acknowledged before the SIGKILL")
	nodes := flag.Int("nodes", 0, "run the cluster figures with this many nodes instead (cluster.go)")
	natsURLs := flag.String("nats", "", "NATS URLs (with -serve: run a cluster node)")
	node := flag.String("node", "", "node name (with -serve -nats)")
	lease := flag.Duration("lease", 2*time.Second, "lease TTL of the cluster nodes")
	failClients := flag.Int("fail-clients", 16, "clients connected during the failover run")
	procs := flag.Int("procs", 0, "driver processes the throughput runs' writers are spread over (0: one per 64 writers)")
	driveFlag := flag.Bool("drive", false, "run as a driver child of a throughput run (procs.go)")
	doc := flag.String("doc", "", "document (with -drive)")
	first := flag.Int("first", 0, "index of the first writer (with -drive; with -drive -w5: the driver's number)")
	w5 := flag.String("w5", "", "document counts for W5, many documents at human rates (w5.go); runs W5 alone")
	w5Members := flag.Int("w5-members", 5, "members of each W5 document")
	w5Seconds := flag.Int("w5-seconds", 30, "how long W5's members write, in seconds")
	w5Procs := flag.Int("w5-procs", 0, "driver processes W5's members are spread over (0: one per 200 members, at least 2)")
	flag.Parse()
	if *driveFlag && *w5 != "" {
		if err := driveW5(*addr, parseInts(*w5)[0], *w5Members, time.Duration(*w5Seconds)*time.Second, *first, *procs); err != nil {
			fmt.Println("error", err)
			fmt.Fprintln(os.Stderr, "w5 driver:", err)
			os.Exit(1)
		}
		return
	}
	if *driveFlag {
		if err := drive(*addr, *doc, *first, parseInts(*writers)[0], *writes); err != nil {
			fmt.Fprintln(os.Stderr, "driver:", err)
			os.Exit(1)
		}
		return
	}
	if *serve && *natsURLs != "" {
		if err := runNode(*addr, *natsURLs, *node, *lease); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *nodes > 0 {
		if err := runCluster(*nodes, parseInts(*clients), *latencyWrites, parseInts(*writers)[0], *writes, *failClients, *lease); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		return
	}
	if *serve {
		if err := runServer(*addr, *data); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *w5 != "" {
		if err := w5Runs(parseInts(*w5), *w5Members, time.Duration(*w5Seconds)*time.Second, *w5Procs); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		return
	}
	if path := os.Getenv("LOAD_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(parseInts(*clients), *latencyWrites, parseInts(*writers), *writes, *missed, *kill, *procs); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func parseInts(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// run makes the default runs against a server child on a fresh bbolt
// file, and prints their figures as a Markdown table.
func run(clientCounts []int, latencyWrites int, writerCounts []int, writes, missed, killWrites, procs int) error {
	root, err := os.MkdirTemp("", "accord-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	var traced atomic.Pointer[child] // the server whose clients memtrace counts
	var memtrace func()
	if os.Getenv("LOAD_MEMTRACE") != "" {
		memtrace = memtraceOf(&traced)
	}
	gcCtx, stopGC := context.WithCancel(context.Background())
	gcDone := make(chan struct{})
	go func() {
		defer close(gcDone)
		collectGarbage(gcCtx, 250*time.Millisecond, memtrace)
	}()
	defer func() { stopGC(); <-gcDone }()
	fmt.Println("| figure | result |")
	fmt.Println("|---|---|")

	srv, err := startChild(filepath.Join(root, "main"))
	if err != nil {
		return err
	}
	defer srv.stop(syscall.SIGTERM)
	traced.Store(srv)
	if _, err := setup(srv); err != nil {
		return err
	}
	base := srv.rssMB()

	if err := fanOutRuns(srv, clientCounts, latencyWrites, base); err != nil {
		return err
	}
	if err := throughputRuns(srv, writerCounts, writes, procs); err != nil {
		return err
	}
	if err := catchUp(srv, missed); err != nil {
		return err
	}
	if err := docMemory(srv); err != nil {
		return err
	}
	return killAndReload(root, killWrites)
}
