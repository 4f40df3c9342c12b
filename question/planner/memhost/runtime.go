package memhost

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

// Runtime is an in-memory Planner runtime: owners, the harness, attached
// Planners and busy Chats are set by hand, and the Planner's write-ups and
// why drafts come from replaceable functions (deterministic defaults). It
// is safe for concurrent use.
type Runtime struct {
	mu       sync.Mutex
	owner    map[string]string
	remote   bool
	attached map[string]bool
	busy     map[string]bool
	chat     *Chat
	writer   func(ctx context.Context, doc string, req planner.WriteUpRequest) (planner.WriteUpResult, error)
	drafter  func(ctx context.Context, doc string, req planner.WhyRequest) (string, error)
	onChange func(doc string)
	writeUps int
	drafts   int
}

// NewRuntime returns a local-harness runtime with no owners.
func NewRuntime() *Runtime {
	return &Runtime{owner: map[string]string{}, attached: map[string]bool{}, busy: map[string]bool{}}
}

func (r *Runtime) set(doc string, fn func()) {
	r.mu.Lock()
	fn()
	r.mu.Unlock()
	r.notify(doc)
}

func (r *Runtime) notify(doc string) {
	r.mu.Lock()
	fn := r.onChange
	r.mu.Unlock()
	if fn != nil {
		fn(doc)
	}
}

