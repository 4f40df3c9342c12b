package planner_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/question/planner/memhost"
)

// W1: each Save queues one write-up of the passage, which lands in the
// document with its receipt; draft edits (and a why) never queue one.
func TestSaveQueuesOneWriteUp(t *testing.T) {
	e := newEnv(t)
	a := e.open("a", false, "p-onb")
	if r := e.jobs(); r.Applied != 0 {
		t.Fatalf("a fresh card ran jobs: %+v", r)
	}
	e.do(func(q *question.Authority) error { // a draft edit only
		rec, _ := q.Record(a)
		if rec.WriteUp != nil {
			t.Fatal("creation queued a write-up")
		}
		return nil
	})
	e.save(ana, a, "Invite links first")
	r := e.jobs()
	if r.Applied != 1 || e.host.Docs.Applied(doc) != 1 {
		t.Fatalf("report %+v, applied %d", r, e.host.Docs.Applied(doc))
	}
	if got := e.host.Docs.Text(doc, "p-onb"); !strings.Contains(got, "Decided: Invite links first (saved by @ana)") {
		t.Fatalf("passage = %q", got)
	}
	if rec := e.record(a); rec.WriteUp.State != question.JobDone {
		t.Fatalf("job = %+v", rec.WriteUp)
	}
	snap, _ := e.host.Docs.Read(bg, doc)
	if !snap.Has(planner.Receipt{Decision: a, Generation: 1}) {
		t.Fatalf("receipts = %+v", snap.Receipts)
	}
	if anchors := e.host.Docs.Anchors(doc); strings.Join(anchors[a], ",") != "p-onb" {
		t.Fatalf("anchors = %+v", anchors)
	}
	if r := e.jobs(); r.Applied != 0 {
		t.Fatalf("a second pass wrote again: %+v", r)
	}
	// open_decision cards have no write scope.
	one, _ := e.tools.OpenDecision(bg, call, planner.SingleDecision{Revision: "r1", Key: "single", Question: "Who?", Block: "h-ops"})
	e.save(ana, one.ID, "Ben")
	if rec := e.record(one.ID); rec.WriteUp != nil {
		t.Fatalf("open_decision's card queued a write-up: %+v", rec.WriteUp)
	}
}

// W2: decisions sharing a passage share one write scope: the later
// write-up keeps the earlier saved answer.
func TestSharedScopeKeepsEarlierAnswers(t *testing.T) {
	e := newEnv(t)
	a := e.open("a", false, "p-onb", "p-reset")
	b := e.open("b", true, "p-reset")
	e.save(ana, a, "Invite links")
	e.jobs()
	e.save(ben, b, "SMS code")
	var seen planner.WriteUpRequest
	e.host.Runtime.SetWriter(func(ctx context.Context, d string, req planner.WriteUpRequest) (planner.WriteUpResult, error) {
		seen = req
		return memhost.DefaultWriteUp(req), nil
	})
	e.jobs()
	if len(seen.Answers) != 2 || len(seen.New) != 1 || seen.New[0].Decision != b || len(seen.Blocks) != 2 {
		t.Fatalf("the second write-up saw %+v", seen)
	}
	if !strings.Contains(seen.Prompt, "Criterion Cheap: SMS code is yes") {
		t.Fatalf("the write-up prompt lacks the criterion's mark:\n%s", seen.Prompt)
	}
	if got := e.host.Docs.Text(doc, "p-onb"); !strings.Contains(got, "Decided: Invite links (saved by @ana)") {
		t.Fatalf("the earlier answer was lost: %q", got)
	}
	if got := e.host.Docs.Text(doc, "p-reset"); !strings.Contains(got, "Decided: SMS code (saved by @ben)") {
		t.Fatalf("p-reset = %q", got)
	}
	// Two saves before a pass: one write-up writes both.
	e.reopen(a)
	e.reopen(b)
	e.save(ana, a, "SSO")
	e.save(ana, b, "Email link")
	before := e.host.Docs.Applied(doc)
	if r := e.jobs(); r.Applied != 1 || e.host.Docs.Applied(doc) != before+1 {
		t.Fatalf("report %+v", r)
	}
	if ra, rb := e.record(a), e.record(b); ra.WriteUp.State != question.JobDone || rb.WriteUp.State != question.JobDone {
		t.Fatalf("jobs = %+v / %+v", ra.WriteUp, rb.WriteUp)
	}
}

