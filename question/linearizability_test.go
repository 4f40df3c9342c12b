package question_test

// Linearizability of one decision. The Authority is not safe for concurrent
// use, so, as a server does, one owner goroutine calls it and clients send
// requests over a channel. Several clients submit, reopen, append criteria
// (with idempotency keys, retried after a lost reply) and read, at once;
// each operation is recorded with logical call and return times around the
// channel round trip. Some replies are lost: the client stops waiting and
// records the outcome as unknown, with an infinite return time, so the
// operation may have taken effect at any point after its call, or not yet.
// porcupine then checks every history against a sequential model of one
// decision.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/porcupinetest"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
)

// linInput is one client request.
type linInput struct {
	Kind string // submit, reopen, append, read
	// Gen is the generation of the draft revision the client displays,
	// and Heads that revision (submit).
	Gen        uint64
	Heads      string
	Key, Label string // append
}

// linOutput is its reply, or Unknown when the reply was lost.
type linOutput struct {
	Unknown  bool
	Reason   question.Reason // "" when accepted
	Gen      uint64          // submit: the answer's; reopen, read: the record's
	Status   question.Status // read
	History  int             // reopen, read
	ID       string          // append: the criterion id
	Label    string          // append: the criterion label
	Repeated bool            // append, submit
	Labels   string          // read: criteria labels in order, "|"-separated
}

// linState is the model of one choice decision: comparable, so porcupine
// can compare and cache states with ==.
type linState struct {
	Status  question.Status
	Gen     uint64
	History int
	// Criteria lists key, label and id of every criterion in order, each
	// field ending in \x1f; the initial criterion has an empty key. An id
	// is "?" while the reply that minted it is lost.
	Criteria string
	// Saves lists the revision and generation of every save, each field
	// ending in \x1f: a save of a revision saved before (by the one
	// member every client is) is a repeat.
	Saves string
}

// saved returns the generation of the save of revision heads, if any.
func (s linState) saved(heads string) (string, bool) {
	f := strings.Split(s.Saves, "\x1f")
	for i := 0; i+1 < len(f); i += 2 {
		if f[i] == heads {
			return f[i+1], true
		}
	}
	return "", false
}

type linCriterion struct{ key, label, id string }

func (s linState) criteria() []linCriterion {
	f := strings.Split(s.Criteria, "\x1f")
	out := make([]linCriterion, 0, len(f)/3)
	for i := 0; i+2 < len(f); i += 3 {
		out = append(out, linCriterion{f[i], f[i+1], f[i+2]})
	}
	return out
}

func linEncode(cs []linCriterion) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.key + "\x1f" + c.label + "\x1f" + c.id + "\x1f")
	}
	return b.String()
}

func linLabels(cs []linCriterion) string {
	ls := make([]string, len(cs))
	for i, c := range cs {
		ls[i] = c.label
	}
	return strings.Join(ls, "|")
}

