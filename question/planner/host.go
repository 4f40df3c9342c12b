package planner

import (
	"context"
	"slices"
	"time"

	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
)

// The host owns the document, Chat, members and the Planner runtime; the
// package reaches them only through the small interfaces below. Package
// memhost implements all of them in memory.

// BlockKind is what a block of the plan document is.
type BlockKind string

// Block kinds.
const (
	Title     BlockKind = "title"
	Heading   BlockKind = "heading"
	Paragraph BlockKind = "paragraph"
	Table     BlockKind = "table"
	Diagram   BlockKind = "diagram"
	Card      BlockKind = "card" // a decision card
)

// Prose reports whether blocks of kind k are ordinary passage blocks: a
// paragraph, a table or a diagram.
func (k BlockKind) Prose() bool { return k == Paragraph || k == Table || k == Diagram }

// Block is one block of a plan document.
type Block struct {
	ID   string    `json:"id"`
	Kind BlockKind `json:"kind"`
	Text string    `json:"text,omitempty"`
	// Decision and Link are set on Card blocks: the decision the card
	// shows and the block it is linked to ("" when unlinked).
	Decision string `json:"decision,omitempty"`
	Link     string `json:"link,omitempty"`
}

// Receipt says that the saved answer of one decision's settle (its
// generation) was written into the document by a write-up.
type Receipt struct {
	Decision   string `json:"decision"`
	Generation uint64 `json:"generation"`
}

// Snapshot is a document as read at one revision.
type Snapshot struct {
	Revision string
	Blocks   []Block
	Receipts []Receipt
}

// Has reports whether the snapshot holds receipt r.
func (s Snapshot) Has(r Receipt) bool { return slices.Contains(s.Receipts, r) }

// Placement puts a decision's card into the document: after block After
// ("" puts it at the end), linked to block Link ("" leaves it unlinked).
type Placement struct {
	Decision string `json:"decision"`
	After    string `json:"after"`
	Link     string `json:"link"`
}

// Anchor links a decision to the blocks of its passage.
type Anchor struct {
	Decision string
	Blocks   []string
}

// WriteUp is one write-up of a passage, applied in one commit.
type WriteUp struct {
	// Base is the revision the write-up was prepared from.
	Base string
	// Scope is the passage's blocks, in document order.
	Scope []string
	// Source is the new text of scope blocks, by block id; blocks keep
	// their ids and kinds, so anchors stay valid.
	Source map[string]string
	// Anchors are the decisions of the scope and their passages.
	Anchors []Anchor
	// Receipts are the answers this write-up writes.
	Receipts []Receipt
}

// Document is the host's plan document.
//
// Contract: Read returns blocks in document order with the revision and
// receipts of one moment. Unchanged reports true only if the block exists
// and has not changed since revision (an unknown revision counts as a
// change). Place is idempotent per decision: a card already placed stays
// where it is. ApplyWriteUp commits the source, the anchors and the
// receipts together or not at all; when every receipt is already present
// it changes nothing and returns nil (so retrying never applies an answer
// twice); when the document moved past Base it returns ErrConflict; when a
// scope block is gone it returns ErrTargetLost, when one is duplicated or
// the scope is no longer one passage ErrTargetAmbiguous.
type Document interface {
	Read(ctx context.Context, doc string) (Snapshot, error)
	Unchanged(ctx context.Context, doc, block, revision string) (bool, error)
	Place(ctx context.Context, doc string, cards []Placement) error
	ApplyWriteUp(ctx context.Context, doc string, w WriteUp) error
}

// Notice is a system notice in Chat; its ID makes posting it idempotent.
// A quiet notice (a failed research request, say) is shown without
// drawing attention: no badge, no sound.
type Notice struct {
	ID    string
	Text  string
	Quiet bool
}

// Turn is a Planner turn nobody typed, carrying saved answers.
type Turn struct {
	// ID is the fresh id the answers were claimed under; the turn's Chat
	// notice carries it.
	ID  string
	Doc string
	// Owner is the existing Planner owner the turn runs under.
	Owner string
	// Notice is the text of the one system notice: who answered, and the
	// question for one answer or a count for several.
	Notice string
	// Prompt lists each question, answer, chosen option, criterion mark
	// and who saved it, for the Planner.
	Prompt  string
	Answers []TurnAnswer
}

