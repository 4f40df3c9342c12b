package question

// Answers back to the Planner: the decision_answers rows, the jobs a settle
// queues (the write-up of the decision's passage, the why draft), the
// Planner's advisory suggestion, and the in-memory waiters of blocking asks.
//
// Everything here commits through the same transaction as the lifecycle
// commands: a save's row and jobs commit with the save, a reopen's stale
// row and jobs with the reopen. Package question/planner drives them.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/accord-crdt/accord/persist"
)

// RowState is where a decision_answers row is on its way to a Planner turn.
type RowState string

// Row states.
const (
	// RowWaiting rows wait for the next turn.
	RowWaiting RowState = "waiting"
	// RowClaimed rows belong to a turn (AnswerRow.Turn) that was claimed
	// before it started and is not yet marked delivered.
	RowClaimed RowState = "claimed"
	// RowStale rows were reopened (or discarded) before their turn was
	// marked delivered; a stale row is never handed over.
	RowStale RowState = "stale"
)

// AnswerRow is one row of the decision_answers table: the saved answer of
// one decision the Planner left open, waiting for a Planner turn. There is
// at most one per decision; saving again replaces it. A row is deleted when
// the turn that carried it is marked delivered.
type AnswerRow struct {
	Decision   string    `json:"decision"`
	Generation uint64    `json:"generation"`
	By         string    `json:"by"`
	SavedAt    time.Time `json:"savedAt"`
	State      RowState  `json:"state"`
	// Turn is the id the row was claimed under, kept when a claimed row
	// goes stale so that recovery knows the turn.
	Turn      string    `json:"turn,omitempty"`
	ClaimedAt time.Time `json:"claimedAt,omitzero"`
}

// JobState is where a write-up or why-draft job is.
type JobState string

// Job states.
const (
	JobPending JobState = "pending" // queued; runs when its owner rules allow
	JobDone    JobState = "done"    // applied (write-up) or drafted (why)
	JobFailed  JobState = "failed"  // gave up; RetryJob queues it again under the same id
	JobSkipped JobState = "skipped" // nothing to do (no captured session, a person's why, ...)
	JobStale   JobState = "stale"   // the decision was reopened or discarded first
)

// Job is one queued piece of work of a settle: the write-up of the
// decision's passage (id "writeup:<decision>:<generation>") or the why
// draft (id "why:<decision>:<generation>"). A job keeps its id when it is
// retried, and a settle queues each kind at most once.
type Job struct {
	ID         string    `json:"id"`
	Generation uint64    `json:"generation"`
	State      JobState  `json:"state"`
	Settler    string    `json:"settler"`
	QueuedAt   time.Time `json:"queuedAt"`
	Attempts   int       `json:"attempts,omitempty"`
	Note       string    `json:"note,omitempty"`
	EndedAt    time.Time `json:"endedAt,omitzero"`
}

// Suggestion is the Planner's advisory suggested choice for the draft of
// one generation. It is shown beside the draft and never resolves the
// decision, chooses an option or marks a cell: only Save does that.
type Suggestion struct {
	Generation uint64    `json:"generation"`
	Question   string    `json:"question"`
	Choices    []string  `json:"choices"`
	By         string    `json:"by"`
	At         time.Time `json:"at"`
}

// WriteUpJobID and WhyJobID name the jobs of one settle.
func WriteUpJobID(decision string, generation uint64) string {
	return fmt.Sprintf("writeup:%s:%d", decision, generation)
}

// WhyJobID is the trigger of the why-only draft of one settle.
func WhyJobID(decision string, generation uint64) string {
	return fmt.Sprintf("why:%s:%d", decision, generation)
}

// answerTxn is what one transaction changes of the answers: rows to put
// (nil deletes) and waiters to hand a result to once the commit is durable.
type answerTxn struct {
	rows     map[string]*AnswerRow
	handoffs []handoff
}

type handoff struct {
	w   *AnswerWait
	res WaitResult
}

func (t *txn) putRow(id string, row *AnswerRow) {
	if t.ans.rows == nil {
		t.ans.rows = map[string]*AnswerRow{}
	}
	t.ans.rows[id] = row
}

// row returns the row of a decision as this transaction sees it.
func (t *txn) row(id string) (AnswerRow, bool) {
	if r, ok := t.ans.rows[id]; ok {
		if r == nil {
			return AnswerRow{}, false
		}
		return *r, true
	}
	r, ok := t.a.rows[id]
	if !ok {
		return AnswerRow{}, false
	}
	return *r, true
}

