package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The throughput run can spread its writers over several driver
// processes (this binary with -drive), so that hundreds of replicas, each
// applying every change, are not one process's garbage: automerge's C
// memory is freed by finalizers, which one goroutine per process runs, and
// among hundreds of busy goroutines it falls behind (see memtrace). A
// driver talks to the run over its standard input and output, a line per
// message:
//
//	driver: ready               its writers are connected and hold the document
//	run:    go                  start writing
//	driver: wrote               every write of its writers was accepted
//	driver: heads H             its writers all hold heads H (again on each change)
//	run:    stop                the run is over (or standard input closes)
//	driver: done P F R D        peak memory (MB), frames received, redials, writers redialled
//	driver: error E             it failed (its standard error says more)

// drive runs a driver: writers clients joining doc on the server at addr,
// as the first..first+writers-1-th writers of the run, each making per
// writes.
func drive(addr, doc string, first, writers, per int) error {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go collectGarbage(ctx, 250*time.Millisecond, nil)
	srv := &child{addr: addr, doc: doc}
	cs := make([]*client, writers)
	for i := range cs {
		cl, err := dialClient(srv, fmt.Sprintf("m%d", first+i), nil, nil)
		if err != nil {
			return err
		}
		cs[i] = cl
	}
	for _, cl := range cs {
		select {
		case <-cl.ready:
		case <-time.After(60 * time.Second):
			return fmt.Errorf("%s got no document", cl.name)
		}
	}
	in := bufio.NewScanner(os.Stdin)
	fmt.Println("ready")
	if !in.Scan() || in.Text() != "go" {
		return fmt.Errorf("no go: %q", in.Text())
	}
	stopped := make(chan struct{})
	go func() {
		for in.Scan() && in.Text() != "stop" {
		}
		close(stopped)
	}()
	wrote := make(chan error, 1)
	go func() { wrote <- writeEach(cs, first, per) }()

	last := ""
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case err := <-wrote:
			if err != nil {
				fmt.Println("error", err)
				return err
			}
			fmt.Println("wrote")
		case <-tick.C:
			if h := sameHeads(cs); h != "" && h != last {
				last = h
				fmt.Println("heads", h)
			}
		case <-stopped:
			done = true
		}
	}
	rc, rd := redialled(cs)
	closeAll(cs)
	fmt.Printf("done %.0f %d %d %d\n", peakMB(), srv.frames.Load(), rd, rc)
	return nil
}

// sameHeads returns the heads all of cs hold, or "" while they differ.
func sameHeads(cs []*client) string {
	h := cs[0].heads()
	for _, cl := range cs[1:] {
		if cl.heads() != h {
			return ""
		}
	}
	return h
}

// collectGarbage runs the collector every interval until ctx ends, and
// then after, if set. The replicas' automerge memory is freed by
// finalizers, and the Go heap alone is too small for the collector to run
// often enough: hundreds of replicas would pile up gigabytes of garbage
// between collections.
func collectGarbage(ctx context.Context, interval time.Duration, after func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			runtime.GC()
			if after != nil {
				after()
			}
		}
	}
}

// driver is a driver process as the run sees it.
type driver struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string // its output, closed when it ends
}

func startDriver(srv *child, first, writers, per int) (*driver, error) {
	return startDriverArgs("-drive", "-addr", srv.addr, "-doc", srv.doc,
		"-first", strconv.Itoa(first), "-writers", strconv.Itoa(writers), "-writes", strconv.Itoa(per))
}

// startDriverArgs starts this binary with args as a driver process.
func startDriverArgs(args ...string) (*driver, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &driver{cmd: cmd, in: in, lines: make(chan string, 64)}
	go func() {
		defer close(d.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20) // a W5 driver's record lines grow with the run's length
		for sc.Scan() {
			d.lines <- sc.Text()
		}
	}()
	return d, nil
}

// throughputResult is what a throughput run measured.
type throughputResult struct {
	elapsed   time.Duration
	converged bool
	heads     string  // the heads every writer reached, once converged
	peakMB    float64 // the clients' processes' peaks, summed
	frames    int64
	redials   int64
	dropped   int64 // writers that redialled
}

// throughputIn runs n writers making per writes each, spread over procs
// driver processes, until every writer holds the same heads (or a minute
// after the last write was accepted).
func throughputIn(srv *child, n, per, procs int) (throughputResult, error) {
	var res throughputResult
	ds := make([]*driver, 0, procs)
	defer func() {
		for _, d := range ds {
			d.in.Close()
			d.cmd.Process.Signal(syscall.SIGTERM)
			d.cmd.Wait()
		}
	}()
	for p := range procs {
		first, next := p*n/procs, (p+1)*n/procs
		d, err := startDriver(srv, first, next-first, per)
		if err != nil {
			return res, err
		}
		ds = append(ds, d)
	}
	for i, d := range ds {
		if l, err := d.next(2 * time.Minute); err != nil || l != "ready" {
			return res, fmt.Errorf("driver %d: %q %v", i, l, err)
		}
	}
	start := time.Now()
	for _, d := range ds {
		fmt.Fprintln(d.in, "go")
	}
	type msg struct {
		from int
		line string
	}
	msgs := make(chan msg)
	over := make(chan struct{})
	defer close(over)
	for i, d := range ds {
		go func() {
			for l := range d.lines {
				select {
				case msgs <- msg{i, l}:
				case <-over:
					return
				}
			}
			select {
			case msgs <- msg{i, "ended"}:
			case <-over:
			}
		}()
	}
	wrote := 0
	heads := make([]string, len(ds))
	deadline := time.After(10 * time.Minute)
	for !res.converged {
		var m msg
		select {
		case m = <-msgs:
		case <-deadline:
			if wrote < len(ds) {
				return res, fmt.Errorf("writes not accepted in 10 minutes")
			}
		}
		if m.line == "" {
			break // a minute after the last write, and the writers still differ
		}
		switch verb, arg, _ := strings.Cut(m.line, " "); verb {
		case "wrote":
			wrote++
			if wrote == len(ds) {
				deadline = time.After(time.Minute)
			}
		case "heads":
			heads[m.from] = arg
		case "error", "ended":
			return res, fmt.Errorf("driver %d: %s", m.from, m.line)
		}
		res.converged = wrote == len(ds) && heads[0] != ""
		for _, h := range heads[1:] {
			res.converged = res.converged && h == heads[0]
		}
	}
	res.elapsed = time.Since(start)
	if res.converged {
		res.heads = heads[0]
	}
	for _, d := range ds {
		fmt.Fprintln(d.in, "stop")
	}
	finished := make([]bool, len(ds))
	for done := 0; done < len(ds); {
		m := <-msgs
		verb, arg, _ := strings.Cut(m.line, " ")
		switch {
		case verb == "done":
			var peak float64
			var frames, redials, dropped int64
			fmt.Sscan(arg, &peak, &frames, &redials, &dropped)
			res.peakMB += peak
			res.frames += frames
			res.redials += redials
			res.dropped += dropped
			finished[m.from] = true
			done++
		case verb == "error", verb == "ended" && !finished[m.from]:
			return res, fmt.Errorf("driver %d: %s", m.from, m.line)
		}
	}
	return res, nil
}

// next returns the driver's next line of output.
func (d *driver) next(timeout time.Duration) (string, error) {
	select {
	case l, ok := <-d.lines:
		if !ok {
			return "", fmt.Errorf("driver ended")
		}
		return l, nil
	case <-time.After(timeout):
		return "", fmt.Errorf("no answer in %v", timeout)
	}
}
