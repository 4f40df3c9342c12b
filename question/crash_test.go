package question_test

// Crash safety, measured. TestCrashSafety runs its own test binary as a
// child (TestCrashChild, which acts only when crashEnv is set). The child
// opens a bbolt file and an Authority and runs a storm of commands against
// it, writing one line per attempt before the command and one per outcome
// after it returned. The parent kills the child with SIGKILL, at a random
// moment or at a named point the child reaches itself, then opens the file
// and checks it against what the child reported:
//
//   - every acknowledged result is there exactly once, and so is every
//     command whose commit returned nil before the process died;
//   - nothing unacknowledged is half there: a batch of cards is all or none,
//     every record has its draft and projection, and record, draft document
//     and projection agree;
//   - bbolt's consistency check passes and the document loads again.
//
// Line protocol of the child (fields separated by single spaces):
//
//	READY                 the authority is open; the storm starts
//	T <seq> <op> <args>   about to send command seq
//	D <seq>               a commit made during command seq returned nil
//	A <seq> <op> <res>    command seq returned and was acknowledged
//	R <seq> <reason>      command seq was refused (it changed nothing)
//	BAD <message>         the child saw a reply it should never get
//	KILL <point>          the child kills itself at a named point
//	DONE                  the storm ended without a kill

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
)

// crashEnv holds the child's crashConfig as JSON; it is set only in the
// child processes of TestCrashSafety.
const crashEnv = "ACCORD_QUESTION_CRASH_CHILD"

// crashSeedEnv, when set in the parent, replays a run with that seed.
const crashSeedEnv = "ACCORD_QUESTION_CRASH_SEED"

// Where the child dies.
const (
	// pointRandom: the parent kills the child 5 to 50 ms into its storm.
	pointRandom = "random"
	// pointAfterCommit: a commit returned nil and the command has not
	// replied yet.
	pointAfterCommit = "after-commit-before-reply"
	// pointMidBatch: during the commit of a Create batch of 10 or of a
	// Submit of several decisions: just before it, while it runs, or just
	// after it returned.
	pointMidBatch = "mid-batch"
)

type crashConfig struct {
	File  string
	Doc   string
	Point string
	Seed  uint64
	Cycle int
	// Retry is the previous cycle's command that never got a reply (its T
	// fields after the sequence number), for the child to send again the
	// way a client retries a request whose reply was lost.
	Retry []string
}

// ---------------------------------------------------------------- child ---

// TestCrashChild is the child process of TestCrashSafety; without crashEnv
// it does nothing.
func TestCrashChild(t *testing.T) {
	raw := os.Getenv(crashEnv)
	if raw == "" {
		return
	}
	var cfg crashConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		crashEmit("BAD config: %v", err)
		return
	}
	runCrashChild(cfg)
}

// crashEmit writes one line to stdout in one unbuffered write.
func crashEmit(format string, args ...any) {
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

// crashDie kills the process the way a crash would: no deferred calls, no
// buffers flushed, no file closed.
func crashDie() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	for {
		time.Sleep(time.Hour)
	}
}

func runCrashChild(cfg crashConfig) {
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.Cycle)))
	st, err := boltstore.Open(cfg.File, nil)
	if err != nil {
		crashEmit("BAD open store: %v", err)
		return
	}
	ks := &killStore{Store: st, point: cfg.Point}
	switch cfg.Point {
	case pointAfterCommit:
		ks.killAt = 1 + rng.IntN(12)
	case pointMidBatch:
		ks.midMode = rng.IntN(3)
		ks.midDelay = time.Duration(rng.IntN(2000)) * time.Microsecond
	}
	// Compacting after a few chunks puts draft snapshots, which replace
	// a decision's chunks, among the commits a crash can hit.
	a, err := question.NewAuthority(context.Background(), question.Options{Store: ks, Doc: cfg.Doc, CompactAfter: 2 + rng.IntN(6)})
	if err != nil {
		crashEmit("BAD open authority: %v", err)
		return
	}
	s := &crashStorm{
		a: a, ks: ks, rng: rng, cycle: cfg.Cycle,
		who:      question.Member{Login: fmt.Sprintf("m%d", cfg.Cycle), Write: true},
		replicas: map[string]*crdt.Doc{},
	}
	ks.seq = &s.seq
	crashEmit("READY")
	if len(cfg.Retry) > 0 {
		s.retry(cfg.Retry)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		s.step()
	}
	crashEmit("DONE")
}

// killStore is the child's Store: it reports every commit that returned
// nil and kills the process at the named points.
type killStore struct {
	persist.Store
	point   string
	seq     *int // the command in progress
	commits int

	killAt int // pointAfterCommit: die after this many commits

	armed    bool // pointMidBatch: the next commit is a batch's
	midMode  int  // 0 before the commit, 1 while it runs, 2 after it
	midDelay time.Duration
}

