package question

import (
	"context"
	"strings"

	"github.com/accord-crdt/accord/crdt"
)

// SubmitRequest saves one decision's displayed draft.
type SubmitRequest struct {
	ID string
	// Heads is the draft revision the member's replica displays; the save
	// is refused as stale unless the accepted draft is the same.
	Heads crdt.Heads
}

// Submitted is the outcome of one SubmitRequest: the settled record, or the
// refusal for that decision alone.
type Submitted struct {
	ID     string
	Record Record
	Err    error
	// Repeated is true when the request had already taken effect: the
	// same member's save of the same displayed revision, resent after
	// its reply was lost. Nothing changed now; Record is the decision as
	// it is (reopened since, perhaps).
	Repeated bool
}

// Submit saves the drafts of one or several decisions (the shared Save bar
// submits every edited decision at once); each gets its own result. A save
// claims the revision the member displays and is refused as stale if the
// accepted draft differs from it; otherwise the marked cells, choices and
// text are snapshotted into the answer, with who saved it and when. All
// accepted saves commit together before Submit returns. The error is
// non-nil only when nothing could be committed at all.
func (a *Authority) Submit(ctx context.Context, who Member, reqs []SubmitRequest) ([]Submitted, error) {
	if r := canWrite(who); r != nil {
		return nil, r
	}
	if len(reqs) == 0 {
		return nil, refuse(Invalid, "nothing to save")
	}
	if len(reqs) > len(a.decisions) && len(reqs) > MaxBatch {
		return nil, refuse(TooMany, "too many decisions in one save")
	}
	t, err := a.begin(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Submitted, len(reqs))
	for i, req := range reqs {
		out[i] = Submitted{ID: req.ID}
		out[i].Repeated, out[i].Err = a.submitOne(t, who, req)
	}
	if err := t.commit(ctx); err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Err == nil {
			out[i].Record, _ = a.Record(out[i].ID)
		}
	}
	return out, nil
}

// submitOne stages one save; repeated reports a save that had already
// taken effect (savedBy), which stages nothing.
func (a *Authority) submitOne(t *txn, who Member, req SubmitRequest) (repeated bool, err error) {
	d, r := a.lookup(req.ID)
	if r != nil {
		return false, r
	}
	if savedBy(d.rec, who, req.Heads) {
		return true, nil
	}
	rec := t.record(req.ID)
	switch rec.Status {
	case Settled:
		if d.rec.Status == Open { // settled earlier in this same request
			return false, refuse(Resolving, "the decision is already being saved in this request")
		}
		// The member displayed the decision as open: their save is stale.
		return false, refuse(Stale, "%s saved this decision a moment ago; review the saved answer, and reopen it to change it", nonEmpty(rec.Answer.By))
	case Discarded:
		return false, refuse(Resolved, "the decision was discarded")
	}
	draft := d.state.Drafts[d.state.Generation]
	if !req.Heads.Equal(d.heads()) {
		// Only an older revision needs the document itself.
		if err := a.wake(d); err != nil {
			return false, a.missing(req.ID)
		}
		if !d.doc.Has(req.Heads) {
			return false, refuse(Stale, "your draft has edits the server has not accepted; wait for them to sync, then save again")
		}
		shown, err := d.doc.ForkAt(req.Heads, "")
		if err != nil {
			return false, refuse(Stale, "the displayed draft cannot be read; reload and save again")
		}
		st, err := shown.State()
		if err != nil || st.Generation != d.state.Generation || !st.Drafts[st.Generation].Equal(draft) {
			return false, refuse(Stale, "the shared draft changed since you last saw it; review it and save again")
		}
	}
	ans := Answer{Generation: rec.Generation, By: who.Login, At: a.opts.Now().UTC(),
		Provenance: d.prov.generation(rec.Generation), Heads: req.Heads.String()}
	for _, q := range rec.Definition.Questions {
		qd := draft.Questions[q.ID]
		qa := QuestionAnswer{Question: q.ID}
		if q.Written() {
			qa.Text = qd.Text
			if strings.TrimSpace(qd.Text) == "" {
				return false, refuse(Invalid, "question %q has no written answer yet", q.ID)
			}
		} else {
			qa.Choices = append([]string(nil), qd.Choices...)
			qa.Marks = qd.Snapshot()
			if len(qa.Choices) == 0 {
				return false, refuse(Invalid, "question %q has no option chosen yet", q.ID)
			}
		}
		ans.Answers = append(ans.Answers, qa)
	}
	rec.Status = Settled
	rec.Answer = &ans
	t.settled = append(t.settled, req.ID)
	rec.Why, rec.WhyBy = "", ""
	a.onSettle(t, rec) // decision_answers row or waiter, write-up and why jobs
	return false, nil
}