// stageAnswers adds the staged rows to the Write, in key order.
func (t *txn) stageAnswers() error {
	ids := make([]string, 0, len(t.ans.rows))
	for id := range t.ans.rows {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r := t.ans.rows[id]
		if r == nil {
			t.write.Answers = append(t.write.Answers, persist.Put{Key: id})
			continue
		}
		raw, err := json.Marshal(r)
		if err != nil {
			return err
		}
		t.write.Answers = append(t.write.Answers, persist.Put{Key: id, Value: raw})
	}
	return nil
}

// applyAnswers applies the staged rows in memory and hands results to
// waiters; it runs only after the commit is durable.
func (t *txn) applyAnswers() {
	for id, r := range t.ans.rows {
		if r == nil {
			delete(t.a.rows, id)
		} else {
			t.a.rows[id] = r
		}
	}
	handoffs := t.ans.handoffs
	t.ans = answerTxn{}
	if len(handoffs) == 0 {
		return
	}
	settle := func(durable bool) {
		for _, h := range handoffs {
			if durable {
				t.a.waiters.deliver(h.w, h.res)
			} else {
				t.a.waiters.release(h.w)
			}
		}
	}
	if t.a.opts.Durable != nil {
		t.a.opts.Durable(settle)
		return
	}
	settle(true)
}

// abortAnswers gives reserved waiters back: nothing was committed.
func (t *txn) abortAnswers() {
	for _, h := range t.ans.handoffs {
		t.a.waiters.release(h.w)
	}
	t.ans = answerTxn{}
}

// loadAnswers reads the decision_answers rows stored for the document.
func (a *Authority) loadAnswers(stored map[string][]byte) error {
	a.rows = make(map[string]*AnswerRow, len(stored))
	for id, raw := range stored {
		var r AnswerRow
		if err := json.Unmarshal(raw, &r); err != nil {
			return &persist.CorruptError{Bucket: "docs/" + a.opts.Doc + "/answers", Key: id, Err: err}
		}
		if r.Decision != id {
			return &persist.CorruptError{Bucket: "docs/" + a.opts.Doc + "/answers", Key: id, Err: fmt.Errorf("row names decision %q", r.Decision)}
		}
		switch r.State {
		case RowWaiting, RowClaimed, RowStale:
		default:
			return &persist.CorruptError{Bucket: "docs/" + a.opts.Doc + "/answers", Key: id, Err: fmt.Errorf("unknown row state %q", r.State)}
		}
		a.rows[id] = &r
	}
	return nil
}

// onSettle runs inside Submit for each decision it settles: the answer goes
// to a waiting ask (or workflow) if one waits for it, else, for a decision
// the Planner left open, into a waiting decision_answers row; and the
// settle queues its write-up (when the decision has a passage) and, for a
// Planner's or a person's decision, its why draft. Draft edits and findings
// never come here.
func (a *Authority) onSettle(t *txn, rec *Record) {
	ans := rec.Answer
	if w := a.waiters.reserve(rec.ID); w != nil {
		t.ans.handoffs = append(t.ans.handoffs, handoff{w: w, res: WaitResult{Record: rec.Clone()}})
		if _, ok := t.row(rec.ID); ok {
			t.putRow(rec.ID, nil) // a stale row of an earlier settle
		}
	} else if rec.Origin == FromPlanner {
		t.putRow(rec.ID, &AnswerRow{Decision: rec.ID, Generation: ans.Generation, By: ans.By, SavedAt: ans.At, State: RowWaiting})
	}
	rec.WriteUp, rec.WhyDraft = nil, nil
	if len(rec.Passage) > 0 {
		rec.WriteUp = &Job{ID: WriteUpJobID(rec.ID, ans.Generation), Generation: ans.Generation, State: JobPending, Settler: ans.By, QueuedAt: ans.At}
	}
	if rec.Origin == FromPlanner || rec.Origin == FromPerson {
		rec.WhyDraft = &Job{ID: WhyJobID(rec.ID, ans.Generation), Generation: ans.Generation, State: JobPending, Settler: ans.By, QueuedAt: ans.At}
	}
}

