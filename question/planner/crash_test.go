package planner_test

// Exactly-once delivery, measured. TestDeliveryCrash runs its own test
// binary as a child (TestDeliveryCrashChild, which acts only when
// deliveryCrashEnv is set). The child opens a bbolt file, a Chat whose
// accepted turns are appended to a journal file with fsync, and a Driver,
// and runs a storm of Planner cards, saves, reopens and driver steps. The
// parent kills it with SIGKILL, at a random moment or at a named point the
// child reaches itself:
//
//	after-claim    the claim commit returned; the turn was not handed over
//	before-accept  Chat.Accept was called; nothing is in the journal yet
//	after-accept   the journal holds the turn (fsynced); Accept did not return
//	after-mark     the mark commit returned
//
// After every death the parent opens the file and the journal and checks:
// no turn id is in the journal twice, no answer (decision, generation) is
// in two turns, every journal answer is a real settle, and every settled
// answer of a Planner's card is in the journal or still has a waiting or
// claimed row (none lost). At the end the parent drains the queue itself
// and checks that every settled answer reached exactly one turn.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/question/planner/memhost"
)

const (
	deliveryCrashEnv     = "ACCORD_DELIVERY_CRASH_CHILD"
	deliveryCrashSeedEnv = "ACCORD_DELIVERY_CRASH_SEED"
)

// crashDoc is the document of a cycle: ten cycles share one, so each is
// reopened after nine crashes while staying small.
func crashDoc(cycle int) string { return fmt.Sprintf("plan-%d", cycle/10) }

var crashPoints = []string{"random", "after-claim", "before-accept", "after-accept", "after-mark"}

type deliveryCrashConfig struct {
	File, Journal string
	Doc           string
	Point         string
	Skip          int // named points: die at occurrence Skip+1
	Seed          uint64
	Cycle         int
}

// crashTime is the child's clock: it never goes back across cycles.
func crashTime(cycle int) time.Time { return epoch.Add(time.Duration(cycle) * time.Hour) }

// ---------------------------------------------------------------- journal ---

// fileChat is a Chat that survives the process: each accepted turn is one
// line "<id> <decision>:<generation>,..." of a testutil.Journal. A torn
// last line (the process died mid-write) was never accepted.
type fileChat struct {
	mu       sync.Mutex
	j        *testutil.Journal
	accepted map[string]bool
	hook     func(point string)
}

func openFileChat(path string) (*fileChat, error) {
	j, lines, err := testutil.OpenJournal(path)
	if err != nil {
		return nil, err
	}
	c := &fileChat{j: j, accepted: map[string]bool{}, hook: func(string) {}}
	for _, t := range journalTurns(lines) {
		c.accepted[t.id] = true
	}
	return c, nil
}

type journalTurn struct {
	id      string
	answers []string
}

// journalTurns reads the turns of the journal's lines.
func journalTurns(lines []string) []journalTurn {
	out := make([]journalTurn, len(lines))
	for i, line := range lines {
		id, answers, _ := strings.Cut(line, " ")
		out[i] = journalTurn{id: id, answers: strings.Split(answers, ",")}
	}
	return out
}

func (c *fileChat) Post(ctx context.Context, doc string, n planner.Notice) error { return nil }

func (c *fileChat) Accept(ctx context.Context, doc string, t planner.Turn) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.accepted[t.ID] {
		return nil
	}
	c.hook("before-accept")
	answers := make([]string, len(t.Answers))
	for i, a := range t.Answers {
		answers[i] = fmt.Sprintf("%s:%d", a.Decision, a.Generation)
	}
	if err := c.j.Append(t.ID + " " + strings.Join(answers, ",")); err != nil {
		return err
	}
	c.accepted[t.ID] = true
	c.hook("after-accept")
	return nil
}

func (c *fileChat) Accepted(ctx context.Context, doc, id string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.accepted[id], nil
}

// quietRuntime has an owner, a local harness and a Chat that is never busy
// (turns end as soon as they are accepted).
type quietRuntime struct{ *memhost.Runtime }

