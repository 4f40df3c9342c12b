package question_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/crdt/crdttest"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
)

var (
	ana    = question.Member{Login: "ana", Write: true}
	ben    = question.Member{Login: "ben", Write: true}
	reader = question.Member{Login: "rita", Write: false}
	ctx    = context.Background()
)

// fixture is an authority over a memstore with a fake clock and
// sequential ids, so every run is the same.
type fixture struct {
	t     *testing.T
	store *memstore.Store
	a     *question.Authority
	now   time.Time
	n     int
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, store: memstore.New(), now: time.Date(2026, 10, 19, 9, 0, 0, 0, time.UTC)}
	f.a = f.open()
	return f
}

func (f *fixture) open() *question.Authority {
	f.t.Helper()
	a, err := question.NewAuthority(ctx, question.Options{
		Store: f.store, Doc: "plan-1",
		Now:   func() time.Time { f.now = f.now.Add(time.Second); return f.now },
		NewID: func() string { f.n++; return fmt.Sprintf("id%d", f.n) },
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

func choiceDef() question.Definition {
	return question.Definition{Questions: []question.Question{{
		Text:     "Which reset flow?",
		Options:  []question.Option{{ID: "email", Label: "Email link"}, {ID: "sms", Label: "SMS code"}},
		Criteria: []question.Criterion{{ID: "cheap", Label: "Cheap"}, {ID: "easy", Label: "Easy reset"}},
	}}}
}

func writtenDef() question.Definition {
	return question.Definition{Questions: []question.Question{{
		Text: "How should onboarding work?", Response: question.Text, Options: []question.Option{},
	}}}
}

func (f *fixture) create(key string, def question.Definition) question.Record {
	f.t.Helper()
	out, err := f.a.Create(ctx, ana, []question.CreateRequest{{Key: key, Origin: question.FromPlanner, Definition: def}})
	if err != nil {
		f.t.Fatal(err)
	}
	return out[0].Record
}

// replica loads the authority's accepted document as a member's replica.
func (f *fixture) replica(id string) *crdt.Doc {
	f.t.Helper()
	saved, err := f.a.Save(id)
	if err != nil {
		f.t.Fatal(err)
	}
	d, err := crdt.Load(saved, nil, crdt.Options{})
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

// edit sends every change of the replica since heads to the authority.
func (f *fixture) edit(who question.Member, id string, r *crdt.Doc, since crdt.Heads) (question.Edited, error) {
	f.t.Helper()
	ch, err := r.ChangesSince(since)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.a.Edit(ctx, who, id, ch)
}

func mustReason(t *testing.T, err error, want question.Reason) {
	t.Helper()
	if err == nil {
		t.Fatalf("got success, want refusal %q", want)
	}
	var r *question.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("got %v (%T), want a *Refusal", err, err)
	}
	if r.Reason != want {
		t.Fatalf("got reason %q (%v), want %q", r.Reason, err, want)
	}
	if r.Message == "" {
		t.Fatalf("refusal %q has no message", r.Reason)
	}
	if !errors.Is(err, &question.Refusal{Reason: want}) {
		t.Fatalf("errors.Is does not match reason %q", want)
	}
}

func TestCreateRepeatedKeyReturnsSameCard(t *testing.T) {
	f := newFixture(t)
	rec := f.create("k1", choiceDef())
	if rec.Status != question.Open || rec.Generation != 1 || rec.Origin != question.FromPlanner {
		t.Fatalf("new record: %+v", rec)
	}
	for _, step := range []string{"open", "settled", "discarded"} {
		switch step {
		case "settled":
			r := f.replica(rec.ID)
			h := r.Heads()
			must(t, r.Choose("q1", "email", true))
			if _, err := f.edit(ana, rec.ID, r, h); err != nil {
				t.Fatal(err)
			}
			f.submit(ana, rec.ID, r.Heads())
		case "discarded":
			if _, err := f.a.Discard(ctx, ana, rec.ID); err != nil {
				t.Fatal(err)
			}
		}
		out, err := f.a.Create(ctx, ben, []question.CreateRequest{{Key: "k1", Definition: writtenDef()}})
		if err != nil {
			t.Fatal(err)
		}
		if !out[0].Repeated || out[0].Record.ID != rec.ID {
			t.Fatalf("%s: repeat made %+v", step, out[0])
		}
	}
	if n := len(f.a.Records()); n != 1 {
		t.Fatalf("%d records, want 1", n)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) submit(who question.Member, id string, heads crdt.Heads) question.Record {
	f.t.Helper()
	out, err := f.a.Submit(ctx, who, []question.SubmitRequest{{ID: id, Heads: heads}})
	if err != nil {
		f.t.Fatal(err)
	}
	if out[0].Err != nil {
		f.t.Fatal(out[0].Err)
	}
	return out[0].Record
}

func TestCreateBatchIsAllOrNone(t *testing.T) {
	f := newFixture(t)
	bad := writtenDef()
	bad.Questions[0].Multiple = true
	_, err := f.a.Create(ctx, ana, []question.CreateRequest{
		{Key: "a", Definition: writtenDef()}, {Key: "b", Definition: choiceDef()}, {Key: "c", Definition: bad},
	})
	mustReason(t, err, question.Invalid)
	if n := len(f.a.Records()); n != 0 {
		t.Fatalf("a refused batch left %d records", n)
	}
	sd, _ := f.store.LoadDocument(ctx, "plan-1")
	if len(sd.Records) != 0 || len(sd.Drafts) != 0 {
		t.Fatalf("a refused batch wrote %d records", len(sd.Records))
	}
	var eleven []question.CreateRequest
	for i := range 11 {
		eleven = append(eleven, question.CreateRequest{Key: fmt.Sprint(i), Definition: writtenDef()})
	}
	_, err = f.a.Create(ctx, ana, eleven)
	mustReason(t, err, question.TooMany)
	out, err := f.a.Create(ctx, ana, eleven[:10])
	if err != nil || len(out) != 10 {
		t.Fatalf("batch of 10: %v", err)
	}
	// Creation committed record, draft and projection before returning.
	sd, _ = f.store.LoadDocument(ctx, "plan-1")
	if len(sd.Records) != 10 || len(sd.Drafts) != 10 || len(sd.Projections) != 10 {
		t.Fatalf("stored %d records, %d drafts, %d projections", len(sd.Records), len(sd.Drafts), len(sd.Projections))
	}
}

func TestDefinitionRules(t *testing.T) {
	long := strings.Repeat("x", 41)
	tests := []struct {
		name string
		edit func(q *question.Question)
		want question.Reason
	}{
		{"written with options", func(q *question.Question) {
			q.Response, q.Criteria = question.Text, nil
			q.Options = []question.Option{{ID: "a", Label: "A"}}
		}, question.Invalid},
		{"written multiple", func(q *question.Question) {
			q.Response, q.Options, q.Criteria, q.Multiple = question.Text, nil, nil, true
		}, question.Invalid},
		{"written with criteria", func(q *question.Question) { q.Response, q.Options = question.Text, nil }, question.Invalid},
		{"unknown response", func(q *question.Question) { q.Response = "essay" }, question.Invalid},
		{"six criteria", func(q *question.Question) {
			q.Criteria = nil
			for i := range 6 {
				q.Criteria = append(q.Criteria, question.Criterion{Label: fmt.Sprint("c", i)})
			}
		}, question.Full},
		{"duplicate criterion label", func(q *question.Question) {
			q.Criteria = []question.Criterion{{Label: "Cheap"}, {Label: "CHEAP"}}
		}, question.Duplicate},
		{"long criterion label", func(q *question.Question) { q.Criteria = []question.Criterion{{Label: long}} }, question.Invalid},
		{"empty criterion label", func(q *question.Question) { q.Criteria = []question.Criterion{{Label: "  "}} }, question.Invalid},
		{"bad criterion id", func(q *question.Question) { q.Criteria = []question.Criterion{{ID: "a b", Label: "x"}} }, question.Invalid},
		{"verbatim with criteria", func(q *question.Question) { q.Verbatim = true }, question.Invalid},
		{"no question text", func(q *question.Question) { q.Text = " " }, question.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			def := choiceDef()
			tt.edit(&def.Questions[0])
			_, err := f.a.Create(ctx, ana, []question.CreateRequest{{Key: "k", Definition: def}})
			mustReason(t, err, tt.want)
		})
	}
	// Criteria labels of exactly 40 characters and five criteria are fine;
	// ids are minted by the server when absent.
	f := newFixture(t)
	def := choiceDef()
	def.Questions[0].Criteria = nil
	for i := range 5 {
		def.Questions[0].Criteria = append(def.Questions[0].Criteria, question.Criterion{Label: fmt.Sprint(i, strings.Repeat("y", 39))})
	}
	rec := f.create("ok", def)
	for _, c := range rec.Definition.Questions[0].Criteria {
		if !marks.ValidID(c.ID) {
			t.Fatalf("minted id %q", c.ID)
		}
	}
}

func TestReadersCannotWrite(t *testing.T) {
	f := newFixture(t)
	rec := f.create("k", choiceDef())
	r := f.replica(rec.ID)
	h := r.Heads()
	must(t, r.SetMark("q1", "email", "cheap", marks.Yes))
	ch, _ := r.ChangesSince(h)
	calls := map[string]func() error{
		"create": func() error {
			_, err := f.a.Create(ctx, reader, []question.CreateRequest{{Key: "r", Definition: writtenDef()}})
			return err
		},
		"edit":    func() error { _, err := f.a.Edit(ctx, reader, rec.ID, ch); return err },
		"submit":  func() error { _, err := f.a.Submit(ctx, reader, []question.SubmitRequest{{ID: rec.ID}}); return err },
		"reopen":  func() error { _, err := f.a.Reopen(ctx, reader, rec.ID, 0); return err },
		"discard": func() error { _, err := f.a.Discard(ctx, reader, rec.ID); return err },
		"option": func() error {
			_, err := f.a.AppendOption(ctx, reader, question.AppendRequest{ID: rec.ID, Question: "q1", Key: "x", Label: "X"})
			return err
		},
		"criterion": func() error {
			_, err := f.a.AppendCriterion(ctx, reader, question.AppendRequest{ID: rec.ID, Question: "q1", Key: "x", Label: "X"})
			return err
		},
		"why": func() error {
			_, err := f.a.SetWhy(ctx, reader, rec.ID, question.WhyRequest{Text: "Because."})
			return err
		},
		"expand": func() error {
			_, err := f.a.Expand(ctx, reader, rec.ID, func(context.Context, string) error { return nil })
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) { mustReason(t, call(), question.Forbidden) })
	}
	after, _ := f.a.Record(rec.ID)
	if after.Status != question.Open || len(after.Definition.Questions[0].Options) != 2 {
		t.Fatalf("a reader changed the record: %+v", after)
	}
}

func TestEditRefusesWhatTheDefinitionDoesNotDescribe(t *testing.T) {
	f := newFixture(t)
	rec := f.create("k", choiceDef())
	saved, _ := f.a.Save(rec.ID)
	tests := []struct {
		name  string
		path  []any
		value any
	}{
		{"undefined option", []any{"drafts", "1", "q1", "marks", "post/cheap"}, "yes"},
		{"undefined criterion", []any{"drafts", "1", "q1", "marks", "email/fast"}, "yes"},
		{"bad mark value", []any{"drafts", "1", "q1", "marks", "email/cheap"}, "maybe"},
		{"mark not a string", []any{"drafts", "1", "q1", "marks", "email/cheap"}, int64(3)},
		{"malformed key", []any{"drafts", "1", "q1", "marks", "email"}, "yes"},
		{"unknown option chosen", []any{"drafts", "1", "q1", "choice"}, "post"},
		{"second choice on single", []any{"drafts", "1", "q1", "chosen", "sms"}, true},
		{"definition rewritten", []any{"questions", "q1", "multiple"}, true},
		{"generation moved", []any{"generation"}, uint64(7)},
		{"unknown key", []any{"drafts", "1", "q1", "vote"}, "yes"},
		{"idempotency map forged", []any{"appended", "k9", "kind"}, "option"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, heads, _ := f.a.Draft(rec.ID)
			ch, err := crdttest.RawChange(saved, tt.path, tt.value)
			must(t, err)
			_, err = f.a.Edit(ctx, ana, rec.ID, ch)
			mustReason(t, err, question.Invalid)
			var r *question.Refusal
			errors.As(err, &r)
			if !r.Reset {
				t.Fatal("a refused edit must tell the replica to reset")
			}
			after, heads2, _ := f.a.Draft(rec.ID)
			if !before.Equal(after) || !heads.Equal(heads2) {
				t.Fatal("a refused edit changed the accepted draft")
			}
		})
	}
	// Garbage bytes and changes with unknown dependencies are refused too.
	_, err := f.a.Edit(ctx, ana, rec.ID, []byte("not a change"))
	mustReason(t, err, question.Invalid)
	r := f.replica(rec.ID)
	h0 := r.Heads()
	must(t, r.SetMark("q1", "email", "cheap", marks.Yes))
	h1 := r.Heads()
	must(t, r.SetMark("q1", "sms", "cheap", marks.No))
	onlySecond, _ := r.ChangesSince(h1)
	_, err = f.a.Edit(ctx, ana, rec.ID, onlySecond)
	mustReason(t, err, question.Invalid)
	// The whole batch is accepted.
	ed, err := f.edit(ana, rec.ID, r, h0)
	must(t, err)
	if ed.Draft.Questions["q1"].Marks["sms/cheap"] != marks.No || !ed.Heads.Equal(r.Heads()) {
		t.Fatalf("accepted draft %+v", ed.Draft)
	}
	sd, _ := f.store.LoadDocument(ctx, "plan-1")
	if len(sd.Drafts[rec.ID].Chunks) != 1 {
		t.Fatalf("an accepted edit is stored as one incremental chunk; have %d", len(sd.Drafts[rec.ID].Chunks))
	}
}

func TestSubmitClaimsTheDisplayedRevision(t *testing.T) {
	f := newFixture(t)
	rec := f.create("k", choiceDef())
	a, b := f.replica(rec.ID), f.replica(rec.ID)
	h := a.Heads()
	must(t, a.Choose("q1", "sms", true))
	must(t, a.SetMark("q1", "sms", "cheap", marks.Partly))
	must(t, a.SetMark("q1", "email", "easy", marks.No))
	must(t, a.SetMark("q1", "email", "easy", marks.Cleared))
	_, err := f.edit(ana, rec.ID, a, h)
	must(t, err)
	// b still displays the empty draft: its save is stale and writes nothing.
	stored, _ := f.store.LoadDocument(ctx, "plan-1")
	out, err := f.a.Submit(ctx, ben, []question.SubmitRequest{{ID: rec.ID, Heads: b.Heads()}})
	must(t, err)
	mustReason(t, out[0].Err, question.Stale)
	again, _ := f.store.LoadDocument(ctx, "plan-1")
	if string(again.Records[rec.ID]) != string(stored.Records[rec.ID]) {
		t.Fatal("a stale save wrote the record")
	}
	// A save from heads the server never saw is stale as well.
	must(t, b.Choose("q1", "email", true))
	out, _ = f.a.Submit(ctx, ben, []question.SubmitRequest{{ID: rec.ID, Heads: b.Heads()}})
	mustReason(t, out[0].Err, question.Stale)
	// An append after a's last look does not make a's displayed draft stale.
	shown := a.Heads()
	_, err = f.a.AppendCriterion(ctx, ben, question.AppendRequest{ID: rec.ID, Question: "q1", Key: "k1", Label: "Private"})
	must(t, err)
	settled := f.submit(ana, rec.ID, shown)
	if settled.Status != question.Settled || settled.Answer.By != "ana" || settled.Answer.At.IsZero() {
		t.Fatalf("settled: %+v", settled)
	}
	got := settled.Answer.Answers[0]
	want := marks.Snapshot{"sms/cheap": marks.Partly}
	if len(got.Choices) != 1 || got.Choices[0] != "sms" || !got.Marks.Equal(want) {
		t.Fatalf("answer %+v, want choice sms and marks %v (cleared cell dropped)", got, want)
	}
	// Saving a decision someone settled meanwhile is stale.
	out, _ = f.a.Submit(ctx, ben, []question.SubmitRequest{{ID: rec.ID, Heads: f.heads(rec.ID)}})
	mustReason(t, out[0].Err, question.Stale)
}

func (f *fixture) heads(id string) crdt.Heads {
	_, h, err := f.a.Draft(id)
	if err != nil {
		f.t.Fatal(err)
	}
	return h
}

func TestSubmitSeveralAtOnce(t *testing.T) {
	f := newFixture(t)
	w := f.create("w", writtenDef())
	c := f.create("c", choiceDef())
	empty := f.create("e", choiceDef())
	rw := f.replica(w.ID)
	h := rw.Heads()
	must(t, rw.SpliceText("q1", 0, 0, "Guided tour first."))
	_, err := f.edit(ana, w.ID, rw, h)
	must(t, err)
	rc := f.replica(c.ID)
	h = rc.Heads()
	must(t, rc.Choose("q1", "email", true))
	_, err = f.edit(ana, c.ID, rc, h)
	must(t, err)
	out, err := f.a.Submit(ctx, ben, []question.SubmitRequest{
		{ID: w.ID, Heads: rw.Heads()}, {ID: c.ID, Heads: rc.Heads()}, {ID: empty.ID, Heads: f.heads(empty.ID)}, {ID: "nope"},
	})
	must(t, err)
	if out[0].Err != nil || out[1].Err != nil {
		t.Fatal(out[0].Err, out[1].Err)
	}
	mustReason(t, out[2].Err, question.Invalid) // nothing chosen yet
	mustReason(t, out[3].Err, question.NotFound)
	if out[0].Record.Answer.Answers[0].Text != "Guided tour first." || out[0].Record.Answer.By != "ben" {
		t.Fatalf("written answer: %+v", out[0].Record.Answer)
	}
	if out[1].Record.Answer.Answers[0].Marks != nil {
		t.Fatal("an answer with no marked cell has no marks")
	}
	// Repeating one id in the same request: the second is resolving.
	f2 := newFixture(t)
	x := f2.create("x", writtenDef())
	rx := f2.replica(x.ID)
	h = rx.Heads()
	must(t, rx.SpliceText("q1", 0, 0, "Yes"))
	_, err = f2.edit(ana, x.ID, rx, h)
	must(t, err)
	out, _ = f2.a.Submit(ctx, ana, []question.SubmitRequest{{ID: x.ID, Heads: rx.Heads()}, {ID: x.ID, Heads: rx.Heads()}})
	if out[0].Err != nil {
		t.Fatal(out[0].Err)
	}
	mustReason(t, out[1].Err, question.Resolving)
}

func TestReopenKeepsHistoryAndStartsAFreshDraft(t *testing.T) {
	f := newFixture(t)
	rec := f.create("k", choiceDef())
	r := f.replica(rec.ID)
	h := r.Heads()
	must(t, r.Choose("q1", "email", true))
	must(t, r.SetMark("q1", "email", "cheap", marks.Yes))
	_, err := f.edit(ana, rec.ID, r, h)
	must(t, err)
	f.submit(ana, rec.ID, r.Heads())
	_, err = f.a.SetWhy(ctx, ben, rec.ID, question.WhyRequest{Text: "Email needs no new device."})
	must(t, err)
	_, err = f.a.Reopen(ctx, reader, rec.ID, 0)
	mustReason(t, err, question.Forbidden)
	reApplied, err := f.a.Reopen(ctx, ben, rec.ID, 0)
	re := reApplied.Record
	must(t, err)
	if re.Status != question.Open || re.Generation != 2 || re.Answer != nil || re.Why != "" {
		t.Fatalf("reopened: %+v", re)
	}
	if len(re.History) != 1 || re.History[0].By != "ana" || re.History[0].Why != "Email needs no new device." ||
		re.History[0].WhyBy != "ben" || re.History[0].ReopenedBy != "ben" ||
		!re.History[0].Answers[0].Marks.Equal(marks.Snapshot{"email/cheap": marks.Yes}) {
		t.Fatalf("history: %+v", re.History)
	}
	if re.Definition.Questions[0].Text != rec.Definition.Questions[0].Text {
		t.Fatal("reopen changed the question")
	}
	draft, _, _ := f.a.Draft(rec.ID)
	if q := draft.Questions["q1"]; len(q.Marks) != 0 || len(q.Choices) != 0 || draft.Generation != 2 {
		t.Fatalf("fresh draft %+v", draft)
	}
	// r was offline across the reopen: its edit to generation 1 is refused
	// and never shows in the fresh draft.
	h = r.Heads()
	must(t, r.SetMark("q1", "sms", "cheap", marks.No))
	_, err = f.edit(ana, rec.ID, r, h)
	mustReason(t, err, question.Stale)
	if d, _, _ := f.a.Draft(rec.ID); len(d.Questions["q1"].Marks) != 0 {
		t.Fatal("an old-generation edit shows in the fresh draft")
	}
	// A replica that synced the reopen can edit the fresh draft.
	r2 := f.replica(rec.ID)
	h = r2.Heads()
	must(t, r2.SetMark("q1", "sms", "easy", marks.Yes))
	_, err = f.edit(ana, rec.ID, r2, h)
	must(t, err)
	_, err = f.a.Reopen(ctx, ana, rec.ID, 0)
	mustReason(t, err, question.NotSettled)
}

func TestDiscardKeepsHistory(t *testing.T) {
	f := newFixture(t)
	rec := f.create("k", writtenDef())
	dApplied, err := f.a.Discard(ctx, ana, rec.ID)
	d := dApplied.Record
	must(t, err)
	if d.Status != question.Discarded || d.DiscardedBy != "ana" || d.DiscardedAt.IsZero() {
		t.Fatalf("discarded: %+v", d)
	}
	againApplied, err := f.a.Discard(ctx, ben, rec.ID)
	again := againApplied.Record
	must(t, err)
	if again.DiscardedBy != "ana" {
		t.Fatal("discarding twice rewrote who discarded")
	}
	_, err = f.a.Submit(ctx, ana, []question.SubmitRequest{{ID: rec.ID}})
	must(t, err)
	out, _ := f.a.Submit(ctx, ana, []question.SubmitRequest{{ID: rec.ID}})
	mustReason(t, out[0].Err, question.Resolved)
	_, err = f.a.Reopen(ctx, ana, rec.ID, 0)
	mustReason(t, err, question.Resolved)
}

func TestAppendRules(t *testing.T) {
	f := newFixture(t)
	active := false
	f.a, _ = question.NewAuthority(ctx, question.Options{Store: f.store, Doc: "plan-1",
		NewID:                func() string { f.n++; return fmt.Sprintf("id%d", f.n) },
		ImplementationActive: func(string) bool { return active }})
	rec := f.create("k", choiceDef())
	w := f.create("w", writtenDef())
	app := func(kind, key, label string) (question.AppendResult, error) {
		req := question.AppendRequest{ID: rec.ID, Question: "q1", Key: key, Label: label}
		if kind == "option" {
			return f.a.AppendOption(ctx, ana, req)
		}
		return f.a.AppendCriterion(ctx, ana, req)
	}
	res, err := app("criterion", "c-1", "  New device ")
	must(t, err)
	if res.Repeated || res.Item.Label != "New device" || len(res.Definition.Questions[0].Criteria) != 3 {
		t.Fatalf("append: %+v", res)
	}
	rep, err := app("criterion", "c-1", "Something else")
	must(t, err)
	if !rep.Repeated || rep.Item != res.Item {
		t.Fatalf("repeat: %+v", rep)
	}
	_, err = app("option", "c-1", "x")
	mustReason(t, err, question.Invalid) // the key map is shared by options and criteria
	_, err = app("criterion", "c-2", "new DEVICE")
	mustReason(t, err, question.Duplicate)
	_, err = app("criterion", "c-3", strings.Repeat("z", 41))
	mustReason(t, err, question.Invalid)
	_, err = app("criterion", "c-4", "Fourth")
	must(t, err)
	_, err = app("criterion", "c-5", "Fifth")
	must(t, err)
	_, err = app("criterion", "c-6", "Sixth")
	mustReason(t, err, question.Full)
	opt, err := app("option", "o-1", "Passkey")
	must(t, err)
	if len(opt.Definition.Questions[0].Options) != 3 {
		t.Fatalf("options: %+v", opt.Definition.Questions[0].Options)
	}
	_, err = f.a.AppendCriterion(ctx, ana, question.AppendRequest{ID: w.ID, Question: "q1", Key: "w-1", Label: "X"})
	mustReason(t, err, question.Invalid)
	active = true
	_, err = app("option", "o-2", "Magic link")
	mustReason(t, err, question.Implementation)
	active = false
	// The CRDT document holds the appended items, so replicas can mark them.
	r := f.replica(rec.ID)
	h := r.Heads()
	must(t, r.SetMark("q1", opt.Item.ID, res.Item.ID, marks.Yes))
	_, err = f.edit(ben, rec.ID, r, h)
	must(t, err)
	must(t, r.Choose("q1", opt.Item.ID, true))
	_, err = f.edit(ben, rec.ID, r, h)
	must(t, err)
	f.submit(ben, rec.ID, r.Heads())
	_, err = app("option", "o-3", "Too late")
	mustReason(t, err, question.Resolved)
	rep, err = app("criterion", "c-1", "")
	must(t, err)
	if !rep.Repeated {
		t.Fatal("a repeated key returns the same criterion even after settling")
	}
	// Definition, record and projection were committed together.
	sd, _ := f.store.LoadDocument(ctx, "plan-1")
	p, err := question.ParseProjection(sd.Projections[rec.ID])
	must(t, err)
	if n := len(p.Questions[0].Criteria); n != 5 {
		t.Fatalf("projection has %d criteria", n)
	}
	if got := p.Questions[0].Answer.Marks; !got.Equal(marks.Snapshot{marks.Key(opt.Item.ID, res.Item.ID): marks.Yes}) {
		t.Fatalf("projection marks %v", got)
	}
}

func TestWhy(t *testing.T) {
	f := newFixture(t)
	rec := f.create("k", writtenDef())
	_, err := f.a.SetWhy(ctx, ana, rec.ID, question.WhyRequest{Text: "Too early."})
	mustReason(t, err, question.NotSettled)
	r := f.replica(rec.ID)
	h := r.Heads()
	must(t, r.SetText("q1", "A tour."))
	_, err = f.edit(ana, rec.ID, r, h)
	must(t, err)
	f.submit(ana, rec.ID, r.Heads())
	for _, bad := range []string{
		strings.Repeat("a", 301), "Two sentences. Here is another.", "**bold** move.", "Line one\nline two.",
		"# Heading", "See [docs](x).", "Use `code`.",
	} {
		_, err := f.a.SetWhy(ctx, ana, rec.ID, question.WhyRequest{Text: bad})
		mustReason(t, err, question.Invalid)
	}
	gotApplied, err := f.a.SetWhy(ctx, ben, rec.ID, question.WhyRequest{Text: "It keeps sign-up short, e.g. for phones."})
	got := gotApplied.Record
	must(t, err)
	if got.Why == "" || got.WhyBy != "ben" {
		t.Fatalf("why: %+v", got)
	}
	clearedApplied, err := f.a.SetWhy(ctx, ana, rec.ID, question.WhyRequest{Text: ""})
	cleared := clearedApplied.Record
	must(t, err)
	if cleared.Why != "" || cleared.WhyBy != "ana" {
		t.Fatalf("clearing keeps who cleared: %+v", cleared)
	}
}

// TestWhyOverAWhyNotSeen: a why that names the why its member displayed
// replaces it only while it is still the decision's: a why another
// member set meanwhile is never overwritten unseen: the request is
// refused as stale, naming who changed it. That holds for a request
// resent after its reply was lost too, once another why replaced it.
func TestWhyOverAWhyNotSeen(t *testing.T) {
	f := newFixture(t)
	rec := f.create("k", writtenDef())
	r := f.replica(rec.ID)
	h := r.Heads()
	must(t, r.SetText("q1", "A tour."))
	_, err := f.edit(ana, rec.ID, r, h)
	must(t, err)
	f.submit(ana, rec.ID, r.Heads())
	none := ""
	_, err = f.a.SetWhy(ctx, ana, rec.ID, question.WhyRequest{Text: "It is short.", Seen: &none})
	must(t, err)
	seen := "It is short."
	_, err = f.a.SetWhy(ctx, ben, rec.ID, question.WhyRequest{Text: "Phones need it.", Seen: &seen})
	must(t, err)

	// Ana's request again, as if its reply was lost: Ben's newer why
	// stays.
	_, err = f.a.SetWhy(ctx, ana, rec.ID, question.WhyRequest{Text: "It is short.", Seen: &none})
	mustReason(t, err, question.Stale)
	// Cleo displayed no why and sets one: Ben's, which she never saw,
	// stays.
	_, err = f.a.SetWhy(ctx, cleo, rec.ID, question.WhyRequest{Text: "Cheap enough.", Seen: &none})
	mustReason(t, err, question.Stale)
	if !strings.Contains(err.Error(), "ben changed the why") {
		t.Fatalf("the refusal does not say who changed the why: %v", err)
	}
	got, _ := f.a.Record(rec.ID)
	if got.Why != "Phones need it." || got.WhyBy != "ben" {
		t.Fatalf("why %q by %q, want Ben's", got.Why, got.WhyBy)
	}
	// Without Seen the why is set whatever it is.
	_, err = f.a.SetWhy(ctx, cleo, rec.ID, question.WhyRequest{Text: "Cheap enough."})
	must(t, err)
}

func TestExpand(t *testing.T) {
	f := newFixture(t)
	rec := f.create("k", writtenDef())
	var made []string
	fail := errors.New("host down")
	_, err := f.a.Expand(ctx, ana, rec.ID, func(context.Context, string) error { return fail })
	mustReason(t, err, question.Unavailable)
	if got, _ := f.a.Record(rec.ID); got.ChildID != "" {
		t.Fatal("childId recorded before the channel existed")
	}
	ensure := func(_ context.Context, ch string) error { made = append(made, ch); return nil }
	got, err := f.a.Expand(ctx, ana, rec.ID, ensure)
	must(t, err)
	if got.ChildID != "question:"+rec.ID {
		t.Fatalf("childId %q", got.ChildID)
	}
	again, err := f.a.Expand(ctx, ben, rec.ID, ensure)
	must(t, err)
	if again.ChildID != got.ChildID || len(made) != 1 {
		t.Fatalf("a second expand made %v", made)
	}
	child, err := question.NewAuthority(ctx, question.Options{Store: f.store, Doc: got.ChildID})
	must(t, err)
	out, err := child.Create(ctx, ana, []question.CreateRequest{{Key: "c", Definition: writtenDef()}})
	must(t, err)
	_, err = child.Expand(ctx, ana, out[0].Record.ID, ensure)
	mustReason(t, err, question.Invalid)
}

func TestStorageFailureAcknowledgesNothing(t *testing.T) {
	f := newFixture(t)
	rec := f.create("k", choiceDef())
	r := f.replica(rec.ID)
	h := r.Heads()
	must(t, r.SetMark("q1", "email", "cheap", marks.Yes))
	f.store.FailNextCommit(errors.New("disk full"))
	_, err := f.edit(ana, rec.ID, r, h)
	mustReason(t, err, question.Unavailable)
	draft, _, _ := f.a.Draft(rec.ID)
	if len(draft.Questions["q1"].Marks) != 0 {
		t.Fatal("an edit that failed to commit is visible")
	}
	// The same edit succeeds once storage is back.
	_, err = f.edit(ana, rec.ID, r, h)
	must(t, err)
	f.store.FailNextCommit(errors.New("disk full"))
	_, err = f.a.Create(ctx, ana, []question.CreateRequest{{Key: "k2", Definition: writtenDef()}})
	mustReason(t, err, question.Unavailable)
	if _, ok := f.a.Lookup("k2"); ok {
		t.Fatal("a create that failed to commit is visible")
	}
}

func TestRestartRestoresEverything(t *testing.T) {
	f := newFixture(t)
	rec := f.create("k", choiceDef())
	r := f.replica(rec.ID)
	for i := range 100 { // enough edits to cross the compaction threshold
		h := r.Heads()
		m := marks.All[i%3]
		must(t, r.SetMark("q1", []string{"email", "sms"}[i%2], "cheap", m))
		_, err := f.edit(ana, rec.ID, r, h)
		must(t, err)
	}
	want, wantHeads, _ := f.a.Draft(rec.ID)
	sd, _ := f.store.LoadDocument(ctx, "plan-1")
	if n := len(sd.Drafts[rec.ID].Chunks); n >= 64 {
		t.Fatalf("%d chunks: storage never compacted", n)
	}
	b := f.open()
	got, gotHeads, err := b.Draft(rec.ID)
	must(t, err)
	if !got.Equal(want) || !gotHeads.Equal(wantHeads) {
		t.Fatalf("restored draft %+v at %v, want %+v at %v", got, gotHeads, want, wantHeads)
	}
	recs := b.Records()
	if len(recs) != 1 || recs[0].Key != "k" {
		t.Fatalf("restored %+v", recs)
	}
}

func TestCorruptRecordIsAClearError(t *testing.T) {
	f := newFixture(t)
	rec := f.create("k", writtenDef())
	must(t, f.store.Commit(ctx, "plan-1", &persist.Write{Records: []persist.Put{{Key: rec.ID, Value: []byte("{not json")}}}))
	a, err := question.NewAuthority(ctx, question.Options{Store: f.store, Doc: "plan-1"})
	must(t, err)
	var ce *persist.CorruptError
	if err := a.Damaged()[rec.ID]; !errors.As(err, &ce) || ce.Key != rec.ID || !strings.Contains(ce.Bucket, "records") {
		t.Fatalf("got %v", err)
	}
}

func TestAppendWhileASaveIsNotYetDurableIsResolving(t *testing.T) {
	f := newFixture(t)
	var pending []func(bool)
	a, err := question.NewAuthority(ctx, question.Options{Store: f.store, Doc: "plan-1",
		Durable: func(settle func(bool)) { pending = append(pending, settle) }})
	must(t, err)
	f.a = a
	rec := f.create("k", choiceDef())
	pending = nil
	r := f.replica(rec.ID)
	h := r.Heads()
	must(t, r.Choose("q1", "email", true))
	_, err = f.edit(ana, rec.ID, r, h)
	must(t, err)
	f.submit(ana, rec.ID, r.Heads())
	req := question.AppendRequest{ID: rec.ID, Question: "q1", Key: "late", Label: "Late"}
	_, err = a.AppendCriterion(ctx, ben, req)
	mustReason(t, err, question.Resolving)
	for _, settle := range pending {
		settle(true)
	}
	_, err = a.AppendCriterion(ctx, ben, req)
	mustReason(t, err, question.Resolved)
}

func TestChoiceDecisionMayOpenBeforeAnyAlternativeIsKnown(t *testing.T) {
	f := newFixture(t)
	rec := f.create("k", question.Definition{Questions: []question.Question{{Text: "Where should we host the demo?"}}})
	if n := len(rec.Definition.Questions[0].Options); n != 0 || rec.Status != question.Open {
		t.Fatalf("opened with %d options, status %s", n, rec.Status)
	}
	res, err := f.a.AppendOption(ctx, ben, question.AppendRequest{ID: rec.ID, Question: "q1", Key: "o1", Label: "Our own servers"})
	must(t, err)
	r := f.replica(rec.ID)
	h := r.Heads()
	must(t, r.Choose("q1", res.Item.ID, true))
	_, err = f.edit(ben, rec.ID, r, h)
	must(t, err)
	if got := f.submit(ben, rec.ID, r.Heads()); got.Answer.Answers[0].Choices[0] != res.Item.ID {
		t.Fatalf("answer %+v", got.Answer)
	}
}

func TestDraftStoredWithoutMarksGainsThemOnRestore(t *testing.T) {
	f := newFixture(t)
	def := choiceDef()
	def.Questions[0].Criteria = nil // a decision from before criteria existed
	rec := f.create("legacy", def)
	saved, _ := f.a.Save(rec.ID)
	old, err := crdttest.RawDelete(saved, []any{"drafts", "1", "q1", "marks"})
	must(t, err)
	// Store the draft as such an old server left it: no marks map.
	must(t, f.store.Commit(ctx, "plan-1", &persist.Write{Drafts: []persist.DraftPut{{Decision: rec.ID, Chunk: old}}}))
	f.a = f.open()
	draft, _, err := f.a.Draft(rec.ID)
	must(t, err)
	if m := draft.Questions["q1"].Marks; m == nil || len(m) != 0 {
		t.Fatalf("restored marks %v, want an empty map", m)
	}
	res, err := f.a.AppendCriterion(ctx, ana, question.AppendRequest{ID: rec.ID, Question: "q1", Key: "c", Label: "Cheap"})
	must(t, err)
	r := f.replica(rec.ID)
	h := r.Heads()
	must(t, r.SetMark("q1", "email", res.Item.ID, marks.Yes))
	_, err = f.edit(ana, rec.ID, r, h)
	must(t, err)
}
