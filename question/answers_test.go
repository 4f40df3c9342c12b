package question_test

// Tests of the decision_answers rows, the jobs a settle queues, blocking
// asks' waits and the Planner's advisory suggestion. Helpers carry an "ans"
// prefix so they stay apart from the other tests of the package.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
)

var (
	ansAna     = question.Member{Login: "ana", Write: true}
	ansBen     = question.Member{Login: "ben", Write: true}
	ansPlanner = question.Member{Login: "planner", Write: true}
)

type ansFixture struct {
	t      *testing.T
	store  persist.Store
	a      *question.Authority
	now    time.Time
	n      int
	mu     sync.Mutex
	writes []persist.Write // every Write committed, when captured
}

func newAnsFixture(t *testing.T) *ansFixture {
	t.Helper()
	f := &ansFixture{t: t, now: time.Date(2026, 10, 19, 9, 0, 0, 0, time.UTC)}
	ms := memstore.New()
	ms.SetBeforeCommit(func(doc string, w *persist.Write) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.writes = append(f.writes, *w)
		return nil
	})
	f.store = ms
	f.a = f.open()
	return f
}

func (f *ansFixture) open() *question.Authority {
	f.t.Helper()
	a, err := question.NewAuthority(context.Background(), question.Options{
		Store: f.store, Doc: "plan-1",
		Now:   func() time.Time { f.now = f.now.Add(time.Second); return f.now },
		NewID: func() string { f.n++; return fmt.Sprintf("d%d", f.n) },
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

func (f *ansFixture) lastWrite() persist.Write {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.writes) == 0 {
		f.t.Fatal("nothing was committed")
	}
	return f.writes[len(f.writes)-1]
}

func ansWritten(text string) question.Definition {
	return question.Definition{Questions: []question.Question{{Text: text, Response: question.Text, Options: []question.Option{}}}}
}

func ansChoice() question.Definition {
	return question.Definition{Questions: []question.Question{{
		Text:     "Which reset flow?",
		Options:  []question.Option{{ID: "email", Label: "Email link"}, {ID: "sms", Label: "SMS code"}},
		Criteria: []question.Criterion{{ID: "cheap", Label: "Cheap"}},
	}}}
}

func (f *ansFixture) create(key string, origin question.Origin, def question.Definition, passage ...string) question.Record {
	f.t.Helper()
	out, err := f.a.Create(context.Background(), ansPlanner, []question.CreateRequest{{Key: key, Origin: origin, Definition: def, Passage: passage}})
	if err != nil {
		f.t.Fatal(err)
	}
	return out[0].Record
}

// fill edits the draft: a written answer, or a choice of option (with a
// mark on its first criterion).
func (f *ansFixture) fill(who question.Member, id, answer string) {
	f.t.Helper()
	rec, _ := f.a.Record(id)
	saved, err := f.a.Save(id)
	if err != nil {
		f.t.Fatal(err)
	}
	r, err := crdt.Load(saved, nil, crdt.Options{})
	if err != nil {
		f.t.Fatal(err)
	}
	h := r.Heads()
	q := rec.Definition.Questions[0]
	if q.Written() {
		err = r.SetText(q.ID, answer)
	} else {
		err = r.Choose(q.ID, answer, true)
		if err == nil && len(q.Criteria) > 0 {
			err = r.SetMark(q.ID, answer, q.Criteria[0].ID, marks.Yes)
		}
	}
	if err != nil {
		f.t.Fatal(err)
	}
	ch, err := r.ChangesSince(h)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.a.Edit(context.Background(), who, id, ch); err != nil {
		f.t.Fatal(err)
	}
}

func (f *ansFixture) submit(who question.Member, id string) question.Record {
	f.t.Helper()
	_, heads, err := f.a.Draft(id)
	if err != nil {
		f.t.Fatal(err)
	}
	out, err := f.a.Submit(context.Background(), who, []question.SubmitRequest{{ID: id, Heads: heads}})
	if err != nil {
		f.t.Fatal(err)
	}
	if out[0].Err != nil {
		f.t.Fatal(out[0].Err)
	}
	return out[0].Record
}

func (f *ansFixture) save(who question.Member, id, answer string) question.Record {
	f.t.Helper()
	f.fill(who, id, answer)
	return f.submit(who, id)
}

func ansReason(t *testing.T, err error, want question.Reason) {
	t.Helper()
	if got := question.ReasonOf(err); got != want {
		t.Fatalf("got %v, want refusal %q", err, want)
	}
}

func ansRow(t *testing.T, a *question.Authority, id string) (question.AnswerRow, bool) {
	t.Helper()
	for _, r := range a.AnswerRows() {
		if r.Decision == id {
			return r, true
		}
	}
	return question.AnswerRow{}, false
}

// writeHas reports whether w puts (or deletes, when state is "") the row
// of id, and in which state.
func writeRow(t *testing.T, w persist.Write, id string) (question.RowState, bool) {
	t.Helper()
	for _, p := range w.Answers {
		if p.Key != id {
			continue
		}
		if p.Value == nil {
			return "", true
		}
		var r struct{ State question.RowState }
		if err := json.Unmarshal(p.Value, &r); err != nil {
			t.Fatal(err)
		}
		return r.State, true
	}
	return "", false
}

// T1, T2: the row of a Planner's decision commits in the very Write that
// settles it; people's and Chat's decisions get none.
func TestAnswerRowCommitsWithTheSave(t *testing.T) {
	f := newAnsFixture(t)
	p := f.create("p", question.FromPlanner, ansWritten("How should onboarding work?"))
	h := f.create("h", question.FromPerson, ansWritten("Who runs it?"))
	c := f.create("c", question.FromChat, ansWritten("When?"))

	rec := f.save(ansAna, p.ID, "Invite link first")
	w := f.lastWrite()
	if len(w.Records) != 1 || w.Records[0].Key != p.ID {
		t.Fatalf("the save's Write holds records %v", w.Records)
	}
	if st, ok := writeRow(t, w, p.ID); !ok || st != question.RowWaiting {
		t.Fatalf("the save's Write holds row %q (%v); want a waiting row in the same commit", st, ok)
	}
	row, ok := ansRow(t, f.a, p.ID)
	if !ok || row.Generation != 1 || row.By != "ana" || !row.SavedAt.Equal(rec.Answer.At) || row.State != question.RowWaiting {
		t.Fatalf("row = %+v, %v", row, ok)
	}
	f.save(ansBen, h.ID, "Ben")
	f.save(ansBen, c.ID, "Monday")
	if rows := f.a.AnswerRows(); len(rows) != 1 {
		t.Fatalf("rows = %+v; want only the Planner's decision", rows)
	}
}

// T2: reopening makes the row stale in the reopen's own commit; saving
// again replaces it with a waiting row of the new generation.
func TestReopenMakesTheRowStaleAndSavingAgainReplacesIt(t *testing.T) {
	f := newAnsFixture(t)
	p := f.create("p", question.FromPlanner, ansChoice(), "b1")
	f.save(ansAna, p.ID, "email")
	if _, err := f.a.Reopen(context.Background(), ansBen, p.ID, 0); err != nil {
		t.Fatal(err)
	}
	w := f.lastWrite()
	if st, ok := writeRow(t, w, p.ID); !ok || st != question.RowStale || len(w.Records) != 1 {
		t.Fatalf("the reopen's Write holds row %q (%v), records %d; want the stale row with the record", st, ok, len(w.Records))
	}
	rec, _ := f.a.Record(p.ID)
	if rec.WriteUp.State != question.JobStale || rec.WhyDraft.State != question.JobStale {
		t.Fatalf("jobs after reopen: %+v %+v", rec.WriteUp, rec.WhyDraft)
	}
	f.save(ansBen, p.ID, "sms")
	row, _ := ansRow(t, f.a, p.ID)
	if row.State != question.RowWaiting || row.Generation != 2 || row.By != "ben" {
		t.Fatalf("row after saving again = %+v", row)
	}
	if n := len(f.a.AnswerRows()); n != 1 {
		t.Fatalf("%d rows for one decision", n)
	}
}

// T2: rows survive a restart on a real bbolt file.
func TestAnswerRowsSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "answers.db")
	st, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &ansFixture{t: t, store: st, now: time.Date(2026, 10, 19, 9, 0, 0, 0, time.UTC)}
	f.a = f.open()
	p := f.create("p", question.FromPlanner, ansWritten("How?"))
	q := f.create("q", question.FromPlanner, ansWritten("Why?"))
	f.save(ansAna, p.ID, "like this")
	f.save(ansAna, q.ID, "because")
	if _, err := f.a.ClaimAnswers(context.Background(), "turn-1", []string{q.ID}); err != nil {
		t.Fatal(err)
	}
	want := f.a.AnswerRows()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if f.store, err = boltstore.Open(path, nil); err != nil {
		t.Fatal(err)
	}
	defer f.store.Close()
	got := f.open().AnswerRows()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after restart rows = %+v\nwant %+v", got, want)
	}
}