// linModel is the sequential specification of one decision.
var linModel = porcupine.Model{
	Init: func() any {
		return linState{Status: question.Open, Gen: 1, Criteria: linEncode([]linCriterion{{"", "Cheap", "cheap"}})}
	},
	Step: func(st, in, out any) (bool, any) {
		s, i, o := st.(linState), in.(linInput), out.(linOutput)
		next := s
		var want question.Reason
		switch i.Kind {
		case "read":
			ok := o.Unknown || o.Reason == "" && o.Status == s.Status && o.Gen == s.Gen &&
				o.History == s.History && o.Labels == linLabels(s.criteria())
			return ok, s
		case "submit":
			if gen, ok := s.saved(i.Heads); ok {
				return o.Unknown || o.Reason == "" && o.Repeated && strconv.FormatUint(o.Gen, 10) == gen, s
			}
			switch {
			case s.Status == question.Settled:
				want = question.Stale
			case i.Gen != s.Gen:
				want = question.Stale
			default:
				next.Status = question.Settled
				next.Saves += i.Heads + "\x1f" + strconv.FormatUint(s.Gen, 10) + "\x1f"
			}
			return o.Unknown || o.Reason == want && !o.Repeated && (want != "" || o.Gen == s.Gen), next
		case "reopen":
			if s.Status != question.Settled {
				want = question.NotSettled
			} else {
				next.Status, next.Gen, next.History = question.Open, s.Gen+1, s.History+1
			}
			return o.Unknown || o.Reason == want && (want != "" || o.Gen == next.Gen && o.History == next.History), next
		case "append":
			cs := s.criteria()
			for j, c := range cs {
				if c.key != i.Key {
					continue
				}
				if o.Unknown {
					return true, s
				}
				if o.Reason != "" || !o.Repeated || o.Label != c.label || c.id != "?" && o.ID != c.id {
					return false, s
				}
				cs[j].id = o.ID // learnt from a repeat when the first reply was lost
				next.Criteria = linEncode(cs)
				return true, next
			}
			switch {
			case s.Status == question.Settled:
				want = question.Resolved
			case linHasLabel(cs, i.Label):
				want = question.Duplicate
			case len(cs) >= question.MaxCriteria:
				want = question.Full
			}
			if want != "" {
				return o.Unknown || o.Reason == want, s
			}
			id := "?"
			if !o.Unknown {
				if o.Reason != "" || o.Repeated || o.Label != i.Label || o.ID == "" || linHasID(cs, o.ID) {
					return false, s
				}
				id = o.ID
			}
			next.Criteria = linEncode(append(cs, linCriterion{i.Key, i.Label, id}))
			return true, next
		}
		return false, s
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(linInput), out.(linOutput)
		res := fmt.Sprintf("%+v", o)
		if o.Unknown {
			res = "lost"
		}
		return fmt.Sprintf("%s(gen=%d key=%s label=%s) -> %s", i.Kind, i.Gen, i.Key, i.Label, res)
	},
	DescribeState: func(st any) string {
		s := st.(linState)
		return fmt.Sprintf("%s gen=%d history=%d criteria=%v", s.Status, s.Gen, s.History, s.criteria())
	},
}

func linHasLabel(cs []linCriterion, label string) bool {
	for _, c := range cs {
		if strings.EqualFold(c.label, label) {
			return true
		}
	}
	return false
}

func linHasID(cs []linCriterion, id string) bool {
	for _, c := range cs {
		if c.id == id {
			return true
		}
	}
	return false
}

// Ways a deliberately broken owner misbehaves.
const (
	linCorrect = ""
	// linEarlyAck acknowledges a submit before applying it, and applies it
	// only after handling the next request.
	linEarlyAck = "early-ack"
	// linForgetKey loses append keys, so a repeat appends again.
	linForgetKey = "forget-key"
	// linOldGeneration answers reads from the record as it was before the
	// last command.
	linOldGeneration = "old-generation"
)

type linRequest struct {
	in    linInput
	heads crdt.Heads // submit: the displayed revision
	reply chan linReply
}

type linReply struct {
	out   linOutput
	heads crdt.Heads // the accepted revision after the request
	gen   uint64
}

// linOwner is the goroutine that owns one document's Authority.
type linOwner struct {
	t      testing.TB
	a      *question.Authority
	id     string
	q      string
	broken string
	who    question.Member

	prev    question.Record // linOldGeneration: the record before the last command
	pending *linRequest     // linEarlyAck: a submit acknowledged, not yet applied
	forgot  int
}