// savedBy reports whether rec's answer, or one in its history, is who's
// save of the revision heads: a save resent after its reply was lost,
// which took effect then and answers as it did.
func savedBy(rec *Record, who Member, heads crdt.Heads) bool {
	if len(heads) == 0 {
		return false
	}
	h := heads.String()
	saved := func(ans *Answer) bool { return ans.Heads == h && strings.EqualFold(ans.By, who.Login) }
	if rec.Answer != nil && saved(rec.Answer) {
		return true
	}
	for i := range rec.History {
		if saved(&rec.History[i].Answer) {
			return true
		}
	}
	return false
}

// Applied is the outcome of a reopen, discard or why: the record after it.
// Repeated is true when the request had already taken effect (a request
// resent after its reply was lost, or a discard of a discarded decision):
// nothing changed now, and nothing is to be announced again.
type Applied struct {
	Record   Record
	Repeated bool
}

// Reopen returns a settled decision to open with a fresh, empty draft of a
// new generation. The answer, its marks and its why move into the history;
// the question and its context are unchanged.
//
// generation is the saved generation the member displays, or 0 for the
// current one. A reopen of an earlier generation that this member already
// reopened is the same request resent: it answers Repeated. One that
// someone else reopened, or that was saved again since, is refused
// (not_settled, or stale).
func (a *Authority) Reopen(ctx context.Context, who Member, id string, generation uint64) (Applied, error) {
	d, r := a.target(who, id)
	if r != nil {
		return Applied{}, r
	}
	if generation != 0 && generation != d.rec.Generation {
		if e := historyOf(d.rec, generation); e != nil && strings.EqualFold(e.ReopenedBy, who.Login) {
			return Applied{Record: d.rec.Clone(), Repeated: true}, nil
		}
		if d.rec.Status == Settled {
			return Applied{}, refuse(Stale, "the decision was reopened and saved again since you last saw it; review the new answer")
		}
	}
	switch d.rec.Status {
	case Open:
		return Applied{}, refuse(NotSettled, "the decision is already open")
	case Discarded:
		return Applied{}, refuse(Resolved, "the decision was discarded")
	}
	t, err := a.begin(ctx)
	if err != nil {
		return Applied{}, err
	}
	if d, r = a.use(id); r != nil {
		return Applied{}, t.fail(r)
	}
	rec := t.record(id)
	before := d.doc.Heads()
	t.touch(id)
	if err := d.doc.StartGeneration(rec.Generation + 1); err != nil {
		return Applied{}, t.fail(&Refusal{Reason: Unavailable, Message: "cannot start a fresh draft", Err: err})
	}
	rec.History = append(rec.History, HistoryEntry{
		Answer: *rec.Answer, Why: rec.Why, WhyBy: rec.WhyBy,
		ReopenedBy: who.Login, ReopenedAt: a.opts.Now().UTC(),
	})
	rec.Answer = nil
	rec.Why, rec.WhyBy = "", ""
	rec.Status = Open
	rec.Generation++
	a.onUnsettle(t, rec, false) // the waiting row and jobs go stale
	if err := t.persistDraft(id, before); err != nil {
		return Applied{}, t.fail(draftRefusal(err))
	}
	if err := t.commit(ctx); err != nil {
		return Applied{}, err
	}
	return a.appliedOrErr(id)
}

