package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// pagesOptions configure runPages.
type pagesOptions struct {
	Data, NATS, Level string // the data folder, the NATS URLs, the nodes' log level
	Addrs             []string
	Out               io.Writer
	// BuildFlags go to the build of ./server (a test built with -race
	// builds it so too, from the same cached packages).
	BuildFlags []string
}

// runPages builds the example server and runs it as three nodes of the
// NATS cluster at natsURLs (the page, its API, MCP and sync endpoint on
// each), one process each, until ctx ends; then it stops them as an
// operator would (SIGTERM: each hands its documents off). Every line a
// node prints (its page's address and sign-in links) is shown prefixed
// with the node's name.
//
// The nodes listen on o.Addrs (one each) and everything is printed to
// o.Out.
func runPages(ctx context.Context, o pagesOptions) error {
	data, natsURLs, level, addrs, out := o.Data, o.NATS, o.Level, o.Addrs, o.Out
	if _, err := os.Stat(filepath.Join("server", "main.go")); err != nil {
		return errors.New("run it from the examples folder (it builds ./server), or use -bare")
	}
	bin := filepath.Join(data, "accord-server")
	build := exec.CommandContext(ctx, "go", append(append([]string{"build"}, o.BuildFlags...), "-o", bin, "./server")...)
	build.Stdout, build.Stderr = out, out
	fmt.Fprintln(out, "building ./server ...")
	if err := build.Run(); err != nil {
		return fmt.Errorf("build ./server: %w", err)
	}
	// The nodes need no secret from here: the first to start stores its
	// session key and MCP token in the cluster, and every node uses those,
	// so a link or token any node prints is good on all of them.
	var (
		wg    sync.WaitGroup
		lines sync.Mutex // one node's line at a time
		procs []*exec.Cmd
	)
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			for _, p := range procs {
				_ = p.Process.Kill()
			}
			<-done
		}
	}()
	show := func(name string, r io.Reader) {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines.Lock()
			fmt.Fprintf(out, "%s | %s\n", name, sc.Text())
			lines.Unlock()
		}
	}
	for i, addr := range addrs {
		name := "node-" + strconv.Itoa(i+1)
		cmd := exec.Command(bin, "-addr", addr, "-data", filepath.Join(data, name), "-node", name, "-nats", natsURLs, "-log", level)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		procs = append(procs, cmd)
		var pipes sync.WaitGroup
		pipes.Go(func() { show(name, stdout) })
		pipes.Go(func() { show(name, stderr) })
		wg.Go(func() {
			pipes.Wait() // Wait closes the pipes: read them to the end first
			err := cmd.Wait()
			lines.Lock()
			fmt.Fprintf(out, "%s | exited: %v\n", name, err)
			lines.Unlock()
		})
	}
	// What to do next is said once every node has printed its page and
	// links: a node answers /healthz only after that.
	if err := untilServing(ctx, addrs); err != nil {
		return err
	}
	lines.Lock()
	fmt.Fprintf(out, `
Three nodes of the example's page share one JetStream cluster (NATS %s).
Open two of the pages above, in two browsers, each with a sign-in link a
node printed (any node's link and MCP token work on every node): both
show the same plan and decisions, decided by the node holding the
document's lease. Stop a node with kill -TERM: it hands its documents
off and its pages reconnect to the next owner. Kill one with kill -9:
the others take over once its lease expires (-lease-ttl).
See docs/OPERATIONS.md and docs/SCALING.md. Ctrl-C stops everything.

`, natsURLs)
	lines.Unlock()
	// A node killed to watch a failover leaves the others running.
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	select {
	case <-ctx.Done():
		return nil
	case <-all:
		return errors.New("every node exited")
	}
}

// untilServing waits until every node at addrs answers /healthz, for a
// minute at most (the build is done; a node joining the cluster waits for
// its buckets).
func untilServing(ctx context.Context, addrs []string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, addr := range addrs {
		for {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
			res, err := http.DefaultClient.Do(req)
			if err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("the node on %s is not serving: %v", addr, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}
