package planner

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/accord-crdt/accord/question"
)

// Options configures a Driver. Authorities, Document, Chat, Runtime and
// Members are required; the rest have working defaults.
type Options struct {
	Authorities Authorities
	Document    Document
	Chat        Chat
	Runtime     Runtime
	Members     Members
	// Clock is the time source of the batching rules and the loops' timers;
	// nil uses the system clock.
	Clock Clock
	// NewID mints the fresh id each turn is claimed under; nil uses random
	// ids. Ids must never repeat.
	NewID func() string
	// Quiet and Cap are the batching times; zero means DefaultQuiet and
	// DefaultCap.
	Quiet, Cap time.Duration
	// Poll is how often a watched document is looked at again without a
	// Poke; zero means 30 s.
	Poll time.Duration
	// Retry is the pause after a host or storage error; zero means 2 s.
	Retry time.Duration
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

func (o *Options) validate() error {
	var errs []error
	for _, f := range []struct {
		name    string
		missing bool
	}{
		{"Authorities", o.Authorities == nil}, {"Document", o.Document == nil}, {"Chat", o.Chat == nil},
		{"Runtime", o.Runtime == nil}, {"Members", o.Members == nil},
	} {
		if f.missing {
			errs = append(errs, fmt.Errorf("planner: Options.%s is required", f.name))
		}
	}
	if o.Quiet < 0 || o.Cap < 0 || o.Poll < 0 || o.Retry < 0 {
		errs = append(errs, errors.New("planner: negative duration in Options"))
	}
	return errors.Join(errs...)
}

// Driver delivers saved answers to Planner turns and runs write-up and why
// jobs, for any number of documents. Step and RunJobs do one pass
// synchronously; Watch runs them in the background, on timers and Pokes.
// Its methods are safe for concurrent use.
type Driver struct {
	opts  Options
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	mu    sync.Mutex
	docs  map[string]*docState
	close bool
}

type docState struct {
	step       sync.Mutex      // one Step at a time
	unaccepted map[string]bool // guarded by step
	jobs       sync.Mutex      // one RunJobs at a time
	poke       chan struct{}
	pokeJobs   chan struct{}
	watching   bool // guarded by Driver.mu
}

// New returns a Driver. It starts nothing until Watch.
func New(opts Options) (*Driver, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = systemClock{}
	}
	if opts.NewID == nil {
		opts.NewID = func() string { return "turn-" + rand.Text() }
	}
	if opts.Quiet == 0 {
		opts.Quiet = DefaultQuiet
	}
	if opts.Cap == 0 {
		opts.Cap = DefaultCap
	}
	if opts.Poll == 0 {
		opts.Poll = 30 * time.Second
	}
	if opts.Retry == 0 {
		opts.Retry = 2 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Driver{opts: opts, ctx: ctx, stop: stop, docs: map[string]*docState{}}, nil
}

func (d *Driver) state(doc string) *docState {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.docs[doc]
	if s == nil {
		s = &docState{unaccepted: map[string]bool{}, poke: make(chan struct{}, 1), pokeJobs: make(chan struct{}, 1)}
		d.docs[doc] = s
	}
	return s
}

// Gate reads the host's state for doc: the existing Planner owner (only if
// the member may write), the harness, attachment and whether Chat is busy.
func (d *Driver) Gate(ctx context.Context, doc string) (Gate, error) {
	var g Gate
	owner, ok, err := d.opts.Runtime.Owner(ctx, doc)
	if err != nil {
		return g, fmt.Errorf("planner: Planner owner of %q: %w", doc, err)
	}
	if ok && owner != "" {
		m, found, err := d.opts.Members.Member(ctx, doc, owner)
		if err != nil {
			return g, fmt.Errorf("planner: member %q of %q: %w", owner, doc, err)
		}
		if found && m.Write {
			g.Owner = owner
		}
	}
	g.Remote = d.opts.Runtime.Remote()
	if g.Remote {
		if g.Attached, err = d.opts.Runtime.Attached(ctx, doc); err != nil {
			return g, fmt.Errorf("planner: Planner attached to %q: %w", doc, err)
		}
	}
	if g.Busy, err = d.opts.Runtime.Busy(ctx, doc); err != nil {
		return g, fmt.Errorf("planner: Chat of %q busy: %w", doc, err)
	}
	return g, nil
}

// Step runs the answer queue of doc once, to the point where it has to
// wait: it looks up claimed turns in Chat (marking accepted ones
// delivered), starts claimed turns Chat never accepted, and claims the
// waiting rows whose time came (durably, under a fresh id) and hands them
// to Chat as one turn, marking them delivered (durably) once Chat accepted
// it. It returns the plan it stopped at: Wake says when something is due.
func (d *Driver) Step(ctx context.Context, doc string) (Plan, error) {
	if d.ctx.Err() != nil {
		return Plan{}, ErrClosed
	}
	ctx = driverContext(ctx)
	s := d.state(doc)
	s.step.Lock()
	defer s.step.Unlock()
	for round := 0; ; round++ {
		if round == 64 { // cannot happen: every round settles one turn
			return Plan{}, fmt.Errorf("planner: %q did not settle", doc)
		}
		g, err := d.Gate(ctx, doc)
		if err != nil {
			return Plan{}, err
		}
		var plan Plan
		var turn Turn
		err = d.opts.Authorities.Do(ctx, doc, func(a *question.Authority) error {
			rows := a.AnswerRows()
			plan = Next(PlanInput{Now: d.opts.Clock.Now(), Rows: rows, Gate: g, Unaccepted: s.unaccepted, Quiet: d.opts.Quiet, Cap: d.opts.Cap})
			switch {
			case len(plan.Claim) > 0:
				id := d.opts.NewID()
				claimed, err := a.ClaimAnswers(ctx, id, plan.Claim)
				if err != nil {
					return err
				}
				turn = buildTurn(a, doc, id, g.Owner, claimed)
			case plan.Start != "":
				var held []question.AnswerRow
				for _, r := range rows {
					if r.Turn == plan.Start {
						held = append(held, r)
					}
				}
				turn = buildTurn(a, doc, plan.Start, g.Owner, held)
			}
			return nil
		})
		if err != nil {
			return plan, err
		}
		switch {
		case plan.Check != "":
			ok, err := d.opts.Chat.Accepted(ctx, doc, plan.Check)
			if err != nil {
				return plan, fmt.Errorf("planner: look up turn %q in Chat: %w", plan.Check, err)
			}
			if !ok {
				s.unaccepted[plan.Check] = true
				continue
			}
			if err := d.markDelivered(ctx, doc, plan.Check); err != nil {
				return plan, err
			}
		case turn.ID != "":
			if len(turn.Answers) > 0 {
				if err := d.opts.Chat.Accept(ctx, doc, turn); err != nil {
					// Chat may or may not have it: look it up next time.
					delete(s.unaccepted, turn.ID)
					return plan, fmt.Errorf("planner: Chat did not accept turn %q: %w", turn.ID, err)
				}
				d.opts.Logger.Info("answers handed to a Planner turn", "doc", doc, "turn", turn.ID, "answers", len(turn.Answers))
			}
			delete(s.unaccepted, turn.ID)
			if err := d.markDelivered(ctx, doc, turn.ID); err != nil {
				return plan, err
			}
		default:
			return plan, nil
		}
	}
}

func (d *Driver) markDelivered(ctx context.Context, doc, turn string) error {
	return d.opts.Authorities.Do(ctx, doc, func(a *question.Authority) error {
		_, err := a.MarkDelivered(ctx, turn)
		return err
	})
}

// buildTurn gathers the answers of a turn's rows that are not stale.
func buildTurn(a *question.Authority, doc, id, owner string, rows []question.AnswerRow) Turn {
	t := Turn{ID: id, Doc: doc, Owner: owner}
	for _, r := range rows {
		if r.State != question.RowClaimed {
			continue
		}
		rec, ok := a.Record(r.Decision)
		if !ok || rec.Status != question.Settled || rec.Answer.Generation != r.Generation {
			continue
		}
		if ans, ok := AnswerOf(rec); ok {
			t.Answers = append(t.Answers, ans)
		}
	}
	if len(t.Answers) > 0 {
		t.Notice = NoticeText(t.Answers)
		t.Prompt = TurnPrompt(t.Answers)
	}
	return t
}

// Watch starts delivering doc's answers and running its jobs in the
// background: at once (which recovers turns claimed before a restart), when
// a turn falls due, every Poll, and on Poke. Watching a watched document
// does nothing.
func (d *Driver) Watch(doc string) {
	s := d.state(doc)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.close || s.watching {
		return
	}
	s.watching = true
	d.wg.Add(2)
	go d.loop(doc, s.poke, func() (time.Time, error) {
		p, err := d.Step(d.ctx, doc)
		return p.Wake, err
	})
	go d.loop(doc, s.pokeJobs, func() (time.Time, error) {
		_, err := d.RunJobs(d.ctx, doc)
		return time.Time{}, err
	})
}

func (d *Driver) loop(doc string, poke <-chan struct{}, pass func() (time.Time, error)) {
	defer d.wg.Done()
	for {
		wake, err := pass()
		if d.ctx.Err() != nil {
			return
		}
		wait := d.opts.Poll
		switch {
		case err != nil:
			d.opts.Logger.Warn("delivery pass failed; retrying", "doc", doc, "err", err)
			wait = d.opts.Retry
		case !wake.IsZero():
			wait = min(wait, max(0, wake.Sub(d.opts.Clock.Now())))
		}
		t := d.opts.Clock.NewTimer(wait)
		select {
		case <-poke:
		case <-t.C():
		case <-d.ctx.Done():
			t.Stop()
			return
		}
		t.Stop()
	}
}

// Poke wakes doc's loops: the host calls it after a save, reopen or
// discard, when a Planner owner appears, a Planner attaches, or a Chat
// turn ends. It never blocks.
func (d *Driver) Poke(doc string) {
	s := d.state(doc)
	for _, c := range []chan struct{}{s.poke, s.pokeJobs} {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// PokeAll pokes every document the driver knows.
func (d *Driver) PokeAll() {
	d.mu.Lock()
	docs := make([]string, 0, len(d.docs))
	for doc := range d.docs {
		docs = append(docs, doc)
	}
	d.mu.Unlock()
	for _, doc := range docs {
		d.Poke(doc)
	}
}

// Close stops the background loops and waits for them. Turns and jobs
// that were not finished stay in the store and resume after a restart.
func (d *Driver) Close() error {
	d.mu.Lock()
	d.close = true
	d.mu.Unlock()
	d.stop()
	d.wg.Wait()
	return nil
}