// T7: claiming is durable and needs a fresh id; marking deletes exactly
// the turn's rows; a claimed row that is reopened stays tied to its turn
// but is stale.
func TestClaimAndMarkDelivered(t *testing.T) {
	f := newAnsFixture(t)
	bg := context.Background()
	p := f.create("p", question.FromPlanner, ansWritten("A?"))
	q := f.create("q", question.FromPlanner, ansWritten("B?"))
	r := f.create("r", question.FromPlanner, ansWritten("C?"))
	f.save(ansAna, p.ID, "a")
	f.save(ansAna, q.ID, "b")
	rows, err := f.a.ClaimAnswers(bg, "t1", []string{p.ID, q.ID, "nope"})
	if err != nil || len(rows) != 2 {
		t.Fatalf("claim = %+v, %v", rows, err)
	}
	if st, _ := writeRow(t, f.lastWrite(), p.ID); st != question.RowClaimed {
		t.Fatalf("claim committed %q", st)
	}
	_, err = f.a.ClaimAnswers(bg, "t1", []string{p.ID})
	ansReason(t, err, question.Duplicate)
	if rows, _ := f.a.ClaimAnswers(bg, "t2", []string{p.ID}); len(rows) != 0 {
		t.Fatalf("claimed a claimed row again: %+v", rows)
	}
	f.save(ansAna, r.ID, "c") // saved meanwhile: waits for the next turn
	if _, err := f.a.Reopen(bg, ansBen, q.ID, 0); err != nil {
		t.Fatal(err)
	}
	row, _ := ansRow(t, f.a, q.ID)
	if row.State != question.RowStale || row.Turn != "t1" {
		t.Fatalf("reopened claimed row = %+v", row)
	}
	n, err := f.a.MarkDelivered(bg, "t1")
	if err != nil || n != 2 {
		t.Fatalf("mark = %d, %v", n, err)
	}
	if n, _ := f.a.MarkDelivered(bg, "t1"); n != 0 {
		t.Fatalf("marking twice deleted %d", n)
	}
	rows = f.a.AnswerRows()
	if len(rows) != 1 || rows[0].Decision != r.ID || rows[0].State != question.RowWaiting {
		t.Fatalf("rows after mark = %+v", rows)
	}
}