// flaky applies a write-up and then reports failure, as a lost reply or a
// dropped connection would.
type flaky struct {
	*memhost.Documents
	fail int
}

func (f *flaky) ApplyWriteUp(ctx context.Context, d string, w planner.WriteUp) error {
	err := f.Documents.ApplyWriteUp(ctx, d, w)
	if err == nil && f.fail > 0 {
		f.fail--
		return errors.New("connection reset")
	}
	return err
}

// W3: retrying or reconnecting never applies the same answer twice; the
// receipts tell.
func TestWriteUpRetryNeverAppliesTwice(t *testing.T) {
	e := newEnv(t)
	f := &flaky{Documents: e.host.Docs, fail: 1}
	e.d.Close()
	opts := planner.Options{Authorities: e.local, Clock: e.clock}
	e.host.Wire(&opts)
	opts.Document = f
	d, err := planner.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a := e.open("a", false, "p-onb")
	e.save(ana, a, "Invite links")
	if _, err := d.RunJobs(bg, doc); err == nil {
		t.Fatal("the lost reply was not reported")
	}
	if rec := e.record(a); rec.WriteUp.State != question.JobPending {
		t.Fatalf("job = %+v", rec.WriteUp)
	}
	writes, _ := e.host.Runtime.Calls()
	r, err := d.RunJobs(bg, doc)
	if err != nil || r.Applied != 0 || r.Done != 1 {
		t.Fatalf("retry = %+v, %v", r, err)
	}
	if w, _ := e.host.Runtime.Calls(); w != writes || e.host.Docs.Applied(doc) != 1 {
		t.Fatalf("the answer was written again: %d Planner write-ups, %d applied", w, e.host.Docs.Applied(doc))
	}
	if n := strings.Count(e.host.Docs.Text(doc, "p-onb"), "Decided:"); n != 1 {
		t.Fatalf("the answer appears %d times", n)
	}
	// The document refuses a replay of the same receipts by itself, too.
	snap, _ := e.host.Docs.Read(bg, doc)
	if err := e.host.Docs.ApplyWriteUp(bg, doc, planner.WriteUp{Base: "r0", Scope: []string{"p-onb"}, Source: map[string]string{"p-onb": "again"},
		Receipts: []planner.Receipt{{Decision: a, Generation: 1}}}); err != nil || e.host.Docs.Text(doc, "p-onb") == "again" {
		t.Fatalf("replay: %v", err)
	}
	_ = snap
}

// W3: a document that moved meanwhile is read again; no stale text lands.
func TestWriteUpConflictReads(t *testing.T) {
	e := newEnv(t)
	a := e.open("a", false, "p-onb")
	e.save(ana, a, "Invite links")
	edited := false
	e.host.Runtime.SetWriter(func(ctx context.Context, d string, req planner.WriteUpRequest) (planner.WriteUpResult, error) {
		if !edited { // someone types while the Planner writes
			edited = true
			_ = e.host.Docs.Edit(doc, "p-onb", "People sign up with a link.")
		}
		return memhost.DefaultWriteUp(req), nil
	})
	if r := e.jobs(); r.Applied != 1 {
		t.Fatalf("report %+v", r)
	}
	if got := e.host.Docs.Text(doc, "p-onb"); got != "People sign up with a link.\nDecided: Invite links (saved by @ana)" {
		t.Fatalf("passage = %q", got)
	}
}