func (s *killStore) Commit(ctx context.Context, doc string, w *persist.Write) error {
	if s.armed {
		switch s.midMode {
		case 0:
			crashEmit("KILL %s before-commit", pointMidBatch)
			crashDie()
		case 1:
			go func() {
				time.Sleep(s.midDelay)
				crashDie()
			}()
		}
	}
	err := s.Store.Commit(ctx, doc, w)
	if err != nil {
		return err
	}
	s.commits++
	crashEmit("D %d", *s.seq)
	if s.armed {
		crashEmit("KILL %s after-commit", pointMidBatch)
		crashDie()
	}
	if s.point == pointAfterCommit && s.commits == s.killAt {
		crashEmit("KILL %s", pointAfterCommit)
		crashDie()
	}
	return nil
}

// crashStorm runs commands against the authority, one at a time.
type crashStorm struct {
	a        *question.Authority
	ks       *killStore
	rng      *rand.Rand
	cycle    int
	who      question.Member
	seq      int
	replicas map[string]*crdt.Doc // one member's replicas, by decision

	singles, batches int
	midDone          bool
}

// begin announces command seq+1.
func (s *crashStorm) begin(format string, args ...any) int {
	s.seq++
	crashEmit("T %d "+format, append([]any{s.seq}, args...)...)
	return s.seq
}

// refused reports a refusal, or a failure that is not one, as BAD.
func (s *crashStorm) refused(seq int, err error) {
	r := question.ReasonOf(err)
	if r == "" || r == question.Unavailable {
		crashEmit("BAD command %d failed: %v", seq, err)
		return
	}
	crashEmit("R %d %s", seq, r)
}

func (s *crashStorm) step() {
	recs := s.a.Records()
	var open, answerable, settled, choiceOpen, appended []question.Record
	for _, r := range recs {
		switch r.Status {
		case question.Open:
			open = append(open, r)
			if !r.Definition.Questions[0].Written() {
				choiceOpen = append(choiceOpen, r)
			}
			if s.answerable(r) {
				answerable = append(answerable, r)
			}
		case question.Settled:
			settled = append(settled, r)
		}
		if len(r.Appended) > 0 {
			appended = append(appended, r)
		}
	}
	if s.ks.point == pointMidBatch && !s.midDone && s.seq >= 2 {
		s.midDone = true
		s.ks.armed = true
		if len(answerable) >= 2 && s.rng.IntN(2) == 0 {
			s.submit(crashPick(s.rng, answerable, 2+s.rng.IntN(2)))
		} else {
			s.createBatch()
		}
		s.ks.armed = false
		return
	}
	switch n := s.rng.IntN(100); {
	case len(recs) == 0 || n < 6 && s.singles < 4:
		s.createOne()
	case n < 10 && s.batches < 1:
		s.createBatch()
	case n < 50 && len(open) > 0:
		s.edit(crashPick(s.rng, open, 1)[0])
	case n < 65 && len(answerable) > 0:
		s.submit(crashPick(s.rng, answerable, 1+s.rng.IntN(3)))
	case n < 75 && len(settled) > 0:
		s.reopen(crashPick(s.rng, settled, 1)[0])
	case n < 90 && len(choiceOpen) > 0:
		s.appendItem(crashPick(s.rng, choiceOpen, 1)[0])
	case n < 95 && len(appended) > 0:
		s.repeatAppend(crashPick(s.rng, appended, 1)[0])
	default:
		s.repeatCreate(crashPick(s.rng, recs, 1)[0])
	}
}

// crashPick returns up to n distinct elements of xs.
func crashPick[T any](rng *rand.Rand, xs []T, n int) []T {
	out := slices.Clone(xs)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out[:min(n, len(out))]
}

func (s *crashStorm) answerable(r question.Record) bool {
	d, _, err := s.a.Draft(r.ID)
	if err != nil {
		return false
	}
	q := r.Definition.Questions[0]
	qd := d.Questions[q.ID]
	if q.Written() {
		return strings.TrimSpace(qd.Text) != ""
	}
	return len(qd.Choices) > 0
}

// crashDefinition is the definition a card key stands for, so that a
// retried batch asks for exactly the same cards.
func crashDefinition(key string) question.Definition {
	if (key[len(key)-1]-'0')%2 == 0 {
		return question.Definition{Questions: []question.Question{{
			Text: "What is the plan for " + key + "?", Response: question.Text, Options: []question.Option{},
		}}}
	}
	return question.Definition{Questions: []question.Question{{
		Text:     "Which way for " + key + "?",
		Options:  []question.Option{{ID: "email", Label: "Email link"}, {ID: "sms", Label: "SMS code"}},
		Criteria: []question.Criterion{{ID: "cheap", Label: "Cheap"}, {ID: "easy", Label: "Easy reset"}},
	}}}
}

func (s *crashStorm) createOne() {
	s.singles++
	s.create([]string{fmt.Sprintf("c%d-s%d", s.cycle, s.singles)}, false)
}

func (s *crashStorm) createBatch() {
	s.batches++
	keys := make([]string, question.MaxBatch)
	for i := range keys {
		keys[i] = fmt.Sprintf("c%d-b%d-%d", s.cycle, s.batches, i)
	}
	s.create(keys, false)
}