// historyOf returns the history entry of generation g's answer, or nil.
func historyOf(rec *Record, g uint64) *HistoryEntry {
	for i := range rec.History {
		if rec.History[i].Generation == g {
			return &rec.History[i]
		}
	}
	return nil
}

// Discard sets a decision aside, keeping its history. Discarding a
// discarded decision changes nothing and answers Repeated.
func (a *Authority) Discard(ctx context.Context, who Member, id string) (Applied, error) {
	d, r := a.target(who, id)
	if r != nil {
		return Applied{}, r
	}
	if d.rec.Status == Discarded {
		return Applied{Record: d.rec.Clone(), Repeated: true}, nil
	}
	t, err := a.begin(ctx)
	if err != nil {
		return Applied{}, err
	}
	rec := t.record(id)
	rec.Status = Discarded
	rec.DiscardedBy = who.Login
	rec.DiscardedAt = a.opts.Now().UTC()
	a.onUnsettle(t, rec, true) // the waiting row and jobs go stale; a waiting ask hears
	if err := t.commit(ctx); err != nil {
		return Applied{}, err
	}
	return a.appliedOrErr(id)
}

// AppendRequest appends an option or a criterion to a question.
type AppendRequest struct {
	ID       string // decision
	Question string
	// Key is the idempotency token: repeating it returns what it minted.
	Key   string
	Label string
}

// AppendResult is an accepted append.
type AppendResult struct {
	// Item is the option or criterion (ID and Label).
	Item       Option
	Definition Definition
	// Repeated is true when the key had already been used.
	Repeated bool
}

// AppendOption appends an option to a choice question while the decision
// is open. See AppendCriterion for the rules, which are shared.
func (a *Authority) AppendOption(ctx context.Context, who Member, req AppendRequest) (AppendResult, error) {
	return a.appendItem(ctx, who, req, "option")
}

// AppendCriterion appends a criterion to a choice question while the
// decision is open: at most MaxCriteria, labels of 1 to MaxLabel
// characters, unique case-insensitively; the id is minted here. A key used
// before returns the same criterion with Repeated set. Refusal reasons:
// invalid, duplicate, full, resolved, resolving, implementation. The
// definition, record, draft document and projection commit together.
func (a *Authority) AppendCriterion(ctx context.Context, who Member, req AppendRequest) (AppendResult, error) {
	return a.appendItem(ctx, who, req, "criterion")
}

