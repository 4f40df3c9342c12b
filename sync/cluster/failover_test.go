package cluster_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/anishathalye/porcupine"
	"github.com/gorilla/websocket"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/accord-crdt/accord/internal/natstest"
	"github.com/accord-crdt/accord/internal/porcupinetest"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/jetstream"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/cluster"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/wire"
)

// fleet is the node processes of a test, one per slot: a killed node's
// slot gets a fresh node. Clients have a home slot and dial it first.
type fleet struct {
	t    testing.TB
	nats string
	// natsFor, if set, gives a node the NATS URLs it dials (proxies).
	natsFor func(node string) string
	// dialTimeout, if set, bounds the dial of each node in turn: a node
	// cut off from NATS may answer late.
	dialTimeout time.Duration
	ttl         time.Duration
	leas        natsjs.KeyValue
	mu          sync.Mutex
	slots       []*child
	next        int
}

func newFleet(t testing.TB, c *natstest.Cluster, nodes int, ttl time.Duration) *fleet {
	return newFleetVia(t, c, nodes, ttl, nil)
}

// newFleetVia is newFleet whose nodes dial NATS at natsFor(node) when
// natsFor is set.
func newFleetVia(t testing.TB, c *natstest.Cluster, nodes int, ttl time.Duration, natsFor func(node string) string) *fleet {
	f := &fleet{t: t, nats: c.URLs(), ttl: ttl, natsFor: natsFor}
	for range nodes {
		f.slots = append(f.slots, f.spawn())
	}
	js, err := natsjs.New(natstest.Connect(t, c.URL(0)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if f.leas, err = js.KeyValue(ctx, cluster.DefaultBucket); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return f
}

func (f *fleet) spawn() *child {
	f.mu.Lock()
	name := fmt.Sprintf("n%d", f.next)
	f.next++
	f.mu.Unlock()
	urls := f.nats
	if f.natsFor != nil {
		urls = f.natsFor(name)
	}
	return spawn(f.t, name, urls, f.ttl)
}

// bases lists the nodes' ws:// bases, home's first.
func (f *fleet) bases(home int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for i := range f.slots {
		if c := f.slots[(home+i)%len(f.slots)]; c != nil {
			out = append(out, c.url)
		}
	}
	return out
}

// dialer dials the client's home node, or, if it does not answer (dead,
// or forwarding to an owner that is), the others in turn.
func (f *fleet) dialer(home int) replica.Dialer {
	return func(ctx context.Context, u string, header http.Header) (replica.Conn, error) {
		_, query, _ := strings.Cut(u, "?")
		err := errors.New("no node")
		for _, base := range f.bases(home) {
			dctx, cancel := ctx, context.CancelFunc(func() {})
			if f.dialTimeout > 0 {
				dctx, cancel = context.WithTimeout(ctx, f.dialTimeout)
			}
			ws, _, derr := websocket.DefaultDialer.DialContext(dctx, base+"/?"+query, header)
			cancel()
			if derr == nil {
				ws.SetReadLimit(wire.MaxFrameBytes)
				return ws, nil
			}
			err = derr
		}
		return nil, err
	}
}

// ownerSlot returns the slot of the node holding doc's lease.
func (f *fleet) ownerSlot(ctx context.Context, doc string) (int, error) {
	for {
		e, err := f.leas.Get(ctx, leaseKeyOf(doc))
		if err == nil {
			var o struct{ Node string }
			if err := json.Unmarshal(e.Value(), &o); err != nil {
				return 0, err
			}
			f.mu.Lock()
			for i, c := range f.slots {
				if c != nil && c.name == o.Node {
					f.mu.Unlock()
					return i, nil
				}
			}
			f.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("no live owner of %q: %v", doc, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// killSlot SIGKILLs the node of a slot, leaving the slot empty.
func (f *fleet) killSlot(i int) {
	f.mu.Lock()
	c := f.slots[i]
	f.slots[i] = nil
	f.mu.Unlock()
	c.kill()
}

func (f *fleet) fill(i int, c *child) {
	f.mu.Lock()
	f.slots[i] = c
	f.mu.Unlock()
}

// leaseKeyOf is the Router's key of doc's lease.
func leaseKeyOf(doc string) string { return base64.RawURLEncoding.EncodeToString([]byte(doc)) }

// History of one decision's saves and reopens, with outcomes that may be
// unknown (the connection dropped before the reply), and a final read.
type saveIn struct {
	Kind string // "submit", "reopen" or "read"
}

type saveOut struct {
	Known  bool
	OK     bool
	Reason question.Reason // of a refusal, for the visualization
	// Gen is the generation a save settled or a reopen started (0 when
	// the reply does not say: see submitOut), or the record's (read).
	Gen     uint64
	Settled bool // read
}

// submitOut is the outcome of member's save as the history records it.
// The generation it settled is the one in the reply's record; but a save
// resent after its connection dropped, which had taken effect, is answered
// with the decision as it is now, perhaps reopened or saved by another
// member since: unless the record shows member's save, the generation is
// left unknown.
func submitOut(member string, res []wire.SubmitResult, err error) saveOut {
	out := saveOut{Known: isRefusal(err), Reason: reasonOf(err)}
	if err == nil && len(res) == 1 {
		out.Known, out.OK, out.Reason = true, res[0].OK, res[0].Reason
		if r := res[0].Record; res[0].OK && r != nil && r.Status == question.Settled && r.Answer != nil && r.Answer.By == member {
			out.Gen = r.Answer.Generation
		}
	}
	return out
}

// reopenOut is the outcome of a reopen of the answer saved at generation
// from, as the history records it: the generation it started is the
// record's, if the record is the one that reopen starts (a resent reopen
// is answered with the decision as it is now).
func reopenOut(from uint64, r question.Record, err error) saveOut {
	out := saveOut{Known: err == nil || isRefusal(err), OK: err == nil, Reason: reasonOf(err)}
	if err == nil && r.Generation == from+1 {
		out.Gen = r.Generation
	}
	return out
}

type saveState struct {
	Settled bool
	Gen     uint64
}

// saveModel is one decision as the whole cluster must show it. A settle
// applies only to an open decision, at its generation; a reopen only to a
// settled one, starting the next (the generation each reports, if known,
// must be that one); a refusal changes nothing; an outcome the client
// never learnt may or may not have happened; the final read sees the
// state. So what it forbids is a decision settled twice, a
// settle or reopen no order explains, and an acknowledged save or reopen
// that the final state does not reflect.
var saveModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{saveState{Gen: 1}} },
	Step: func(st, in, out any) []any {
		s, i, o := st.(saveState), in.(saveIn), out.(saveOut)
		switch i.Kind {
		case "read":
			if o.Settled == s.Settled && o.Gen == s.Gen {
				return []any{s}
			}
			return nil
		case "submit":
			applied := saveState{Settled: true, Gen: s.Gen}
			switch {
			case !o.Known && !s.Settled:
				return []any{s, applied}
			case !o.Known || !o.OK:
				return []any{s}
			case !s.Settled && (o.Gen == s.Gen || o.Gen == 0):
				return []any{applied}
			}
			return nil
		case "reopen":
			applied := saveState{Gen: s.Gen + 1}
			switch {
			case !o.Known && s.Settled:
				return []any{s, applied}
			case !o.Known || !o.OK:
				return []any{s}
			case s.Settled && (o.Gen == s.Gen+1 || o.Gen == 0):
				return []any{applied}
			}
			return nil
		}
		return nil
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(saveIn), out.(saveOut)
		if !o.Known {
			return i.Kind + " → ?"
		}
		return fmt.Sprintf("%s → ok=%v %s gen=%d settled=%v", i.Kind, o.OK, o.Reason, o.Gen, o.Settled)
	},
}

// History of appends with idempotency keys: each key's attempts (retried
// across failures) and a final count of its options.
type appendIn struct {
	Key  string
	Read bool
}

type appendOut struct {
	Known    bool
	OK       bool
	ID       string // the option's id (append), or the one found (read)
	Repeated bool
	Count    int             // read: options carrying the key's label
	Reason   question.Reason // of a refusal, for the visualization
}

type appendState struct {
	Applied bool
	ID      string // "" while unknown
}

// appendModel: the first append of a key that succeeds applies it, every
// later one is a repeat answering the same option, an attempt whose
// reply was lost may have applied it, and the final read finds it exactly
// once if it was applied and not at all otherwise. The first success may
// itself say repeated: a replica sends a request again, unchanged, when
// its connection drops before the reply, and the server answers the
// resent append of a key it applied as a repeat.
var appendModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(appendIn).Key
			by[k] = append(by[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(by))
		for _, ops := range by {
			out = append(out, ops)
		}
		return out
	},
	Init: func() []any { return []any{appendState{}} },
	Step: func(st, in, out any) []any {
		s, i, o := st.(appendState), in.(appendIn), out.(appendOut)
		switch {
		case i.Read:
			if (s.Applied && o.Count == 1 && (s.ID == "" || s.ID == o.ID)) || (!s.Applied && o.Count == 0) {
				return []any{s}
			}
			return nil
		case !o.Known:
			if s.Applied {
				return []any{s}
			}
			return []any{s, appendState{Applied: true}}
		case !o.OK:
			return []any{s}
		case !s.Applied:
			return []any{appendState{Applied: true, ID: o.ID}}
		case o.Repeated && (s.ID == "" || s.ID == o.ID):
			return []any{appendState{Applied: true, ID: o.ID}}
		}
		return nil
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(appendIn), out.(appendOut)
		if i.Read {
			return fmt.Sprintf("read %s → %d × %s", i.Key, o.Count, o.ID)
		}
		if !o.Known {
			return "append " + i.Key + " → ?"
		}
		return fmt.Sprintf("append %s → ok=%v %s %s repeated=%v", i.Key, o.OK, o.Reason, o.ID, o.Repeated)
	},
}

// uncertain is how long after its failure a request whose reply was lost
// may still take effect: the node that had it commits within its store's
// 5 s timeout or not at all, so 10 s is a safe bound.
const uncertain = 10 * time.Second

// history collects the operations of every client.
type history struct {
	start time.Time
	mu    sync.Mutex
	saves []porcupine.Operation
	apps  []porcupine.Operation
	acked map[string]bool // text tokens whose edit was acknowledged
	sent  map[string]bool // every token typed
}

func (h *history) now() int64 { return time.Since(h.start).Nanoseconds() }

func (h *history) add(list *[]porcupine.Operation, ci int, in, out any, call int64, known bool) {
	ret := h.now()
	if !known {
		ret += uncertain.Nanoseconds()
	}
	h.mu.Lock()
	*list = append(*list, porcupine.Operation{ClientId: ci, Input: in, Call: call, Output: out, Return: ret})
	h.mu.Unlock()
}

// reasonOf is the reason of err if it is a refusal, or "".
func reasonOf(err error) question.Reason {
	if r := (*question.Refusal)(nil); errors.As(err, &r) {
		return r.Reason
	}
	return ""
}

// isRefusal reports whether err is the server's answer that it applied
// nothing (as opposed to a request whose fate is unknown).
func isRefusal(err error) bool {
	var r *question.Refusal
	return errors.As(err, &r)
}

// historyCounts sums up a checked history, for the test's log.
type historyCounts struct {
	settles, reopens, unknown int // saves and reopens: acknowledged, of unknown outcome
	appended, appUnknown      int // appends: applied, of unknown outcome
	took                      time.Duration
}

// checkBudget bounds each porcupine check of the failover and fault
// tests' histories.
const checkBudget = 60 * time.Second

// settle ends a test's load: it waits until everyone's edits are accepted
// and all hold the same answer (textID's) and the same records (saveID's),
// fails t unless every acknowledged edit of h is in the shared answer and
// none is there twice, and checks h (see check).
func (h *history) settle(ctx context.Context, t testing.TB, everyone []*replica.Client, probe *replica.Client, textID, saveID, what string) historyCounts {
	t.Helper()
	for _, cl := range everyone {
		testutil.EventuallyWithin(t, 30*time.Second, "every client to flush", func() (bool, string) {
			fctx, fcancel := context.WithTimeout(ctx, 2*time.Second)
			defer fcancel()
			err := cl.Flush(fctx)
			return err == nil, fmt.Sprint(err)
		})
	}
	testutil.EventuallyWithin(t, 30*time.Second, "the clients to converge", func() (bool, string) {
		if !converged(everyone, textID) || !converged(everyone, saveID) {
			return false, ""
		}
		r0, _ := everyone[0].Record(saveID)
		for _, cl := range everyone {
			r, ok := cl.Record(saveID)
			if !ok || r.Status != r0.Status || r.Generation != r0.Generation {
				return false, ""
			}
		}
		return true, ""
	})
	d, _, _ := probe.Draft(textID)
	text := d.Questions["q1"].Text
	lost, twice := 0, 0
	for tok := range h.sent {
		switch n := strings.Count(text, tok); {
		case n == 0 && h.acked[tok]:
			lost++
		case n > 1:
			twice++
		}
	}
	if lost > 0 || twice > 0 {
		t.Fatalf("shared answer %s: %d acknowledged edits lost, %d edits applied twice (of %d, %d acknowledged)", what, lost, twice, len(h.sent), len(h.acked))
	}
	return h.check(t, probe, saveID, what)
}

// check closes the history with reads of the final state, as probe holds
// it once every client converged (the shared decision saveID, and the
// options of every key appended), and checks the saves and reopens, and
// the appends, with porcupine against saveModel and appendModel. what
// says where the history was made, for the messages.
func (h *history) check(t testing.TB, probe *replica.Client, saveID, what string) historyCounts {
	t.Helper()
	// After every operation, those of unknown outcome included, whose
	// returns are uncertain after their failure.
	end := h.now() + 2*uncertain.Nanoseconds()
	rec, _ := probe.Record(saveID)
	h.saves = append(h.saves, porcupine.Operation{ClientId: 100, Input: saveIn{Kind: "read"}, Call: end, Return: end + 1,
		Output: saveOut{Known: true, Settled: rec.Status == question.Settled, Gen: rec.Generation}})
	keys := map[string]bool{}
	for _, op := range h.apps {
		keys[op.Input.(appendIn).Key] = true
	}
	for k := range keys {
		target, label, _ := strings.Cut(k, "/")
		r, _ := probe.Record(target)
		out := appendOut{Known: true}
		for _, o := range r.Definition.Questions[0].Options {
			if o.Label == label {
				out.Count++
				out.ID = o.ID
			}
		}
		h.apps = append(h.apps, porcupine.Operation{ClientId: 100, Input: appendIn{Key: k, Read: true}, Call: end, Return: end + 1, Output: out})
	}
	var n historyCounts
	for _, op := range h.saves {
		o := op.Output.(saveOut)
		switch in := op.Input.(saveIn); {
		case !o.Known:
			n.unknown++
		case o.OK && in.Kind == "submit":
			n.settles++
		case o.OK && in.Kind == "reopen":
			n.reopens++
		}
	}
	for _, op := range h.apps {
		if o := op.Output.(appendOut); !o.Known {
			n.appUnknown++
		} else if o.OK && !o.Repeated && !op.Input.(appendIn).Read {
			n.appended++
		}
	}
	n.took = porcupinetest.Check(t, fmt.Sprintf("saves and reopens %s (%d of unknown outcome)", what, n.unknown), saveModel.ToModel(), h.saves, checkBudget)
	n.took += porcupinetest.Check(t, fmt.Sprintf("appends %s (%d of unknown outcome)", what, n.appUnknown), appendModel.ToModel(), h.apps, checkBudget)
	return n
}

func textCard(key string) wire.Card {
	return wire.Card{Key: key, Origin: question.FromPerson, Definition: question.Definition{Questions: []question.Question{
		{ID: "q1", Text: "What do we tell customers?", Response: question.Text, Options: []question.Option{}},
	}}}
}

func plannerCard(key string) wire.Card {
	c := card(key)
	c.Origin = question.FromPlanner
	return c
}

// worker is one client's load: written-answer edits on the shared text
// decision, saves and reopens of the shared Planner decision, appends of
// options to the current append decision.
type worker struct {
	ci      int
	cl      *replica.Client
	h       *history
	text    string
	save    string
	appends *atomic.Pointer[string]
}

func (w *worker) run(ctx context.Context, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(uint64(w.ci), 7))
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		switch r := rng.IntN(10); {
		case r < 5:
			w.edit(ctx, n)
		case r < 8:
			w.saveOrReopen(ctx)
		default:
			w.appendOption(ctx, n)
		}
		time.Sleep(time.Duration(5+rng.IntN(15)) * time.Millisecond)
	}
}

func (w *worker) edit(ctx context.Context, n int) {
	d, _, err := w.cl.Draft(w.text)
	if err != nil {
		return
	}
	tok := fmt.Sprintf("<%d.%d>", w.ci, n)
	if err := w.cl.SpliceText(w.text, "q1", utf8.RuneCountInString(d.Questions["q1"].Text), 0, tok); err != nil {
		return
	}
	w.h.mu.Lock()
	w.h.sent[tok] = true
	w.h.mu.Unlock()
	fctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	if err := w.cl.Flush(fctx, w.text); err == nil {
		w.h.mu.Lock()
		w.h.acked[tok] = true
		w.h.mu.Unlock()
	}
}

func (w *worker) saveOrReopen(ctx context.Context) {
	rec, ok := w.cl.Record(w.save)
	d, _, err := w.cl.Draft(w.save)
	if !ok || err != nil {
		return
	}
	octx, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	call := w.h.now()
	if rec.Status == question.Settled {
		r, err := w.cl.Reopen(octx, w.save)
		out := reopenOut(rec.Generation, r, err)
		w.h.add(&w.h.saves, w.ci, saveIn{Kind: "reopen"}, out, call, out.Known)
		return
	}
	if len(d.Questions["q1"].Choices) == 0 {
		if err := w.cl.Choose(w.save, "q1", "o1", true); err != nil {
			return
		}
	}
	call = w.h.now()
	res, err := w.cl.Submit(octx, w.save)
	member, _ := w.cl.Member()
	out := submitOut(member, res, err)
	w.h.add(&w.h.saves, w.ci, saveIn{Kind: "submit"}, out, call, out.Known)
}

func (w *worker) appendOption(ctx context.Context, n int) {
	target := *w.appends.Load()
	key := fmt.Sprintf("k%d.%d", w.ci, n)
	for attempt := 0; attempt < 6; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		call := w.h.now()
		opt, _, repeated, err := w.cl.AppendOption(actx, target, "q1", key, key)
		cancel()
		out := appendOut{Known: err == nil || isRefusal(err), OK: err == nil, ID: opt.ID, Repeated: repeated, Reason: reasonOf(err)}
		w.h.add(&w.h.apps, w.ci, appendIn{Key: target + "/" + key}, out, call, out.Known)
		if out.Known {
			return
		}
	}
}

