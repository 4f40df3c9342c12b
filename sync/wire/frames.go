package wire

import (
	"github.com/accord-crdt/accord/question"
)

// Version is the protocol version a hello carries and a welcome confirms.
const Version = 1

// Kind names a frame, and the events a replica reports. Every kind of
// the protocol and of sync/replica's events is a constant of this one
// set; the strings are what travels on the wire.
type Kind string

// Kinds of frames.
const (
	// Handshake.
	KindHello   Kind = "hello"
	KindWelcome Kind = "welcome"
	KindError   Kind = "error"

	// Requests (client → server). Replies carry the same kind and the
	// request's rid.
	KindCreate    Kind = "question:create"
	KindEdit      Kind = "question:edit"
	KindSubmit    Kind = "question:submit"
	KindReopen    Kind = "question:reopen"
	KindDiscard   Kind = "question:discard"
	KindOption    Kind = "question:option"
	KindCriterion Kind = "question:criterion"
	KindWhy       Kind = "question:why"
	KindExpand    Kind = "question:expand"
	// KindProvenance asks who set each value of a decision's current
	// draft (question.Authority.Provenance); members who may only read
	// may ask. It takes a Target; the reply's Provenance holds the answer.
	KindProvenance Kind = "question:provenance"

	// Both directions: automerge sync traffic for catch-up.
	KindSync Kind = "question:sync"

	// Server → client.
	KindDoc            Kind = "question:doc"     // a decision's whole accepted document
	KindChanges        Kind = "question:changes" // accepted changes, encoded once for every peer in step
	KindCreated        Kind = "question:created"
	KindMeta           Kind = "question:meta"
	KindResolved       Kind = "question:resolved"
	KindReopened       Kind = "question:reopened"
	KindDiscarded      Kind = "question:discarded"
	KindOptionAdded    Kind = "question:option-added"
	KindCriterionAdded Kind = "question:criterion-added"
)

// Kinds of sync/replica events that are not frames (replica.Event.Kind
// is otherwise the kind of the server frame it reports). They never
// travel on the wire.
const (
	// KindConnected: the server welcomed the client; By is the member.
	KindConnected Kind = "connected"
	// KindReconnecting: the connection was lost or could not be made; the
	// client is backing off and will redial. Err says why.
	KindReconnecting Kind = "reconnecting"
	// KindEditRefused: the server refused the decision's draft edit; Err is
	// the *question.Refusal. If its Reset is set, the replica went back to
	// the accepted draft and the local changes not yet accepted are gone;
	// otherwise the changes are kept and sent again with the next edit.
	KindEditRefused Kind = "edit-refused"
	// KindOverwritten: another member's accepted edit replaced a value
	// this member had set (a mark, a choice or a written answer); Cell
	// says which, what it holds now and what it replaced, and By who
	// replaced it. Reported once, when the change arrives.
	KindOverwritten Kind = "overwritten"
)

// Kinds lists every frame kind of this protocol version, in the order
// above.
func Kinds() []Kind {
	return []Kind{KindHello, KindWelcome, KindError, KindCreate, KindEdit, KindSubmit, KindReopen, KindDiscard,
		KindOption, KindCriterion, KindWhy, KindExpand, KindSync, KindDoc, KindChanges, KindCreated, KindMeta,
		KindResolved, KindReopened, KindDiscarded, KindOptionAdded, KindCriterionAdded,
		KindExplore, KindExploreStop, KindTake, KindPage, KindProvenance, KindPresence}
}

// Message is any frame of the protocol.
type Message interface {
	// FrameKind returns the frame's kind.
	FrameKind() Kind
}

// Header is the part every frame shares.
type Header struct {
	Kind Kind `json:"kind"`
	// RID correlates a request with its reply.
	RID string `json:"rid,omitempty"`
}

// FrameKind implements Message.
func (h Header) FrameKind() Kind { return h.Kind }

// Hello opens a connection. Have lists the decisions the client already
// holds with the heads it holds them at, so the server sends only what is
// missing.
//
// Deflate asks for the join's question:doc frames compressed: the server
// then sends each one whose DEFLATE form is smaller with Deflated set.
type Hello struct {
	Header
	V       int                 `json:"v"`
	Have    map[string][]string `json:"have,omitempty"`
	Deflate bool                `json:"deflate,omitempty"`
}

// Welcome answers Hello: the member as the server knows them and every
// decision record of the document. The decisions' documents follow as Doc
// or Changes frames.
type Welcome struct {
	Header
	V       int               `json:"v"`
	Doc     string            `json:"doc"`
	Member  string            `json:"member"`
	Write   bool              `json:"write"`
	Records []question.Record `json:"records"`
}