func (a *Authority) appendItem(ctx context.Context, who Member, req AppendRequest, kind string) (AppendResult, error) {
	d, r := a.target(who, req.ID)
	if r != nil {
		return AppendResult{}, r
	}
	req.Key = strings.TrimSpace(req.Key)
	if req.Key == "" || len(req.Key) > MaxKeyLen {
		return AppendResult{}, refuse(Invalid, "an append needs an idempotency key of 1 to %d bytes", MaxKeyLen)
	}
	if prev, ok := d.rec.Appended[req.Key]; ok {
		if prev.Kind != kind || prev.Question != req.Question {
			return AppendResult{}, refuse(Invalid, "key %q was already used for a %s of question %q", req.Key, prev.Kind, prev.Question)
		}
		q := d.rec.Definition.question(prev.Question)
		for _, it := range itemsOf(q, kind) {
			if it.ID == prev.ID {
				return AppendResult{Item: it, Definition: d.rec.Definition.Clone(), Repeated: true}, nil
			}
		}
		return AppendResult{}, refuse(Invalid, "key %q names a missing %s", req.Key, kind)
	}
	if a.opts.ImplementationActive(req.ID) {
		return AppendResult{}, refuse(Implementation, "an implementation of this decision is running; its definition is frozen")
	}
	switch d.rec.Status {
	case Settled:
		if a.resolving[req.ID] > 0 {
			return AppendResult{}, refuse(Resolving, "the decision is being saved right now; reopen it afterwards to add a %s", kind)
		}
		return AppendResult{}, refuse(Resolved, "the decision is settled; reopen it to add a %s", kind)
	case Discarded:
		return AppendResult{}, refuse(Resolved, "the decision was discarded")
	}
	q := d.rec.Definition.question(req.Question)
	if q == nil {
		return AppendResult{}, refuse(NotFound, "no question %q in this decision", req.Question)
	}
	if q.Written() {
		return AppendResult{}, refuse(Invalid, "question %q takes a written answer; it has no %s", q.ID, plural(kind))
	}
	if kind == "criterion" && q.Verbatim {
		return AppendResult{}, refuse(Invalid, "a verbatim question has no criteria")
	}
	label := strings.TrimSpace(req.Label)
	max, limit := MaxOptionLabel, MaxOptions
	if kind == "criterion" {
		max, limit = MaxLabel, MaxCriteria
	}
	if r := checkLabel(kind, label, max); r != nil {
		return AppendResult{}, r
	}
	items := itemsOf(q, kind)
	for _, it := range items {
		if strings.EqualFold(it.Label, label) {
			return AppendResult{}, refuse(Duplicate, "question %q already has the %s %q", q.ID, kind, it.Label)
		}
	}
	if len(items) >= limit {
		return AppendResult{}, refuse(Full, "question %q already has %d %s, the most it can hold", q.ID, limit, plural(kind))
	}
	t, err := a.begin(ctx)
	if err != nil {
		return AppendResult{}, err
	}
	if d, r = a.use(req.ID); r != nil {
		return AppendResult{}, t.fail(r)
	}
	rec := t.record(req.ID)
	item := Option{ID: a.opts.NewID(), Label: label}
	before := d.doc.Heads()
	t.touch(req.ID)
	add := d.doc.AppendOption
	if kind == "criterion" {
		add = d.doc.AppendCriterion
	}
	if _, _, err := add(req.Question, req.Key, crdt.Item{ID: item.ID, Label: item.Label}); err != nil {
		return AppendResult{}, t.fail(&Refusal{Reason: Invalid, Message: "cannot append the " + kind, Err: err})
	}
	rq := rec.Definition.question(req.Question)
	if kind == "criterion" {
		rq.Criteria = append(rq.Criteria, Criterion(item))
	} else {
		rq.Options = append(rq.Options, item)
	}
	if rec.Appended == nil {
		rec.Appended = map[string]Appended{}
	}
	rec.Appended[req.Key] = Appended{Kind: kind, Question: req.Question, ID: item.ID, By: who.Login, At: a.opts.Now().UTC()}
	if err := t.persistDraft(req.ID, before); err != nil {
		return AppendResult{}, t.fail(draftRefusal(err))
	}
	if err := t.commit(ctx); err != nil {
		return AppendResult{}, err
	}
	return AppendResult{Item: item, Definition: a.decisions[req.ID].rec.Definition.Clone()}, nil
}

func itemsOf(q *Question, kind string) []Option {
	if q == nil {
		return nil
	}
	if kind == "criterion" {
		out := make([]Option, len(q.Criteria))
		for i, c := range q.Criteria {
			out[i] = Option(c)
		}
		return out
	}
	return q.Options
}

func plural(kind string) string {
	if kind == "criterion" {
		return "criteria"
	}
	return "options"
}

// WhyRequest is one member's setting of a decision's why.
type WhyRequest struct {
	// Generation is the saved generation the member displays, or 0 for
	// the current one.
	Generation uint64
	// Text is the why: one plain sentence of at most MaxWhy characters;
	// empty clears it.
	Text string
	// Seen, if set, is the why the member displayed when they set theirs.
	// If the decision's why is another by now, someone changed it since:
	// the request is refused as stale rather than overwriting words the
	// member never saw. nil sets the why whatever it is.
	Seen *string
}