// T8: a waiting ask gets the answer instead of a row; once its wait ended,
// a save writes the row.
func TestAwaitTakesTheAnswerInsteadOfARow(t *testing.T) {
	f := newAnsFixture(t)
	bg := context.Background()
	p := f.create("ask", question.FromPlanner, ansChoice())
	w, err := f.a.Await(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.a.Await(p.ID)
	ansReason(t, err, question.Duplicate)
	f.save(ansAna, p.ID, "sms")
	res, err := w.Wait(bg)
	if err != nil || res.Record.Answer == nil || res.Record.Answer.Answers[0].Choices[0] != "sms" {
		t.Fatalf("wait = %+v, %v", res, err)
	}
	if rows := f.a.AnswerRows(); len(rows) != 0 {
		t.Fatalf("a waited-for answer left rows %+v", rows)
	}

	q := f.create("ask2", question.FromPlanner, ansWritten("Which region?"))
	w, err = f.a.Await(q.ID)
	if err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(bg)
	cancel() // the turn ended
	if _, err := w.Wait(ended); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait after the turn ended = %v", err)
	}
	if f.a.Awaited(q.ID) {
		t.Fatal("an ended wait is still registered")
	}
	f.save(ansAna, q.ID, "eu-west")
	if row, ok := ansRow(t, f.a, q.ID); !ok || row.State != question.RowWaiting {
		t.Fatalf("after the turn ended, row = %+v, %v", row, ok)
	}
}