// W4, W9: a lost or ambiguous passage fails the job without guessing; a
// retry keeps the job's identity and uses the current passage.
func TestLostOrAmbiguousPassageFails(t *testing.T) {
	e := newEnv(t)
	a := e.open("a", false, "p-ops")
	b := e.open("b", false, "p-onb", "p-reset")
	if err := e.host.Docs.Delete(doc, "p-ops"); err != nil {
		t.Fatal(err)
	}
	if err := e.host.Docs.Insert(doc, "p-onb", planner.Block{ID: "stray", Kind: planner.Paragraph, Text: "Unrelated."}); err != nil {
		t.Fatal(err)
	}
	e.save(ana, a, "In shifts")
	e.save(ana, b, "Links")
	before := e.host.Docs.Blocks(doc)
	r := e.jobs()
	if r.Failed != 2 || r.Applied != 0 {
		t.Fatalf("report %+v", r)
	}
	ra, rb := e.record(a), e.record(b)
	if ra.WriteUp.State != question.JobFailed || !strings.Contains(ra.WriteUp.Note, "lost") ||
		rb.WriteUp.State != question.JobFailed || !strings.Contains(rb.WriteUp.Note, "ambiguous") {
		t.Fatalf("jobs = %+v / %+v", ra.WriteUp, rb.WriteUp)
	}
	if after := e.host.Docs.Blocks(doc); len(after) != len(before) {
		t.Fatal("a failed write-up changed the document")
	}
	for i, b := range e.host.Docs.Blocks(doc) {
		if b.Text != before[i].Text {
			t.Fatalf("block %s changed to %q", b.ID, b.Text)
		}
	}
	if r := e.jobs(); r.Failed != 0 {
		t.Fatal("a failed job ran again by itself")
	}
	// A duplicated block is ambiguous too.
	c := e.open("c", false, "h-ops")
	_ = e.host.Docs.Insert(doc, "", planner.Block{ID: "h-ops", Kind: planner.Heading, Text: "Operations"})
	e.save(ana, c, "x")
	e.jobs()
	if rc := e.record(c); rc.WriteUp.State != question.JobFailed || !strings.Contains(rc.WriteUp.Note, "ambiguous") {
		t.Fatalf("duplicate block: %+v", rc.WriteUp)
	}
	// Put the passage right and retry: same job, now written.
	_ = e.host.Docs.Delete(doc, "stray")
	e.do(func(q *question.Authority) error { _, err := q.RetryJob(bg, ben, b, "writeup:"+b+":1"); return err })
	if r := e.jobs(); r.Applied != 1 {
		t.Fatalf("retry: %+v", r)
	}
	if rb := e.record(b); rb.WriteUp.ID != "writeup:"+b+":1" || rb.WriteUp.State != question.JobDone || rb.WriteUp.Attempts != 1 {
		t.Fatalf("retried job = %+v", rb.WriteUp)
	}
}

// W5: pending write-ups wait for an authorised owner, across a restart,
// under a remote harness for an attached Planner; nobody is made owner.
func TestWriteUpsWaitForAnOwner(t *testing.T) {
	e := newEnv(t)
	e.host.Runtime.SetOwner(doc, "")
	a := e.open("a", false, "p-onb")
	e.save(ana, a, "Invite links")
	if r := e.jobs(); r.Waiting != planner.NoOwner {
		t.Fatalf("report %+v", r)
	}
	e.restart()
	e.host.Runtime.SetOwner(doc, "rita") // may not write
	if r := e.jobs(); r.Waiting != planner.NoOwner || e.host.Docs.Applied(doc) != 0 {
		t.Fatalf("under a reader: %+v", r)
	}
	e.host.Runtime.SetOwner(doc, "ben")
	e.host.Runtime.SetRemote(true)
	if r := e.jobs(); r.Waiting != planner.NotAttached {
		t.Fatalf("remote: %+v", r)
	}
	e.host.Runtime.SetAttached(doc, true)
	if r := e.jobs(); r.Applied != 1 {
		t.Fatalf("with an owner: %+v", r)
	}
	if o, _, _ := e.host.Runtime.Owner(bg, doc); o != "ben" {
		t.Fatalf("owner = %s", o)
	}
}

// Y3: settling queues one why-only draft per settle (why:<id>:<gen>); it
// runs once and never loops, and stores a plain sentence without whyBy.
func TestWhyDraftOncePerSettle(t *testing.T) {
	e := newEnv(t)
	a := e.open("a", true, "p-reset")
	e.save(ana, a, "SMS code")
	var req planner.WhyRequest
	e.host.Runtime.SetDrafter(func(ctx context.Context, d string, r planner.WhyRequest) (string, error) {
		req = r
		return "SMS reaches people who lost their email.", nil
	})
	if r := e.jobs(); r.Drafted != 1 {
		t.Fatalf("report %+v", r)
	}
	if req.Job != "why:"+a+":1" || req.Session.Login != "ana" || !strings.Contains(req.Prompt, "Criterion Cheap: SMS code is yes") {
		t.Fatalf("why request = %+v", req)
	}
	rec := e.record(a)
	if rec.Why != "SMS reaches people who lost their email." || rec.WhyBy != "" || rec.WhyDraft.State != question.JobDone {
		t.Fatalf("record = %+v", rec)
	}
	for range 3 {
		e.jobs()
	}
	if _, drafts := e.host.Runtime.Calls(); drafts != 1 {
		t.Fatalf("%d drafts for one settle", drafts)
	}
	e.reopen(a)
	e.save(ana, a, "Email link")
	e.jobs()
	if _, drafts := e.host.Runtime.Calls(); drafts != 2 || e.record(a).WhyDraft.ID != "why:"+a+":2" {
		t.Fatalf("the next settle drafted %d", drafts)
	}
	if h := e.record(a).History[0]; h.Why != "SMS reaches people who lost their email." {
		t.Fatalf("history = %+v", h)
	}
}

