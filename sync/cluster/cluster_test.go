package cluster_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/accord-crdt/accord/internal/natstest"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/jetstream"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/cluster"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

func authorize(r *http.Request, doc string) (question.Member, error) {
	m := r.URL.Query().Get("member")
	if m == "" {
		return question.Member{}, server.ErrUnauthorized
	}
	return question.Member{Login: m, Write: true}, nil
}

// node is one Accord node: a sync server on a FencedStore over the shared
// R3 stream, behind a Router, on a loopback HTTP listener.
type node struct {
	name   string
	nc     *nats.Conn
	store  *cluster.FencedStore
	srv    *server.Server
	router *cluster.Router
	hs     *httptest.Server
	mux    *http.ServeMux // the router at /; tests mount more
	url    string         // ws:// base
}

const leaseTTL = 2 * time.Second

func startNode(t testing.TB, name, natsURL string) *node {
	t.Helper()
	ctx := context.Background()
	nc := natstest.Connect(t, natsURL)
	var js *jetstream.Store
	testutil.EventuallyWithin(t, 15*time.Second, name+"'s store to open", func() (bool, string) {
		var err error
		js, err = jetstream.Open(ctx, nc, &jetstream.Options{Replicas: 3, Timeout: 5 * time.Second})
		return err == nil, fmt.Sprint(err)
	})
	n := &node{name: name, nc: nc, store: cluster.NewFencedStore(js)}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", name)
	// Every commit's heads (from, to) go to the test's log, so that a
	// fenced commit shows which commits moved the document before it.
	n.store.SetLogger(slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", name))
	var err error
	n.srv, err = server.New(server.Options{Store: n.store, Authorize: authorize, IdleUnload: time.Second, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = http.NotFoundHandler()
	var mu sync.Mutex
	n.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hh := h
		mu.Unlock()
		hh.ServeHTTP(w, r)
	}))
	testutil.EventuallyWithin(t, 15*time.Second, name+"'s router to start", func() (bool, string) {
		n.router, err = cluster.New(ctx, n.srv, cluster.Options{
			Conn: nc, Node: name, URL: n.hs.URL + "/", Replicas: 3,
			LeaseTTL: leaseTTL, ReleaseAfter: 3 * time.Second, Lost: func(doc string) { n.store.Forget(doc); n.srv.CloseDocument(doc) }, Logger: logger,
		})
		return err == nil, fmt.Sprint(err)
	})
	n.store.RequireLease(n.router)
	n.mux = http.NewServeMux()
	n.mux.Handle("/", n.router)
	mu.Lock()
	h = n.mux
	mu.Unlock()
	n.url = "ws" + strings.TrimPrefix(n.hs.URL, "http")
	t.Cleanup(func() { n.stop() })
	return n
}

// stop shuts the node down in order: connections, then commits, then the
// leases.
func (n *node) stop() {
	n.hs.CloseClientConnections()
	n.hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = n.srv.Shutdown(ctx)
	_ = n.router.Close()
	_ = n.store.Close()
}

// crash cuts the node off at once: its listener and its NATS connection
// go, nothing is released.
func (n *node) crash() {
	n.hs.CloseClientConnections()
	n.hs.Close()
	n.nc.Close()
}

// testWriter logs through t, so a failing test shows the nodes' logs.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", bytes.TrimRight(p, "\n"))
	return len(p), nil
}

func join(t testing.TB, base, doc, member string) *replica.Client {
	t.Helper()
	return joinWith(t, base, doc, member, replica.Options{Format: wire.Binary, MinBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond})
}

