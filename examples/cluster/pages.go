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

// runPages builds the example server and runs it as three nodes of the
// NATS cluster at natsURLs (the page, its API, MCP and sync endpoint on
// each), one process each, until ctx ends; then it stops them as an
// operator would (SIGTERM: each hands its documents off). Every line a
// node prints (its page's address and sign-in links) is shown prefixed
// with the node's name.
func runPages(ctx context.Context, data, natsURLs, level string) error {
	if _, err := os.Stat(filepath.Join("server", "main.go")); err != nil {
		return errors.New("run it from the examples folder (it builds ./server), or use -bare")
	}
	bin := filepath.Join(data, "accord-server")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./server")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	fmt.Println("building ./server ...")
	if err := build.Run(); err != nil {
		return fmt.Errorf("build ./server: %w", err)
	}
	// The nodes need no secret from here: the first to start stores its
	// session key and MCP token in the cluster, and every node uses those,
	// so a link or token any node prints is good on all of them.
	var (
		wg    sync.WaitGroup
		out   sync.Mutex // one node's line at a time
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
	show := func(name string, r io.Reader, w io.Writer) {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			out.Lock()
			fmt.Fprintf(w, "%s | %s\n", name, sc.Text())
			out.Unlock()
		}
	}
	var addrs []string
	for i := range nodes {
		name := "node-" + strconv.Itoa(i+1)
		addr := "127.0.0.1:" + strconv.Itoa(8081+i)
		addrs = append(addrs, addr)
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
		pipes.Go(func() { show(name, stdout, os.Stdout) })
		pipes.Go(func() { show(name, stderr, os.Stderr) })
		wg.Go(func() {
			pipes.Wait() // Wait closes the pipes: read them to the end first
			err := cmd.Wait()
			out.Lock()
			fmt.Fprintf(os.Stderr, "%s | exited: %v\n", name, err)
			out.Unlock()
		})
	}
	// What to do next is said once every node has printed its page and
	// links: a node answers /healthz only after that.
	if err := untilServing(ctx, addrs); err != nil {
		return err
	}
	out.Lock()
	fmt.Printf(`
Three nodes of the example's page share one JetStream cluster (NATS %s).
Open two of the pages above, in two browsers, each with a sign-in link a
node printed (any node's link and MCP token work on every node): both
show the same plan and decisions, decided by the node holding the
document's lease. Stop a node with kill -TERM: it hands its documents
off and its pages reconnect to the next owner. Kill one with kill -9:
the others take over once its lease expires (-lease-ttl).
See docs/OPERATIONS.md and docs/SCALING.md. Ctrl-C stops everything.

`, natsURLs)
	out.Unlock()
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
