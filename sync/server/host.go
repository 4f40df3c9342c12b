package server

import (
	"context"

	"github.com/accord-crdt/accord/question"
)

// Host is the application around the sync engine: where decisions run,
// where pages and research live, and who is told what was committed. The
// engine calls it from a document's goroutine, which decides that
// document's commands one at a time: a call that blocks holds up every
// member of the document, so each method says whether it may.
//
// Every method has a default, NopHost's. A host embeds NopHost and
// defines only the methods it needs:
//
//	type myHost struct{ server.NopHost; watcher *research.Watcher }
//
//	func (h myHost) Opened(doc, login string) { h.watcher.Poke(doc) }
type Host interface {
	// ImplementationActive reports whether an implementation of decision
	// is running in the host. While it runs the decision's definition is
	// frozen (no option or criterion appended, no finding taken or
	// stopped) and its page does not open. Called on doc's goroutine
	// before such a command is decided; it must not block. Default:
	// false.
	ImplementationActive(doc, decision string) bool

	// EnsureChannel creates channel, the child document of a decision
	// of doc that a member expands (question:expand, question:page),
	// before the expand is committed. It must be idempotent: a retry
	// or a second member's expand calls it again. Called on doc's
	// goroutine, which waits for it; it may block briefly, and may
	// wait on another document (Server.Do on channel), never on doc.
	// An error refuses the expand as unavailable. Default: creates
	// nothing and accepts every expand.
	EnsureChannel(ctx context.Context, doc, channel string) error

	// Work reports the state of the research request or investigation
	// (kind, ref) a member attaches to a decision of doc
	// (question:explore), as question/planner/research.Host describes it.
	// Called on doc's goroutine before the finding is committed; it
	// must be quick. An error refuses the request; a
	// *question.Refusal keeps its reason. Default: refuses research
	// and investigations as unavailable (asking a member still works).
	Work(ctx context.Context, doc string, kind question.FindingKind, ref string) (question.Work, error)

	// CancelWork stops the work (kind, ref) a member stops following
	// (question:explore-stop) and reports its state. Called on doc's
	// goroutine before the change is committed; it must be quick.
	// Default: reports the work cancelled.
	CancelWork(ctx context.Context, doc string, kind question.FindingKind, ref string) (question.Work, error)

	// KnownMember reports whether login is a member of doc who can be
	// asked (question:explore with member); false refuses the ask as
	// not found. Called on doc's goroutine; it must not block.
	// Default: true, anyone named can be asked.
	KnownMember(doc, login string) bool

	// FindingsChanged tells the host that a findings command of doc
	// (explore, explore-stop, take) changed a finding and is durable,
	// so that its research watcher posts any notice the change owes.
	// Called on doc's goroutine; it must not block. Default: nothing.
	FindingsChanged(doc string)

	// Opened tells the host that login joined doc (each question:hello,
	// reconnects included), so that it can settle what the document
	// owes, such as findings whose work ended unseen. Called on doc's
	// goroutine; it must not block. Default: nothing.
	Opened(doc, login string)

	// Committed tells the host that a group of doc's commands (or a
	// Server.Do) was committed, with the ids of the decisions whose
	// record, draft, projection or answer row it wrote, sorted and each
	// once; the slice is the host's. A host wakes there the work that
	// follows saves, such as answer delivery. Called on doc's
	// goroutine, after the commit and before the group's replies and
	// broadcasts go out, so it must not block. Default: nothing.
	Committed(doc string, decisions []string)
}

// NopHost is the Host of a server with no application around it: no
// implementation runs, expands create nothing, research is unavailable,
// anyone named can be asked, and notifications go nowhere. Embed it in a
// Host to take these defaults for the methods it does not define.
type NopHost struct{}

var _ Host = NopHost{}

// ImplementationActive reports false: no implementation runs.
func (NopHost) ImplementationActive(doc, decision string) bool { return false }

// EnsureChannel creates nothing and accepts the expand.
func (NopHost) EnsureChannel(ctx context.Context, doc, channel string) error { return nil }

// Work refuses research and investigations as unavailable.
func (NopHost) Work(ctx context.Context, doc string, kind question.FindingKind, ref string) (question.Work, error) {
	return question.Work{}, &question.Refusal{Reason: question.Unavailable, Message: "this server runs no research or investigations"}
}

// CancelWork reports the work cancelled.
func (NopHost) CancelWork(ctx context.Context, doc string, kind question.FindingKind, ref string) (question.Work, error) {
	return question.Work{Status: question.WorkCancelled}, nil
}

// KnownMember reports true: anyone named can be asked.
func (NopHost) KnownMember(doc, login string) bool { return true }

// FindingsChanged does nothing.
func (NopHost) FindingsChanged(doc string) {}

// Opened does nothing.
func (NopHost) Opened(doc, login string) {}

// Committed does nothing.
func (NopHost) Committed(doc string, decisions []string) {}
