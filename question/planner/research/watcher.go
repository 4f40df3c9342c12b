package research

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

// Host is the host's research requests and investigations.
//
// Contract: Work returns the state of one piece of work of doc; it returns
// an error (a *question.Refusal is passed on to the member as it is) for
// work that does not exist or belongs to another document. Cancel asks the
// work to stop and returns its state afterwards: work that already ended,
// or refuses to cancel, reports what it is.
type Host interface {
	Work(ctx context.Context, doc string, kind question.FindingKind, ref string) (question.Work, error)
	Cancel(ctx context.Context, doc string, kind question.FindingKind, ref string) (question.Work, error)
}

// Poster posts Chat notices; planner.Chat is one. Post must be
// idempotent per notice id.
type Poster interface {
	Post(ctx context.Context, doc string, n planner.Notice) error
}

// Options configures a Watcher. Authorities, Host and Chat are required.
type Options struct {
	Authorities planner.Authorities
	Host        Host
	Chat        Poster
	// RetryAfter is how soon a document whose settle or notice failed is
	// swept again. Zero means 10 s.
	RetryAfter time.Duration
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// Watcher settles findings as the work they follow ends, and posts their
// Chat notices exactly once. Its one goroutine does all the work, so a
// host's event never blocks; Close stops it.
type Watcher struct {
	opts Options

	mu      sync.Mutex
	events  map[workKey]question.Work // the latest state of work, per document
	pending map[string]time.Time      // documents to sweep, and from when
	wake    chan struct{}

	stop chan struct{}
	done chan struct{}
}

type workKey struct {
	doc  string
	kind question.FindingKind
	ref  string
}

// New returns a running Watcher.
func New(opts Options) (*Watcher, error) {
	if opts.Authorities == nil || opts.Host == nil || opts.Chat == nil {
		return nil, errors.New("research: Options need Authorities, Host and Chat")
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{opts: opts, events: map[workKey]question.Work{}, pending: map[string]time.Time{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w, nil
}

// Close stops the Watcher and waits for its goroutine. Work not done yet
// is found again by the next sweep after a restart.
func (w *Watcher) Close() error {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	return nil
}

// Changed is the host's event: work of doc changed state. It never blocks;
// the settle runs on the Watcher's goroutine. Events of the same work
// coalesce to the latest state.
func (w *Watcher) Changed(doc string, kind question.FindingKind, ref string, work question.Work) {
	w.mu.Lock()
	w.events[workKey{doc, kind, ref}] = work
	w.mu.Unlock()
	w.signal()
}

// Poke asks for a sweep of doc soon: when it opens, when a member
// (re)opens it, and after a command that may owe a notice (an ask, or
// attaching work that had already ended).
func (w *Watcher) Poke(doc string) {
	w.mu.Lock()
	if _, ok := w.pending[doc]; !ok {
		w.pending[doc] = time.Time{}
	}
	w.mu.Unlock()
	w.signal()
}

func (w *Watcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Check is the host's check for doc, as Authority.Explore takes it.
func (w *Watcher) Check(doc string) question.CheckWork {
	return func(ctx context.Context, kind question.FindingKind, ref string) (question.Work, error) {
		return w.opts.Host.Work(ctx, doc, kind, ref)
	}
}

// Cancel is the host's cancel for doc, as Authority.ExploreStop takes it.
func (w *Watcher) Cancel(doc string) question.CancelWork {
	return func(ctx context.Context, kind question.FindingKind, ref string) (question.Work, error) {
		return w.opts.Host.Cancel(ctx, doc, kind, ref)
	}
}

func (w *Watcher) run() {
	defer close(w.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-w.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		w.step(ctx)
		w.mu.Lock()
		next := time.Duration(-1)
		for _, at := range w.pending {
			d := time.Until(at)
			if next < 0 || d < next {
				next = d
			}
		}
		if len(w.events) > 0 {
			next = 0
		}
		w.mu.Unlock()
		if next < 0 {
			next = time.Hour
		}
		timer.Reset(max(next, 0))
		select {
		case <-w.stop:
			return
		case <-w.wake:
		case <-timer.C:
		}
	}
}

// step settles the events that arrived and sweeps the documents due.
func (w *Watcher) step(ctx context.Context) {
	w.mu.Lock()
	events := w.events
	w.events = map[workKey]question.Work{}
	var due []string
	now := time.Now()
	for doc, at := range w.pending {
		if !at.After(now) {
			due = append(due, doc)
			delete(w.pending, doc)
		}
	}
	w.mu.Unlock()
	for k, work := range events {
		if ctx.Err() != nil {
			return
		}
		err := w.settle(ctx, k.doc, k.kind, k.ref, work)
		if err == nil {
			err = w.postNotices(ctx, k.doc)
		}
		if err != nil {
			w.retry(k.doc, err)
		}
	}
	for _, doc := range due {
		if ctx.Err() != nil {
			return
		}
		if err := w.Sweep(ctx, doc); err != nil {
			w.retry(doc, err)
		}
	}
}

func (w *Watcher) retry(doc string, err error) {
	w.opts.Logger.Error("cannot settle findings; retrying at the next sweep", "doc", doc, "err", err)
	w.mu.Lock()
	if at, ok := w.pending[doc]; !ok || at.IsZero() {
		w.pending[doc] = time.Now().Add(w.opts.RetryAfter)
	}
	w.mu.Unlock()
}

// Sweep settles every research or investigation finding of doc whose work
// has ended (a running one, or a failed one whose request was retried to
// ready), and posts every notice still owed. It is what a
// document's opening runs; a host may call it directly too.
func (w *Watcher) Sweep(ctx context.Context, doc string) error {
	var refs []question.WorkRef
	if err := w.opts.Authorities.Do(ctx, doc, func(a *question.Authority) error {
		refs = a.WorkToCheck()
		return nil
	}); err != nil {
		return err
	}
	var errs []error
	for _, r := range refs {
		work, err := w.opts.Host.Work(ctx, doc, r.Kind, r.Ref)
		if err != nil {
			// Work the host no longer knows is stopped: nothing will end it.
			var ref *question.Refusal
			if !errors.As(err, &ref) || ref.Reason != question.NotFound {
				errs = append(errs, fmt.Errorf("research: state of %s %s: %w", r.Kind, r.Ref, err))
				continue
			}
			work = question.Work{Status: question.WorkCancelled}
		}
		if work.Status.Terminal() {
			if err := w.settle(ctx, doc, r.Kind, r.Ref, work); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := w.postNotices(ctx, doc); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (w *Watcher) settle(ctx context.Context, doc string, kind question.FindingKind, ref string, work question.Work) error {
	return w.opts.Authorities.Do(ctx, doc, func(a *question.Authority) error {
		changed, err := a.Settle(ctx, kind, ref, work)
		for _, c := range changed {
			w.opts.Logger.Info("finding settled", "doc", doc, "decision", c.Decision, "finding", c.Finding.ID, "from", c.Before, "to", c.Finding.Status)
		}
		return err
	})
}

// postNotices posts every notice doc owes, each then marked posted.
func (w *Watcher) postNotices(ctx context.Context, doc string) error {
	type owed struct {
		decision string
		f        question.Finding
		n        planner.Notice
	}
	var due []owed
	if err := w.opts.Authorities.Do(ctx, doc, func(a *question.Authority) error {
		for _, p := range a.PendingNotices() {
			rec, _ := a.Record(p.Decision)
			due = append(due, owed{p.Decision, p.Finding, NoticeOf(rec, p.Finding)})
		}
		return nil
	}); err != nil {
		return err
	}
	for _, o := range due {
		if err := w.opts.Chat.Post(ctx, doc, o.n); err != nil {
			return fmt.Errorf("research: post notice %s: %w", o.n.ID, err)
		}
		if err := w.opts.Authorities.Do(ctx, doc, func(a *question.Authority) error {
			return a.MarkNoticed(ctx, o.decision, o.f.ID, o.f.Status)
		}); err != nil {
			return fmt.Errorf("research: mark notice %s: %w", o.n.ID, err)
		}
	}
	return nil
}

// NoticeOf is the Chat notice a finding's status owes: research ready or
// failed (quiet, with the reason the work gave), an investigation
// finished or failed (quiet), or an ask naming the asked member.
func NoticeOf(rec question.Record, f question.Finding) planner.Notice {
	q := ""
	if len(rec.Definition.Questions) > 0 {
		q = rec.Definition.Questions[0].Text
	}
	n := planner.Notice{ID: f.NoticeID()}
	what := "Research"
	if f.Kind == question.FindingSpike {
		what = "The investigation"
	}
	switch {
	case f.Kind == question.FindingAsk:
		n.Text = fmt.Sprintf("@%s asked @%s about “%s”", f.By, f.Ref, q)
	case f.Status == question.FindingFailed:
		n.Text, n.Quiet = fmt.Sprintf("%s for “%s” failed", what, q), true
		if why := firstLine(f.Summary); why != "" {
			n.Text += ": " + why
		}
	case f.Kind == question.FindingSpike:
		n.Text = fmt.Sprintf("The investigation for “%s” finished", q)
		if f.Branch != "" {
			n.Text += " on branch " + f.Branch
		}
	default:
		n.Text = fmt.Sprintf("Research for “%s” is ready", q)
		if f.Title != "" {
			n.Text += ": " + f.Title
		}
	}
	return n
}

// maxNoticeReason bounds the reason a failure's notice quotes.
const maxNoticeReason = 200

// firstLine is the first line of s, trimmed and cut to maxNoticeReason
// characters: a reason fit for one Chat line.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(strings.TrimSpace(s)); len(r) > maxNoticeReason {
		return string(r[:maxNoticeReason-1]) + "…"
	}
	return strings.TrimSpace(s)
}
