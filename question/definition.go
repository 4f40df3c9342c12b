package question

import (
	"time"

	"github.com/accord-crdt/accord/marks"
)

// Response says how a question is answered.
type Response string

const (
	// Choice questions offer options (single or multiple). It is the mode
	// of every question without a response marker, old ones included.
	Choice Response = ""
	// Text questions have one written answer field (response: "text"),
	// no options and multiple false.
	Text Response = "text"
)

// Limits of a definition.
const (
	MaxBatch         = 10  // cards in one open_decisions batch
	MaxCriteria      = 5   // criteria per choice question
	MaxLabel         = 40  // characters in a criterion label
	MaxOptions       = 50  // options per choice question
	MaxOptionLabel   = 200 // characters in an option label
	MaxQuestionText  = 2000
	MaxContext       = 10000
	MaxQuestions     = 20 // questions in one definition
	MaxWhy           = 300
	MaxAnswerText    = 100000 // characters in a written answer
	MaxFindings      = 20
	MaxKeyLen        = 200 // stable keys and idempotency keys
	MaxPassageBlocks = 8
)

// Option is one selectable alternative of a choice question.
type Option struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// Criterion is a named quality that a choice question's options are
// judged against; one column of the matrix.
type Criterion struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// Question is one question of a definition.
type Question struct {
	ID       string      `json:"id"`
	Text     string      `json:"question"`
	Context  string      `json:"context,omitempty"`
	Response Response    `json:"response,omitempty"`
	Options  []Option    `json:"options"`
	Multiple bool        `json:"multiple"`
	Criteria []Criterion `json:"criteria,omitempty"`
	// Verbatim marks a host dialog shown word for word; it never has
	// criteria.
	Verbatim bool `json:"verbatim,omitempty"`
}

// Written reports whether q takes a written answer.
func (q *Question) Written() bool { return q.Response == Text }

// Definition is what a decision asks. It is frozen at creation, except that
// options and criteria may be appended while the decision is open.
type Definition struct {
	Questions []Question `json:"questions"`
}

// Origin says who raised a decision.
type Origin string

// Origins.
const (
	FromPlanner  Origin = "planner"
	FromPerson   Origin = "person"
	FromChat     Origin = "chat"
	FromWorkflow Origin = "workflow"
)

// Status is where a decision is in its lifecycle.
type Status string

// Statuses.
const (
	Open      Status = "open"
	Settled   Status = "settled"
	Discarded Status = "discarded"
)

// QuestionAnswer is the saved answer to one question.
type QuestionAnswer struct {
	Question string `json:"question"`
	// Choices are the chosen option ids (choice questions).
	Choices []string `json:"choices,omitempty"`
	// Text is the written answer (written questions).
	Text string `json:"text,omitempty"`
	// Marks is the sparse snapshot of marked cells, absent when none.
	Marks marks.Snapshot `json:"marks,omitempty"`
}

// Answer is a saved answer to every question of a decision, with who saved
// it and when.
type Answer struct {
	Generation uint64           `json:"generation"`
	Answers    []QuestionAnswer `json:"answers"`
	By         string           `json:"by"`
	At         time.Time        `json:"at"`
	// Provenance is who set each value of the draft as it was saved
	// (Authority.Provenance at the save), kept with the answer into the
	// history.
	Provenance []CellProvenance `json:"provenance,omitempty"`
	// Heads is the draft revision the save claimed (crdt.Heads.String),
	// by which a save resent after its reply was lost is known again;
	// empty in answers saved before it was kept.
	Heads string `json:"heads,omitempty"`
}

// HistoryEntry is an earlier answer kept when the decision was reopened,
// with the why that explained it.
type HistoryEntry struct {
	Answer
	Why        string    `json:"why,omitempty"`
	WhyBy      string    `json:"whyBy,omitempty"`
	ReopenedBy string    `json:"reopenedBy"`
	ReopenedAt time.Time `json:"reopenedAt"`
}

// Appended is one entry of a record's idempotency map: the option or
// criterion that an append request's key minted.
type Appended struct {
	Kind     string `json:"kind"` // "option" or "criterion"
	Question string `json:"question"`
	ID       string `json:"id"`
	// By and At say who appended it and when (absent in records written
	// before they were kept).
	By string    `json:"by,omitempty"`
	At time.Time `json:"at,omitzero"`
}

// Record is the authoritative state of one decision.
type Record struct {
	ID         string     `json:"id"`
	Key        string     `json:"key"`
	Origin     Origin     `json:"origin"`
	Status     Status     `json:"status"`
	Definition Definition `json:"definition"`
	// Generation counts settles' drafts: the shared draft of generation g
	// is the working answer between the (g-1)th reopen and the next save.
	Generation uint64 `json:"generation"`
	// Answer is the current saved answer (settled decisions).
	Answer *Answer `json:"answer,omitempty"`
	// Why explains a settled answer: one plain sentence.
	Why   string `json:"why,omitempty"`
	WhyBy string `json:"whyBy,omitempty"`
	// History keeps earlier answers, oldest first.
	History []HistoryEntry `json:"history,omitempty"`
	// Revision is the document revision the creator read.
	Revision string `json:"revision,omitempty"`
	// Passage holds the related block addresses, primary first.
	Passage []string `json:"passage,omitempty"`
	// Reviewed is the document revision at which the Planner last
	// reviewed the passage (anchor_plan); empty until then.
	Reviewed string `json:"reviewed,omitempty"`
	// ChildID is the child document's channel id, once it exists.
	ChildID   string    `json:"childId,omitempty"`
	CreatedBy string    `json:"createdBy"`
	CreatedAt time.Time `json:"createdAt"`
	// DiscardedBy and DiscardedAt say who set the card aside.
	DiscardedBy string    `json:"discardedBy,omitempty"`
	DiscardedAt time.Time `json:"discardedAt,omitzero"`
	// Appended is the idempotency map shared by option and criterion
	// appends: request key to what it minted.
	Appended map[string]Appended `json:"appended,omitempty"`
	// Suggested is the Planner's advisory suggested choice; it never
	// resolves anything (see Suggestion).
	Suggested *Suggestion `json:"suggested,omitempty"`
	// WriteUp and WhyDraft are the jobs the current settle queued: the
	// write-up of the passage and the why draft (see Job).
	WriteUp  *Job `json:"writeUp,omitempty"`
	WhyDraft *Job `json:"whyDraft,omitempty"`
	// Findings are what research, investigations and asks brought, at
	// most MaxFindings (see Finding).
	Findings []Finding `json:"findings,omitempty"`
}
