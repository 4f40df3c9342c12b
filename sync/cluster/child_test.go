package cluster_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/accord-crdt/accord/persist/jetstream"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/question/planner/memhost"
	"github.com/accord-crdt/accord/sync/cluster"
	"github.com/accord-crdt/accord/sync/server"
)

// The failover tests run Accord nodes as child processes, so that killing
// one is a real SIGKILL: the test binary starts itself again with these
// variables set, and TestMain runs a node instead of the tests.
const (
	childNode  = "ACCORD_CLUSTER_TEST_NODE"  // the node's name
	childNATS  = "ACCORD_CLUSTER_TEST_NATS"  // NATS URLs, comma-separated
	childLease = "ACCORD_CLUSTER_TEST_LEASE" // the lease TTL
	childDie   = "ACCORD_CLUSTER_TEST_DIE"   // "claimed" or "accepted": SIGKILL itself at that point of its first turn
	childReady = "accord-node-ready "        // stdout line: then the ws:// base
)

// chatBucket holds the Planner turns the nodes' Chat accepted.
const chatBucket = "TEST_CHAT"

// plannerOwner is the Planner owner of every test document: turns nobody
// typed run under this login.
const plannerOwner = "planner"

func TestMain(m *testing.M) {
	if name := os.Getenv(childNode); name != "" {
		if err := runChild(name); err != nil {
			fmt.Fprintf(os.Stderr, "node %s: %v\n", name, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// commitPoker is a node's Host: each commit wakes answer delivery.
type commitPoker struct {
	server.NopHost
	poke func(doc string)
}

func (h commitPoker) Committed(doc string, _ []string) { h.poke(doc) }

// runChild is one Accord node in its own process, as a host would run it:
// a sync server on a FencedStore over the shared R3 stream, behind a
// Router, and the Planner's answer Driver on an OwnerOnly, started for
// each document when this node takes its lease. Its Chat is a JetStream KV
// bucket shared by every node (kvChat). It serves until killed, or until
// its stdin closes (the test ended).
func runChild(name string) error {
	ttl, err := time.ParseDuration(os.Getenv(childLease))
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", name)
	// Only the servers given: in the fault tests they are proxies, which
	// the servers' own addresses would bypass.
	nc, err := nats.Connect(os.Getenv(childNATS), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.IgnoreDiscoveredServers())
	if err != nil {
		return err
	}
	ctx := context.Background()
	// A busy machine can keep a fresh R3 stream or bucket without a leader
	// for longer than one request's timeout: each is retried for a while.
	var js *jetstream.Store
	if err := retryStarting(func() (err error) {
		js, err = jetstream.Open(ctx, nc, &jetstream.Options{Replicas: 3, Timeout: 5 * time.Second})
		return err
	}); err != nil {
		return err
	}
	var chat *kvChat
	if err := retryStarting(func() (err error) {
		chat, err = openKVChat(ctx, nc)
		return err
	}); err != nil {
		return err
	}
	store := cluster.NewFencedStore(js)
	// Every commit, for the fencing check of the fault tests.
	store.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", name))
	host := memhost.New()
	var (
		mu     sync.Mutex
		driver *planner.Driver
	)
	poke := func(doc string) {
		mu.Lock()
		d := driver
		mu.Unlock()
		if d != nil {
			d.Poke(doc)
		}
	}
	srv, err := server.New(server.Options{
		Store: store, Logger: log, IdleUnload: time.Second,
		Authorize: func(r *http.Request, doc string) (question.Member, error) {
			m, err := authorize(r, doc)
			if err == nil {
				host.Members.Add(doc, m)
				host.Members.Capture(m.Login)
			}
			return m, err
		},
		Host: commitPoker{poke: poke},
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var router *cluster.Router
	err = retryStarting(func() (err error) {
		router, err = cluster.New(ctx, srv, cluster.Options{
			Conn: nc, Node: name, URL: "http://" + ln.Addr().String() + "/", Replicas: 3,
			LeaseTTL: ttl, ReleaseAfter: 3 * time.Second, Lost: func(doc string) { store.Forget(doc); srv.CloseDocument(doc) }, Logger: log,
			HandOff: srv.HandOff,
			Acquired: func(doc string) {
				host.Members.Add(doc, question.Member{Login: plannerOwner, Write: true})
				host.Runtime.SetOwner(doc, plannerOwner)
				mu.Lock()
				d := driver
				mu.Unlock()
				if d != nil {
					d.Watch(doc)
					d.Poke(doc)
				}
			},
		})
		return err
	})
	if err != nil {
		return err
	}
	store.RequireLease(router)
	owned := cluster.NewOwnerOnly(router, srv)
	owned.Skip = planner.FromDriver
	opts := planner.Options{
		Authorities: owned, Logger: log,
		Quiet: 50 * time.Millisecond, Cap: 200 * time.Millisecond, Poll: time.Second, Retry: 200 * time.Millisecond,
	}
	host.Wire(&opts)
	chat.node, chat.die = name, os.Getenv(childDie)
	opts.Chat = chat
	d, err := planner.New(opts)
	if err != nil {
		return err
	}
	mu.Lock()
	driver = d
	mu.Unlock()
	hs := &http.Server{Handler: router, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	fmt.Printf("%sws://%s\n", childReady, ln.Addr())
	// SIGTERM is a planned stop, as an operator's: hand every document
	// off (commit, release the lease, close its connections), then stop.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	stdin := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stdin)
	}()
	select {
	case <-stdin:
		return nil
	case <-term:
	}
	start := time.Now()
	held := router.Stats().Leases
	if err := router.Close(); err != nil {
		log.Warn("handoff", "err", err)
	}
	d.Close()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	_ = hs.Shutdown(sctx)
	log.Info("handed off", "documents", held, "took", time.Since(start))
	return nil
}

// kvChat is a Chat shared by every node: a turn is accepted by creating
// its key in a JetStream KV bucket, which succeeds once per turn id in the
// whole cluster (compare-and-set in the bucket's Raft group), so a turn
// handed over again by the next owner after a crash is not accepted twice.
// Its value lists the answers the turn carried, for the test to count.
type kvChat struct {
	kv   natsjs.KeyValue
	node string // the node's name, recorded with each turn it accepts
	// die makes the node SIGKILL itself in its first Accept: "claimed"
	// before accepting (the turn is claimed in the store, Chat never saw
	// it), "accepted" after (Chat has it, the rows are not yet marked).
	die string
}

func (c *kvChat) dieAt(point string) {
	if c.die == point {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// retryStarting runs start until it succeeds or 30 s have passed.
func retryStarting(start func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := start()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func openKVChat(ctx context.Context, nc *nats.Conn) (*kvChat, error) {
	js, err := natsjs.New(nc)
	if err != nil {
		return nil, err
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, natsjs.KeyValueConfig{Bucket: chatBucket, Replicas: 3, History: 1})
	if err != nil {
		return nil, err
	}
	return &kvChat{kv: kv}, nil
}

func chatKey(doc, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(doc)) + "." + base64.RawURLEncoding.EncodeToString([]byte(id))
}

// acceptedTurn is a kvChat value.
type acceptedTurn struct {
	Doc     string   `json:"doc"`
	ID      string   `json:"id"`
	Answers []answer `json:"answers"`
	// Node is the node that accepted the turn.
	Node string `json:"node"`
}

type answer struct {
	Decision   string `json:"decision"`
	Generation uint64 `json:"generation"`
}

func (c *kvChat) Post(ctx context.Context, doc string, n planner.Notice) error { return nil }

func (c *kvChat) Accept(ctx context.Context, doc string, t planner.Turn) error {
	v := acceptedTurn{Doc: doc, ID: t.ID, Node: c.node}
	for _, a := range t.Answers {
		v.Answers = append(v.Answers, answer{Decision: a.Decision, Generation: a.Generation})
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.dieAt("claimed")
	if _, err := c.kv.Create(ctx, chatKey(doc, t.ID), b); err != nil && !errors.Is(err, natsjs.ErrKeyExists) {
		return err
	}
	c.dieAt("accepted")
	return nil
}

func (c *kvChat) Accepted(ctx context.Context, doc, id string) (bool, error) {
	_, err := c.kv.Get(ctx, chatKey(doc, id))
	if errors.Is(err, natsjs.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// child is a node process.
type child struct {
	name  string
	url   string // ws:// base
	cmd   *exec.Cmd
	stdin io.Closer
	log   *lockedBuffer
	done  chan struct{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// spawn starts a node process on the cluster at natsURLs and waits until
// it serves. Its log is shown if the test fails.
func spawn(t testing.TB, name, natsURLs string, ttl time.Duration, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childNode+"="+name, childNATS+"="+natsURLs, childLease+"="+ttl.String()), env...)
	c := &child{name: name, cmd: cmd, log: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = c.log
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.stdin = in
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), childReady); ok {
				ready <- u
			}
		}
		_ = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.kill()
		if t.Failed() {
			t.Logf("log of node %s:\n%s", c.name, c.log.String())
		}
	})
	select {
	case c.url = <-ready:
	case <-c.done:
		t.Fatalf("node %s exited before serving:\n%s", name, c.log.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("node %s did not start:\n%s", name, c.log.String())
	}
	return c
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	_ = c.stdin.Close()
	<-c.done
}