func (quietRuntime) Busy(context.Context, string) (bool, error) { return false, nil }

// ------------------------------------------------------------------ child ---

// TestDeliveryCrashChild is the child of TestDeliveryCrash; without
// deliveryCrashEnv it does nothing.
func TestDeliveryCrashChild(t *testing.T) {
	var cfg deliveryCrashConfig
	testutil.ChildMain(deliveryCrashEnv, &cfg, func() error { return runDeliveryChild(cfg) })
}

// crashStore reports the claim and mark commits to the kill hook.
type crashStore struct {
	persist.Store
	hook func(point string)
}

func (s *crashStore) Commit(ctx context.Context, doc string, w *persist.Write) error {
	if err := s.Store.Commit(ctx, doc, w); err != nil {
		return err
	}
	claim, deletes := false, 0
	for _, p := range w.Answers {
		if p.Value == nil {
			deletes++
		} else if bytes.Contains(p.Value, []byte(`"state":"claimed"`)) {
			claim = true
		}
	}
	switch {
	case claim:
		s.hook("after-claim")
	case deletes > 0 && deletes == len(w.Answers) && len(w.Records) == 0:
		s.hook("after-mark")
	}
	return nil
}

// crashHost is what both the child and the parent's drain run on.
type crashHost struct {
	store *boltstore.Store
	chat  *fileChat
	local *planner.Local
	d     *planner.Driver
	clock *fakeClock
}

func openCrashHost(cfg deliveryCrashConfig, hook func(string)) (*crashHost, error) {
	st, err := boltstore.Open(cfg.File, nil)
	if err != nil {
		return nil, err
	}
	chat, err := openFileChat(cfg.Journal)
	if err != nil {
		return nil, err
	}
	chat.hook = hook
	h := &crashHost{store: st, chat: chat, clock: &fakeClock{now: crashTime(cfg.Cycle)}}
	cs := &crashStore{Store: st, hook: hook}
	h.local = planner.NewLocal(func(ctx context.Context, doc string) (*question.Authority, error) {
		return question.NewAuthority(ctx, question.Options{Store: cs, Doc: doc, Now: h.clock.Now})
	})
	mh := memhost.New()
	mh.Members.Add(cfg.Doc, ana)
	mh.Runtime.SetOwner(cfg.Doc, "ana")
	h.d, err = planner.New(planner.Options{Authorities: h.local, Document: mh.Docs, Chat: chat,
		Runtime: quietRuntime{mh.Runtime}, Members: mh.Members, Clock: h.clock})
	return h, err
}