// TestSIGKILLFailoverCycles runs three Accord nodes as child processes on
// an embedded three-server JetStream cluster (R3 stream, R3 lease bucket)
// and, 20 times, SIGKILLs the node that owns a busy document while six
// clients, two per node, edit a shared written answer, save and reopen a
// shared Planner decision and append options with idempotency keys; a
// fresh node takes the killed one's place. The clients redial (their node,
// or another) and carry on. Each cycle also saves a fresh Planner decision
// just before the kill. Afterwards:
//
//   - all clients converge, and every acknowledged edit is in the shared
//     answer exactly once;
//   - porcupine finds the saves and reopens (with the outcomes clients never
//     learnt left open) and the appends linearizable, with a final read of
//     the state: no decision settled twice, no acknowledged save, reopen
//     or append lost, no key applied twice;
//   - every answer the Planner's queue handed to a turn was handed over
//     exactly once across the nodes and the kills, and every acknowledged
//     save of a Planner decision that stayed settled was handed over.
//
// The lease TTL and client backoff of TestSIGKILLFailoverCycles: 1 s and
// 20–250 ms keep the test short; -failover.lease=2s -failover.defaults
// measures the failover a default node and a default replica give.
var (
	failoverLease    = flag.Duration("failover.lease", time.Second, "lease TTL of TestSIGKILLFailoverCycles")
	failoverDefaults = flag.Bool("failover.defaults", false, "TestSIGKILLFailoverCycles: clients with the replica's default backoff")
)