// onUnsettle runs inside Reopen and Discard: the decision's waiting row
// goes stale in the same commit, so it is never handed over, and its
// unfinished jobs go stale too. Discard also tells a waiting ask.
func (a *Authority) onUnsettle(t *txn, rec *Record, discarded bool) {
	if r, ok := t.row(rec.ID); ok && r.State != RowStale {
		r.State = RowStale
		t.putRow(rec.ID, &r)
	}
	now, note := a.opts.Now().UTC(), "the decision was reopened"
	if discarded {
		note = "the decision was discarded"
	}
	for _, j := range []*Job{rec.WriteUp, rec.WhyDraft} {
		if j != nil && (j.State == JobPending || j.State == JobFailed) {
			j.State, j.EndedAt, j.Note = JobStale, now, note
		}
	}
	if discarded {
		if w := a.waiters.reserve(rec.ID); w != nil {
			t.ans.handoffs = append(t.ans.handoffs, handoff{w: w, res: WaitResult{Record: rec.Clone(), Discarded: true}})
		}
	}
}

// AnswerRows returns copies of the document's decision_answers rows,
// oldest save first.
func (a *Authority) AnswerRows() []AnswerRow {
	out := make([]AnswerRow, 0, len(a.rows))
	for _, r := range a.rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(x, y AnswerRow) int {
		if c := x.SavedAt.Compare(y.SavedAt); c != 0 {
			return c
		}
		return strings.Compare(x.Decision, y.Decision)
	})
	return out
}

