package planner

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/accord-crdt/accord/question"
)

// Call says where a Planner tool call comes from: the document it acts on
// and the document the Planner's turn is focused on ("" means Doc).
type Call struct {
	Doc   string
	Focus string
}

// IsChild reports whether doc is a decision's own page (a child document,
// channel "question:<id>").
func IsChild(doc string) bool { return strings.HasPrefix(doc, "question:") }

// ToolsOptions configures Tools. Authorities and Document are required.
type ToolsOptions struct {
	Authorities Authorities
	Document    Document
	// Planner is the login the Planner's cards are created under; "" means
	// "planner".
	Planner string
	// NewKey mints keys for asks sent without one; nil uses random keys.
	NewKey func() string
	// Editor, if set, is the host's editable plan: the tools then serve
	// edit_plan and update_document too.
	Editor Editor
	// Turns, if set, are Chat's turns as an agent outside the host takes
	// them: the tools then serve await_answers too (AwaitAnswers).
	Turns AgentTurns
}

// Tools are the Planner's decision tools, as library calls and as tool
// definitions (Definitions) a host hands to its agent. The Planner has no
// tool that saves, marks or confirms an answer: only people Save.
type Tools struct {
	opts ToolsOptions
	who  question.Member
}

// NewTools returns the tools.
func NewTools(opts ToolsOptions) (*Tools, error) {
	if opts.Authorities == nil || opts.Document == nil {
		return nil, errors.New("planner: ToolsOptions.Authorities and Document are required")
	}
	if opts.Planner == "" {
		opts.Planner = "planner"
	}
	if opts.NewKey == nil {
		opts.NewKey = rand.Text
	}
	return &Tools{opts: opts, who: question.Member{Login: opts.Planner, Write: true}}, nil
}

// Label names an option or a criterion; the server mints its id.
type Label struct {
	Label string `json:"label"`
}

// CardInput is one card of open_decisions.
type CardInput struct {
	// Revision is the document revision the Planner read.
	Revision string `json:"revision"`
	// Key is the Planner's stable key: a retry with it returns the same card.
	Key string `json:"key"`
	// Blocks are the related block addresses, primary first: the passage.
	Blocks   []string `json:"blocks"`
	Question string   `json:"question"`
	Context  string   `json:"context,omitempty"`
	// Response is "text" for a written card, omitted for a choice card.
	// A written card has options [] (present and empty) and multiple false.
	Response string  `json:"response,omitempty"`
	Options  []Label `json:"options"`
	Multiple bool    `json:"multiple,omitempty"`
	Criteria []Label `json:"criteria,omitempty"`
}

// Opened is one card a tool opened or found.
type Opened struct {
	Key      string          `json:"key"`
	ID       string          `json:"id"`
	Status   question.Status `json:"status"`
	Repeated bool            `json:"repeated,omitempty"`
	// After and Link say where the card went: after block After ("" at the
	// end), linked to block Link ("" unlinked).
	After string `json:"after,omitempty"`
	Link  string `json:"link,omitempty"`
}

func plannerKey(key string) string { return "planner:" + strings.TrimSpace(key) }

func (t *Tools) checkFocus(call Call) error {
	if call.Doc == "" {
		return &question.Refusal{Reason: question.Invalid, Message: "no document"}
	}
	if call.Focus != "" && IsChild(call.Focus) && !IsChild(call.Doc) {
		return &question.Refusal{Reason: question.Forbidden, Message: "a turn focused on a decision's page cannot create decisions in the root document"}
	}
	return nil
}

// definition builds the definition of one question, refusing a written
// question that is not exactly response "text", options [] and multiple
// false.
func definition(text, context, response string, options []Label, multiple bool, criteria []Label) (question.Definition, error) {
	q := question.Question{Text: text, Context: context, Multiple: multiple}
	switch response {
	case "text":
		q.Response = question.Text
		switch {
		case options == nil:
			return question.Definition{}, refusef(`a written question needs options: [] (response "text", options [], multiple false)`)
		case len(options) != 0:
			return question.Definition{}, refusef(`a written question has options [], not %d options; omit response for a choice`, len(options))
		case multiple:
			return question.Definition{}, refusef(`a written question has multiple false`)
		case len(criteria) != 0:
			return question.Definition{}, refusef("a written question has no criteria; criteria apply only to choice questions")
		}
		q.Options = []question.Option{}
	case "":
		for _, o := range options {
			q.Options = append(q.Options, question.Option{Label: o.Label})
		}
		for _, c := range criteria {
			q.Criteria = append(q.Criteria, question.Criterion{Label: c.Label})
		}
	default:
		return question.Definition{}, refusef(`response is "text" or omitted, not %q`, response)
	}
	return question.Definition{Questions: []question.Question{q}}, nil
}