// Chat is the document's Chat.
//
// Contract: Accept posts the turn's notice (carrying Turn.ID) and queues
// the turn for the Planner runtime, durably and atomically, once per ID: a
// second Accept of an accepted ID does nothing and returns nil. Once Accept
// returned nil the host starts the turn (under Turn.Owner) when the Chat is
// free. Accepted reports whether a turn or notice with the id was accepted,
// also after a restart of either side. Post is idempotent per Notice.ID.
type Chat interface {
	Post(ctx context.Context, doc string, n Notice) error
	Accept(ctx context.Context, doc string, t Turn) error
	Accepted(ctx context.Context, doc, id string) (bool, error)
}

// Runtime is the host's Planner runtime.
//
// Owner returns the document's existing Planner owner (ok false when there
// is none); the package never makes anyone the owner. Remote reports
// whether the harness is remote (HARNESS=remote), where a Planner must be
// Attached for work nobody typed. Busy reports whether a Planner turn runs
// or waits in the document's Chat. WriteUp and DraftWhy run the write-up
// job (write_decision_prose) for a passage, or its why-only form, and
// return what the Planner wrote; they change nothing themselves.
type Runtime interface {
	Owner(ctx context.Context, doc string) (login string, ok bool, err error)
	Remote() bool
	Attached(ctx context.Context, doc string) (bool, error)
	Busy(ctx context.Context, doc string) (bool, error)
	WriteUp(ctx context.Context, doc string, req WriteUpRequest) (WriteUpResult, error)
	DraftWhy(ctx context.Context, doc string, req WhyRequest) (string, error)
}

// Session is a member's captured Planner session.
type Session struct {
	Login string
	Token string
}

// Members are the document's members and their captured sessions.
type Members interface {
	Member(ctx context.Context, doc, login string) (question.Member, bool, error)
	Session(ctx context.Context, doc, login string) (Session, bool, error)
}

// TurnAnswer is one saved answer as the Planner reads it.
type TurnAnswer struct {
	Decision   string             `json:"decision"`
	Generation uint64             `json:"generation"`
	By         string             `json:"by"`
	SavedAt    time.Time          `json:"savedAt"`
	Questions  []AnsweredQuestion `json:"questions"`
	// Passage is the card's passage; when set, the turn leaves it to the
	// decision's write-up.
	Passage []string `json:"passage,omitempty"`
	// PassageDeleted is set when a whole-document rewrite deleted the
	// card's passage and dropped its write-up: nothing else will state
	// the answer in the document.
	PassageDeleted bool `json:"passageDeleted,omitempty"`
	// Findings are the decision's ready findings: research results,
	// investigations and the takes of asked members, which the write-up
	// and the why draft read as context (R10).
	Findings []FindingContext `json:"findings,omitempty"`
}

// FindingContext is one ready finding as the Planner reads it.
type FindingContext struct {
	Kind    question.FindingKind `json:"kind"`
	Title   string               `json:"title,omitempty"`
	Summary string               `json:"summary"`
	Sources []question.Source    `json:"sources,omitempty"`
	Branch  string               `json:"branch,omitempty"`
	// By is the asked member, for a take.
	By     string          `json:"by,omitempty"`
	Stance question.Stance `json:"stance,omitempty"`
}

// AnsweredQuestion is one question of a saved answer.
type AnsweredQuestion struct {
	Question string `json:"question"`
	Written  bool   `json:"written,omitempty"`
	// Answer is the written answer.
	Answer string `json:"answer,omitempty"`
	// Chosen are the chosen options.
	Chosen []question.Option `json:"chosen,omitempty"`
	// Criteria hold each criterion with each chosen option's mark.
	Criteria []CriterionMark `json:"criteria,omitempty"`
}

// CriterionMark is the mark a chosen option got for one criterion; Mark is
// empty when the cell was left unmarked.
type CriterionMark struct {
	Criterion string     `json:"criterion"`
	Option    string     `json:"option"`
	Mark      marks.Mark `json:"mark,omitempty"`
}

// WriteUpRequest asks the Planner to write a passage with its saved answers.
type WriteUpRequest struct {
	Doc   string
	Owner string
	// Blocks are the scope's blocks as they are now, in order.
	Blocks []Block
	// Answers are every saved answer of the scope, earlier ones included,
	// so the new text keeps them.
	Answers []TurnAnswer
	// New are the answers this write-up adds.
	New    []Receipt
	Prompt string
}

// WriteUpResult is the passage's new text, by block id; blocks left out
// keep their text.
type WriteUpResult struct {
	Source map[string]string
}

// WhyRequest asks the Planner to draft the why of one settle, under the
// settler's captured session.
type WhyRequest struct {
	Doc     string
	Job     string // why:<decision>:<generation>
	Session Session
	Answer  TurnAnswer
	Prompt  string
}
