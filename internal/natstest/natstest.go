// Package natstest runs embedded NATS servers with JetStream for tests: one
// node, or a cluster of several on random loopback ports, each with its own
// store directory, quiet unless a test fails.
package natstest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// readyTimeout bounds a server's start and a cluster's first election.
const readyTimeout = 20 * time.Second

// RunServer starts one JetStream server on a random loopback port, with its
// store in a temp dir of t. It is shut down when t ends.
func RunServer(t testing.TB) *server.Server {
	t.Helper()
	o := baseOptions(t.TempDir(), "solo")
	s := start(t, o)
	t.Cleanup(s.Shutdown)
	return s
}

// Connect returns a connection to url, closed when t ends. It reconnects
// for ever, so a test can restart servers under it.
func Connect(t testing.TB, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	opts = append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}, opts...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("natstest: connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func baseOptions(dir, name string) *server.Options {
	return &server.Options{
		ServerName: name,
		Host:       "127.0.0.1",
		Port:       -1,
		JetStream:  true,
		StoreDir:   dir,
		NoLog:      true,
		NoSigs:     true,
		// The default 1 GB memory limit would refuse memory streams on a
		// small test machine only much later; keep both bounded.
		JetStreamMaxMemory: 256 << 20,
		JetStreamMaxStore:  1 << 30,
	}
}

func start(t testing.TB, o *server.Options) *server.Server {
	t.Helper()
	s, err := startErr(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func startErr(o *server.Options) (*server.Server, error) {
	s, err := server.NewServer(o)
	if err != nil {
		return nil, fmt.Errorf("natstest: new server %s: %w", o.ServerName, err)
	}
	go s.Start()
	if !s.ReadyForConnections(readyTimeout) {
		s.Shutdown()
		return nil, fmt.Errorf("natstest: server %s not ready after %v", o.ServerName, readyTimeout)
	}
	return s, nil
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	var ls []net.Listener
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("natstest: pick a port: %v", err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// Cluster is a JetStream cluster of embedded servers on loopback.
type Cluster struct {
	t       testing.TB
	opts    []*server.Options
	servers []*server.Server // nil while stopped
}

// RunCluster starts n JetStream servers forming one cluster on random
// loopback ports, and waits until they have elected a meta leader. They are
// shut down when t ends.
func RunCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	// Cleanups run last first: the servers stop before their directory
	// is removed (the other way round, a server still writing its raft
	// state fails the removal).
	root := t.TempDir()
	t.Cleanup(c.shutdownAll)
	// A clustered JetStream server is ready only once it sees its peers,
	// so all start at once, on ports picked beforehand.
	ports := freePorts(t, 2*n)
	var routes []*url.URL
	for i := range n {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", ports[n+i])})
	}
	for i := range n {
		o := baseOptions(filepath.Join(root, fmt.Sprint(i)), fmt.Sprintf("n%d", i))
		o.Port = ports[i]
		o.Cluster = server.ClusterOpts{Name: "accord-test", Host: "127.0.0.1", Port: ports[n+i]}
		o.Routes = routes
		c.opts = append(c.opts, o)
		c.servers = append(c.servers, nil)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { c.servers[i], errs[i] = startErr(c.opts[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	c.WaitLeader()
	return c
}

// WaitLeader waits until the running servers agree on a JetStream meta
// leader.
func (c *Cluster) WaitLeader() {
	c.t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		leaders, running := 0, 0
		for _, s := range c.servers {
			if s == nil {
				continue
			}
			running++
			if s.JetStreamIsLeader() {
				leaders++
			}
		}
		if leaders == 1 && running > 0 {
			ready := true
			for _, s := range c.servers {
				if s != nil && !s.JetStreamIsCurrent() {
					ready = false
				}
			}
			if ready {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("natstest: no JetStream meta leader after %v", readyTimeout)
}

// Server returns server i, or nil while it is stopped.
func (c *Cluster) Server(i int) *server.Server { return c.servers[i] }

// Size is the number of servers, running or not.
func (c *Cluster) Size() int { return len(c.opts) }

// URL returns server i's client URL.
func (c *Cluster) URL(i int) string {
	return fmt.Sprintf("nats://127.0.0.1:%d", c.opts[i].Port)
}

// URLs returns every server's client URL, comma-separated, as nats.Connect
// takes them.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.opts))
	for i := range c.opts {
		urls[i] = c.URL(i)
	}
	return strings.Join(urls, ",")
}

// Stop shuts server i down (its store stays for Start).
func (c *Cluster) Stop(i int) {
	if s := c.servers[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.servers[i] = nil
	}
}

// Start starts server i again on its ports and store.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	if c.servers[i] != nil {
		return
	}
	o := *c.opts[i]
	c.servers[i] = start(c.t, &o)
}

func (c *Cluster) shutdownAll() {
	for i := range c.servers {
		c.Stop(i)
	}
}