func refusef(format string, args ...any) *question.Refusal {
	return &question.Refusal{Reason: question.Invalid, Message: fmt.Sprintf(format, args...)}
}

// OpenDecisions opens 1 to question.MaxBatch written or choice cards in one
// durable batch: all of them or none. Each carries the revision the
// Planner read, its stable key and its passage (related block addresses,
// primary first), and goes beside its primary block. A passage block the
// plan does not hold is refused (invalid, naming it); a revision the plan
// cannot have been read at (made up, say), or a passage block changed
// since it, is refused stale, so no card is placed by prose the Planner
// never saw. A key seen before returns that card, whatever became of it
// or of the plan. It returns at once; it never waits for answers, and
// stopping the Planner afterwards withdraws nothing.
func (t *Tools) OpenDecisions(ctx context.Context, call Call, cards []CardInput) ([]Opened, error) {
	if err := t.checkFocus(call); err != nil {
		return nil, err
	}
	if len(cards) == 0 {
		return nil, refusef("open_decisions needs 1 to %d cards", question.MaxBatch)
	}
	if len(cards) > question.MaxBatch {
		return nil, &question.Refusal{Reason: question.TooMany, Message: fmt.Sprintf("open_decisions opens at most %d cards; got %d", question.MaxBatch, len(cards))}
	}
	snap, err := t.opts.Document.Read(ctx, call.Doc)
	if err != nil {
		return nil, fmt.Errorf("planner: read %q: %w", call.Doc, err)
	}
	kinds := map[string]BlockKind{}
	for _, b := range snap.Blocks {
		kinds[b.ID] = b.Kind
	}
	// The revisions and blocks the cards name are checked against the
	// host's document here, outside the authority; the verdicts are used
	// below for the cards that are not retries.
	known := map[string]bool{}
	changed := map[[2]string]bool{} // (revision, block): changed since
	for _, c := range cards {
		if _, done := known[c.Revision]; done || c.Revision == "" {
			continue
		}
		if known[c.Revision], err = t.known(ctx, call.Doc, snap, c.Revision); err != nil {
			return nil, err
		}
	}
	for _, c := range cards {
		if c.Revision == snap.Revision || !known[c.Revision] {
			continue // nothing changed since the current revision
		}
		for _, b := range c.Blocks {
			if k, ok := kinds[b]; !ok || k == Card {
				continue
			}
			ok, err := t.opts.Document.Unchanged(ctx, call.Doc, b, c.Revision)
			if err != nil {
				return nil, fmt.Errorf("planner: read block %q of %q: %w", b, call.Doc, err)
			}
			changed[[2]string{c.Revision, b}] = !ok
		}
	}
	var out []Opened
	err = t.opts.Authorities.Do(ctx, call.Doc, func(a *question.Authority) error {
		reqs := make([]question.CreateRequest, len(cards))
		for i, c := range cards {
			reqs[i] = question.CreateRequest{Key: plannerKey(c.Key), Origin: question.FromPlanner, Revision: c.Revision, Passage: c.Blocks}
			if strings.TrimSpace(c.Key) == "" {
				return refusef("card %d needs a stable key", i+1)
			}
			if _, seen := a.Lookup(reqs[i].Key); seen {
				continue // a retry: the card exists, whatever the document says now
			}
			def, err := definition(c.Question, c.Context, c.Response, c.Options, c.Multiple, c.Criteria)
			if err != nil {
				return prefix(err, fmt.Sprintf("card %d (%s): ", i+1, c.Key))
			}
			if c.Revision == "" {
				return refusef("card %d (%s) needs the document revision the Planner read", i+1, c.Key)
			}
			if len(c.Blocks) == 0 {
				return refusef("card %d (%s) needs the related block addresses of its passage", i+1, c.Key)
			}
			for _, b := range c.Blocks {
				k, ok := kinds[b]
				switch {
				case !ok:
					return refusef("card %d (%s): block %s is not in the document", i+1, c.Key, b)
				case k == Card:
					return refusef("card %d (%s): block %s is a decision card, not prose", i+1, c.Key, b)
				}
			}
			if !known[c.Revision] {
				return unknownRevision(fmt.Sprintf("card %d (%s): revision", i+1, c.Key), c.Revision, snap.Revision)
			}
			for _, b := range c.Blocks {
				if changed[[2]string{c.Revision, b}] {
					return blockChanged(fmt.Sprintf("card %d (%s)", i+1, c.Key), b, c.Revision)
				}
			}
			reqs[i].Definition = def
		}
		created, err := a.Create(ctx, t.who, reqs)
		if err != nil {
			return err
		}
		for i, c := range created {
			o := Opened{Key: cards[i].Key, ID: c.Record.ID, Status: c.Record.Status, Repeated: c.Repeated}
			if len(c.Record.Passage) > 0 {
				o.After, o.Link = c.Record.Passage[0], c.Record.Passage[0]
			}
			out = append(out, o)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, t.place(ctx, call.Doc, out)
}

// place puts cards into the document. The cards are committed already, so
// it goes on even if the Planner was stopped meanwhile.
func (t *Tools) place(ctx context.Context, doc string, cards []Opened) error {
	ps := make([]Placement, len(cards))
	for i, c := range cards {
		ps[i] = Placement{Decision: c.ID, After: c.After, Link: c.Link}
	}
	if err := t.opts.Document.Place(context.WithoutCancel(ctx), doc, ps); err != nil {
		return fmt.Errorf("planner: place cards in %q (they are saved; retry with the same keys): %w", doc, err)
	}
	return nil
}

func prefix(err error, p string) error {
	var r *question.Refusal
	if errors.As(err, &r) {
		c := *r
		c.Message = p + c.Message
		return &c
	}
	return err
}

// SingleDecision is the input of open_decision.
type SingleDecision struct {
	Revision string `json:"revision"`
	Key      string `json:"key"`
	Question string `json:"question"`
	Context  string `json:"context,omitempty"`
	// Block optionally names the one block the question concerns.
	Block string `json:"block,omitempty"`
}

// OpenDecision opens one written decision and returns its identity at
// once; repeating the key returns the same card. It takes no criteria and
// cannot confirm an answer. The card goes beside the named block, linked
// to it, if that block has not changed since the revision the Planner
// read; otherwise beside the document's first section (the first heading
// after an opening title, else the first paragraph); a document with no
// section gets the card at its end, unlinked. It has no write-up.
//
// A named block the plan does not hold, or a decision card, is refused
// (invalid, naming it), and a revision the plan cannot have been read at
// is refused stale: the card is never moved to the first section for
// input that names nothing real. A retry of a key returns its card
// whatever the plan says now.
func (t *Tools) OpenDecision(ctx context.Context, call Call, in SingleDecision) (Opened, error) {
	if err := t.checkFocus(call); err != nil {
		return Opened{}, err
	}
	if strings.TrimSpace(in.Key) == "" {
		return Opened{}, refusef("open_decision needs a stable request key")
	}
	if in.Revision == "" {
		return Opened{}, refusef("open_decision needs the document revision the Planner read")
	}
	def, err := definition(in.Question, in.Context, "text", []Label{}, false, nil)
	if err != nil {
		return Opened{}, err
	}
	snap, err := t.opts.Document.Read(ctx, call.Doc)
	if err != nil {
		return Opened{}, fmt.Errorf("planner: read %q: %w", call.Doc, err)
	}
	after, err := t.placement(ctx, call.Doc, snap, in.Revision, in.Block)
	var refused *question.Refusal
	if errors.As(err, &refused) {
		// A retry returns its card (P5): it goes where it can, or stays
		// where it is.
		var seen bool
		if err := t.opts.Authorities.Do(ctx, call.Doc, func(a *question.Authority) error {
			_, seen = a.Lookup(plannerKey(in.Key))
			return nil
		}); err != nil {
			return Opened{}, err
		}
		if !seen {
			return Opened{}, refused
		}
		after, err = FirstSection(snap.Blocks), nil
	}
	if err != nil {
		return Opened{}, err
	}
	var out Opened
	err = t.opts.Authorities.Do(ctx, call.Doc, func(a *question.Authority) error {
		created, err := a.Create(ctx, t.who, []question.CreateRequest{{
			Key: plannerKey(in.Key), Origin: question.FromPlanner, Definition: def, Revision: in.Revision,
		}})
		if err != nil {
			return err
		}
		c := created[0]
		out = Opened{Key: in.Key, ID: c.Record.ID, Status: c.Record.Status, Repeated: c.Repeated, After: after, Link: after}
		return nil
	})
	if err != nil {
		return Opened{}, err
	}
	if out.Repeated {
		// The card stays where it was placed: say so.
		for _, b := range snap.Blocks {
			if b.Kind == Card && b.Decision == out.ID {
				out.After, out.Link = b.Link, b.Link
			}
		}
	}
	return out, t.place(ctx, call.Doc, []Opened{out})
}

// placement returns the block an open_decision card goes beside (and is
// linked to), or "" for the end of the document, unlinked. It refuses a
// block the plan does not hold or a card (invalid) and a revision that is
// not known (stale).
func (t *Tools) placement(ctx context.Context, doc string, snap Snapshot, revision, block string) (string, error) {
	if block != "" {
		i := slices.IndexFunc(snap.Blocks, func(b Block) bool { return b.ID == block })
		switch {
		case i < 0:
			return "", refusef("block: the plan holds no block %s; name a block read_plan returns, or omit block", block)
		case snap.Blocks[i].Kind == Card:
			return "", refusef("block: %s is a decision card; name the heading or prose block the question concerns", block)
		}
	}
	known, err := t.known(ctx, doc, snap, revision)
	if err != nil {
		return "", err
	}
	if !known {
		return "", unknownRevision("revision", revision, snap.Revision)
	}
	if block != "" {
		ok, err := t.opts.Document.Unchanged(ctx, doc, block, revision)
		if err != nil {
			return "", fmt.Errorf("planner: read block %q of %q: %w", block, doc, err)
		}
		if ok {
			return block, nil
		}
	}
	return FirstSection(snap.Blocks), nil
}

// FirstSection returns a document's first section: the first heading after
// an opening title, else the first paragraph; "" when there is none (a
// document with only a title).
func FirstSection(blocks []Block) string {
	rest := blocks
	for len(rest) > 0 && rest[0].Kind == Card {
		rest = rest[1:]
	}
	if len(rest) > 0 && rest[0].Kind == Title {
		rest = rest[1:]
	}
	for _, b := range rest {
		if b.Kind == Heading {
			return b.ID
		}
	}
	for _, b := range rest {
		if b.Kind == Paragraph {
			return b.ID
		}
	}
	return ""
}

// AskInput is the input of ask.
type AskInput struct {
	// Key is optional; a repeated key returns the same card (and its
	// answer, if it has one).
	Key      string `json:"key,omitempty"`
	Question string `json:"question"`
	Context  string `json:"context,omitempty"`
	// Response "text" asks for a written answer (options [], multiple
	// false); omitted, a choice.
	Response string  `json:"response,omitempty"`
	Options  []Label `json:"options"`
	Multiple bool    `json:"multiple,omitempty"`
	// Criteria are proposed by label; the server mints their ids.
	Criteria []Label `json:"criteria,omitempty"`
}

// Asked is what ask returns.
type Asked struct {
	ID string `json:"id"`
	// Status is "answered" or "discarded".
	Status string      `json:"status"`
	Answer *TurnAnswer `json:"answer,omitempty"`
}

// Ask opens a decision and blocks until a person saves its answer (or
// discards it), or until ctx ends with the Planner's turn. The answer
// returns here and starts no turn; once the turn has ended, a later save
// is handed to a Planner turn of its own instead.
func (t *Tools) Ask(ctx context.Context, call Call, in AskInput) (Asked, error) {
	if err := t.checkFocus(call); err != nil {
		return Asked{}, err
	}
	def, err := definition(in.Question, in.Context, in.Response, in.Options, in.Multiple, in.Criteria)
	if err != nil {
		return Asked{}, err
	}
	key := in.Key
	if strings.TrimSpace(key) == "" {
		key = t.opts.NewKey()
	}
	var rec question.Record
	var w *question.AnswerWait
	err = t.opts.Authorities.Do(ctx, call.Doc, func(a *question.Authority) error {
		created, err := a.Create(ctx, t.who, []question.CreateRequest{{Key: plannerKey("ask:" + key), Origin: question.FromPlanner, Definition: def}})
		if err != nil {
			return err
		}
		rec = created[0].Record
		if rec.Status == question.Open {
			w, err = a.Await(rec.ID)
		}
		return err
	})
	if err != nil {
		return Asked{}, err
	}
	if err := t.place(ctx, call.Doc, []Opened{{ID: rec.ID}}); err != nil {
		if w != nil {
			w.Cancel()
		}
		return Asked{}, err
	}
	if w != nil {
		res, err := w.Wait(ctx)
		if err != nil {
			return Asked{}, err
		}
		rec = res.Record
	}
	out := Asked{ID: rec.ID, Status: "answered"}
	if rec.Status == question.Discarded {
		out.Status = "discarded"
		return out, nil
	}
	ans, _ := AnswerOf(rec)
	out.Answer = &ans
	return out, nil
}

// SuggestInput is the input of suggest_choice.
type SuggestInput struct {
	Decision string `json:"decision"`
	// Question defaults to the decision's first question.
	Question string `json:"question,omitempty"`
	// Options are the suggested option ids.
	Options []string `json:"options"`
}

// Suggest stores the Planner's advisory suggested choice on an open
// decision. It is the Planner's only input to a draft: it never chooses,
// marks a cell or resolves anything.
func (t *Tools) Suggest(ctx context.Context, call Call, in SuggestInput) error {
	if call.Doc == "" {
		return refusef("no document")
	}
	return t.opts.Authorities.Do(ctx, call.Doc, func(a *question.Authority) error {
		q := in.Question
		if q == "" {
			if rec, ok := a.Record(in.Decision); ok && len(rec.Definition.Questions) > 0 {
				q = rec.Definition.Questions[0].ID
			}
		}
		_, err := a.Suggest(ctx, t.who, in.Decision, q, in.Options)
		return err
	})
}
