package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/anishathalye/porcupine"

	"github.com/accord-crdt/accord/internal/natstest"
	"github.com/accord-crdt/accord/internal/porcupinetest"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/cluster"
	"github.com/accord-crdt/accord/sync/replica"
)

// term stops the node of a slot as an operator does (SIGTERM: it hands its
// documents off), waits for it to exit, and returns how long it took.
func (f *fleet) term(i int) time.Duration {
	f.mu.Lock()
	c := f.slots[i]
	f.slots[i] = nil
	f.mu.Unlock()
	start := time.Now()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		f.t.Fatalf("node %s did not stop after SIGTERM:\n%s", c.name, c.log.String())
	}
	return time.Since(start)
}

// editWaits records how long each acknowledged edit waited: from the
// local change until Flush reported it stored.
type editWaits struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (e *editWaits) add(d time.Duration) {
	e.mu.Lock()
	e.waits = append(e.waits, d)
	e.mu.Unlock()
}

func (e *editWaits) sorted() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := slices.Clone(e.waits)
	slices.Sort(out)
	return out
}

// TestRollingRestart stops each of three nodes in turn with SIGTERM and
// starts a fresh one in its place, while 16 clients (four documents, four
// clients each, dialling the three nodes) edit a shared written answer of
// their document and save and reopen a decision of their own. The lease
// TTL is the default, 2 s. A stopping node hands off each document it
// holds: it commits what it accepted, sends those replies, releases the
// lease and closes the connections, which redial and reach the next
// owner. So:
//
//   - no save or reopen is refused, and each client's saves and reopens
//     are linearizable (porcupine, closed by a read of the final state);
//   - every acknowledged edit is in its document's answer exactly once,
//     and all clients of a document converge;
//   - no node lost a lease, broke one, failed to release one or had a
//     commit fail: every document changed hands by handoff, none by
//     expiry;
//   - how long the edits waited for their acknowledgements (p50, p99,
//     longest) is logged: it measures the handoff on this machine, and
//     is not checked, since a busy machine stretches it without anything
//     going wrong.
func TestRollingRestart(t *testing.T) {
	const (
		nodes   = 3
		docs    = 4
		perDoc  = 4
		between = 1500 * time.Millisecond
	)
	c := natstest.RunCluster(t, 3)
	f := newFleet(t, c, nodes, cluster.DefaultLeaseTTL)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	type client struct {
		cl         *replica.Client
		doc        string
		text, save string
	}
	var clients []*client
	var all []*replica.Client
	for i := range docs * perDoc {
		doc := fmt.Sprintf("roll-%d", i%docs)
		u := "ws://fleet/?" + url.Values{"doc": {doc}, "member": {fmt.Sprintf("m%d", i)}}.Encode()
		dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
		cl, err := replica.Dial(dctx, u, replica.Options{Dialer: f.dialer(i % nodes), HandshakeTimeout: 3 * time.Second})
		dcancel()
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		t.Cleanup(func() { cl.Close() })
		clients = append(clients, &client{cl: cl, doc: doc})
		all = append(all, cl)
	}
	for i, c := range clients {
		recs, err := createRetrying(ctx, c.cl, textCard("text"))
		if err != nil {
			t.Fatal(err)
		}
		c.text = recs[0].ID
		if recs, err = createRetrying(ctx, c.cl, card(fmt.Sprintf("save-%d", i))); err != nil {
			t.Fatal(err)
		}
		c.save = recs[0].ID
	}
	for _, c := range clients {
		for _, o := range clients {
			if o.doc != c.doc {
				continue
			}
			testutil.EventuallyWithin(t, 20*time.Second, "every client to hold its document's decisions", func() (bool, string) {
				_, _, e1 := c.cl.Draft(o.save)
				_, _, e2 := c.cl.Draft(o.text)
				return e1 == nil && e2 == nil, fmt.Sprint(errors.Join(e1, e2))
			})
		}
	}

	h := &history{start: time.Now(), acked: map[string]bool{}, sent: map[string]bool{}}
	saves := make([][]porcupine.Operation, len(clients))
	var refused []string
	var rmu sync.Mutex
	waits := &editWaits{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for ci, c := range clients {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if n%4 == 3 {
					op, err := saveOrReopenOwn(ctx, h, ci, c.cl, c.save)
					if op != nil {
						saves[ci] = append(saves[ci], *op)
					}
					if err != nil {
						rmu.Lock()
						refused = append(refused, err.Error())
						rmu.Unlock()
					}
				} else {
					d, _, err := c.cl.Draft(c.text)
					if err != nil {
						continue
					}
					tok := fmt.Sprintf("<%d.%d>", ci, n)
					began := time.Now()
					if err := c.cl.SpliceText(c.text, "q1", utf8.RuneCountInString(d.Questions["q1"].Text), 0, tok); err != nil {
						continue
					}
					h.mu.Lock()
					h.sent[tok] = true
					h.mu.Unlock()
					fctx, fcancel := context.WithTimeout(ctx, 20*time.Second)
					err = c.cl.Flush(fctx, c.text)
					fcancel()
					if err == nil {
						waits.add(time.Since(began))
						h.mu.Lock()
						h.acked[tok] = true
						h.mu.Unlock()
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}

	var stops []time.Duration
	var stopped []*child // their logs are checked below
	for slot := range nodes {
		time.Sleep(between)
		f.mu.Lock()
		stopped = append(stopped, f.slots[slot])
		f.mu.Unlock()
		stops = append(stops, f.term(slot))
		f.fill(slot, f.spawn())
	}
	time.Sleep(between)
	close(stop)
	wg.Wait()

	for _, cl := range all {
		testutil.EventuallyWithin(t, 30*time.Second, "every client to flush", func() (bool, string) {
			fctx, fcancel := context.WithTimeout(ctx, 2*time.Second)
			defer fcancel()
			err := cl.Flush(fctx)
			return err == nil, fmt.Sprint(err)
		})
	}
	byDoc := map[string][]*replica.Client{}
	for _, c := range clients {
		byDoc[c.doc] = append(byDoc[c.doc], c.cl)
	}
	texts := map[string]string{}
	for _, c := range clients {
		testutil.EventuallyWithin(t, 30*time.Second, "the clients of "+c.doc+" to converge", func() (bool, string) { return converged(byDoc[c.doc], c.text), "" })
		d, _, _ := c.cl.Draft(c.text)
		texts[c.doc] = d.Questions["q1"].Text
	}
	lost, twice := 0, 0
	for tok := range h.sent {
		ci := 0
		fmt.Sscanf(tok, "<%d.", &ci)
		switch n := strings.Count(texts[clients[ci].doc], tok); {
		case n == 0 && h.acked[tok]:
			lost++
		case n > 1:
			twice++
		}
	}
	if lost > 0 || twice > 0 {
		t.Fatalf("%d acknowledged edits lost, %d applied twice (of %d, %d acknowledged)", lost, twice, len(h.sent), len(h.acked))
	}
	if len(refused) > 0 {
		t.Fatalf("%d saves or reopens refused during the restarts: %v", len(refused), refused)
	}
	end := h.now() + 2*uncertain.Nanoseconds()
	settles := 0
	for ci, c := range clients {
		rec, _ := c.cl.Record(c.save)
		ops := append(saves[ci], porcupine.Operation{ClientId: 100, Input: saveIn{Kind: "read"}, Call: end, Return: end + 1,
			Output: saveOut{Known: true, Settled: rec.Status == question.Settled, Gen: rec.Generation}})
		porcupinetest.Check(t, fmt.Sprintf("client %d's saves and reopens through the restarts", ci), saveModel.ToModel(), ops, checkBudget)
		for _, op := range saves[ci] {
			if o := op.Output.(saveOut); o.OK {
				settles++
			}
		}
	}
	f.mu.Lock()
	logs := append(stopped, f.slots...)
	f.mu.Unlock()
	// What the nodes log when a document changes hands other than by
	// handoff: a lease given up (its renewal failed or came too late),
	// one deleted because its owner's address refused connections, a
	// release that failed (the lease then expires), a commit refused.
	for _, l := range []string{`msg="cluster: lease lost"`, `msg="cluster: lease of an owner that refuses connections broken"`, `msg=handoff`, `msg="commit failed`} {
		for _, ch := range logs {
			if line := lineWith(ch.log.String(), l); line != "" {
				t.Fatalf("node %s logged %s: a document changed hands other than by handoff", ch.name, line)
			}
		}
	}
	w := waits.sorted()
	if len(w) == 0 || settles == 0 {
		t.Fatalf("a run without load: %d edits, %d saves", len(w), settles)
	}
	longest := w[len(w)-1]
	// The renewals that took over T/6 (the Router logs them), against the
	// T/3 a renewal may take before its lease is given up.
	slow, slowest := 0, time.Duration(0)
	for _, ch := range logs {
		for _, m := range slowRenewalLine.FindAllStringSubmatch(ch.log.String(), -1) {
			if d, err := time.ParseDuration(m[1]); err == nil {
				slow, slowest = slow+1, max(slowest, d)
			}
		}
	}
	t.Logf("rolling restart of %d nodes under %d clients: %d acknowledged edits all present once, %d saves/reopens acknowledged, none refused; "+
		"edit wait p50 %v, p99 %v, longest %v; SIGTERM → exit %v; %d lease renewals slower than T/6 (slowest %v)",
		nodes, len(clients), len(h.acked), settles, w[len(w)/2].Round(time.Millisecond), w[len(w)*99/100].Round(time.Millisecond),
		longest.Round(time.Millisecond), stops, slow, slowest.Round(time.Millisecond))
}

// lineWith returns the first line of log that contains s, or "".
func lineWith(log, s string) string {
	for line := range strings.Lines(log) {
		if strings.Contains(line, s) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// saveOrReopenOwn saves the client's own decision (choosing an option
// first) or, settled, reopens it, and returns the operation for the
// history; err is set if it was refused.
func saveOrReopenOwn(ctx context.Context, h *history, ci int, cl *replica.Client, id string) (*porcupine.Operation, error) {
	rec, ok := cl.Record(id)
	d, _, err := cl.Draft(id)
	if !ok || err != nil {
		return nil, nil
	}
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if rec.Status == question.Settled {
		call := h.now()
		r, err := cl.Reopen(octx, id)
		out := reopenOut(rec.Generation, r, err)
		op := opOf(h, ci, saveIn{Kind: "reopen"}, out, call)
		if isRefusal(err) {
			return op, fmt.Errorf("reopen of %s: %w", id, err)
		}
		return op, nil
	}
	if len(d.Questions["q1"].Choices) == 0 {
		if err := cl.Choose(id, "q1", "o1", true); err != nil {
			return nil, nil
		}
		fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
		err := cl.Flush(fctx, id)
		fcancel()
		if err != nil {
			return nil, nil
		}
	}
	call := h.now()
	res, err := cl.Submit(octx, id)
	member, _ := cl.Member()
	out := submitOut(member, res, err)
	if err == nil && len(res) == 1 && !res[0].OK {
		err = fmt.Errorf("save of %s: %s: %s", id, res[0].Reason, res[0].Message)
	}
	op := opOf(h, ci, saveIn{Kind: "submit"}, out, call)
	if err != nil && out.Known {
		return op, err
	}
	return op, nil
}

func opOf(h *history, ci int, in saveIn, out saveOut, call int64) *porcupine.Operation {
	ret := h.now()
	if !out.Known {
		ret += uncertain.Nanoseconds()
	}
	return &porcupine.Operation{ClientId: ci, Input: in, Call: call, Output: out, Return: ret}
}