// newLinOwner opens an authority over a memstore holding one open choice
// decision with one criterion and a chosen option, so it can be submitted.
func newLinOwner(t testing.TB, broken string) *linOwner {
	ctx := context.Background()
	n := 0
	a, err := question.NewAuthority(ctx, question.Options{
		Store: memstore.New(), Doc: "plan-lin",
		Now:   func() time.Time { return time.Date(2026, 10, 19, 9, 0, 0, 0, time.UTC) },
		NewID: func() string { n++; return fmt.Sprintf("id%d", n) },
	})
	if err != nil {
		t.Fatal(err)
	}
	w := &linOwner{t: t, a: a, broken: broken, who: question.Member{Login: "ana", Write: true}}
	out, err := a.Create(ctx, w.who, []question.CreateRequest{{Key: "lin", Definition: question.Definition{
		Questions: []question.Question{{
			Text:     "Which reset flow?",
			Options:  []question.Option{{ID: "email", Label: "Email link"}, {ID: "sms", Label: "SMS code"}},
			Criteria: []question.Criterion{{ID: "cheap", Label: "Cheap"}},
		}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	w.id, w.q = out[0].Record.ID, out[0].Record.Definition.Questions[0].ID
	if err := w.choose(); err != nil {
		t.Fatal(err)
	}
	w.prev, _ = a.Record(w.id)
	return w
}

// choose makes the current draft answerable, as a member would after a
// reopen, by choosing an option through a replica.
func (w *linOwner) choose() error {
	saved, err := w.a.Save(w.id)
	if err != nil {
		return err
	}
	r, err := crdt.Load(saved, nil, crdt.Options{})
	if err != nil {
		return err
	}
	h := r.Heads()
	if err := r.Choose(w.q, "email", true); err != nil {
		return err
	}
	ch, err := r.ChangesSince(h)
	if err != nil {
		return err
	}
	_, err = w.a.Edit(context.Background(), w.who, w.id, ch)
	return err
}

// run serves requests until reqs is closed.
func (w *linOwner) run(reqs <-chan *linRequest) {
	for req := range reqs {
		late := w.pending
		w.pending = nil
		rep := w.handle(req)
		req.reply <- rep // buffered: a client that lost the reply does not block the owner
		if late != nil {
			w.apply(late)
		}
	}
	if w.pending != nil {
		w.apply(w.pending)
	}
}

func (w *linOwner) handle(req *linRequest) linReply {
	before, _ := w.a.Record(w.id)
	var out linOutput
	if w.broken == linEarlyAck && req.in.Kind == "submit" && before.Status == question.Open {
		if _, heads, _ := w.a.Draft(w.id); heads.Equal(req.heads) {
			w.pending = req
			out = linOutput{Gen: before.Generation}
			return w.reply(out)
		}
	}
	out = w.apply(req)
	if req.in.Kind != "read" {
		w.prev = before
	}
	return w.reply(out)
}

func (w *linOwner) reply(out linOutput) linReply {
	rec, _ := w.a.Record(w.id)
	_, heads, err := w.a.Draft(w.id)
	if err != nil {
		w.t.Error(err)
	}
	return linReply{out: out, heads: heads, gen: rec.Generation}
}

// apply runs one request against the authority.
func (w *linOwner) apply(req *linRequest) linOutput {
	ctx := context.Background()
	var out linOutput
	switch req.in.Kind {
	case "submit":
		res, err := w.a.Submit(ctx, w.who, []question.SubmitRequest{{ID: w.id, Heads: req.heads}})
		switch {
		case err != nil:
			out.Reason = question.ReasonOf(err)
		case res[0].Err != nil:
			out.Reason = question.ReasonOf(res[0].Err)
		default:
			out.Gen, out.Repeated = linSavedGeneration(res[0].Record, req.heads), res[0].Repeated
		}
	case "reopen":
		recApplied, err := w.a.Reopen(ctx, w.who, w.id, 0)
		rec := recApplied.Record
		if err != nil {
			out.Reason = question.ReasonOf(err)
			break
		}
		if err := w.choose(); err != nil {
			w.t.Errorf("choose after reopen: %v", err)
		}
		out.Gen, out.History = rec.Generation, len(rec.History)
	case "append":
		key := req.in.Key
		if w.broken == linForgetKey {
			w.forgot++
			key = fmt.Sprintf("%s#%d", key, w.forgot)
		}
		res, err := w.a.AppendCriterion(ctx, w.who, question.AppendRequest{ID: w.id, Question: w.q, Key: key, Label: req.in.Label})
		if err != nil {
			out.Reason = question.ReasonOf(err)
			break
		}
		out.ID, out.Label, out.Repeated = res.Item.ID, res.Item.Label, res.Repeated
	case "read":
		rec, _ := w.a.Record(w.id)
		if w.broken == linOldGeneration {
			rec = w.prev
		}
		out.Status, out.Gen, out.History = rec.Status, rec.Generation, len(rec.History)
		var ls []string
		for _, c := range rec.Definition.Questions[0].Criteria {
			ls = append(ls, c.Label)
		}
		out.Labels = strings.Join(ls, "|")
	}
	if out.Reason == question.Unavailable || out.Reason == "" && req.in.Kind == "submit" && out.Gen == 0 {
		w.t.Errorf("%s: unexpected outcome %+v", req.in.Kind, out)
	}
	return out
}

// linSavedGeneration returns the generation of rec's answer (current or
// in the history) that saved the revision heads, 0 if none did.
func linSavedGeneration(rec question.Record, heads crdt.Heads) uint64 {
	if rec.Answer != nil && rec.Answer.Heads == heads.String() {
		return rec.Answer.Generation
	}
	for _, h := range rec.History {
		if h.Heads == heads.String() {
			return h.Generation
		}
	}
	return 0
}

// linClient is one concurrent client; it remembers the revision it last
// saw, as a member's screen does.
type linClient struct {
	id    int
	heads crdt.Heads
	gen   uint64
}

// linHistory records one concurrent history of clients*perClient
// operations against a fresh decision.
func linHistory(t testing.TB, seed uint64, clients, perClient int, broken string) []porcupine.Operation {
	w := newLinOwner(t, broken)
	_, heads, _ := w.a.Draft(w.id)
	reqs := make(chan *linRequest)
	ownerDone := make(chan struct{})
	go func() {
		defer close(ownerDone)
		w.run(reqs)
	}()
	var (
		clock atomic.Int64
		mu    sync.Mutex
		ops   []porcupine.Operation
		wg    sync.WaitGroup
	)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			cl := &linClient{id: c, heads: heads, gen: 1}
			var retry *linInput // an append whose reply was lost
			for range perClient {
				in := linInput{}
				switch n := rng.IntN(100); {
				case retry != nil && n < 70:
					in = *retry
				case n < 30:
					in.Kind, in.Gen, in.Heads = "submit", cl.gen, cl.heads.String()
				case n < 52:
					in.Kind = "reopen"
				case n < 80:
					// Eight keys over six labels: repeats, duplicates and a
					// full question all happen.
					k := rng.IntN(8)
					in.Kind, in.Key, in.Label = "append", fmt.Sprintf("k%d", k), fmt.Sprintf("Label %d", k%6)
				default:
					in.Kind = "read"
				}
				retry = nil
				lost := rng.IntN(100) < 8
				req := &linRequest{in: in, heads: cl.heads, reply: make(chan linReply, 1)}
				call := clock.Add(1)
				reqs <- req
				if lost {
					if in.Kind == "append" {
						retry = &in
					}
					mu.Lock()
					ops = append(ops, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: linOutput{Unknown: true}, Return: math.MaxInt64})
					mu.Unlock()
					continue
				}
				rep := <-req.reply
				ret := clock.Add(1)
				cl.heads, cl.gen = rep.heads, rep.gen
				mu.Lock()
				ops = append(ops, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: rep.out, Return: ret})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(reqs)
	<-ownerDone
	return ops
}

func linDescribe(ops []porcupine.Operation) string {
	var b strings.Builder
	for _, op := range ops {
		ret := fmt.Sprint(op.Return)
		if op.Return == math.MaxInt64 {
			ret = "∞"
		}
		fmt.Fprintf(&b, "client %d [%d,%s] %s\n", op.ClientId, op.Call, ret, linModel.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}

// TestLinearizableDecision checks many concurrent histories with lost
// replies against the model.
func TestLinearizableDecision(t *testing.T) {
	t.Parallel()
	histories := 150
	if testing.Short() {
		histories = 40
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	start := time.Now()
	var ops, lost, accepted, repeated, concurrent int
	refused := map[question.Reason]int{}
	for h := range histories {
		hist := linHistory(t, seed+uint64(h), 4, 14, linCorrect)
		for i, op := range hist {
			o := op.Output.(linOutput)
			switch {
			case o.Unknown:
				lost++
			case o.Reason == "":
				accepted++
				if o.Repeated {
					repeated++
				}
			default:
				refused[o.Reason]++
			}
			for j, p := range hist {
				if j != i && op.Return != math.MaxInt64 && p.Return != math.MaxInt64 && p.Call <= op.Return && op.Call <= p.Return {
					concurrent++
					break
				}
			}
		}
		ops += len(hist)
		if _, failure := porcupinetest.Verdict(t, fmt.Sprintf("history %d (seed %d)", h, seed+uint64(h)), linModel, hist, 10*time.Second); failure != "" {
			t.Fatalf("%s:\n%s", failure, linDescribe(hist))
		}
	}
	t.Logf("linearizability: %d histories, %d operations (%d answered ones overlapping another answered one; %d accepted, %d of them repeated appends; refused %v; %d replies lost), all linearizable, in %v",
		histories, ops, concurrent, accepted, repeated, refused, lost, time.Since(start).Round(time.Millisecond))
}

// TestLinearizabilityCatchesBrokenAuthority makes sure the check has
// teeth: an owner that acknowledges a submit before applying it, forgets
// append keys, or reports an old generation is caught.
func TestLinearizabilityCatchesBrokenAuthority(t *testing.T) {
	t.Parallel()
	sub := func(gen uint64) linInput { return linInput{Kind: "submit", Gen: gen} }
	read := linInput{Kind: "read"}
	app := linInput{Kind: "append", Key: "k1", Label: "Fast"}
	scripts := map[string][]linInput{
		linEarlyAck:      {sub(1), read},
		linForgetKey:     {app, app},
		linOldGeneration: {sub(1), {Kind: "reopen"}, read},
	}
	for _, broken := range []string{linEarlyAck, linForgetKey, linOldGeneration} {
		t.Run(broken, func(t *testing.T) {
			// One client, one request at a time: the broken owner's
			// replies contradict the model outright.
			for _, mode := range []string{linCorrect, broken} {
				hist := linSequential(t, mode, scripts[broken])
				ok := porcupine.CheckOperations(linModel, hist)
				if mode == linCorrect && !ok {
					t.Fatalf("the correct owner fails its script:\n%s", linDescribe(hist))
				}
				if mode == broken && ok {
					t.Fatalf("porcupine accepted the broken owner:\n%s", linDescribe(hist))
				}
			}
			// Random concurrent histories catch it too: the first of up
			// to 40 that does ends the search.
			const tries = 40
			caught := 0
			for h := range tries {
				hist := linHistory(t, uint64(h)+1, 4, 14, broken)
				if porcupine.CheckOperationsTimeout(linModel, hist, 10*time.Second) == porcupine.Illegal {
					caught = h + 1
					break
				}
			}
			if caught == 0 {
				t.Fatalf("no random history of %d caught the broken owner", tries)
			}
			t.Logf("%s: the sequential script and random history %d of up to %d are not linearizable", broken, caught, tries)
		})
	}
}

// linSequential runs a script from one client, each request after the
// previous reply.
func linSequential(t *testing.T, broken string, script []linInput) []porcupine.Operation {
	w := newLinOwner(t, broken)
	_, heads, _ := w.a.Draft(w.id)
	reqs := make(chan *linRequest)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.run(reqs)
	}()
	var ops []porcupine.Operation
	var clock int64
	for _, in := range script {
		req := &linRequest{in: in, heads: heads, reply: make(chan linReply, 1)}
		clock++
		call := clock
		reqs <- req
		rep := <-req.reply
		clock++
		heads = rep.heads
		ops = append(ops, porcupine.Operation{Input: in, Call: call, Output: rep.out, Return: clock})
	}
	close(reqs)
	<-done
	return ops
}