// SetWhy sets, replaces or (with empty text) clears the why of a settled
// decision. The member is recorded as WhyBy, also when clearing, so a
// later drafted why never replaces a person's words or their clearing.
//
// A why that this member already set to the same text on that
// generation (current or, since reopened, in the history) is the same
// request resent: it answers Repeated and changes nothing. A why for an
// answer saved over since is refused as stale, and so is one whose Seen
// is no longer the decision's why.
func (a *Authority) SetWhy(ctx context.Context, who Member, id string, req WhyRequest) (Applied, error) {
	generation, text := req.Generation, req.Text
	d, r := a.target(who, id)
	if r != nil {
		return Applied{}, r
	}
	text = strings.TrimSpace(text)
	same := func(why, by string) bool { return why == text && strings.EqualFold(by, who.Login) }
	if generation != 0 && generation != d.rec.Generation {
		if e := historyOf(d.rec, generation); e != nil && same(e.Why, e.WhyBy) {
			return Applied{Record: d.rec.Clone(), Repeated: true}, nil
		}
		if d.rec.Status == Settled {
			return Applied{}, refuse(Stale, "the decision was reopened and saved again since you last saw it; review the new answer")
		}
	}
	if d.rec.Status != Settled {
		return Applied{}, refuse(NotSettled, "only a settled decision has a why")
	}
	if same(d.rec.Why, d.rec.WhyBy) {
		return Applied{Record: d.rec.Clone(), Repeated: true}, nil
	}
	if req.Seen != nil && strings.TrimSpace(*req.Seen) != d.rec.Why {
		return Applied{}, refuse(Stale, "%s changed the why since you last saw it; review it, then set yours again", nonEmpty(d.rec.WhyBy))
	}
	if text != "" {
		if r := checkWhy(text); r != nil {
			return Applied{}, r
		}
	}
	t, err := a.begin(ctx)
	if err != nil {
		return Applied{}, err
	}
	rec := t.record(id)
	rec.Why, rec.WhyBy = text, who.Login
	if err := t.commit(ctx); err != nil {
		return Applied{}, err
	}
	return a.appliedOrErr(id)
}

// ChildChannel returns the deterministic channel id of a decision's page.
func ChildChannel(id string) string { return "question:" + id }

// Expand turns a decision into its own child document. ensure must create
// the channel (idempotently) in the host; only after it returns nil is
// childId recorded, so a retry or a second member reaches the same page.
// Decisions of a child document cannot open as pages.
func (a *Authority) Expand(ctx context.Context, who Member, id string, ensure func(ctx context.Context, channel string) error) (Record, error) {
	d, r := a.target(who, id)
	if r != nil {
		return Record{}, r
	}
	if strings.HasPrefix(a.opts.Doc, "question:") {
		return Record{}, refuse(Invalid, "a page's own decisions cannot open as pages")
	}
	if a.opts.ImplementationActive(id) {
		return Record{}, refuse(Implementation, "an implementation of this decision is running; its page opens once it ends")
	}
	channel := ChildChannel(id)
	if d.rec.ChildID == channel {
		return d.rec.Clone(), nil
	}
	if err := ensure(ctx, channel); err != nil {
		return Record{}, &Refusal{Reason: Unavailable, Message: "the page could not be created", Err: err}
	}
	t, err := a.begin(ctx)
	if err != nil {
		return Record{}, err
	}
	rec := t.record(id)
	rec.ChildID = channel
	if err := t.commit(ctx); err != nil {
		return Record{}, err
	}
	return a.recordOrErr(id)
}

func (a *Authority) appliedOrErr(id string) (Applied, error) {
	r, err := a.recordOrErr(id)
	return Applied{Record: r}, err
}

func (a *Authority) recordOrErr(id string) (Record, error) {
	r, ok := a.Record(id)
	if !ok {
		return Record{}, refuse(NotFound, "no decision %q", id)
	}
	return r, nil
}