func TestSIGKILLFailoverCycles(t *testing.T) {
	const (
		cycles   = 20
		nodes    = 3
		perNode  = 2
		workTime = 400 * time.Millisecond
	)
	ttl := *failoverLease
	c := natstest.RunCluster(t, 3)
	f := newFleet(t, c, nodes, ttl)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const doc = "busy"
	dial := func(home int, member string) *replica.Client {
		u := "ws://fleet/?" + url.Values{"doc": {doc}, "member": {member}}.Encode()
		var cl *replica.Client
		var err error
		for i := 0; i < 100; i++ {
			dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
			o := replica.Options{Dialer: f.dialer(home), MinBackoff: 20 * time.Millisecond, MaxBackoff: 250 * time.Millisecond, HandshakeTimeout: 3 * time.Second}
			if *failoverDefaults {
				o.MinBackoff, o.MaxBackoff = 0, 0
			}
			cl, err = replica.Dial(dctx, u, o)
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
	recs, err := clients[0].Create(ctx, textCard("text"), plannerCard("save"), card("appends-0"))
	if err != nil {
		t.Fatal(err)
	}
	textID, saveID := recs[0].ID, recs[1].ID
	var appends atomic.Pointer[string]
	appends.Store(&recs[2].ID)
	appendTargets := []string{recs[2].ID}
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

	type planned struct {
		id, by string
		gen    uint64
	}
	var plannerSaves []planned
	var failovers []time.Duration
	for cycle := range cycles {
		// A fresh append target now and then: a question takes at most
		// 50 options.
		if cycle%4 == 3 {
			r, err := createRetrying(ctx, probe, card(fmt.Sprintf("appends-%d", cycle)))
			if err != nil {
				t.Fatalf("cycle %d: create append target: %v", cycle, err)
			}
			holdAll(r[0].ID)
			appends.Store(&r[0].ID)
			appendTargets = append(appendTargets, r[0].ID)
		}
		// A Planner decision saved just before the kill: its answer must
		// be handed to a turn exactly once, whoever delivers it.
		saver := clients[cycle%len(clients)]
		r, err := createRetrying(ctx, saver, plannerCard(fmt.Sprintf("planner-%d", cycle)))
		if err != nil {
			t.Fatalf("cycle %d: create: %v", cycle, err)
		}
		id := r[0].ID
		if err := saver.Choose(id, "q1", "o2", true); err != nil {
			t.Fatal(err)
		}
		who, _ := saver.Member()
		gen, err := saveUntilSettled(ctx, saver, id)
		if err != nil {
			t.Fatalf("cycle %d: save: %v", cycle, err)
		}
		plannerSaves = append(plannerSaves, planned{id: id, by: who, gen: gen})
		time.Sleep(workTime)

		octx, ocancel := context.WithTimeout(ctx, 20*time.Second)
		slot, err := f.ownerSlot(octx, doc)
		ocancel()
		if err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		f.killSlot(slot)
		killed := time.Now()
		// Failover time: from the kill until a change written after it is
		// acknowledged and held by every client.
		probed := make(chan error, 1)
		go func() {
			tok, err := typeUntilStored(ctx, probe, textID, fmt.Sprintf("probe.%d", cycle), 5*time.Second, func(typed string) {
				h.mu.Lock()
				h.sent[typed] = true
				h.mu.Unlock()
			})
			if err != nil {
				probed <- err
				return
			}
			h.mu.Lock()
			h.acked[tok] = true
			h.mu.Unlock()
			for _, cl := range clients {
				for {
					d, _, err := cl.Draft(textID)
					if err == nil && strings.Contains(d.Questions["q1"].Text, tok) {
						break
					}
					if ctx.Err() != nil {
						probed <- ctx.Err()
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			probed <- nil
		}()
		f.fill(slot, f.spawn())
		if err := <-probed; err != nil {
			t.Fatalf("cycle %d: clients did not converge after the kill: %v", cycle, err)
		}
		failovers = append(failovers, time.Since(killed))
	}
	close(stop)
	wg.Wait()

	// Everyone catches up, and the history is checked.
	n := h.settle(ctx, t, everyone, probe, textID, saveID, "through the nodes and the kills")
	if n.settles == 0 || n.reopens == 0 || n.appended == 0 || len(h.acked) == 0 {
		t.Fatalf("a history without load: %d settles, %d reopens, %d appends, %d edits", n.settles, n.reopens, n.appended, len(h.acked))
	}

	// Every saved Planner decision still settled by its saver, and its
	// answer handed to the Planner exactly once across nodes and kills.
	for _, p := range plannerSaves {
		r, ok := probe.Record(p.id)
		if !ok || r.Status != question.Settled || r.Answer == nil || r.Answer.By != p.by || r.Answer.Generation != p.gen {
			t.Fatalf("acknowledged save of %s by %s lost: %+v", p.id, p.by, r.Answer)
		}
	}
	final, _ := probe.Record(saveID)
	var delivered map[answer][]acceptedTurn
	chatJS, err := natsjs.New(natstest.Connect(t, c.URLs()))
	if err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyWithin(t, 30*time.Second, "every settled Planner answer to be handed to a turn", func() (bool, string) {
		delivered = chatTurns(t, ctx, chatJS)
		for _, p := range plannerSaves {
			if len(delivered[answer{p.id, p.gen}]) == 0 {
				return false, ""
			}
		}
		return final.Status != question.Settled || len(delivered[answer{saveID, final.Answer.Generation}]) > 0, ""
	})
	for a, turns := range delivered {
		if len(turns) != 1 {
			t.Fatalf("answer %s generation %d handed to %d turns: %+v", a.Decision, a.Generation, len(turns), turns)
		}
	}
	sort.Slice(failovers, func(i, j int) bool { return failovers[i] < failovers[j] })
	t.Logf("failovers: %v", failovers)
	t.Logf("%d SIGKILLs of the owner, lease TTL %v: failover (kill → a new edit acknowledged and held by all %d clients) p50 %v, p90 %v, max %v; "+
		"%d acknowledged edits all present once; %d settles, %d reopens, %d saves/reopens of unknown outcome, linearizable; "+
		"%d appends (%d attempts of unknown outcome), each applied once (porcupine took %v); %d answers handed to the Planner, each once",
		cycles, ttl, len(clients), failovers[len(failovers)/2].Round(time.Millisecond), failovers[len(failovers)*9/10].Round(time.Millisecond), failovers[len(failovers)-1].Round(time.Millisecond),
		len(h.acked), n.settles, n.reopens, n.unknown, n.appended, n.appUnknown, n.took.Round(time.Millisecond), len(delivered))
}

// saveUntilSettled saves id until the save is acknowledged, and returns
// the settled generation. A save refused whole (unavailable: a commit
// failed while a lease changed hands on a loaded machine) is sent again;
// one whose reply was lost is looked up in the record.
// createRetrying creates cards, sending the request again while the
// connection is lost before the reply (a node that forwarded it stopped,
// or the lease changed hands): the card's key makes a repeat return the
// same decision, never a second one.
func createRetrying(ctx context.Context, cl *replica.Client, cards ...wire.Card) ([]question.Record, error) {
	for attempt := 0; ; attempt++ {
		recs, err := cl.Create(ctx, cards...)
		if !errors.Is(err, replica.ErrDisconnected) || attempt == 10 {
			return recs, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// typeUntilStored types a token at the end of the written answer q1 of
// decision id and waits, bounded by ctx, until the server has stored it;
// it returns the token stored. A Flush that fails (its time up, or the
// node gone) leaves the token in the replica, which sends it again on
// the next connection: it is flushed again, never typed again. Only when
// a refusal reset the replica, dropping the token there, is a new one
// typed, under a new name (name.1, name.2, ...): the dropped change can
// still come back through a member that received it early (a failed
// commit's early fan-out), so the same token typed again could land in
// the answer twice. typed hears every token typed.
func typeUntilStored(ctx context.Context, cl *replica.Client, id, name string, flushFor time.Duration, typed func(tok string)) (string, error) {
	for attempt := 0; ; attempt++ {
		tok := fmt.Sprintf("<%s.%d>", name, attempt)
		for {
			d, _, err := cl.Draft(id)
			if err == nil {
				err = cl.SpliceText(id, "q1", utf8.RuneCountInString(d.Questions["q1"].Text), 0, tok)
			}
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return "", err
			}
			time.Sleep(5 * time.Millisecond)
		}
		typed(tok)
		for {
			fctx, cancel := context.WithTimeout(ctx, flushFor)
			err := cl.Flush(fctx, id)
			cancel()
			if err == nil {
				return tok, nil
			}
			if ctx.Err() != nil {
				return "", err
			}
			if r := (*question.Refusal)(nil); errors.As(err, &r) && r.Reset {
				break // dropped here, though perhaps not everywhere
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func saveUntilSettled(ctx context.Context, cl *replica.Client, id string) (uint64, error) {
	who, _ := cl.Member()
	for attempt := 0; ; attempt++ {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		res, err := cl.Submit(sctx, id)
		cancel()
		if err == nil && len(res) == 1 && res[0].OK {
			return res[0].Record.Answer.Generation, nil
		}
		time.Sleep(100 * time.Millisecond)
		if rec, ok := cl.Record(id); ok && rec.Status == question.Settled && rec.Answer != nil && rec.Answer.By == who {
			return rec.Answer.Generation, nil // an earlier attempt settled it
		}
		switch {
		case err == nil && len(res) == 1 && res[0].Reason != question.Unavailable:
			return 0, fmt.Errorf("refused as %s: %s", res[0].Reason, res[0].Message)
		case attempt == 10:
			return 0, fmt.Errorf("%+v %v", res, err)
		}
	}
}

// chatTurns reads the turns the nodes' shared Chat accepted: for each
// answer, the turns that carried it.
func chatTurns(t testing.TB, ctx context.Context, js natsjs.JetStream) map[answer][]acceptedTurn {
	t.Helper()
	kv, err := js.KeyValue(ctx, chatBucket)
	if err != nil {
		return nil
	}
	out := map[answer][]acceptedTurn{}
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k := range lister.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		var turn acceptedTurn
		if err := json.Unmarshal(e.Value(), &turn); err != nil {
			t.Fatal(err)
		}
		for _, a := range turn.Answers {
			out[a] = append(out[a], turn)
		}
	}
	return out
}

// readOnly is a store for looking at a document without changing it.
type readOnly struct{ persist.Store }

func (readOnly) Commit(context.Context, string, *persist.Write) error {
	return errors.New("read-only")
}

// TestAnswerDeliveredOnceAcrossOwnerKill kills, by SIGKILL, the node that
// is delivering a saved Planner answer at the two points where a crash
// could lose it or hand it over twice: after the turn was claimed in the
// store but before Chat accepted it, and after Chat accepted it but
// before its rows were marked delivered. The next owner (another node
// process) recovers the turn under the same id: Chat holds exactly one
// turn with the answer, and the answer's row is gone from the queue.
func TestAnswerDeliveredOnceAcrossOwnerKill(t *testing.T) {
	for _, point := range []string{"claimed", "accepted"} {
		t.Run(point, func(t *testing.T) {
			const ttl = time.Second
			c := natstest.RunCluster(t, 3)
			f := &fleet{t: t, nats: c.URLs(), ttl: ttl}
			// The first node dies in its first Accept; the second does not.
			f.slots = []*child{spawn(t, "dies", f.nats, ttl, childDie+"="+point), f.spawn()}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			doc := "deliver-" + point
			u := "ws://fleet/?" + url.Values{"doc": {doc}, "member": {"ana"}}.Encode()
			ana, err := replica.Dial(ctx, u, replica.Options{Dialer: f.dialer(0), MinBackoff: 20 * time.Millisecond, MaxBackoff: 250 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer ana.Close()
			recs, err := ana.Create(ctx, plannerCard("engine"))
			if err != nil {
				t.Fatal(err)
			}
			id := recs[0].ID
			if err := ana.Choose(id, "q1", "o1", true); err != nil {
				t.Fatal(err)
			}
			// The node may die before the save's reply leaves it: the
			// reply is queued once the save is committed, and the Planner
			// delivery that kills the node starts from that commit too
			// (Host.Committed), so on a busy machine it can claim and
			// accept the turn before the reply is written. The save landed
			// then (only a committed answer is delivered), and ana learns
			// its generation from the next owner.
			res, err := ana.Submit(ctx, id)
			var gen uint64
			switch {
			case err == nil && len(res) == 1 && res[0].OK:
				gen = res[0].Record.Answer.Generation
			case err == nil || isRefusal(err):
				t.Fatalf("save: %+v %v", res, err)
			default:
				t.Logf("the save's reply was lost (%v): the node died first", err)
			}
			select {
			case <-f.slots[0].done:
			case <-ctx.Done():
				t.Fatal("the delivering node did not die")
			}
			f.mu.Lock()
			f.slots[0] = nil
			f.mu.Unlock()
			killed := time.Now()
			if gen == 0 {
				testutil.EventuallyWithin(t, 30*time.Second, "ana to hear the save from the next owner", func() (bool, string) {
					rec, ok := ana.Record(id)
					if ok && rec.Status == question.Settled && rec.Answer != nil && rec.Answer.By == "ana" {
						gen = rec.Answer.Generation
					}
					return gen != 0, ""
				})
			}

			js, err := natsjs.New(natstest.Connect(t, c.URLs()))
			if err != nil {
				t.Fatal(err)
			}
			// ana redials node 2, which takes the lease (the dead node's
			// address refuses connections), and its driver finds the
			// claimed turn.
			store, err := jetstream.Open(ctx, natstest.Connect(t, c.URLs()), &jetstream.Options{Replicas: 3})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			var rows []question.AnswerRow
			testutil.EventuallyWithin(t, 30*time.Second, "the next owner to finish the turn", func() (bool, string) {
				a, err := question.NewAuthority(ctx, question.Options{Store: readOnly{store}, Doc: doc})
				if err != nil {
					return false, ""
				}
				rows = a.AnswerRows()
				return len(rows) == 0, ""
			})
			took := time.Since(killed)
			turns := chatTurns(t, ctx, js)[answer{id, gen}]
			if len(turns) != 1 {
				t.Fatalf("the answer was handed to %d turns: %+v", len(turns), turns)
			}
			// Killed before Chat accepted the turn, the dead node left it
			// to the next owner; killed after, it accepted it itself, and
			// the next owner found it accepted.
			want := f.slots[1].name
			if point == "accepted" {
				want = "dies"
			}
			if turns[0].Node != want {
				t.Fatalf("the turn was accepted by %s, want %s", turns[0].Node, want)
			}
			if rec, ok := ana.Record(id); !ok || rec.Status != question.Settled || rec.Answer.Generation != gen {
				t.Fatalf("the save is gone: %+v", rec)
			}
			t.Logf("killed %s; the answer was delivered once (turn %s, accepted by %s), the queue cleared by the next owner %v after the kill",
				point, turns[0].ID, turns[0].Node, took.Round(time.Millisecond))
		})
	}
}

// TestFailoverModelsCanFail: the models of TestSIGKILLFailoverCycles
// refuse the histories they are there to catch, and accept an outcome
// left unknown either way.
func TestFailoverModelsCanFail(t *testing.T) {
	sub := func(call, ret int64, known, ok bool, gen uint64) porcupine.Operation {
		return porcupine.Operation{ClientId: int(call), Input: saveIn{Kind: "submit"}, Call: call, Return: ret, Output: saveOut{Known: known, OK: ok, Gen: gen}}
	}
	reopen := func(call, ret int64, known, ok bool, gen uint64) porcupine.Operation {
		return porcupine.Operation{ClientId: int(call), Input: saveIn{Kind: "reopen"}, Call: call, Return: ret, Output: saveOut{Known: known, OK: ok, Gen: gen}}
	}
	read := func(at int64, settled bool, gen uint64) porcupine.Operation {
		return porcupine.Operation{ClientId: 99, Input: saveIn{Kind: "read"}, Call: at, Return: at + 1, Output: saveOut{Known: true, Settled: settled, Gen: gen}}
	}
	app := func(call, ret int64, key string, known, ok bool, id string, repeated bool) porcupine.Operation {
		return porcupine.Operation{ClientId: int(call), Input: appendIn{Key: key}, Call: call, Return: ret, Output: appendOut{Known: known, OK: ok, ID: id, Repeated: repeated}}
	}
	count := func(at int64, key string, n int, id string) porcupine.Operation {
		return porcupine.Operation{ClientId: 99, Input: appendIn{Key: key, Read: true}, Call: at, Return: at + 1, Output: appendOut{Known: true, Count: n, ID: id}}
	}
	saves := saveModel.ToModel()
	apps := appendModel.ToModel()
	for _, tc := range []struct {
		name  string
		model porcupine.Model
		ops   []porcupine.Operation
		want  bool
	}{
		{"settled twice", saves, []porcupine.Operation{sub(0, 10, true, true, 1), sub(5, 15, true, true, 1), read(20, true, 1)}, false},
		{"acknowledged save lost", saves, []porcupine.Operation{sub(0, 10, true, true, 1), read(20, false, 1)}, false},
		{"acknowledged reopen lost", saves, []porcupine.Operation{sub(0, 1, true, true, 1), reopen(2, 3, true, true, 2), read(20, true, 1)}, false},
		{"unknown save that landed", saves, []porcupine.Operation{sub(0, 100, false, false, 0), read(200, true, 1)}, true},
		{"unknown save that did not", saves, []porcupine.Operation{sub(0, 100, false, false, 0), read(200, false, 1)}, true},
		{"save, reopen, save", saves, []porcupine.Operation{sub(0, 1, true, true, 1), reopen(2, 3, true, true, 2), sub(4, 5, true, true, 2), read(20, true, 2)}, true},
		{"resent save, answered as the decision is now", saves, []porcupine.Operation{sub(0, 10, true, true, 0), reopen(12, 13, true, true, 0), read(20, false, 2)}, true},
		{"settled twice, one generation unknown", saves, []porcupine.Operation{sub(0, 10, true, true, 1), sub(5, 15, true, true, 0), read(20, true, 1)}, false},
		{"append applied twice", apps, []porcupine.Operation{app(0, 1, "k", true, true, "o9", false), count(20, "k", 2, "o9")}, false},
		{"two first appends of one key", apps, []porcupine.Operation{app(0, 1, "k", true, true, "o9", false), app(2, 3, "k", true, true, "o10", false), count(20, "k", 1, "o9")}, false},
		{"acknowledged append lost", apps, []porcupine.Operation{app(0, 1, "k", true, true, "o9", false), count(20, "k", 0, "")}, false},
		{"unknown append, then its repeat", apps, []porcupine.Operation{app(0, 100, "k", false, false, "", false), app(101, 102, "k", true, true, "o9", true), count(200, "k", 1, "o9")}, true},
		{"append resent after a lost reply", apps, []porcupine.Operation{app(0, 1, "k", true, true, "o9", true), count(20, "k", 1, "o9")}, true},
		{"repeat of another option", apps, []porcupine.Operation{app(0, 1, "k", true, true, "o9", false), app(2, 3, "k", true, true, "o10", true), count(20, "k", 1, "o9")}, false},
		{"repeat of an append never applied", apps, []porcupine.Operation{app(0, 1, "k", true, true, "o9", true), count(20, "k", 0, "")}, false},
	} {
		if got := porcupine.CheckOperations(tc.model, tc.ops); got != tc.want {
			t.Errorf("%s: linearizable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