// OnChange sets fn to run after every change of owner, harness,
// attachment or busy state, and when a Chat turn finishes ("" for the
// harness, which is every document's). Hosts poke the driver there.
func (r *Runtime) OnChange(fn func(doc string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onChange = fn
}

// SetOwner makes login the document's Planner owner; "" leaves it without.
func (r *Runtime) SetOwner(doc, login string) { r.set(doc, func() { r.owner[doc] = login }) }

// SetRemote switches the harness to remote (true) or local.
func (r *Runtime) SetRemote(remote bool) { r.set("", func() { r.remote = remote }) }

// SetAttached says whether a Planner is attached to the remote harness for doc.
func (r *Runtime) SetAttached(doc string, on bool) { r.set(doc, func() { r.attached[doc] = on }) }

// SetBusy says whether a Planner turn someone typed runs or waits in doc's Chat.
func (r *Runtime) SetBusy(doc string, on bool) { r.set(doc, func() { r.busy[doc] = on }) }

// SetWriter replaces the write-up function; nil restores DefaultWriteUp.
func (r *Runtime) SetWriter(fn func(ctx context.Context, doc string, req planner.WriteUpRequest) (planner.WriteUpResult, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writer = fn
}

// SetDrafter replaces the why-draft function; nil restores DefaultWhy.
func (r *Runtime) SetDrafter(fn func(ctx context.Context, doc string, req planner.WhyRequest) (string, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drafter = fn
}

// Calls returns how many write-ups and why drafts the Planner was asked for.
func (r *Runtime) Calls() (writeUps, drafts int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writeUps, r.drafts
}

// Owner implements planner.Runtime.
func (r *Runtime) Owner(ctx context.Context, doc string) (string, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.owner[doc]
	return o, o != "", ctx.Err()
}

// Remote implements planner.Runtime.
func (r *Runtime) Remote() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.remote
}

// Attached implements planner.Runtime.
func (r *Runtime) Attached(ctx context.Context, doc string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attached[doc], ctx.Err()
}

// Busy implements planner.Runtime: a turn someone typed (SetBusy), or an
// accepted turn that has not finished.
func (r *Runtime) Busy(ctx context.Context, doc string) (bool, error) {
	r.mu.Lock()
	busy, chat := r.busy[doc], r.chat
	r.mu.Unlock()
	if !busy && chat != nil {
		busy = chat.Running(doc) > 0
	}
	return busy, ctx.Err()
}

// WriteUp implements planner.Runtime.
func (r *Runtime) WriteUp(ctx context.Context, doc string, req planner.WriteUpRequest) (planner.WriteUpResult, error) {
	r.mu.Lock()
	r.writeUps++
	fn := r.writer
	r.mu.Unlock()
	if fn == nil {
		return DefaultWriteUp(req), ctx.Err()
	}
	return fn(ctx, doc, req)
}

// DraftWhy implements planner.Runtime.
func (r *Runtime) DraftWhy(ctx context.Context, doc string, req planner.WhyRequest) (string, error) {
	r.mu.Lock()
	r.drafts++
	fn := r.drafter
	r.mu.Unlock()
	if fn == nil {
		return DefaultWhy(req), ctx.Err()
	}
	return fn(ctx, doc, req)
}

// DecidedPrefix starts the line DefaultWriteUp writes per saved answer,
// and ReopenedPrefix the line ReopenedLine turns it into once the
// decision is reopened.
const (
	DecidedPrefix  = "Decided: "
	ReopenedPrefix = "Reopened: "
)

// decidedLine is the line DefaultWriteUp writes for a.
func decidedLine(a planner.TurnAnswer) string {
	return fmt.Sprintf("%s%s (saved by @%s)", DecidedPrefix, Summary(a), a.By)
}

// ReopenedLine rewrites the line DefaultWriteUp wrote for the answer h of
// rec into text, now that h was reopened ("Reopened: Passkey had been
// saved by @ana; @ben reopened it"), so the plan no longer says the
// decision is decided. It returns text unchanged when it holds no such
// line.
func ReopenedLine(text string, rec question.Record, h question.HistoryEntry) string {
	old := rec
	old.Answer = &h.Answer
	a, ok := planner.AnswerOf(old)
	if !ok {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if l == decidedLine(a) {
			lines[i] = fmt.Sprintf("%s%s had been saved by @%s; @%s reopened it", ReopenedPrefix, Summary(a), a.By, h.ReopenedBy)
		}
	}
	return strings.Join(lines, "\n")
}

// DefaultWriteUp writes each saved answer as one line under its primary
// block ("Decided: <answer> (saved by @ana)"), replacing the lines an
// earlier write-up wrote (and those ReopenedLine left), so every saved
// answer of the scope is kept once.
func DefaultWriteUp(req planner.WriteUpRequest) planner.WriteUpResult {
	out := planner.WriteUpResult{Source: map[string]string{}}
	for _, b := range req.Blocks {
		var lines []string
		for _, l := range strings.Split(b.Text, "\n") {
			if !strings.HasPrefix(l, DecidedPrefix) && !strings.HasPrefix(l, ReopenedPrefix) {
				lines = append(lines, l)
			}
		}
		for _, a := range req.Answers {
			if len(a.Passage) > 0 && a.Passage[0] == b.ID {
				lines = append(lines, decidedLine(a))
			}
		}
		if text := strings.Join(lines, "\n"); text != b.Text {
			out.Source[b.ID] = text
		}
	}
	return out
}

// Summary is a one-line form of a saved answer.
func Summary(a planner.TurnAnswer) string {
	var parts []string
	for _, q := range a.Questions {
		if q.Written {
			parts = append(parts, strings.Join(strings.Fields(q.Answer), " "))
			continue
		}
		var labels []string
		for _, o := range q.Chosen {
			labels = append(labels, o.Label)
		}
		parts = append(parts, strings.Join(labels, ", "))
	}
	return strings.Join(parts, "; ")
}

// DefaultWhy drafts one plain sentence naming the answer.
func DefaultWhy(req planner.WhyRequest) string {
	s := strings.Map(func(r rune) rune {
		if strings.ContainsRune("*_`<>[]()~#.!?\n\r\t", r) {
			return ' '
		}
		return r
	}, Summary(req.Answer))
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 200 {
		s = string([]rune(s)[:200])
	}
	if s == "" {
		return "This answer fits the plan best."
	}
	return "The team chose " + s + " because it fits the plan best."
}