// joinWith is join with the replica's options given.
func joinWith(t testing.TB, base, doc, member string, opts replica.Options) *replica.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	u := base + "/?" + url.Values{"doc": {doc}, "member": {member}}.Encode()
	// The first dial is retried here, as a page would: while a document
	// changes hands its nodes answer 502 or 503.
	var c *replica.Client
	var err error
	for {
		c, err = replica.Dial(ctx, u, opts)
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("dial %s as %s: %v", base, member, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func card(key string) wire.Card {
	q := question.Question{ID: "q1", Text: "Which storage engine?"}
	for i := range 3 {
		q.Options = append(q.Options, question.Option{ID: "o" + strconv.Itoa(i), Label: "Option " + strconv.Itoa(i)})
	}
	q.Criteria = []question.Criterion{{ID: "c0", Label: "Cost"}}
	return wire.Card{Key: key, Origin: question.FromPerson, Definition: question.Definition{Questions: []question.Question{q}}}
}

func converged(clients []*replica.Client, id string) bool {
	d0, h0, err := clients[0].Draft(id)
	if err != nil {
		return false
	}
	for _, c := range clients {
		d, h, err := c.Draft(id)
		if err != nil || !h.Equal(h0) || !d.Equal(d0) {
			return false
		}
		acc, unsent, err := c.Accepted(id)
		if err != nil || unsent || !acc.Equal(h0) {
			return false
		}
	}
	return true
}

// saveRace has both clients save id at once and checks that exactly one
// save settles it and the other is refused as stale. It returns who won.
func saveRace(t *testing.T, ctx context.Context, id string, clients ...*replica.Client) string {
	t.Helper()
	type outcome struct {
		who string
		res []wire.SubmitResult
		err error
	}
	out := make(chan outcome, len(clients))
	start := make(chan struct{})
	for _, c := range clients {
		go func() {
			who, _ := c.Member()
			<-start
			res, err := c.Submit(ctx, id)
			out <- outcome{who, res, err}
		}()
	}
	close(start)
	var winner string
	for range clients {
		o := <-out
		if o.err != nil || len(o.res) != 1 {
			t.Fatalf("%s's save failed as a request: %+v %v", o.who, o.res, o.err)
		}
		switch r := o.res[0]; {
		case r.OK:
			if winner != "" {
				t.Fatalf("%s and %s both settled the decision", winner, o.who)
			}
			winner = o.who
		case r.Reason == question.Stale:
		default:
			t.Fatalf("%s's save refused as %q: %s", o.who, r.Reason, r.Message)
		}
	}
	if winner == "" {
		t.Fatal("no save settled the decision")
	}
	return winner
}

// TestSavesThroughTwoNodes: ana reaches the document through node a, ben
// through node b (which forwards him to the document's owner). Their edits
// converge, and in each round their concurrent saves give one settle and
// one stale; the settled record is in the replicated stream.
func TestSavesThroughTwoNodes(t *testing.T) {
	c := natstest.RunCluster(t, 3)
	a := startNode(t, "a", c.URL(0))
	b := startNode(t, "b", c.URL(1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	ana := join(t, a.url, "plan-1", "ana")
	ben := join(t, b.url, "plan-1", "ben")
	if !a.router.Owns("plan-1") || b.router.Owns("plan-1") {
		t.Fatalf("owner: a %v, b %v; want a alone", a.router.Owns("plan-1"), b.router.Owns("plan-1"))
	}
	recs, err := ana.Create(ctx, card("storage"))
	if err != nil {
		t.Fatal(err)
	}
	id := recs[0].ID
	wins := map[string]int{}
	for round := range 3 {
		opt := "o" + strconv.Itoa(round%3)
		if err := ben.Choose(id, "q1", opt, true); err != nil {
			testutil.Eventually(t, "ben to hold the decision", func() bool { _, _, err := ben.Draft(id); return err == nil })
			if err := ben.Choose(id, "q1", opt, true); err != nil {
				t.Fatal(err)
			}
		}
		if err := ben.SetMark(id, "q1", opt, "c0", marks.Yes); err != nil {
			t.Fatal(err)
		}
		if err := ben.Flush(ctx, id); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "ana (node a) and ben (node b) to converge", func() bool {
			return converged([]*replica.Client{ana, ben}, id)
		})
		winner := saveRace(t, ctx, id, ana, ben)
		wins[winner]++
		testutil.Eventually(t, "both to hold the settled record", func() bool {
			for _, cl := range []*replica.Client{ana, ben} {
				rec, ok := cl.Record(id)
				if !ok || rec.Status != question.Settled || rec.Answer == nil || rec.Answer.By != winner {
					return false
				}
			}
			return true
		})
		reopened, err := ana.Reopen(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, "both to hold the reopened draft", func() bool {
			for _, cl := range []*replica.Client{ana, ben} {
				d, _, err := cl.Draft(id)
				if rec, ok := cl.Record(id); err != nil || !ok || rec.Status != question.Open || d.Generation != reopened.Generation {
					return false
				}
			}
			return true
		})
	}
	if st := b.router.Stats(); st.Forwarded == 0 || st.Broken != 0 {
		t.Errorf("b forwarded %d connections and broke %d leases, want some and none", st.Forwarded, st.Broken)
	}
	t.Logf("3 rounds of concurrent saves through two nodes: settled by %v, the other stale each time", wins)
}

// TestOwnerCrashFailover crashes the owner of a document (listener and
// NATS connection gone, leases not released) after a save settled through
// it: the client of the surviving node reconnects, the survivor takes the
// lease once it expires, loads the document from the stream, and the
// settled record and the edits are all there; a new save settles.
func TestOwnerCrashFailover(t *testing.T) {
	c := natstest.RunCluster(t, 3)
	a := startNode(t, "a", c.URL(0))
	b := startNode(t, "b", c.URL(1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	ana := join(t, a.url, "plan-2", "ana")
	ben := join(t, b.url, "plan-2", "ben")
	recs, err := ana.Create(ctx, card("failover"))
	if err != nil {
		t.Fatal(err)
	}
	id := recs[0].ID
	testutil.Eventually(t, "ben to hold the decision", func() bool { _, _, err := ben.Draft(id); return err == nil })
	if err := ben.Choose(id, "q1", "o1", true); err != nil {
		t.Fatal(err)
	}
	if err := ben.Flush(ctx, id); err != nil {
		t.Fatal(err)
	}
	res, err := ben.Submit(ctx, id)
	if err != nil || len(res) != 1 || !res[0].OK {
		t.Fatalf("save through b: %+v %v", res, err)
	}
	settled := res[0].Record

	a.crash()
	crashed := time.Now()
	// A new client of b must reach a working owner: b, once a's lease ends.
	cal := join(t, b.url, "plan-2", "cal")
	testutil.EventuallyWithin(t, 20*time.Second, "cal to hold the settled record", func() (bool, string) {
		rec, ok := cal.Record(id)
		return ok && rec.Status == question.Settled && rec.Answer != nil && rec.Answer.By == "ben", ""
	})
	failover := time.Since(crashed)
	if !b.router.Owns("plan-2") {
		t.Fatal("b serves plan-2 without its lease")
	}
	testutil.EventuallyWithin(t, 20*time.Second, "ben to reconnect and hold the settled record", func() (bool, string) {
		rec, ok := ben.Record(id)
		return ok && rec.Status == question.Settled && rec.Revision == settled.Revision, ""
	})
	// Provenance was stored with the change: the new owner has it.
	if ps, err := cal.Provenance(ctx, id); err != nil || len(ps) != 1 || ps[0].By != "ben" {
		t.Fatalf("provenance on the new owner: %+v %v", ps, err)
	}
	if rec, _ := cal.Record(id); len(rec.Answer.Provenance) != 1 || rec.Answer.Provenance[0].By != "ben" {
		t.Fatalf("the saved answer's attribution on the new owner: %+v", rec.Answer.Provenance)
	}
	reopened, err := cal.Reopen(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "cal to hold the reopened draft", func() bool {
		d, _, err := cal.Draft(id)
		r, ok := cal.Record(id)
		return err == nil && ok && r.Status == question.Open && d.Generation == reopened.Generation
	})
	if err := cal.Choose(id, "q1", "o2", true); err != nil {
		t.Fatal(err)
	}
	if err := cal.Flush(ctx, id); err != nil {
		t.Fatal(err)
	}
	res, err = cal.Submit(ctx, id)
	if err != nil || len(res) != 1 || !res[0].OK {
		t.Fatalf("save through the new owner: %+v %v", res, err)
	}
	t.Logf("owner crashed; a client of the survivor had the settled record after %v (lease TTL %v)", failover, leaseTTL)
}

// TestFencedStoreRefusesAStaleDecision: two nodes loaded the same state;
// the first to commit wins, the second is fenced and applies nothing until
// it loads again.
func TestFencedStoreRefusesAStaleDecision(t *testing.T) {
	c := natstest.RunCluster(t, 3)
	open := func(url string) *cluster.FencedStore {
		nc := natstest.Connect(t, url)
		var s *jetstream.Store
		testutil.EventuallyWithin(t, 15*time.Second, "the store to open", func() (bool, string) {
			var err error
			s, err = jetstream.Open(context.Background(), nc, &jetstream.Options{Stream: "FENCE", Replicas: 3})
			return err == nil, fmt.Sprint(err)
		})
		f := cluster.NewFencedStore(s)
		t.Cleanup(func() { f.Close() })
		return f
	}
	ctx := context.Background()
	a, b := open(c.URL(0)), open(c.URL(1))
	put := func(v string) *persist.Write {
		return &persist.Write{Records: []persist.Put{{Key: "q1", Value: []byte(v)}}}
	}
	if err := a.Commit(ctx, "doc", put("never loaded")); !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("commit before any load = %v, want ErrFenced", err)
	}
	for _, s := range []*cluster.FencedStore{a, b} {
		if _, err := s.LoadDocument(ctx, "doc"); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Commit(ctx, "doc", put("a1")); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(ctx, "doc", put("a2")); err != nil {
		t.Fatalf("a's second commit on its own head: %v", err)
	}
	if err := b.Commit(ctx, "doc", put("b1")); !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("b's commit on the state before a's = %v, want ErrFenced", err)
	}
	if err := b.Commit(ctx, "doc", put("b2")); !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("b's commit while fenced = %v, want ErrFenced", err)
	}
	d, err := b.LoadDocument(ctx, "doc")
	if err != nil || string(d.Records["q1"]) != "a2" {
		t.Fatalf("after the fence: %q, %v; want a's a2", d.Records["q1"], err)
	}
	if err := b.Commit(ctx, "doc", put("b3")); err != nil {
		t.Fatalf("b's commit after loading again: %v", err)
	}
	if err := a.Commit(ctx, "doc", put("a3")); !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("a's commit after b's = %v, want ErrFenced", err)
	}
}

// TestOneOwnerPerDocument: three routers race for the leases of many
// documents; each document gets exactly one owner, and all agree on it.
func TestOneOwnerPerDocument(t *testing.T) {
	c := natstest.RunCluster(t, 3)
	ctx := context.Background()
	var routers []*cluster.Router
	for i := range 3 {
		nc := natstest.Connect(t, c.URL(i))
		var r *cluster.Router
		testutil.EventuallyWithin(t, 15*time.Second, "router n"+strconv.Itoa(i)+" to start", func() (bool, string) {
			var err error
			r, err = cluster.New(ctx, http.NotFoundHandler(), cluster.Options{Conn: nc, Node: "n" + strconv.Itoa(i), URL: "http://n" + strconv.Itoa(i), Replicas: 3, Bucket: "RACE"})
			return err == nil, fmt.Sprint(err)
		})
		t.Cleanup(func() { r.Close() })
		routers = append(routers, r)
	}
	for d := range 30 {
		doc := "doc-" + strconv.Itoa(d)
		owners := make([]string, 3)
		var wg sync.WaitGroup
		for i, r := range routers {
			wg.Go(func() {
				node, _, err := r.Owner(ctx, doc)
				if err != nil {
					t.Errorf("%s: %v", doc, err)
				}
				owners[i] = node
			})
		}
		wg.Wait()
		holders := 0
		for i, r := range routers {
			if owners[i] != owners[0] {
				t.Fatalf("%s: owners %v disagree", doc, owners)
			}
			if r.Owns(doc) {
				holders++
			}
		}
		if holders != 1 {
			t.Fatalf("%s: %d routers hold the lease", doc, holders)
		}
	}
}

// TestLostLeaseClosesConnections takes a document's lease away from its
// owner (deleted in the bucket, taken by another node): at its next
// renewal the old owner finds the revision moved, and closes the
// connections it serves for the document, so their clients redial and
// reach the new owner; new connections to it are forwarded there.
func TestLostLeaseClosesConnections(t *testing.T) {
	c := natstest.RunCluster(t, 3)
	a := startNode(t, "a", c.URL(0))
	b := startNode(t, "b", c.URL(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	u := a.url + "/?" + url.Values{"doc": {"plan-3"}, "member": {"ana"}}.Encode()
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if !a.router.Owns("plan-3") {
		t.Fatal("a does not own plan-3 after serving it")
	}
	closed := make(chan error, 1)
	go func() {
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				closed <- err
				return
			}
		}
	}()

	js, err := natsjs.New(natstest.Connect(t, c.URL(2)))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, cluster.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, base64.RawURLEncoding.EncodeToString([]byte("plan-3"))); err != nil {
		t.Fatal(err)
	}
	taken := time.Now()
	testutil.Eventually(t, "b to take the lease", func() bool {
		node, _, err := b.router.Owner(ctx, "plan-3")
		return err == nil && node == "b"
	})
	// a finds out at its next renewal (every TTL/3, later on a busy
	// machine): the wait is for that, bounded by the test's.
	select {
	case err := <-closed:
		t.Logf("a closed its connection %v after losing the lease: %v", time.Since(taken), err)
	case <-ctx.Done():
		t.Fatal("a kept serving plan-3 after losing its lease")
	}
	if a.router.Owns("plan-3") {
		t.Fatal("a still claims plan-3")
	}
	// And a unloaded it (Options.Lost: Server.CloseDocument), so that if
	// it takes the document back it starts from the stored state.
	testutil.EventuallyWithin(t, 20*time.Second, "a to unload plan-3", func() (bool, string) { return a.srv.Stats().Documents == 0, "" })
	// A client of a now reaches b's authority.
	ana := join(t, a.url, "plan-3", "ana")
	if _, err := ana.Create(ctx, card("moved")); err != nil {
		t.Fatalf("create through a, forwarded to b: %v", err)
	}
}

// TestFailoverCycles crashes the owner of a busy document again and again:
// in each cycle a client of every live node edits, one save settles a new
// decision through a non-owner node, then the owner crashes and a fresh
// node joins. Afterwards, through a survivor, every decision whose save
// was acknowledged is settled, by whoever saved it.
func TestFailoverCycles(t *testing.T) {
	const cycles = 4
	c := natstest.RunCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	live := []*node{startNode(t, "n0", c.URL(0)), startNode(t, "n1", c.URL(1))}
	settled := map[string]string{} // decision id → who saved it
	var appends string             // an open decision criteria are appended to
	for cycle := range cycles {
		var clients []*replica.Client
		for i, n := range live {
			clients = append(clients, join(t, n.url, "busy", fmt.Sprintf("m%d-%d", cycle, i)))
		}
		// The node serving the clients holds the lease, but may lose it
		// to a renewal slow on a busy machine and take it again as they
		// redial.
		var owner *node
		testutil.EventuallyWithin(t, 20*time.Second, fmt.Sprintf("cycle %d: a live node to own the document", cycle), func() (bool, string) {
			for _, n := range live {
				if n.router.Owns("busy") {
					owner = n
					return true, ""
				}
			}
			return false, ""
		})
		// The saver is a client of a node that does not own the document.
		saver := clients[0]
		if live[0] == owner {
			saver = clients[1]
		}
		if appends == "" {
			recs, err := clients[0].Create(ctx, card("appends"))
			if err != nil {
				t.Fatal(err)
			}
			appends = recs[0].ID
		}
		recs, err := clients[0].Create(ctx, card(fmt.Sprintf("cycle-%d", cycle)))
		if err != nil {
			t.Fatalf("cycle %d: create: %v", cycle, err)
		}
		id := recs[0].ID
		for _, cl := range clients {
			testutil.Eventually(t, "every client to hold the decision", func() bool { _, _, err := cl.Draft(id); return err == nil })
		}
		if err := saver.Choose(id, "q1", "o1", true); err != nil {
			t.Fatal(err)
		}
		if err := saver.Flush(ctx, id); err != nil {
			t.Fatal(err)
		}
		// The first commit of a node that has just taken the lease may
		// find the stream moved on since it loaded the document (fenced):
		// the save is refused as unavailable, nothing applied, and the
		// node reloads; the member saves again (saveUntilSettled).
		if _, err := saveUntilSettled(ctx, saver, id); err != nil {
			t.Fatalf("cycle %d: save: %v", cycle, err)
		}
		who, _ := saver.Member()
		settled[id] = who
		key := fmt.Sprintf("speed-%d", cycle)
		// Sent again (same key) if its outcome is not known: the
		// document may change hands meanwhile on a busy machine.
		var crit question.Criterion
		testutil.EventuallyWithin(t, 20*time.Second, fmt.Sprintf("cycle %d: the append to be answered", cycle), func() (bool, string) {
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			crit, _, _, err = saver.AppendCriterion(actx, appends, "q1", key, fmt.Sprintf("Speed %d", cycle))
			return err == nil, fmt.Sprint(err)
		})
		owner.crash()
		// The same append again, as a client that never saw its reply
		// would send it, now to the next owner: the key is remembered.
		var again question.Criterion
		var repeated bool
		testutil.EventuallyWithin(t, 30*time.Second, "the repeated append to be answered by the next owner", func() (bool, string) {
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			again, _, repeated, err = saver.AppendCriterion(actx, appends, "q1", key, fmt.Sprintf("Speed %d", cycle))
			return err == nil, fmt.Sprint(err)
		})
		if !repeated || again.ID != crit.ID {
			t.Fatalf("cycle %d: append repeated after failover: %+v repeated %v, first %+v", cycle, again, repeated, crit)
		}
		for i, n := range live {
			if n == owner {
				live = append(live[:i], live[i+1:]...)
				break
			}
		}
		live = append(live, startNode(t, fmt.Sprintf("n%d", cycle+2), c.URL((cycle+2)%3)))
	}
	check := join(t, live[0].url, "busy", "checker")
	testutil.EventuallyWithin(t, 20*time.Second, "every acknowledged save to be there after the last failover", func() (bool, string) {
		for id, who := range settled {
			rec, ok := check.Record(id)
			if !ok || rec.Status != question.Settled || rec.Answer == nil || rec.Answer.By != who {
				return false, ""
			}
		}
		return true, ""
	})
	rec, ok := check.Record(appends)
	if !ok || len(rec.Definition.Questions[0].Criteria) != 1+cycles {
		t.Fatalf("appended criteria after %d failovers: %+v", cycles, rec.Definition.Questions)
	}
	t.Logf("%d owner crashes; %d acknowledged saves all settled, by their savers; %d appends repeated across failovers, each applied once", cycles, len(settled), cycles)
}

// TestNoCommitWithoutTheLease takes a document's lease away from its owner
// a and has host work run there afterwards (a Do, as one drained while the
// document shuts down): a reloads the document, which lifts the fence, so
// only the lease check stops it from committing on top of the new owner's
// state. The work is refused as unavailable, nothing is applied, and the
// new owner's next commit is not fenced.
func TestNoCommitWithoutTheLease(t *testing.T) {
	c := natstest.RunCluster(t, 3)
	a := startNode(t, "a", c.URL(0))
	b := startNode(t, "b", c.URL(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const doc = "lapsed"

	// Ana redials slowly: a that lost the lease would otherwise take the
	// freed key again for her reconnection before b asks for it.
	ana := joinWith(t, a.url, doc, "ana", replica.Options{Format: wire.Binary, MinBackoff: 10 * time.Second, MaxBackoff: 10 * time.Second})
	if _, err := createRetrying(ctx, ana, card("first")); err != nil {
		t.Fatal(err)
	}
	js, err := natsjs.New(natstest.Connect(t, c.URL(2)))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, cluster.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, base64.RawURLEncoding.EncodeToString([]byte(doc))); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "b to take the lease", func() bool {
		node, _, err := b.router.Owner(ctx, doc)
		return err == nil && node == "b"
	})
	// At its next renewal (every TTL/3, later on a busy machine).
	testutil.EventuallyWithin(t, 20*time.Second, "a to see its lease gone", func() (bool, string) { return !a.router.Owns(doc), "" })
	// The document a served has stopped (Options.Lost): the work below
	// loads it afresh, at the new owner's head.
	testutil.EventuallyWithin(t, 20*time.Second, "a to unload the document", func() (bool, string) { return a.srv.Stats().Documents == 0, "" })

	late := card("late")
	err = a.srv.Do(ctx, doc, func(auth *question.Authority) error {
		_, err := auth.Create(ctx, question.Member{Login: "ana", Write: true},
			[]question.CreateRequest{{Key: late.Key, Origin: late.Origin, Definition: late.Definition}})
		return err
	})
	var refusal *question.Refusal
	if !errors.As(err, &refusal) || refusal.Reason != question.Unavailable {
		t.Fatalf("work on a after it lost the lease: %v, want a refusal %q", err, question.Unavailable)
	}

	ben := join(t, b.url, doc, "ben")
	if _, err := createRetrying(ctx, ben, card("second")); err != nil {
		t.Fatalf("the new owner's commit: %v", err)
	}
	if n := b.store.Fenced(); n != 0 {
		t.Fatalf("the new owner was fenced %d times", n)
	}
	if recs := ben.Records(); len(recs) != 2 {
		t.Fatalf("%d decisions in the document, want 2 (first, second)", len(recs))
	}
}

// TestRefusedOwnerLosesItsLeaseAtOnce: when the owner's address refuses
// connections (its process is gone, its lease not yet expired), the node a
// client reached deletes the lease at the revision it read and serves the
// document itself, rather than waiting for the lease to expire (here it
// never would: the owner, alive after all, keeps renewing it); the owner
// finds its lease moved at its next renewal and lets the document go.
func TestRefusedOwnerLosesItsLeaseAtOnce(t *testing.T) {
	c := natstest.RunCluster(t, 3)
	a := startNode(t, "a", c.URL(0))
	b := startNode(t, "b", c.URL(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const doc = "refused"

	ana := join(t, a.url, doc, "ana")
	if _, err := createRetrying(ctx, ana, card("first")); err != nil {
		t.Fatal(err)
	}
	// a's listener closes, its Router still renews: to b, a refuses.
	a.hs.CloseClientConnections()
	a.hs.Close()
	// a renews its lease all along: ben is served only if b breaks it.
	// (How long that takes depends on the machine, not on the TTL: it
	// is logged, not checked.)
	start := time.Now()
	ben := join(t, b.url, doc, "ben")
	took := time.Since(start)
	if node, _, err := b.router.Owner(ctx, doc); err != nil || node != "b" {
		t.Fatalf("owner after the refusal: %q, %v; want b", node, err)
	}
	if n := b.router.Stats().Broken; n != 1 {
		t.Errorf("b broke %d leases, want 1", n)
	}
	t.Logf("ben was served %v after the owner's listener closed (lease TTL %v)", took, leaseTTL)
	// At its next renewal (every TTL/3, later on a busy machine).
	testutil.EventuallyWithin(t, 20*time.Second, "a to see its lease gone", func() (bool, string) { return !a.router.Owns(doc), "" })
	if _, err := createRetrying(ctx, ben, card("second")); err != nil {
		t.Fatalf("the new owner's commit: %v", err)
	}
	if recs := ben.Records(); len(recs) != 2 {
		t.Fatalf("%d decisions in the document, want 2 (first, second)", len(recs))
	}
}