// T8: a save whose commit fails hands nothing to the waiter, which keeps
// waiting; a discard tells it.
func TestAwaitSurvivesAFailedCommitAndHearsADiscard(t *testing.T) {
	f := newAnsFixture(t)
	bg := context.Background()
	p := f.create("ask", question.FromPlanner, ansWritten("Which?"))
	w, err := f.a.Await(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.fill(ansAna, p.ID, "this")
	f.store.(*memstore.Store).FailNextCommit(errors.New("disk full"))
	_, heads, _ := f.a.Draft(p.ID)
	if _, err := f.a.Submit(bg, ansAna, []question.SubmitRequest{{ID: p.ID, Heads: heads}}); err == nil {
		t.Fatal("the failed commit was acknowledged")
	}
	if !f.a.Awaited(p.ID) {
		t.Fatal("the failed save took the waiter away")
	}
	short, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	if _, err := w.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the waiter heard %v from a save that never committed", err)
	}

	q := f.create("ask2", question.FromPlanner, ansWritten("Which one?"))
	w, err = f.a.Await(q.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.a.Discard(bg, ansBen, q.ID); err != nil {
		t.Fatal(err)
	}
	res, err := w.Wait(bg)
	if err != nil || !res.Discarded {
		t.Fatalf("wait after discard = %+v, %v", res, err)
	}
}

// T8: a wait racing its context with a save never loses the answer: it is
// either returned to the waiter or written as a row.
func TestAwaitRaceNeverLosesTheAnswer(t *testing.T) {
	for i := range 40 {
		f := newAnsFixture(t)
		p := f.create(fmt.Sprintf("ask%d", i), question.FromPlanner, ansWritten("Which?"))
		w, err := f.a.Await(p.ID)
		if err != nil {
			t.Fatal(err)
		}
		f.fill(ansAna, p.ID, "x")
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan error, 1)
		go func() {
			_, err := w.Wait(ctx)
			got <- err
		}()
		go cancel()
		f.submit(ansAna, p.ID)
		err = <-got
		_, row := ansRow(t, f.a, p.ID)
		if (err == nil) == row {
			t.Fatalf("round %d: waiter err %v, row %v; want exactly one of them to carry the answer", i, err, row)
		}
	}
}

// W1, Y3: a save queues one write-up (only with a passage) and, for a
// Planner's or a person's decision, one why draft; draft edits queue
// nothing.
func TestSaveQueuesJobsAndEditsDoNot(t *testing.T) {
	f := newAnsFixture(t)
	p := f.create("p", question.FromPlanner, ansWritten("How?"), "b1", "b2")
	f.fill(ansAna, p.ID, "draft only")
	if rec, _ := f.a.Record(p.ID); rec.WriteUp != nil || rec.WhyDraft != nil {
		t.Fatalf("an edit queued jobs: %+v %+v", rec.WriteUp, rec.WhyDraft)
	}
	rec := f.submit(ansAna, p.ID)
	if rec.WriteUp == nil || rec.WriteUp.ID != "writeup:"+p.ID+":1" || rec.WriteUp.State != question.JobPending || rec.WriteUp.Settler != "ana" {
		t.Fatalf("write-up job = %+v", rec.WriteUp)
	}
	if rec.WhyDraft == nil || rec.WhyDraft.ID != "why:"+p.ID+":1" || rec.WhyDraft.State != question.JobPending {
		t.Fatalf("why job = %+v", rec.WhyDraft)
	}
	h := f.create("h", question.FromPerson, ansWritten("Who?"))
	if rec := f.save(ansBen, h.ID, "Ben"); rec.WriteUp != nil || rec.WhyDraft == nil {
		t.Fatalf("a person's decision without passage: %+v %+v", rec.WriteUp, rec.WhyDraft)
	}
	for _, o := range []question.Origin{question.FromChat, question.FromWorkflow} {
		c := f.create(string(o), o, ansWritten("When?"))
		if rec := f.save(ansBen, c.ID, "soon"); rec.WhyDraft != nil {
			t.Fatalf("a %s decision queued a why-only draft", o)
		}
	}
}

