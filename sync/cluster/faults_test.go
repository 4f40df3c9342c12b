package cluster_test

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/natstest"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/sync/replica"
)

// TestFaultsBetweenNodesAndNATS runs three node processes whose every
// connection to the three NATS servers goes through a faultProxy, and,
// cycle after cycle, while six clients edit a shared written answer,
// save and reopen a shared decision and append options: partitions the
// document's owner from NATS for longer than the lease, adds latency and
// jitter to every node's links, and drops or resets the owner's
// connections. After each fault a probe edit must be stored and reach
// every client before the next. Afterwards:
//
//   - every client converges, and every acknowledged edit is in the
//     shared answer exactly once;
//   - porcupine finds the saves and reopens, and the appends,
//     linearizable;
//   - no two nodes committed to the document on the same state: the
//     nodes' logs of every commit (FencedStore: the head it was decided
//     on and the head it made) show each head built on at most once, and
//     every head built on made by a logged commit, but for commits whose
//     outcome their node never learnt.
func TestFaultsBetweenNodesAndNATS(t *testing.T) {
	const (
		cycles    = 20
		nodes     = 3
		perNode   = 2
		ttl       = time.Second
		partition = 3 * ttl / 2
	)
	c := natstest.RunCluster(t, 3)
	var pmu sync.Mutex
	proxies := map[string][]*faultProxy{} // by node name
	seed := uint64(0)
	natsFor := func(node string) string {
		pmu.Lock()
		defer pmu.Unlock()
		var urls []string
		for i := range c.Size() {
			seed++
			p := newFaultProxy(t, strings.TrimPrefix(c.URL(i), "nats://"), seed)
			proxies[node] = append(proxies[node], p)
			urls = append(urls, p.url())
		}
		return strings.Join(urls, ",")
	}
	f := newFleetVia(t, c, nodes, ttl, natsFor)
	f.dialTimeout = time.Second
	ofNode := func(slot int) []*faultProxy {
		f.mu.Lock()
		name := f.slots[slot].name
		f.mu.Unlock()
		pmu.Lock()
		defer pmu.Unlock()
		return proxies[name]
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const doc = "faulty"
	dial := func(home int, member string) *replica.Client {
		u := "ws://fleet/?" + url.Values{"doc": {doc}, "member": {member}}.Encode()
		var cl *replica.Client
		var err error
		for range 100 {
			dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
			cl, err = replica.Dial(dctx, u, replica.Options{Dialer: f.dialer(home), MinBackoff: 20 * time.Millisecond, MaxBackoff: 250 * time.Millisecond, HandshakeTimeout: 3 * time.Second})
			dcancel()
			if err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("dial as %s: %v", member, err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	var clients []*replica.Client
	for i := range nodes * perNode {
		clients = append(clients, dial(i%nodes, fmt.Sprintf("m%d", i)))
	}
	probe := dial(0, "probe")
	recs, err := createRetrying(ctx, clients[0], textCard("text"), card("save"), card("appends-0"))
	if err != nil {
		t.Fatal(err)
	}
	textID, saveID := recs[0].ID, recs[1].ID
	var appends atomic.Pointer[string]
	appends.Store(&recs[2].ID)
	everyone := append([]*replica.Client{probe}, clients...)
	holdAll := func(id string) {
		for _, cl := range everyone {
			testutil.EventuallyWithin(t, 20*time.Second, "every client to hold "+id, func() (bool, string) { _, _, err := cl.Draft(id); return err == nil, fmt.Sprint(err) })
		}
	}
	for _, r := range recs {
		holdAll(r.ID)
	}

	h := &history{start: time.Now(), acked: map[string]bool{}, sent: map[string]bool{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for ci, cl := range clients {
		w := &worker{ci: ci, cl: cl, h: h, text: textID, save: saveID, appends: &appends}
		wg.Go(func() { w.run(ctx, stop) })
	}

	kinds := []string{"partition", "latency", "drop", "reset"}
	recovered := map[string][]time.Duration{}
	for cycle := range cycles {
		if cycle%8 == 7 {
			// A question takes at most 50 options.
			r, err := createRetrying(ctx, probe, card(fmt.Sprintf("appends-%d", cycle)))
			if err != nil {
				t.Fatalf("cycle %d: create append target: %v", cycle, err)
			}
			holdAll(r[0].ID)
			appends.Store(&r[0].ID)
		}
		time.Sleep(200 * time.Millisecond)
		octx, ocancel := context.WithTimeout(ctx, 20*time.Second)
		slot, err := f.ownerSlot(octx, doc)
		ocancel()
		if err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		kind := kinds[cycle%len(kinds)]
		start := time.Now()
		switch kind {
		case "partition":
			for _, p := range ofNode(slot) {
				p.partition()
			}
			time.Sleep(partition)
			for _, p := range ofNode(slot) {
				p.heal()
			}
		case "latency":
			for i := range nodes {
				for _, p := range ofNode(i) {
					p.setLatency(20*time.Millisecond, 80*time.Millisecond)
				}
			}
			time.Sleep(time.Second)
			for i := range nodes {
				for _, p := range ofNode(i) {
					p.setLatency(0, 0)
				}
			}
		case "drop", "reset":
			for _, p := range ofNode(slot) {
				p.cut(kind == "reset")
			}
		}
		// Recovered: a probe edit written now is stored and every client
		// holds it.
		tok, err := typeUntilStored(ctx, probe, textID, fmt.Sprintf("probe.%d", cycle), 5*time.Second, func(typed string) {
			h.mu.Lock()
			h.sent[typed] = true
			h.mu.Unlock()
		})
		if err != nil {
			t.Fatalf("cycle %d (%s): the probe edit was not stored: %v", cycle, kind, err)
		}
		h.mu.Lock()
		h.acked[tok] = true
		h.mu.Unlock()
		for _, cl := range clients {
			testutil.EventuallyWithin(t, 30*time.Second, fmt.Sprintf("cycle %d (%s): every client to hold %s", cycle, kind, tok), func() (bool, string) {
				d, _, err := cl.Draft(textID)
				return err == nil && strings.Contains(d.Questions["q1"].Text, tok), ""
			})
		}
		recovered[kind] = append(recovered[kind], time.Since(start))
	}
	close(stop)
	wg.Wait()

	n := h.settle(ctx, t, everyone, probe, textID, saveID, "through the faults")
	if n.settles == 0 || n.reopens == 0 || len(h.apps) == 0 || len(h.acked) == 0 {
		t.Fatalf("a history without load: %d settles, %d reopens, %d appends, %d edits", n.settles, n.reopens, len(h.apps), len(h.acked))
	}

	f.mu.Lock()
	var logs []string
	for _, ch := range f.slots {
		logs = append(logs, ch.log.String())
	}
	f.mu.Unlock()
	commits, owners, err := checkFencing(doc, logs)
	if err != nil {
		t.Fatal(err)
	}

	var summary []string
	for _, k := range kinds {
		ds := recovered[k]
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		summary = append(summary, fmt.Sprintf("%s ×%d (recovered p50 %v, max %v)", k, len(ds), ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond)))
	}
	// The renewals that took over T/6 (the Router logs them), against
	// the T/3 a renewal may take before a lease is given up.
	var slow []time.Duration
	lost := 0
	for _, l := range logs {
		for _, m := range slowRenewalLine.FindAllStringSubmatch(l, -1) {
			if d, err := time.ParseDuration(m[1]); err == nil {
				slow = append(slow, d)
			}
		}
		lost += strings.Count(l, `msg="cluster: lease lost"`)
	}
	slices.Sort(slow)
	slowest := time.Duration(0)
	if len(slow) > 0 {
		slowest = slow[len(slow)-1]
	}
	t.Logf("%d fault cycles: %s; %d acknowledged edits all present once; %d settles, %d reopens, %d of unknown outcome, linearizable; %d append attempts (porcupine took %v); "+
		"%d commits by %d owners in turn, each on the state the one before made; %d lease renewals slower than T/6 (slowest %v), %d leases lost",
		cycles, strings.Join(summary, ", "), len(h.acked), n.settles, n.reopens, n.unknown, len(h.apps), n.took.Round(time.Millisecond), commits, owners, len(slow), slowest.Round(time.Millisecond), lost)
}

var (
	committedLine   = regexp.MustCompile(`msg="cluster: committed" node=(\S+) doc=(\S+) from=(\d+) to=(\d+)`)
	unknownLine     = regexp.MustCompile(`msg="cluster: commit outcome unknown" node=(\S+) doc=(\S+) from=(\d+)`)
	slowRenewalLine = regexp.MustCompile(`msg="cluster: slow lease renewal" node=\S+ doc=\S+ took=(\S+)`)
)

// checkFencing reads the nodes' logs of their commits to doc and checks
// that no two nodes committed on the same state: every head was built on
// by at most one commit, and every head built on was made by a logged
// commit (or is the empty document's), except heads of commits whose
// outcome their node never learnt (they may have landed). It returns the
// commits and how many times the committing node changed.
func checkFencing(doc string, logs []string) (commits, owners int, err error) {
	type commit struct {
		node     string
		from, to uint64
	}
	var all []commit
	unknown := 0
	for _, l := range logs {
		for _, m := range committedLine.FindAllStringSubmatch(l, -1) {
			if m[2] != doc {
				continue
			}
			from, _ := strconv.ParseUint(m[3], 10, 64)
			to, _ := strconv.ParseUint(m[4], 10, 64)
			all = append(all, commit{node: m[1], from: from, to: to})
		}
		for _, m := range unknownLine.FindAllStringSubmatch(l, -1) {
			if m[2] == doc {
				unknown++
			}
		}
	}
	if len(all) == 0 {
		return 0, 0, fmt.Errorf("no commit of %s in the nodes' logs", doc)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].to < all[j].to })
	made := map[uint64]bool{0: true}
	on := map[uint64]commit{}
	for _, c := range all {
		made[c.to] = true
		if c.to <= c.from {
			return 0, 0, fmt.Errorf("commit by %s from head %d to %d", c.node, c.from, c.to)
		}
		if o, twice := on[c.from]; twice {
			return 0, 0, fmt.Errorf("two commits on head %d: by %s (to %d) and by %s (to %d): two nodes decided on the same state", c.from, o.node, o.to, c.node, c.to)
		}
		on[c.from] = c
	}
	gaps := 0
	for _, c := range all {
		if !made[c.from] && c.from != all[0].from {
			gaps++
		}
	}
	if gaps > unknown {
		return 0, 0, fmt.Errorf("%d commits built on heads no logged commit made, and only %d commits of unknown outcome", gaps, unknown)
	}
	for i, c := range all {
		if i == 0 || c.node != all[i-1].node {
			owners++
		}
	}
	return len(all), owners, nil
}