// Error reports a frame the server could not read, or a protocol fault.
type Error struct {
	Header
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Create asks for one or more decision cards (1 to 10, all or none).
type Create struct {
	Header
	Cards []Card `json:"cards"`
}

// Card is one decision to create.
type Card struct {
	Key        string              `json:"key"`
	Origin     question.Origin     `json:"origin,omitempty"`
	Definition question.Definition `json:"definition"`
	Revision   string              `json:"revision,omitempty"`
	Passage    []string            `json:"passage,omitempty"`
}

// Edit carries a replica's new changes to a decision's shared draft
// (crdt.Doc.ChangesSince encoding).
type Edit struct {
	Header
	ID      string `json:"id"`
	Changes []byte `json:"changes"`
}

// Submit saves one or several decisions; Heads is each displayed revision.
type Submit struct {
	Header
	Items []SubmitItem `json:"items"`
}

// SubmitItem is one decision of a Submit.
type SubmitItem struct {
	ID    string   `json:"id"`
	Heads []string `json:"heads"`
}

// Target names one decision: reopen, discard and expand take only this.
// Generation, on a reopen, is the saved generation the member displays
// (0: the current one); a reopen resent after its reply was lost is then
// known again and answered Repeated.
type Target struct {
	Header
	ID         string `json:"id"`
	Generation uint64 `json:"generation,omitempty"`
}

// Append asks for a new option (question:option) or criterion
// (question:criterion). Key is the idempotency token.
type Append struct {
	Header
	ID       string `json:"id"`
	Question string `json:"question"`
	Key      string `json:"key"`
	Label    string `json:"label"`
}

// Why sets, replaces or (empty text) clears a settled decision's why.
// Generation is the saved generation the member displays (0: the current
// one), as for a reopen.
type Why struct {
	Header
	ID         string `json:"id"`
	Text       string `json:"text"`
	Generation uint64 `json:"generation,omitempty"`
	// Seen is the why the member displayed when they set theirs
	// (question.WhyRequest.Seen); absent sets it whatever it is.
	Seen *string `json:"seen,omitempty"`
}

// Sync carries one automerge sync message for a decision.
type Sync struct {
	Header
	ID  string `json:"id"`
	Msg []byte `json:"msg"`
}

// Reply answers a request: Kind and RID echo it. OK false carries the
// refusal's Reason and Message; Reset asks the client to return its
// replica to the accepted draft, which Doc then holds.
type Reply struct {
	Header
	ID      string          `json:"id,omitempty"`
	OK      bool            `json:"ok"`
	Reason  question.Reason `json:"reason,omitempty"`
	Message string          `json:"message,omitempty"`
	Reset   bool            `json:"reset,omitempty"`

	Heads      []string             `json:"heads,omitempty"`
	Record     *question.Record     `json:"record,omitempty"`
	Records    []question.Record    `json:"records,omitempty"`
	Results    []SubmitResult       `json:"results,omitempty"`
	Option     *question.Option     `json:"option,omitempty"`
	Criterion  *question.Criterion  `json:"criterion,omitempty"`
	Definition *question.Definition `json:"definition,omitempty"`
	Repeated   bool                 `json:"repeated,omitempty"`
	Doc        []byte               `json:"doc,omitempty"`
	Finding    *question.Finding    `json:"finding,omitempty"`
	// Provenance answers question:provenance.
	Provenance []question.CellProvenance `json:"provenance,omitempty"`
}

// SubmitResult is one decision's outcome within a Submit reply. Repeated
// says the same member's save of the same heads had already taken effect
// (a save resent after its reply was lost); Record is then the decision
// as it is now.
type SubmitResult struct {
	ID       string           `json:"id"`
	OK       bool             `json:"ok"`
	Repeated bool             `json:"repeated,omitempty"`
	Reason   question.Reason  `json:"reason,omitempty"`
	Message  string           `json:"message,omitempty"`
	Record   *question.Record `json:"record,omitempty"`
}

// Doc carries a decision's whole accepted CRDT document. Deflated says
// that Doc holds the document compressed with raw DEFLATE (RFC 1951); only
// a client whose hello asked for it receives such frames, and InflateDoc
// restores the document.
type Doc struct {
	Header
	ID       string   `json:"id"`
	Doc      []byte   `json:"doc"`
	Heads    []string `json:"heads"`
	Deflated bool     `json:"deflated,omitempty"`
}

// Changes carries changes the authority accepted, with the heads after
// them; a replica holding every dependency applies them directly, in one
// call. The server coalesces the accepted changes of one decision within
// a commit group into one frame per connection: Changes is then the
// concatenation of the accepted change chunks in commit order, Heads the
// heads after the last, By the author of the last, and ByAll every
// author, in the order of their first change, each once (absent when the
// frame carries one accepted edit). Cells are the values the accepted
// edits changed, each attributed to its member with what it replaced and
// who had set that (question.CellProvenance), in commit order: a replica
// tells its member when someone else replaced their value.
type Changes struct {
	Header
	ID      string                    `json:"id"`
	Changes []byte                    `json:"changes"`
	Heads   []string                  `json:"heads"`
	By      string                    `json:"by,omitempty"`
	ByAll   []string                  `json:"byAll,omitempty"`
	Cells   []question.CellProvenance `json:"cells,omitempty"`
}

// Event announces a committed change of a record: created, meta,
// resolved, reopened, discarded, option-added and criterion-added.
type Event struct {
	Header
	ID         string               `json:"id"`
	Record     *question.Record     `json:"record,omitempty"`
	Answer     *question.Answer     `json:"answer,omitempty"`
	Question   string               `json:"question,omitempty"`
	Option     *question.Option     `json:"option,omitempty"`
	Criterion  *question.Criterion  `json:"criterion,omitempty"`
	Definition *question.Definition `json:"definition,omitempty"`
	By         string               `json:"by,omitempty"`
}