// Y4, Y5: a draft has no whyBy and may be redrafted; a person's why or
// clearing is never replaced; a draft for a settle that was reopened is
// stale; reopen moves the why into history.
func TestDraftWhy(t *testing.T) {
	f := newAnsFixture(t)
	bg := context.Background()
	p := f.create("p", question.FromPlanner, ansChoice())
	f.save(ansAna, p.ID, "email")
	job := "why:" + p.ID + ":1"

	_, err := f.a.DraftWhy(bg, p.ID, 1, "Email is cheap. It also resets fast.")
	ansReason(t, err, question.Invalid)
	_, err = f.a.DraftWhy(bg, p.ID, 1, strings.Repeat("a", question.MaxWhy+1))
	ansReason(t, err, question.Invalid)
	_, err = f.a.DraftWhy(bg, p.ID, 1, "Email is **cheap**")
	ansReason(t, err, question.Invalid)
	_, err = f.a.DraftWhy(bg, p.ID, 2, "Email is cheap.")
	ansReason(t, err, question.Stale)

	rec, err := f.a.DraftWhy(bg, p.ID, 1, "Email is cheap and needs no new device.")
	if err != nil || rec.Why != "Email is cheap and needs no new device." || rec.WhyBy != "" || rec.WhyDraft.State != question.JobDone {
		t.Fatalf("draft = %+v, %v", rec, err)
	}
	_, err = f.a.RetryJob(bg, ansAna, p.ID, job)
	if err != nil {
		t.Fatal(err)
	}
	rec, err = f.a.DraftWhy(bg, p.ID, 1, "Email reuses what people already have.")
	if err != nil || rec.Why != "Email reuses what people already have." || rec.WhyDraft.ID != job || rec.WhyDraft.Attempts != 1 {
		t.Fatalf("redraft = %+v, %v", rec, err)
	}

	if _, err := f.a.SetWhy(bg, ansBen, p.ID, question.WhyRequest{Text: "Ben prefers email."}); err != nil {
		t.Fatal(err)
	}
	_, err = f.a.DraftWhy(bg, p.ID, 1, "A later draft.")
	ansReason(t, err, question.Resolved)
	_, err = f.a.RetryJob(bg, ansAna, p.ID, job)
	ansReason(t, err, question.Resolved)
	if _, err := f.a.SetWhy(bg, ansBen, p.ID, question.WhyRequest{Text: ""}); err != nil { // a person clears it
		t.Fatal(err)
	}
	_, err = f.a.DraftWhy(bg, p.ID, 1, "A later draft.")
	ansReason(t, err, question.Resolved)
	if rec, _ := f.a.Record(p.ID); rec.Why != "" || rec.WhyBy != "ben" {
		t.Fatalf("the clearing was replaced: %+v", rec)
	}

	q := f.create("q", question.FromPerson, ansWritten("How?"))
	f.save(ansAna, q.ID, "slowly")
	if _, err := f.a.DraftWhy(bg, q.ID, 1, "Slow is safe."); err != nil {
		t.Fatal(err)
	}
	reopened, err := f.a.Reopen(bg, ansAna, q.ID, 0)
	rec = reopened.Record
	if err != nil {
		t.Fatal(err)
	}
	if rec.Why != "" || rec.History[0].Why != "Slow is safe." || rec.History[0].WhyBy != "" {
		t.Fatalf("reopen kept the draft: %+v", rec)
	}
	_, err = f.a.DraftWhy(bg, q.ID, 1, "Too late.")
	ansReason(t, err, question.NotSettled)
}