// ClaimAnswers claims the waiting rows of decisions for a turn under a
// fresh id, durably, before the turn starts. Rows that are not waiting are
// left alone; the claimed rows are returned. Stale rows no turn holds are
// dropped in the same commit. An id already in use is refused.
func (a *Authority) ClaimAnswers(ctx context.Context, turn string, decisions []string) ([]AnswerRow, error) {
	if turn == "" || len(turn) > MaxKeyLen {
		return nil, refuse(Invalid, "a turn id is 1 to %d bytes", MaxKeyLen)
	}
	for _, r := range a.rows {
		if r.Turn == turn {
			return nil, refuse(Duplicate, "turn id %q was claimed before; claim under a fresh id", turn)
		}
	}
	t, err := a.begin(ctx)
	if err != nil {
		return nil, err
	}
	now := a.opts.Now().UTC()
	var out []AnswerRow
	for _, id := range decisions {
		r, ok := t.row(id)
		if !ok || r.State != RowWaiting {
			continue
		}
		r.State, r.Turn, r.ClaimedAt = RowClaimed, turn, now
		t.putRow(id, &r)
		out = append(out, r)
	}
	if len(out) == 0 {
		t.abort()
		return nil, nil
	}
	for id, r := range a.rows {
		if r.State == RowStale && r.Turn == "" {
			t.putRow(id, nil)
		}
	}
	if err := t.commit(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// MarkDelivered deletes every row claimed under turn, once Chat accepted
// the turn. It returns how many rows it deleted; marking a turn twice
// deletes nothing the second time.
func (a *Authority) MarkDelivered(ctx context.Context, turn string) (int, error) {
	if turn == "" {
		return 0, refuse(Invalid, "no turn id")
	}
	var ids []string
	for id, r := range a.rows {
		if r.Turn == turn {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	t, err := a.begin(ctx)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		t.putRow(id, nil)
	}
	if err := t.commit(ctx); err != nil {
		return 0, err
	}
	return len(ids), nil
}

// Suggest stores the Planner's advisory suggested choice for the current
// draft of an open choice question. It changes neither the draft nor the
// answer: a suggestion never resolves a decision and never marks a cell.
func (a *Authority) Suggest(ctx context.Context, who Member, id, question string, choices []string) (Record, error) {
	d, r := a.target(who, id)
	if r != nil {
		return Record{}, r
	}
	if d.rec.Status != Open {
		return Record{}, refuse(Resolved, "the decision is %s; a suggestion is for an open draft", d.rec.Status)
	}
	q := d.rec.Definition.question(question)
	if q == nil {
		return Record{}, refuse(NotFound, "no question %q in this decision", question)
	}
	if q.Written() {
		return Record{}, refuse(Invalid, "question %q takes a written answer; a suggestion names options", q.ID)
	}
	if len(choices) == 0 || (!q.Multiple && len(choices) > 1) {
		return Record{}, refuse(Invalid, "a suggestion names one option, or several for a multiple-choice question")
	}
	seen := map[string]bool{}
	for _, c := range choices {
		if seen[c] || !slices.ContainsFunc(q.Options, func(o Option) bool { return o.ID == c }) {
			return Record{}, refuse(Invalid, "question %q has no option %q (or it is named twice)", q.ID, c)
		}
		seen[c] = true
	}
	t, err := a.begin(ctx)
	if err != nil {
		return Record{}, err
	}
	rec := t.record(id)
	rec.Suggested = &Suggestion{Generation: rec.Generation, Question: q.ID, Choices: slices.Clone(choices), By: who.Login, At: a.opts.Now().UTC()}
	if err := t.commit(ctx); err != nil {
		return Record{}, err
	}
	return a.recordOrErr(id)
}

// DraftWhy stores a drafted why for the settle of generation: exactly one
// plain sentence of at most MaxWhy characters, stored without WhyBy, and
// marks the why job done in the same commit. It is refused as stale when
// the decision is no longer settled at that generation, and as resolved
// when a person wrote or cleared the why of this settle: a draft never
// replaces their words. An earlier draft is replaced.
func (a *Authority) DraftWhy(ctx context.Context, id string, generation uint64, text string) (Record, error) {
	d, r := a.lookup(id)
	if r != nil {
		return Record{}, r
	}
	if r := currentSettle(d.rec, generation); r != nil {
		return Record{}, r
	}
	if d.rec.WhyBy != "" {
		return Record{}, refuse(Resolved, "%s wrote or cleared the why of this answer; a draft never replaces it", d.rec.WhyBy)
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return Record{}, refuse(Invalid, "a drafted why is one sentence, not empty")
	}
	if r := checkWhy(text); r != nil {
		return Record{}, r
	}
	t, err := a.begin(ctx)
	if err != nil {
		return Record{}, err
	}
	rec := t.record(id)
	rec.Why, rec.WhyBy = text, ""
	if j := rec.WhyDraft; j != nil && j.ID == WhyJobID(id, generation) {
		j.State, j.Note, j.EndedAt = JobDone, "", a.opts.Now().UTC()
	}
	if err := t.commit(ctx); err != nil {
		return Record{}, err
	}
	return a.recordOrErr(id)
}

func currentSettle(rec *Record, generation uint64) *Refusal {
	if rec.Status != Settled || rec.Answer == nil {
		return refuse(NotSettled, "the decision is %s; only a settled decision has a why", rec.Status)
	}
	if rec.Answer.Generation != generation {
		return refuse(Stale, "the decision was reopened since the settle of generation %d", generation)
	}
	return nil
}

// job returns the record's job with the given id.
func (rec *Record) job(jobID string) *Job {
	for _, j := range []*Job{rec.WriteUp, rec.WhyDraft} {
		if j != nil && j.ID == jobID {
			return j
		}
	}
	return nil
}

// FinishJob ends a pending job: done, failed or skipped, with a note that
// says why. A job that is not pending (or no longer the decision's, after a
// reopen) is refused as stale, so a late runner changes nothing.
func (a *Authority) FinishJob(ctx context.Context, id, jobID string, state JobState, note string) (Record, error) {
	d, r := a.lookup(id)
	if r != nil {
		return Record{}, r
	}
	switch state {
	case JobDone, JobFailed, JobSkipped:
	default:
		return Record{}, refuse(Invalid, "a job ends done, failed or skipped, not %q", state)
	}
	j := d.rec.job(jobID)
	if j == nil || j.State != JobPending {
		return Record{}, refuse(Stale, "job %q is not pending", jobID)
	}
	t, err := a.begin(ctx)
	if err != nil {
		return Record{}, err
	}
	j = t.record(id).job(jobID)
	j.State, j.Note, j.EndedAt = state, note, a.opts.Now().UTC()
	if err := t.commit(ctx); err != nil {
		return Record{}, err
	}
	return a.recordOrErr(id)
}

// RetryJob queues a job again under the same id. A write-up can be retried
// once it failed; it then uses the current passage and saved answers. A why
// draft can be redrafted once it ended, unless a person wrote or cleared the
// why of this settle. Either needs the decision still settled at the job's
// generation.
func (a *Authority) RetryJob(ctx context.Context, who Member, id, jobID string) (Record, error) {
	d, r := a.target(who, id)
	if r != nil {
		return Record{}, r
	}
	j := d.rec.job(jobID)
	if j == nil {
		return Record{}, refuse(NotFound, "decision %q has no job %q", id, jobID)
	}
	if r := currentSettle(d.rec, j.Generation); r != nil || j.State == JobStale {
		return Record{}, refuse(Stale, "job %q belongs to an answer that was reopened or discarded", jobID)
	}
	switch {
	case j == d.rec.WriteUp && j.State != JobFailed:
		return Record{}, refuse(Invalid, "only a failed write-up can be retried; this one is %s", j.State)
	case j == d.rec.WhyDraft && j.State == JobPending:
		return Record{}, refuse(Invalid, "the why draft is already queued")
	case j == d.rec.WhyDraft && d.rec.WhyBy != "":
		return Record{}, refuse(Resolved, "%s wrote or cleared the why of this answer; a draft never replaces it", d.rec.WhyBy)
	}
	t, err := a.begin(ctx)
	if err != nil {
		return Record{}, err
	}
	j = t.record(id).job(jobID)
	j.State, j.Note, j.EndedAt = JobPending, "", time.Time{}
	j.Attempts++
	if err := t.commit(ctx); err != nil {
		return Record{}, err
	}
	return a.recordOrErr(id)
}

// WaitResult is what a waiting ask receives: the settled record, or the
// discarded one.
type WaitResult struct {
	Record    Record
	Discarded bool
	released  bool // the save that reserved the waiter did not commit
}

// AnswerWait is a blocking ask's (or a workflow question's) wait for one
// decision's answer. While it waits, a save of the decision hands the
// answer to it after the commit, instead of writing a decision_answers row,
// so it starts no turn. Its methods are safe for concurrent use.
type AnswerWait struct {
	reg      *waiters
	id       string
	ch       chan WaitResult
	state    int  // guarded by reg.mu
	canceled bool // guarded by reg.mu: Wait gave up while reserved
}

const (
	waitWaiting = iota
	waitReserved
	waitDone
)

type waiters struct {
	mu sync.Mutex
	m  map[string]*AnswerWait
}

// Await registers a wait for an open decision's answer. Call it on the
// goroutine that owns the authority, in the same turn as the command that
// created or found the decision, so no save can slip in between; then Wait
// from any goroutine. One decision has at most one waiter.
func (a *Authority) Await(id string) (*AnswerWait, error) {
	d, r := a.lookup(id)
	if r != nil {
		return nil, r
	}
	if d.rec.Status != Open {
		return nil, refuse(Resolved, "the decision is %s; there is no answer to wait for", d.rec.Status)
	}
	a.waiters.mu.Lock()
	defer a.waiters.mu.Unlock()
	if a.waiters.m[id] != nil {
		return nil, refuse(Duplicate, "the answer of %q is already awaited", id)
	}
	w := &AnswerWait{reg: a.waiters, id: id, ch: make(chan WaitResult, 1)}
	a.waiters.m[id] = w
	return w, nil
}

// Awaited reports whether a wait is registered for the decision.
func (a *Authority) Awaited(id string) bool {
	a.waiters.mu.Lock()
	defer a.waiters.mu.Unlock()
	return a.waiters.m[id] != nil
}

// Wait blocks until the answer is saved (or the decision discarded) and
// returns it, or until ctx ends. Once ctx ended the wait is over: a later
// save writes a decision_answers row instead. A save already committing
// when ctx ends is still returned.
func (w *AnswerWait) Wait(ctx context.Context) (WaitResult, error) {
	select {
	case res := <-w.ch:
		return w.result(ctx, res)
	case <-ctx.Done():
	}
	w.reg.mu.Lock()
	if w.state == waitWaiting {
		w.state = waitDone
		delete(w.reg.m, w.id)
		w.reg.mu.Unlock()
		return WaitResult{}, ctx.Err()
	}
	w.canceled = true
	w.reg.mu.Unlock()
	return w.result(ctx, <-w.ch)
}

func (w *AnswerWait) result(ctx context.Context, res WaitResult) (WaitResult, error) {
	if res.released {
		return WaitResult{}, ctx.Err()
	}
	return res, nil
}

// Cancel ends the wait without an answer, as if its context ended. It
// returns false if an answer was already handed to it (read it with Wait).
func (w *AnswerWait) Cancel() bool {
	w.reg.mu.Lock()
	defer w.reg.mu.Unlock()
	if w.state != waitWaiting {
		return false
	}
	w.state = waitDone
	delete(w.reg.m, w.id)
	return true
}

func (r *waiters) reserve(id string) *AnswerWait {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.m[id]
	if w == nil || w.state != waitWaiting {
		return nil
	}
	w.state = waitReserved
	delete(r.m, id)
	return w
}

func (r *waiters) deliver(w *AnswerWait, res WaitResult) {
	r.mu.Lock()
	w.state = waitDone
	r.mu.Unlock()
	w.ch <- res
}

func (r *waiters) release(w *AnswerWait) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.canceled {
		w.state = waitDone
		w.ch <- WaitResult{released: true}
		return
	}
	w.state = waitWaiting
	r.m[w.id] = w
}