// Y3: without the settler's captured session there is simply no draft; a
// remote harness without a Planner, or no owner, makes it wait; a draft
// that is not one plain sentence is refused.
func TestWhyDraftRules(t *testing.T) {
	e := newEnv(t)
	a := e.open("a", false, "p-onb")
	e.save(ben, a, "Links") // ben has no captured session
	e.jobs()
	rec := e.record(a)
	if rec.Why != "" || rec.WhyDraft.State != question.JobSkipped || !strings.Contains(rec.WhyDraft.Note, "session") {
		t.Fatalf("no session: %+v", rec.WhyDraft)
	}
	if _, drafts := e.host.Runtime.Calls(); drafts != 0 {
		t.Fatal("the Planner drafted without the settler's session")
	}

	b := e.open("b", false, "p-ops")
	e.host.Runtime.SetRemote(true)
	e.save(ana, b, "Shifts")
	if r := e.jobs(); r.Waiting != planner.NotAttached {
		t.Fatalf("remote: %+v", r)
	}
	e.host.Runtime.SetRemote(false)
	e.host.Runtime.SetOwner(doc, "")
	e.restart()
	if r := e.jobs(); r.Waiting != planner.NoOwner || e.record(b).WhyDraft.State != question.JobPending {
		t.Fatalf("no owner: %+v", r)
	}
	e.host.Runtime.SetOwner(doc, "ana")
	e.host.Runtime.SetDrafter(func(context.Context, string, planner.WhyRequest) (string, error) {
		return "Shifts are fair. Everyone agreed.", nil
	})
	e.jobs()
	if rec := e.record(b); rec.Why != "" || rec.WhyDraft.State != question.JobFailed {
		t.Fatalf("two sentences: %+v", rec)
	}
}

// Y4: a person's why, or their clearing of it, is never replaced by a
// later draft for the same settle; a draft may be replaced by a redraft.
func TestWhyDraftNeverReplacesAPerson(t *testing.T) {
	e := newEnv(t)
	a := e.open("a", false, "p-onb")
	e.save(ana, a, "Links")
	e.do(func(q *question.Authority) error {
		_, err := q.SetWhy(bg, ben, a, question.WhyRequest{Text: "Links need no passwords."})
		return err
	})
	e.jobs()
	rec := e.record(a)
	if rec.Why != "Links need no passwords." || rec.WhyBy != "ben" || rec.WhyDraft.State != question.JobSkipped {
		t.Fatalf("person's why: %+v", rec)
	}
	if _, drafts := e.host.Runtime.Calls(); drafts != 0 {
		t.Fatal("drafted over a person's why")
	}

	b := e.open("b", false, "p-ops")
	e.save(ana, b, "Shifts")
	// The person clears the why while the Planner is drafting.
	e.host.Runtime.SetDrafter(func(context.Context, string, planner.WhyRequest) (string, error) {
		e.do(func(q *question.Authority) error {
			_, err := q.SetWhy(bg, ben, b, question.WhyRequest{Text: ""})
			return err
		})
		return "Shifts spread the load.", nil
	})
	e.jobs()
	rec = e.record(b)
	if rec.Why != "" || rec.WhyBy != "ben" || rec.WhyDraft.State != question.JobSkipped {
		t.Fatalf("clearing replaced: %+v", rec)
	}

	c := e.open("c", false, "p-reset")
	e.save(ana, c, "Email")
	e.host.Runtime.SetDrafter(nil)
	e.jobs()
	first := e.record(c).Why
	e.host.Runtime.SetDrafter(func(context.Context, string, planner.WhyRequest) (string, error) {
		return "Email is what people already check.", nil
	})
	e.do(func(q *question.Authority) error { _, err := q.RetryJob(bg, ana, c, "why:"+c+":1"); return err })
	e.jobs()
	if rec := e.record(c); first == "" || rec.Why != "Email is what people already check." || rec.WhyBy != "" {
		t.Fatalf("redraft: first %q, now %+v", first, rec)
	}
}
