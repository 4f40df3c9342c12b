package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/accord-crdt/accord/internal/natstest"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/question/planner/memhost"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/wire"
)

// TestServersJoinACluster runs two example servers with -nats on one
// three-server JetStream cluster: Ana on node a and Ben on node b edit and
// save one decision of the sample plan and see each other's work; the
// demo started through node b runs on the plan's owner, node a, and both
// nodes answer the same plan.
func TestServersJoinACluster(t *testing.T) {
	c := natstest.RunCluster(t, 3)
	node := func(name string) *testServer {
		// The nodes share one sign-in key, so that a session started on
		// either is good on the other (the document's owner checks it).
		demo := demoOptions{Personas: false, Cluster: clusterOptions{NATS: c.URLs(), Node: name, Replicas: 3}, SessionKey: strings.Repeat("ab", 32)}
		s := startDemoServer(t, t.TempDir(), "127.0.0.1:0", demo)
		waitHealthy(t, s)
		return s
	}
	a, b := node("a"), node("b")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dial := func(s *testServer, member string) *replica.Client {
		cl, err := dialAs(t, ctx, "ws://"+s.addr+"/sync?doc="+demoDoc+"&member="+member)
		if err != nil {
			t.Fatalf("%s on %s: %v", member, s.addr, err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	ana := dial(a, "ana") // a takes the plan's lease
	ben := dial(b, "ben") // forwarded to a

	recs, err := ana.Create(ctx, wire.Card{Key: "engine", Origin: question.FromPerson, Definition: question.Definition{Questions: []question.Question{{
		ID: "q1", Text: "Which storage engine?", Options: []question.Option{{ID: "bolt", Label: "bbolt"}, {ID: "js", Label: "JetStream"}},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	id := recs[0].ID
	testutil.EventuallyWithin(t, waitTime, "Ben on node b to receive the decision Ana created on node a", func() (bool, string) {
		_, _, err := ben.Draft(id)
		return err == nil, fmt.Sprint(err)
	})
	if err := ben.Choose(id, "q1", "js", true); err != nil {
		t.Fatal(err)
	}
	res, err := ben.Submit(ctx, id)
	if err != nil || len(res) != 1 || !res[0].OK {
		t.Fatalf("Ben's save through node b: %+v %v", res, err)
	}
	testutil.EventuallyWithin(t, waitTime, "Ana on node a to see Ben's save", func() (bool, string) {
		rec, _ := ana.Record(id)
		return rec.Status == question.Settled && rec.Answer != nil && rec.Answer.By == "ben", fmt.Sprintf("%+v", rec)
	})

	// The demo started through b runs on a, the owner: its decisions
	// reach Ana's connection, and both nodes serve the same plan, which
	// holds their cards (the owner adds each card as the decision it
	// announces reaches the plan).
	ids := b.startDemo()
	for key, id := range ids {
		testutil.EventuallyWithin(t, waitTime, "the demo's "+key+" decision, opened through node b, to reach node a's client", func() (bool, string) {
			_, _, err := ana.Draft(id)
			return err == nil, fmt.Sprint(err)
		})
	}
	testutil.EventuallyWithin(t, waitTime, "both nodes to serve the plan with the demo's cards", func() (bool, string) {
		pa, pb := getPlan(t, a), getPlan(t, b)
		if pa != pb {
			return false, "a: " + pa + "\nb: " + pb
		}
		for _, id := range ids {
			if !json.Valid([]byte(pa)) || !containsDecision(pa, id) {
				return false, "no card of " + id + ": " + pa
			}
		}
		return true, ""
	})
	// Each node's /metrics shows its part: a holds the plan's lease, b
	// forwarded requests to it.
	if got := metric(t, a, "accord_cluster_leases"); got != "1" {
		t.Fatalf("a holds %s leases, want 1", got)
	}
	if got := metric(t, b, "accord_cluster_forwarded_total"); got == "0" {
		t.Fatal("b forwarded nothing to a")
	}
	for _, name := range []string{"accord_cluster_handoffs_total", "accord_cluster_fenced_commits_total", "accord_cluster_leases_lost_total", "accord_cluster_leases_broken_total"} {
		metric(t, a, name)
	}
}

// metric reads the value of name on s's /metrics.
func metric(t *testing.T, s *testServer, name string) string {
	t.Helper()
	res, err := http.Get(s.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	t.Fatalf("no %s on %s's /metrics", name, s.addr)
	return ""
}

// jobEnded reports whether a write-up or why-draft job was queued and
// has ended.
func jobEnded(j *question.Job) bool { return j != nil && j.State != question.JobPending }

func waitHealthy(t *testing.T, s *testServer) {
	t.Helper()
	testutil.EventuallyWithin(t, waitTime, "the server on "+s.addr+" to be healthy", func() (bool, string) {
		res, err := http.Get(s.url("/healthz"))
		if err != nil {
			return false, err.Error()
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK, res.Status
	})
}

// getPlan reads the plan s serves. A node answers 503 while the plan
// changes hands (its owner gave the lease up, say, its renewal too late
// on a busy machine): the read is made again until it is served.
func getPlan(t *testing.T, s *testServer) string {
	t.Helper()
	var plan string
	testutil.EventuallyWithin(t, waitTime, "the plan from "+s.addr, func() (bool, string) {
		code, body, err := request(s, http.MethodGet, "/api/plan?member=rita&doc="+demoDoc, "")
		plan = body
		return err == nil && code == http.StatusOK, fmt.Sprintf("%d %s %v", code, body, err)
	})
	return plan
}

// chatOf reads the texts of the demo Chat's notices on s, as getPlan
// reads the plan.
func chatOf(t *testing.T, s *testServer) []string {
	t.Helper()
	var body struct{ Notices []struct{ Text string } }
	testutil.EventuallyWithin(t, waitTime, "Chat from "+s.addr, func() (bool, string) {
		code, raw, err := request(s, http.MethodGet, "/api/chat?member=rita&doc="+demoDoc, "")
		if err == nil && code == http.StatusOK {
			err = json.Unmarshal([]byte(raw), &body)
		}
		return err == nil && code == http.StatusOK, fmt.Sprintf("%d %s %v", code, raw, err)
	})
	var out []string
	for _, n := range body.Notices {
		out = append(out, n.Text)
	}
	return out
}

// request sends a request with body (JSON, if any) to s and returns the
// status and the body of the answer.
func request(s *testServer, method, path, body string) (int, string, error) {
	req, err := http.NewRequest(method, s.url(path), strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return res.StatusCode, string(raw), err
}

func containsDecision(plan, id string) bool {
	var p struct{ Blocks []struct{ Decision string } }
	if err := json.Unmarshal([]byte(plan), &p); err != nil {
		return false
	}
	for _, b := range p.Blocks {
		if b.Decision == id {
			return true
		}
	}
	return false
}

// TestClusterPlanSurvivesOwnerCrash: the plan, Chat and the Planner's
// cards live in JetStream, not in the owner's memory. Node a owns the
// sample plan: the demo starts there, Ana edits the plan and saves an
// answer, which the Planner acknowledges in Chat. Then a crashes (its
// NATS connection drops: no handoff, its lease expires), and node b,
// which never held the plan, serves the same plan (the edit, every card
// at its anchor) and the same Chat.
func TestClusterPlanSurvivesOwnerCrash(t *testing.T) {
	c := natstest.RunCluster(t, 3)
	node := func(name string, crash bool) *testServer {
		demo := demoOptions{Personas: false, SessionKey: strings.Repeat("ab", 32), crashOnStop: crash,
			Cluster: clusterOptions{NATS: c.URLs(), Node: name, Replicas: 3, LeaseTTL: time.Second}}
		s := startDemoServer(t, t.TempDir(), "127.0.0.1:0", demo)
		waitHealthy(t, s)
		return s
	}
	a, b := node("a", true), node("b", false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ana, err := dialAs(t, ctx, "ws://"+a.addr+"/sync?doc="+demoDoc+"&member=ana") // a takes the lease
	if err != nil {
		t.Fatal(err)
	}
	defer ana.Close()
	ids := a.startDemo()
	testutil.EventuallyWithin(t, waitTime, "the demo's four cards on a", func() (bool, string) {
		p := getPlan(t, a)
		n := strings.Count(p, `"decision":"`)
		return n >= 4, p
	})
	var plan struct {
		Revision string `json:"revision"`
	}
	if err := json.Unmarshal([]byte(getPlan(t, a)), &plan); err != nil || plan.Revision == "" {
		t.Fatalf("plan revision: %q %v", plan.Revision, err)
	}
	const edited = "Edited on node a, just before it crashed."
	// Sent again while a answers 503 (the plan changing hands): such an
	// answer applied nothing.
	testutil.EventuallyWithin(t, waitTime, "the plan edit", func() (bool, string) {
		code, out, err := request(a, http.MethodPost, "/api/plan/edit?member=ana", `{"revision":"`+plan.Revision+`","edits":[{"op":"edit","block":"b3","text":"`+edited+`"}]}`)
		if err == nil && code != http.StatusOK && code != http.StatusServiceUnavailable {
			t.Fatalf("plan edit: %d %s", code, out)
		}
		return err == nil && code == http.StatusOK, fmt.Sprintf("%d %s %v", code, out, err)
	})
	id := ids["rollout"]
	testutil.EventuallyWithin(t, waitTime, "Ana to hold the rollout decision", func() (bool, string) {
		_, _, err := ana.Draft(id)
		return err == nil, fmt.Sprint(err)
	})
	if err := ana.SetText(id, "q1", "Email them a week before."); err != nil {
		t.Fatal(err)
	}
	if err := ana.Flush(ctx, id); err != nil {
		t.Fatal(err)
	}
	if res, err := ana.Submit(ctx, id); err != nil || len(res) != 1 || !res[0].OK {
		t.Fatalf("save: %+v %v", res, err)
	}
	// The Planner is done with the answer once the turn that carried it
	// ended (its thanks in Chat come last) and the answer's write-up and
	// why-draft jobs ended (their states are in the record, which Ana's
	// replica holds): a then changes its plan and Chat no more, and has
	// stored both.
	testutil.EventuallyWithin(t, waitTime, "the Planner to finish with the answer on a", func() (bool, string) {
		got := chatOf(t, a)
		thanked := slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "thanks") })
		rec, _ := ana.Record(id)
		return thanked && jobEnded(rec.WriteUp) && jobEnded(rec.WhyDraft),
			fmt.Sprintf("chat %q; write-up %+v, why draft %+v", got, rec.WriteUp, rec.WhyDraft)
	})
	planA, chatA := getPlan(t, a), strings.Join(chatOf(t, a), "\n")
	if !strings.Contains(planA, edited) {
		t.Fatalf("a's plan lacks the edit: %s", planA)
	}

	a.stop() // crashes: the lease expires after a second
	// b's answers count once b holds the plan's lease (a request for the
	// plan makes it take the lease once a's has expired): they are then
	// b's own, loaded from what a stored.
	var planB, chatB string
	testutil.EventuallyWithin(t, waitTime, "b to serve the plan a left", func() (bool, string) {
		code, raw, err := request(b, http.MethodGet, "/api/plan?member=rita&doc="+demoDoc, "")
		if n := metric(t, b, "accord_cluster_leases"); n != "1" || err != nil || code != http.StatusOK {
			return false, fmt.Sprintf("b holds %s leases; its plan: %d %v", n, code, err)
		}
		planB, chatB = raw, strings.Join(chatOf(t, b), "\n")
		return planB == planA && chatB == chatA, "plan:\n" + planB + "\nchat:\n" + chatB
	})
	for key, id := range ids {
		if !containsDecision(planB, id) {
			t.Fatalf("b's plan lacks the %s card: %s", key, planB)
		}
	}
}

// silentKV answers its first silent reads and writes with "no
// responders", as a bucket does whose stream is electing a leader or
// whose replicas have not caught up yet.
type silentKV struct {
	natsjs.KeyValue
	mu     sync.Mutex
	silent int
}

func (k *silentKV) quiet() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.silent > 0 {
		k.silent--
		return true
	}
	return false
}

func (k *silentKV) Get(ctx context.Context, key string) (natsjs.KeyValueEntry, error) {
	if k.quiet() {
		return nil, nats.ErrNoResponders
	}
	return k.KeyValue.Get(ctx, key)
}

func (k *silentKV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	if k.quiet() {
		return 0, nats.ErrNoResponders
	}
	return k.KeyValue.Put(ctx, key, value)
}

// TestHostStateWaitsForASilentBucket: a node taking a document over reads
// the plan its predecessor stored even when the bucket answers nothing
// for a moment, rather than going on with its own and overwriting it.
func TestHostStateWaitsForASilentBucket(t *testing.T) {
	s := natstest.RunServer(t)
	nc := natstest.Connect(t, s.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, err := openHostState(ctx, nc, 1)
	if err != nil {
		t.Fatal(err)
	}
	kv := &silentKV{KeyValue: h.kv, silent: 3}
	h.kv = kv
	if err := h.put("planner", demoDoc, plannerState{Runs: 2}); err != nil || kv.silent != 0 {
		t.Fatalf("put through a silent bucket: %v (%d silences left)", err, kv.silent)
	}
	kv.silent = 3
	var got plannerState
	if found, err := h.get(ctx, "planner", demoDoc, &got); err != nil || !found || got.Runs != 2 || kv.silent != 0 {
		t.Fatalf("get through a silent bucket: %+v found %v, %v (%d silences left)", got, found, err, kv.silent)
	}
}

// TestTakeOverStoresChatPostedWithoutTheLease: a Chat notice posted, or
// a turn accepted, while this node did not hold the document's lease (it
// gave the lease up, a renewal too late on a busy machine, as the Planner
// worked) is kept in memory but stored nowhere. When the node takes the
// lease back, the Chat it then serves, the stored one merged with its
// own, is stored too: the next owner finds the notice and the turn.
func TestTakeOverStoresChatPostedWithoutTheLease(t *testing.T) {
	s := natstest.RunServer(t)
	nc := natstest.Connect(t, s.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, err := openHostState(ctx, nc, 1)
	if err != nil {
		t.Fatal(err)
	}
	a := &app{host: memhost.New(), feed: newPlanFeed()}
	a.planner = &demoPlanner{app: a, runs: map[string]int{}, started: map[string]bool{}}
	var owns atomic.Bool
	a.keepInCluster(h, func(string) bool { return owns.Load() })

	owns.Store(true)
	if err := a.host.Chat.Post(ctx, demoDoc, planner.Notice{ID: "before", Text: "posted as the owner"}); err != nil {
		t.Fatal(err)
	}
	owns.Store(false) // the lease given up
	if err := a.host.Chat.Post(ctx, demoDoc, planner.Notice{ID: "between", Text: "posted without the lease"}); err != nil {
		t.Fatal(err)
	}
	if err := a.host.Chat.Accept(ctx, demoDoc, planner.Turn{ID: "turn-1"}); err != nil {
		t.Fatal(err)
	}
	owns.Store(true) // and taken back
	if err := a.takeOver(ctx, demoDoc); err != nil {
		t.Fatal(err)
	}
	var stored memhost.ChatState
	if found, err := h.get(ctx, "chat", demoDoc, &stored); err != nil || !found {
		t.Fatalf("stored Chat: found %v, %v", found, err)
	}
	var ids []string
	for _, n := range stored.Notices {
		ids = append(ids, n.ID)
	}
	// (A turn accepted shows as a notice of its id.)
	if !slices.Equal(ids, []string{"before", "between", "turn-1"}) {
		t.Fatalf("stored notices %v, want [before between turn-1]", ids)
	}
	if !slices.Contains(stored.Accepted, "turn-1") {
		t.Fatalf("stored accepted turns %v, want turn-1: the next owner would hand its answers over again", stored.Accepted)
	}
}