func runDeliveryChild(cfg deliveryCrashConfig) error {
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.Cycle)))
	seen := 0
	hook := func(point string) {
		if point == cfg.Point {
			if seen == cfg.Skip {
				testutil.KillSelf(point)
			}
			seen++
		}
	}
	h, err := openCrashHost(cfg, hook)
	if err != nil {
		return err
	}
	ctx := context.Background()
	fmt.Println("READY")
	def := question.Definition{Questions: []question.Question{{Text: "What next?", Response: question.Text, Options: []question.Option{}}}}
	made := 0
	// A cycle with a named point goes on until it dies there (the work is
	// random, so it may take more than 300 operations), never until some
	// wall-clock time: on a busy machine that ended cycles short of their
	// point. A random point's cycle does 300 and ends, killed or not.
	maxOps := 300
	if cfg.Point != "random" && cfg.Point != "" {
		maxOps = 5000
	}
	for op := 0; op < maxOps; op++ {
		h.clock.Advance(2 * time.Second)
		var open, settled []string
		err := h.local.Do(ctx, cfg.Doc, func(a *question.Authority) error {
			for _, r := range a.Records() {
				switch r.Status {
				case question.Open:
					open = append(open, r.ID)
				case question.Settled:
					settled = append(settled, r.ID)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		switch n := rng.IntN(100); {
		case op == 0 || n < 30:
			if _, err := h.d.Step(ctx, cfg.Doc); err != nil {
				return fmt.Errorf("step: %w", err)
			}
		case n < 45 || len(open) == 0:
			var reqs []question.CreateRequest
			for range 1 + rng.IntN(3) {
				made++
				reqs = append(reqs, question.CreateRequest{Key: fmt.Sprintf("c%d-%d", cfg.Cycle, made), Origin: question.FromPlanner, Definition: def})
			}
			err = h.local.Do(ctx, cfg.Doc, func(a *question.Authority) error { _, err := a.Create(ctx, ana, reqs); return err })
		case n < 90:
			id := open[rng.IntN(len(open))]
			err = h.local.Do(ctx, cfg.Doc, func(a *question.Authority) error { return saveOn(a, ana, id, fmt.Sprintf("answer %d", op)) })
		case len(settled) > 0:
			id := settled[rng.IntN(len(settled))]
			err = h.local.Do(ctx, cfg.Doc, func(a *question.Authority) error { _, err := a.Reopen(ctx, ben, id, 0); return err })
		}
		if err != nil {
			return err
		}
	}
	fmt.Println("DONE")
	return nil
}

// ----------------------------------------------------------------- parent ---

type crashFacts struct {
	turns, answers  int // in the journal
	waiting, claims int // rows at the check
	settled         int // settled Planner answers
	lost, twice     int // answers lost; answers or turns delivered twice
}

// verifyDelivery checks the store and the journal against each other. With
// drained set, every settled answer must be in the journal exactly once.
func verifyDelivery(path, journal, doc string, drained bool) (crashFacts, []error) {
	var f crashFacts
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	st, err := boltstore.Open(path, nil)
	if err != nil {
		return f, []error{err}
	}
	defer st.Close()
	if err := st.Check(); err != nil {
		bad("bbolt check: %v", err)
	}
	sd, err := st.LoadDocument(context.Background(), doc)
	if err != nil {
		return f, []error{err}
	}
	lines, err := testutil.ReadJournal(journal)
	if err != nil {
		return f, []error{err}
	}
	turns := journalTurns(lines)
	f.turns = len(turns)
	ids := map[string]bool{}
	in := map[string]int{}
	for _, t := range turns {
		if ids[t.id] {
			f.twice++
			bad("turn %s ran twice", t.id)
		}
		ids[t.id] = true
		for _, a := range t.answers {
			f.answers++
			if in[a]++; in[a] > 1 {
				f.twice++
				bad("answer %s was delivered in two turns", a)
			}
		}
	}
	rows := map[string]question.AnswerRow{}
	for id, raw := range sd.Answers {
		var r question.AnswerRow
		if err := json.Unmarshal(raw, &r); err != nil {
			bad("row %s: %v", id, err)
		}
		rows[id] = r
		switch r.State {
		case question.RowWaiting:
			f.waiting++
		case question.RowClaimed:
			f.claims++
		}
	}
	settles := map[string]bool{}
	for id, raw := range sd.Records {
		var r question.Record
		if err := json.Unmarshal(raw, &r); err != nil {
			bad("record %s: %v", id, err)
			continue
		}
		for _, h := range r.History {
			settles[fmt.Sprintf("%s:%d", id, h.Generation)] = true
		}
		if r.Status != question.Settled || r.Origin != question.FromPlanner {
			continue
		}
		f.settled++
		k := fmt.Sprintf("%s:%d", id, r.Answer.Generation)
		settles[k] = true
		row, ok := rows[id]
		waits := ok && row.Generation == r.Answer.Generation && (row.State == question.RowWaiting || row.State == question.RowClaimed)
		switch {
		case in[k] == 0 && !waits:
			f.lost++
			bad("the answer %s was lost: not delivered, no row (%+v)", k, row)
		case drained && in[k] != 1:
			f.lost++
			bad("after the drain the answer %s reached %d turns", k, in[k])
		}
	}
	for k := range in {
		if !settles[k] {
			bad("the journal delivered %s, which was never settled", k)
		}
	}
	return f, errs
}

// TestDeliveryCrash kills a process delivering answers again and again.
func TestDeliveryCrash(t *testing.T) {
	cycles := 110
	if testing.Short() {
		cycles = 25
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(deliveryCrashSeedEnv); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", deliveryCrashSeedEnv, err)
		}
		seed = n
	}
	t.Logf("seed %d (set %s to replay)", seed, deliveryCrashSeedEnv)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	file := filepath.Join(dir, "crash.db")
	journalOf := func(doc string) string { return filepath.Join(dir, doc+".journal") } // one Chat per document
	killed := map[string]int{}
	kills := 0
	var atDeath crashFacts // summed over the checks after each death
	start := time.Now()
	for cycle := 0; cycle < cycles && !t.Failed(); cycle++ {
		point := crashPoints[cycle%len(crashPoints)]
		cfg := deliveryCrashConfig{File: file, Journal: journalOf(crashDoc(cycle)), Doc: crashDoc(cycle), Point: point, Skip: rng.IntN(3), Seed: seed, Cycle: cycle}
		var killAfter time.Duration
		if point == "random" {
			killAfter = time.Duration(5+rng.IntN(36)) * time.Millisecond
		}
		out := testutil.RunChildConfig(t, "TestDeliveryCrashChild", deliveryCrashEnv, cfg, killAfter, fmt.Sprintf("cycle %d", cfg.Cycle))
		for _, l := range out.Bad() {
			t.Errorf("cycle %d (%s): %s", cycle, point, l)
		}
		switch {
		case out.Killed:
			kills++
			killed[point]++
		case point != "random":
			t.Errorf("cycle %d: the child never reached %s:\n%s\n%s", cycle, point, out.Tail(5), out.Stderr)
		}
		facts, errs := verifyDelivery(file, cfg.Journal, cfg.Doc, false)
		for _, err := range errs {
			t.Errorf("cycle %d (%s, killed %v): %v", cycle, point, out.Killed, err)
		}
		atDeath.claims += facts.claims
		atDeath.waiting += facts.waiting
		atDeath.lost += facts.lost
		atDeath.twice += facts.twice
	}
	// Drain every document: a process that lives, with an owner and a
	// free Chat.
	var final crashFacts
	for d := 0; d*10 < cycles; d++ {
		cfg := deliveryCrashConfig{File: file, Journal: journalOf(crashDoc(d * 10)), Doc: crashDoc(d * 10), Cycle: cycles + 1}
		h, err := openCrashHost(cfg, func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			h.clock.Advance(time.Minute)
			if _, err := h.d.Step(bg, cfg.Doc); err != nil {
				t.Fatal(err)
			}
		}
		h.d.Close()
		h.chat.j.Close()
		h.store.Close()
		facts, errs := verifyDelivery(file, cfg.Journal, cfg.Doc, true)
		for _, err := range errs {
			t.Errorf("after the drain of %s: %v", cfg.Doc, err)
		}
		final.settled += facts.settled
		final.turns += facts.turns
		final.answers += facts.answers
		final.lost += facts.lost
		final.twice += facts.twice
	}
	if kills < 100 && !testing.Short() {
		t.Errorf("only %d kill cycles; want at least 100", kills)
	}
	var byPoint []string
	for _, p := range crashPoints {
		byPoint = append(byPoint, fmt.Sprintf("%d %s", killed[p], p))
	}
	summary := fmt.Sprintf("delivery crash: %d kill cycles of %d (%s) in %v; %d turns carried %d answers (%d Planner answers settled at the end); the checks after the deaths found %d claimed-unmarked and %d waiting rows, all carried on; answers lost %d, answers or turns run twice %d",
		kills, cycles, strings.Join(byPoint, ", "), time.Since(start).Round(time.Millisecond), final.turns, final.answers, final.settled,
		atDeath.claims, atDeath.waiting, atDeath.lost+final.lost, atDeath.twice+final.twice)
	t.Log(summary)
	fmt.Println(summary)
}