func (s *crashStorm) create(keys []string, retried bool) {
	reqs := make([]question.CreateRequest, len(keys))
	for i, k := range keys {
		reqs[i] = question.CreateRequest{Key: k, Origin: question.FromPlanner, Definition: crashDefinition(k), Revision: "r1"}
	}
	seq := s.begin("create %s", strings.Join(keys, ","))
	out, err := s.a.Create(context.Background(), s.who, reqs)
	if err != nil {
		s.refused(seq, err)
		return
	}
	pairs := make([]string, len(out))
	repeats := 0
	for i, c := range out {
		pairs[i] = keys[i] + "=" + c.Record.ID
		if c.Repeated {
			repeats++
		}
	}
	switch {
	case !retried && repeats > 0:
		crashEmit("BAD create %d: %d fresh keys reported as repeated", seq, repeats)
	case repeats != 0 && repeats != len(out):
		crashEmit("BAD create %d: retried batch half there (%d of %d repeated)", seq, repeats, len(out))
	}
	crashEmit("A %d create %s", seq, strings.Join(pairs, ","))
}

// replica returns this member's replica of a decision, caught up with the
// accepted document.
func (s *crashStorm) replica(id string) (*crdt.Doc, error) {
	rep, ok := s.replicas[id]
	if !ok {
		saved, err := s.a.Save(id)
		if err != nil {
			return nil, err
		}
		if rep, err = crdt.Load(saved, nil, crdt.Options{}); err != nil {
			return nil, err
		}
		s.replicas[id] = rep
		return rep, nil
	}
	ch, err := s.a.ChangesSince(id, rep.Heads())
	if err != nil {
		return nil, err
	}
	if len(ch) > 0 {
		if _, err := rep.ApplyChanges(ch); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// edit changes one thing in the draft: written answers get a unique token
// appended, so each edit can be found; choice drafts get one cell marked
// (or cleared) or one option chosen.
func (s *crashStorm) edit(r question.Record) {
	rep, err := s.replica(r.ID)
	if err != nil {
		crashEmit("BAD replica of %s: %v", r.ID, err)
		return
	}
	h := rep.Heads()
	q := r.Definition.Questions[0]
	draft, err := rep.Draft()
	if err != nil {
		crashEmit("BAD replica draft of %s: %v", r.ID, err)
		return
	}
	qd := draft.Questions[q.ID]
	var what string
	switch {
	case q.Written():
		token := fmt.Sprintf("[t%d.%d]", s.cycle, s.seq+1)
		err = rep.SpliceText(q.ID, utf8.RuneCountInString(qd.Text), 0, token)
		what = fmt.Sprintf("edit-text %s %d %s", r.ID, r.Generation, token)
	case len(qd.Choices) == 0 || s.rng.IntN(4) == 0:
		opt := crashPick(s.rng, q.Options, 1)[0].ID
		err = rep.Choose(q.ID, opt, true)
		what = fmt.Sprintf("edit-mark %s %d choice %s", r.ID, r.Generation, opt)
	default:
		opt := crashPick(s.rng, q.Options, 1)[0].ID
		crit := crashPick(s.rng, q.Criteria, 1)[0].ID
		m := []marks.Mark{marks.Yes, marks.Partly, marks.No, marks.Cleared}[s.rng.IntN(4)]
		err = rep.SetMark(q.ID, opt, crit, m)
		what = fmt.Sprintf("edit-mark %s %d %s %s", r.ID, r.Generation, marks.Key(opt, crit), crashMarkValue(m))
	}
	if err != nil {
		crashEmit("BAD replica edit of %s: %v", r.ID, err)
		delete(s.replicas, r.ID)
		return
	}
	ch, err := rep.ChangesSince(h)
	if err != nil {
		crashEmit("BAD replica changes of %s: %v", r.ID, err)
		return
	}
	seq := s.begin("%s", what)
	if _, err := s.a.Edit(context.Background(), s.who, r.ID, ch); err != nil {
		delete(s.replicas, r.ID) // it holds a change the authority refused
		s.refused(seq, err)
		return
	}
	crashEmit("A %d edit", seq)
}

func crashMarkValue(m marks.Mark) string {
	if m == marks.Cleared {
		return "-"
	}
	return string(m)
}

func (s *crashStorm) submit(rs []question.Record) {
	reqs := make([]question.SubmitRequest, len(rs))
	parts := make([]string, len(rs))
	for i, r := range rs {
		_, heads, err := s.a.Draft(r.ID)
		if err != nil {
			crashEmit("BAD draft of %s: %v", r.ID, err)
			return
		}
		reqs[i] = question.SubmitRequest{ID: r.ID, Heads: heads}
		parts[i] = fmt.Sprintf("%s:%d", r.ID, r.Generation)
	}
	seq := s.begin("submit %s", strings.Join(parts, ","))
	out, err := s.a.Submit(context.Background(), s.who, reqs)
	if err != nil {
		s.refused(seq, err)
		return
	}
	var acc []string
	for i, o := range out {
		switch {
		case o.Err != nil:
			// Every request named an open, answerable decision at the
			// displayed revision.
			crashEmit("BAD submit %d: %s refused: %v", seq, o.ID, o.Err)
		case o.Record.Status != question.Settled || o.Record.Answer.Generation != rs[i].Generation:
			crashEmit("BAD submit %d: %s replied %+v", seq, o.ID, o.Record)
		default:
			acc = append(acc, parts[i])
		}
	}
	if len(acc) == 0 {
		acc = []string{"-"}
	}
	crashEmit("A %d submit %s", seq, strings.Join(acc, ","))
}

func (s *crashStorm) reopen(r question.Record) {
	seq := s.begin("reopen %s %d", r.ID, r.Generation)
	recApplied, err := s.a.Reopen(context.Background(), s.who, r.ID, 0)
	rec := recApplied.Record
	if err != nil {
		s.refused(seq, err)
		return
	}
	if rec.Generation != r.Generation+1 || rec.Status != question.Open {
		crashEmit("BAD reopen %d: replied generation %d status %s", seq, rec.Generation, rec.Status)
	}
	crashEmit("A %d reopen %s %d", seq, r.ID, rec.Generation)
}

func (s *crashStorm) appendItem(r question.Record) {
	kind := "option"
	if s.rng.IntN(3) == 0 {
		kind = "criterion"
	}
	s.sendAppend(r.ID, kind, fmt.Sprintf("a%d-%d", s.cycle, s.seq+1))
}

// sendAppend appends an option or criterion labelled with its own key, so
// that the label identifies the append too.
func (s *crashStorm) sendAppend(id, kind, key string) {
	rec, ok := s.a.Record(id)
	if !ok {
		crashEmit("BAD append: no record %s", id)
		return
	}
	req := question.AppendRequest{ID: id, Question: rec.Definition.Questions[0].ID, Key: key, Label: key}
	seq := s.begin("append %s %s %s", id, kind, key)
	var res question.AppendResult
	var err error
	if kind == "criterion" {
		res, err = s.a.AppendCriterion(context.Background(), s.who, req)
	} else {
		res, err = s.a.AppendOption(context.Background(), s.who, req)
	}
	if err != nil {
		s.refused(seq, err)
		return
	}
	crashEmit("A %d append %s %s %s %s %t", seq, id, kind, key, res.Item.ID, res.Repeated)
}

// repeatAppend sends an append key the record already holds: it must
// return what the key minted, and change nothing.
func (s *crashStorm) repeatAppend(r question.Record) {
	keys := slices.Sorted(maps.Keys(r.Appended))
	key := crashPick(s.rng, keys, 1)[0]
	prev := r.Appended[key]
	req := question.AppendRequest{ID: r.ID, Question: prev.Question, Key: key, Label: "ignored"}
	seq := s.begin("repeat-append %s %s", r.ID, key)
	var res question.AppendResult
	var err error
	if prev.Kind == "criterion" {
		res, err = s.a.AppendCriterion(context.Background(), s.who, req)
	} else {
		res, err = s.a.AppendOption(context.Background(), s.who, req)
	}
	if err != nil || !res.Repeated || res.Item.ID != prev.ID {
		crashEmit("BAD repeat-append %d: key %s minted %s, repeat gave %+v, %v", seq, key, prev.ID, res.Item, err)
		return
	}
	crashEmit("A %d repeat-append", seq)
}

// repeatCreate sends a card key again: it must return the same card.
func (s *crashStorm) repeatCreate(r question.Record) {
	seq := s.begin("repeat-create %s", r.Key)
	out, err := s.a.Create(context.Background(), s.who, []question.CreateRequest{{Key: r.Key, Definition: crashDefinition(r.Key)}})
	if err != nil || !out[0].Repeated || out[0].Record.ID != r.ID {
		crashEmit("BAD repeat-create %d: key %s is %s, repeat gave %+v, %v", seq, r.Key, r.ID, out, err)
		return
	}
	crashEmit("A %d repeat-create", seq)
}

// retry sends again the command whose reply the previous child never wrote.
func (s *crashStorm) retry(f []string) {
	switch {
	case f[0] == "create" && len(f) == 2:
		s.create(strings.Split(f[1], ","), true)
	case f[0] == "append" && len(f) == 4:
		s.sendAppend(f[1], f[2], f[3])
	}
}

// --------------------------------------------------------------- parent ---

// crashCycle is what one child reported.
type crashCycle struct {
	lines  []string
	killed bool // by SIGKILL
	stderr string
}

// runCrashCycle runs one child to its death (or the end of its storm).
func runCrashCycle(t *testing.T, cfg crashConfig, killAfter time.Duration) crashCycle {
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := testutil.RunChild(t, "TestCrashChild", []string{crashEnv + "=" + string(raw)}, killAfter, fmt.Sprintf("cycle %d (%s)", cfg.Cycle, cfg.Point))
	return crashCycle{lines: c.Lines, killed: c.Killed, stderr: c.Stderr}
}

// crashOp is one command as the child reported it.
type crashOp struct {
	seq     int
	cycle   int
	fields  []string // op and arguments
	result  []string // the A line's fields after the op; nil without one
	acked   bool
	durable bool // a commit made during it returned nil
	refused bool
}

// sure reports whether the command's effects must be in the store.
func (o *crashOp) sure() bool { return o.acked || o.durable }

type cellRef struct {
	id   string
	gen  uint64
	cell string // option/criterion, or "choice"
}

type cellEvent struct {
	value string // a mark, "-" for cleared, or an option id
	sure  bool
}

type genFact struct {
	id  string
	gen uint64
	by  string
}

type appendFact struct {
	id, kind, item string // item is "" when the reply was lost
}

type tokenFact struct {
	id    string
	gen   uint64
	token string
}

// crashOracle is everything one document must hold, from the children's
// reports across all cycles.
type crashOracle struct {
	keys      map[string]string // card key -> id, acknowledged
	mustExist map[string]bool   // card keys committed without a reply
	tokens    []tokenFact
	tried     map[string]bool // every token ever sent
	cells     map[cellRef][]cellEvent
	submits   []genFact
	reopens   []genFact
	appends   map[string]appendFact // by key
	checked   int                   // results checked in the last verify
}

func newCrashOracle() *crashOracle {
	return &crashOracle{keys: map[string]string{}, mustExist: map[string]bool{}, tried: map[string]bool{},
		cells: map[cellRef][]cellEvent{}, appends: map[string]appendFact{}}
}

// crashStats counts what the run did.
type crashStats struct {
	cycles, killed    int
	byPoint           map[string]int
	acked, durableOps int
	inFlight          int
	refused           int
	retried           int
}

// parseCrashCycle turns a child's lines into its commands, in order.
func parseCrashCycle(t *testing.T, cycle int, c crashCycle) []*crashOp {
	t.Helper()
	bySeq := map[int]*crashOp{}
	var ops []*crashOp
	get := func(f []string) *crashOp {
		if len(f) < 2 {
			return nil
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return nil
		}
		return bySeq[n]
	}
	for _, line := range c.lines {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "T":
			n, err := strconv.Atoi(f[1])
			if err != nil || len(f) < 3 {
				t.Errorf("cycle %d: bad line %q", cycle, line)
				continue
			}
			op := &crashOp{seq: n, cycle: cycle, fields: f[2:]}
			bySeq[n] = op
			ops = append(ops, op)
		case "A":
			if op := get(f); op != nil {
				op.acked, op.result = true, f[3:]
			} else {
				t.Errorf("cycle %d: reply to no command: %q", cycle, line)
			}
		case "D":
			if op := get(f); op != nil {
				op.durable = true
			} else {
				t.Errorf("cycle %d: commit outside any command: %q", cycle, line)
			}
		case "R":
			if op := get(f); op != nil {
				op.refused = true
			}
		case "BAD":
			t.Errorf("cycle %d: child: %s", cycle, line)
		}
	}
	for _, op := range ops {
		if op.refused && op.durable {
			t.Errorf("cycle %d: command %d %v committed and was refused", cycle, op.seq, op.fields)
		}
	}
	return ops
}

// record adds a cycle's commands to the oracle.
func (o *crashOracle) record(t *testing.T, ops []*crashOp, stats *crashStats) {
	t.Helper()
	for _, op := range ops {
		switch {
		case op.refused:
			stats.refused++
			continue
		case op.acked:
			stats.acked++
		case op.durable:
			stats.durableOps++
		default:
			stats.inFlight++
		}
		f := op.fields
		switch f[0] {
		case "create":
			if op.acked {
				for _, pair := range strings.Split(op.result[0], ",") {
					k, id, _ := strings.Cut(pair, "=")
					if prev, ok := o.keys[k]; ok && prev != id {
						t.Errorf("key %s acknowledged as %s and as %s", k, prev, id)
					}
					o.keys[k] = id
				}
			} else if op.durable {
				for _, k := range strings.Split(f[1], ",") {
					o.mustExist[k] = true
				}
			}
		case "edit-text":
			gen, _ := strconv.ParseUint(f[2], 10, 64)
			o.tried[f[3]] = true
			if op.sure() {
				o.tokens = append(o.tokens, tokenFact{id: f[1], gen: gen, token: f[3]})
			}
		case "edit-mark":
			gen, _ := strconv.ParseUint(f[2], 10, 64)
			ref := cellRef{id: f[1], gen: gen, cell: f[3]}
			o.cells[ref] = append(o.cells[ref], cellEvent{value: f[4], sure: op.sure()})
		case "submit":
			list := f[1]
			if op.acked {
				list = op.result[0]
			}
			if !op.sure() || list == "-" {
				continue
			}
			for _, p := range strings.Split(list, ",") {
				id, g, _ := strings.Cut(p, ":")
				gen, _ := strconv.ParseUint(g, 10, 64)
				o.submits = append(o.submits, genFact{id: id, gen: gen, by: fmt.Sprintf("m%d", op.cycle)})
			}
		case "reopen":
			if op.sure() {
				gen, _ := strconv.ParseUint(f[2], 10, 64)
				o.reopens = append(o.reopens, genFact{id: f[1], gen: gen + 1})
			}
		case "append":
			key := f[3]
			fact := appendFact{id: f[1], kind: f[2]}
			if op.acked {
				fact.item = op.result[3]
			} else if !op.durable {
				continue
			}
			if prev, ok := o.appends[key]; ok && prev.item != "" {
				if fact.item != "" && fact.item != prev.item {
					t.Errorf("append key %s acknowledged as %s and as %s", key, prev.item, fact.item)
				}
				continue
			}
			o.appends[key] = fact
		}
	}
}

// retryOf returns the last command of a cycle if its reply was lost and
// it is one a client would send again.
func retryOf(ops []*crashOp) []string {
	if len(ops) == 0 {
		return nil
	}
	last := ops[len(ops)-1]
	if last.acked || last.refused {
		return nil
	}
	if f := last.fields; f[0] == "create" || f[0] == "append" {
		return f
	}
	return nil
}

var (
	batchKeyRE = regexp.MustCompile(`^(c\d+-b\d+)-\d+$`)
	tokenRE    = regexp.MustCompile(`\[t\d+\.\d+\]`)
)

// verify checks one document in the store against the oracle and the
// invariants that hold whatever was acknowledged.
func (o *crashOracle) verify(st *boltstore.Store, doc string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	o.checked = 0
	sd, err := st.LoadDocument(context.Background(), doc)
	if err != nil {
		return []error{fmt.Errorf("load %s: %w", doc, err)}
	}
	recs := map[string]question.Record{}
	states := map[string]*crdt.State{}
	byKey := map[string][]string{}
	for id, raw := range sd.Records {
		var r question.Record
		if err := json.Unmarshal(raw, &r); err != nil {
			bad("record %s: %v", id, err)
			continue
		}
		recs[id] = r
		byKey[r.Key] = append(byKey[r.Key], id)
		draft, ok := sd.Drafts[id]
		if !ok {
			bad("record %s (%s) has no draft", id, r.Key)
			continue
		}
		if _, ok := sd.Projections[id]; !ok {
			bad("record %s (%s) has no projection", id, r.Key)
		}
		draft, err := question.StoredBodies(draft)
		if err != nil {
			bad("draft %s: %v", id, err)
			continue
		}
		d, err := crdt.Load(draft.Snapshot, draft.Chunks, crdt.Options{})
		if err != nil {
			bad("draft %s: %v", id, err)
			continue
		}
		s, err := d.State()
		if err != nil {
			bad("draft %s: %v", id, err)
			continue
		}
		states[id] = s
		errs = append(errs, crashRecordInvariants(r, s, sd.Projections[id])...)
	}
	for id := range sd.Drafts {
		if _, ok := sd.Records[id]; !ok {
			bad("draft %s has no record", id)
		}
	}
	for id := range sd.Projections {
		if _, ok := sd.Records[id]; !ok {
			bad("projection %s has no record", id)
		}
	}
	groups := map[string]int{}
	for k, ids := range byKey {
		if len(ids) != 1 {
			bad("key %s has %d records: %v", k, len(ids), ids)
		}
		if m := batchKeyRE.FindStringSubmatch(k); m != nil {
			groups[m[1]]++
		}
	}
	for g, n := range groups {
		if n != question.MaxBatch {
			bad("batch %s is half there: %d of %d cards", g, n, question.MaxBatch)
		}
	}
	for k, id := range o.keys {
		o.checked++
		if got := byKey[k]; len(got) != 1 || got[0] != id {
			bad("acknowledged card %s=%s: store has %v", k, id, got)
		}
	}
	for k := range o.mustExist {
		o.checked++
		if len(byKey[k]) != 1 {
			bad("card %s was committed before the crash: store has %v", k, byKey[k])
		}
	}
	for _, f := range o.tokens {
		o.checked++
		s, r := states[f.id], recs[f.id]
		if s == nil {
			bad("edit %s of %s: no such decision", f.token, f.id)
			continue
		}
		text := s.Drafts[f.gen].Questions[r.Definition.Questions[0].ID].Text
		if n := strings.Count(text, f.token); n != 1 {
			bad("acknowledged edit %s of %s generation %d appears %d times in %q", f.token, f.id, f.gen, n, text)
		}
	}
	for id, s := range states {
		q := recs[id].Definition.Questions[0]
		if !q.Written() {
			continue
		}
		for g, d := range s.Drafts {
			text := d.Questions[q.ID].Text
			for _, tok := range tokenRE.FindAllString(text, -1) {
				if !o.tried[tok] {
					bad("draft %s generation %d holds %s, which no edit sent", id, g, tok)
				}
			}
			if rest := tokenRE.ReplaceAllString(text, ""); rest != "" {
				bad("draft %s generation %d holds stray text %q", id, g, rest)
			}
		}
	}
	for ref, evs := range o.cells {
		s := states[ref.id]
		if s == nil {
			bad("edit of %s: no such decision", ref.id)
			continue
		}
		last := -1
		for i, e := range evs {
			if e.sure {
				last = i
			}
		}
		allowed := map[string]bool{}
		if last >= 0 {
			allowed[evs[last].value] = true
			o.checked++
		} else {
			allowed["<none>"] = true
		}
		for _, e := range evs[last+1:] {
			allowed[e.value] = true
		}
		qd := s.Drafts[ref.gen].Questions[recs[ref.id].Definition.Questions[0].ID]
		got := "<none>"
		if ref.cell == "choice" {
			if len(qd.Choices) > 0 {
				got = strings.Join(qd.Choices, ",")
			}
		} else if m, ok := qd.Marks[ref.cell]; ok {
			got = crashMarkValue(m)
		}
		if !allowed[got] {
			bad("cell %s of %s generation %d holds %q; allowed %v (events %+v)", ref.cell, ref.id, ref.gen, got, allowed, evs)
		}
	}
	for _, f := range o.submits {
		o.checked++
		r, ok := recs[f.id]
		if !ok {
			bad("acknowledged submit of %s: no such decision", f.id)
			continue
		}
		var ans *question.Answer
		if r.Answer != nil && r.Answer.Generation == f.gen {
			ans = r.Answer
		} else if f.gen >= 1 && int(f.gen) <= len(r.History) {
			ans = &r.History[f.gen-1].Answer
		}
		if ans == nil || ans.By != f.by {
			bad("acknowledged submit of %s generation %d by %s is gone: %+v", f.id, f.gen, f.by, r)
		}
	}
	for _, f := range o.reopens {
		o.checked++
		if r, ok := recs[f.id]; !ok || r.Generation < f.gen {
			bad("acknowledged reopen of %s to generation %d is gone (generation %d)", f.id, f.gen, r.Generation)
		}
	}
	for key, f := range o.appends {
		o.checked++
		r, ok := recs[f.id]
		if !ok {
			bad("append %s: no decision %s", key, f.id)
			continue
		}
		got, ok := r.Appended[key]
		if !ok || got.Kind != f.kind || f.item != "" && got.ID != f.item {
			bad("append %s of %s (%s %s): record holds %+v", key, f.id, f.kind, f.item, got)
			continue
		}
		q := r.Definition.Questions[0]
		items := q.Options
		if f.kind == "criterion" {
			items = nil
			for _, c := range q.Criteria {
				items = append(items, question.Option(c))
			}
		}
		ids, labels := 0, 0
		for _, it := range items {
			if it.ID == got.ID {
				ids++
				if it.Label != key {
					bad("append %s of %s: item %s is labelled %q", key, f.id, it.ID, it.Label)
				}
			}
			if strings.EqualFold(it.Label, key) {
				labels++
			}
		}
		if ids != 1 || labels != 1 {
			bad("append %s of %s: item %s present %d times, label %d times", key, f.id, got.ID, ids, labels)
		}
	}
	a, err := question.NewAuthority(context.Background(), question.Options{Store: st, Doc: doc})
	if err != nil {
		bad("authority does not load %s: %v", doc, err)
	} else if n := len(a.Records()); n != len(sd.Records) {
		bad("authority loaded %d of %d records", n, len(sd.Records))
	}
	return errs
}

// crashRecordInvariants checks that one record, its CRDT document and its
// projection agree.
func crashRecordInvariants(r question.Record, s *crdt.State, proj []byte) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("record %s (%s): "+format, append([]any{r.ID, r.Key}, args...)...))
	}
	if r.Generation != uint64(len(r.History))+1 {
		bad("generation %d with %d history entries", r.Generation, len(r.History))
	}
	for i, h := range r.History {
		if h.Generation != uint64(i+1) {
			bad("history[%d] has generation %d", i, h.Generation)
		}
	}
	switch r.Status {
	case question.Settled:
		if r.Answer == nil || r.Answer.Generation != r.Generation {
			bad("settled without an answer of generation %d: %+v", r.Generation, r.Answer)
		}
	case question.Open:
		if r.Answer != nil {
			bad("open with an answer")
		}
	default:
		bad("status %q", r.Status)
	}
	if s.Generation != r.Generation {
		bad("draft document at generation %d, record at %d", s.Generation, r.Generation)
	}
	answers := []question.Answer{}
	for _, h := range r.History {
		answers = append(answers, h.Answer)
	}
	if r.Answer != nil {
		answers = append(answers, *r.Answer)
	}
	for _, ans := range answers {
		d, ok := s.Drafts[ans.Generation]
		if !ok {
			bad("no draft for answered generation %d", ans.Generation)
			continue
		}
		for _, qa := range ans.Answers {
			qd := d.Questions[qa.Question]
			if qa.Text != qd.Text || !slices.Equal(qa.Choices, qd.Choices) || !qa.Marks.Equal(qd.Snapshot()) {
				bad("answer of generation %d differs from its draft: %+v vs %+v", ans.Generation, qa, qd)
			}
		}
	}
	for _, q := range r.Definition.Questions {
		qs := s.Questions[q.ID]
		if qs == nil {
			bad("draft document lacks question %s", q.ID)
			continue
		}
		var opts, crits []crdt.Item
		for _, o := range q.Options {
			opts = append(opts, crdt.Item{ID: o.ID, Label: o.Label})
		}
		for _, c := range q.Criteria {
			crits = append(crits, crdt.Item{ID: c.ID, Label: c.Label})
		}
		if !slices.Equal(opts, qs.Options) || !slices.Equal(crits, qs.Criteria) {
			bad("definition and draft document disagree on %s: %+v/%+v vs %+v/%+v", q.ID, opts, crits, qs.Options, qs.Criteria)
		}
	}
	if len(s.Appended) != len(r.Appended) {
		bad("idempotency maps differ: %d in the draft document, %d in the record", len(s.Appended), len(r.Appended))
	}
	for k, ap := range r.Appended {
		if sa := s.Appended[k]; sa.Kind != ap.Kind || sa.Question != ap.Question || sa.ID != ap.ID {
			bad("append %s: record %+v, draft document %+v", k, ap, sa)
		}
	}
	p, err := question.ParseProjection(proj)
	if err != nil {
		bad("projection: %v", err)
		return errs
	}
	if p.ID != r.ID || p.Status != r.Status || len(p.Questions) != len(r.Definition.Questions) {
		bad("projection %s %s with %d questions", p.ID, p.Status, len(p.Questions))
		return errs
	}
	for i, pq := range p.Questions {
		q := r.Definition.Questions[i]
		if pq.ID != q.ID || !slices.Equal(pq.Options, q.Options) || !slices.Equal(pq.Criteria, q.Criteria) {
			bad("projection of %s differs from the definition", q.ID)
		}
		if r.Status != question.Settled {
			if pq.Answer != nil {
				bad("projection of an unsettled decision carries an answer")
			}
			continue
		}
		qa := r.Answer.Answers[i]
		if pq.Answer == nil || pq.By != r.Answer.By || pq.Answer.Text != qa.Text ||
			!slices.Equal(pq.Answer.Choices, qa.Choices) || !pq.Answer.Marks.Equal(qa.Marks) {
			bad("projected answer %+v by %s differs from %+v by %s", pq.Answer, pq.By, qa, r.Answer.By)
		}
	}
	return errs
}