// W9 (retry identity), W4: a failed job keeps its id when retried; only a
// failed write-up can be retried; a late finish of a stale job changes
// nothing.
func TestFinishAndRetryJob(t *testing.T) {
	f := newAnsFixture(t)
	bg := context.Background()
	p := f.create("p", question.FromPlanner, ansWritten("How?"), "b1")
	f.save(ansAna, p.ID, "so")
	job := "writeup:" + p.ID + ":1"
	_, err := f.a.RetryJob(bg, ansAna, p.ID, job)
	ansReason(t, err, question.Invalid)
	_, err = f.a.FinishJob(bg, p.ID, job, question.JobPending, "")
	ansReason(t, err, question.Invalid)
	rec, err := f.a.FinishJob(bg, p.ID, job, question.JobFailed, "the passage is lost")
	if err != nil || rec.WriteUp.State != question.JobFailed || rec.WriteUp.Note != "the passage is lost" {
		t.Fatalf("finish = %+v, %v", rec.WriteUp, err)
	}
	_, err = f.a.FinishJob(bg, p.ID, job, question.JobDone, "")
	ansReason(t, err, question.Stale)
	_, err = f.a.RetryJob(bg, question.Member{Login: "rita"}, p.ID, job)
	ansReason(t, err, question.Forbidden)
	rec, err = f.a.RetryJob(bg, ansBen, p.ID, job)
	if err != nil || rec.WriteUp.ID != job || rec.WriteUp.State != question.JobPending || rec.WriteUp.Attempts != 1 {
		t.Fatalf("retry = %+v, %v", rec.WriteUp, err)
	}
	if _, err := f.a.Reopen(bg, ansAna, p.ID, 0); err != nil {
		t.Fatal(err)
	}
	_, err = f.a.FinishJob(bg, p.ID, job, question.JobDone, "")
	ansReason(t, err, question.Stale)
	_, err = f.a.RetryJob(bg, ansAna, p.ID, job)
	ansReason(t, err, question.Stale)
}

// M7, L4: the Planner's suggestion is stored beside the draft and never
// chooses, marks or resolves anything.
func TestSuggestionNeverResolves(t *testing.T) {
	f := newAnsFixture(t)
	bg := context.Background()
	p := f.create("p", question.FromPlanner, ansChoice())
	rec, err := f.a.Suggest(bg, ansPlanner, p.ID, "q1", []string{"sms"})
	if err != nil || rec.Suggested == nil || rec.Suggested.Choices[0] != "sms" || rec.Suggested.Generation != 1 {
		t.Fatalf("suggest = %+v, %v", rec.Suggested, err)
	}
	draft, heads, _ := f.a.Draft(p.ID)
	if qd := draft.Questions["q1"]; len(qd.Choices) != 0 || len(qd.Marks) != 0 {
		t.Fatalf("the suggestion changed the draft: %+v", qd)
	}
	out, err := f.a.Submit(bg, ansAna, []question.SubmitRequest{{ID: p.ID, Heads: heads}})
	if err != nil {
		t.Fatal(err)
	}
	ansReason(t, out[0].Err, question.Invalid) // nothing chosen: the suggestion is not an answer
	if rec, _ := f.a.Record(p.ID); rec.Status != question.Open {
		t.Fatalf("status %s after a suggestion", rec.Status)
	}
	_, err = f.a.Suggest(bg, ansPlanner, p.ID, "q1", []string{"email", "sms"})
	ansReason(t, err, question.Invalid)
	_, err = f.a.Suggest(bg, ansPlanner, p.ID, "q1", []string{"fax"})
	ansReason(t, err, question.Invalid)
	w := f.create("w", question.FromPlanner, ansWritten("How?"))
	_, err = f.a.Suggest(bg, ansPlanner, w.ID, "q1", []string{"x"})
	ansReason(t, err, question.Invalid)
	f.save(ansAna, p.ID, "email")
	_, err = f.a.Suggest(bg, ansPlanner, p.ID, "q1", []string{"sms"})
	ansReason(t, err, question.Resolved)
	if rec, _ := f.a.Record(p.ID); rec.Answer.Answers[0].Choices[0] != "email" {
		t.Fatalf("the saved answer is %v", rec.Answer.Answers[0].Choices)
	}
}