// TestCrashSafety kills a process running the authority on a bbolt file
// again and again and checks the file after each death.
func TestCrashSafety(t *testing.T) {
	t.Parallel()
	cycles := 120
	if testing.Short() {
		cycles = 30
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(crashSeedEnv); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", crashSeedEnv, s, err)
		}
		seed = n
	}
	t.Logf("seed %d (set %s to replay)", seed, crashSeedEnv)
	rng := rand.New(rand.NewPCG(seed, 0))
	file := filepath.Join(t.TempDir(), "crash.db")
	oracles := map[string]*crashOracle{}
	stats := crashStats{byPoint: map[string]int{}}
	var retry []string
	start := time.Now()
	for cycle := 0; cycle < cycles && !t.Failed(); cycle++ {
		point := pointRandom
		switch cycle % 6 {
		case 1:
			point = pointAfterCommit
		case 4:
			point = pointMidBatch
		}
		// Ten cycles share a document, so each document is reopened after
		// nine crashes while staying small enough to load quickly.
		doc := fmt.Sprintf("plan-%d", cycle/10)
		o := oracles[doc]
		if o == nil {
			o = newCrashOracle()
			oracles[doc] = o
			retry = nil
		}
		var killAfter time.Duration
		if point == pointRandom {
			killAfter = time.Duration(5+rng.IntN(46)) * time.Millisecond
		}
		cfg := crashConfig{File: file, Doc: doc, Point: point, Seed: seed, Cycle: cycle, Retry: retry}
		if len(retry) > 0 {
			stats.retried++
		}
		c := runCrashCycle(t, cfg, killAfter)
		stats.cycles++
		if c.killed {
			stats.killed++
			stats.byPoint[point]++
		} else if point != pointRandom {
			t.Errorf("cycle %d: the child never reached %s; it ended:\n%s\n%s", cycle, point,
				strings.Join(c.lines[max(0, len(c.lines)-5):], "\n"), c.stderr)
		}
		ops := parseCrashCycle(t, cycle, c)
		o.record(t, ops, &stats)
		retry = retryOf(ops)

		st, err := boltstore.Open(file, nil)
		if err != nil {
			t.Fatalf("cycle %d: reopen after the crash: %v", cycle, err)
		}
		if err := st.Check(); err != nil {
			t.Errorf("cycle %d: Check: %v", cycle, err)
		}
		for _, err := range o.verify(st, doc) {
			t.Errorf("cycle %d (%s, killed %v): %v", cycle, point, c.killed, err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if t.Failed() {
			t.Logf("cycle %d child output:\n%s\nstderr:\n%s", cycle, strings.Join(c.lines, "\n"), c.stderr)
		}
	}
	// Every document once more, at the end.
	st, err := boltstore.Open(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	docs, err := st.Documents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, doc := range docs {
		o := oracles[doc]
		if o == nil {
			t.Errorf("store holds document %s that no cycle used", doc)
			continue
		}
		for _, err := range o.verify(st, doc) {
			t.Errorf("final check of %s: %v", doc, err)
		}
		checked += o.checked
	}
	elapsed := time.Since(start).Round(time.Millisecond)
	if stats.killed < 100 && !testing.Short() {
		t.Errorf("only %d kill cycles; want at least 100", stats.killed)
	}
	summary := fmt.Sprintf("crash: %d kill cycles of %d (%d random, %d %s, %d %s) in %v; %d acknowledged and %d committed-unacknowledged commands, %d in flight at the kill, %d requests with a lost reply sent again, %d refused; %d results checked in the final pass",
		stats.killed, stats.cycles, stats.byPoint[pointRandom], stats.byPoint[pointAfterCommit], pointAfterCommit,
		stats.byPoint[pointMidBatch], pointMidBatch, elapsed, stats.acked, stats.durableOps, stats.inFlight, stats.retried, stats.refused, checked)
	t.Log(summary)
	fmt.Println(summary)
}
