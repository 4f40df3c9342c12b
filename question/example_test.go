package question_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
)

// exampleAuthority opens an authority over an in-memory store with a fixed
// clock and sequential ids, so the examples print the same every time.
func exampleAuthority() (*question.Authority, *memstore.Store) {
	store := memstore.New()
	n := 0
	a, err := question.NewAuthority(context.Background(), question.Options{
		Store: store,
		Doc:   "plan-1",
		Now:   func() time.Time { return time.Date(2026, 10, 19, 9, 0, 0, 0, time.UTC) },
		NewID: func() string { n++; return fmt.Sprintf("rec-%d", n) },
	})
	if err != nil {
		panic(err)
	}
	return a, store
}

func exampleChoice() question.Definition {
	return question.Definition{Questions: []question.Question{{
		Text:     "Which password reset flow?",
		Options:  []question.Option{{ID: "email", Label: "Email link"}, {ID: "sms", Label: "SMS code"}},
		Criteria: []question.Criterion{{ID: "cheap", Label: "Cheap"}, {ID: "no-device", Label: "No new device"}},
	}}}
}

// exampleReplica loads a member's replica of a decision's shared draft.
func exampleReplica(a *question.Authority, id string) *crdt.Doc {
	saved, err := a.Save(id)
	if err != nil {
		panic(err)
	}
	r, err := crdt.Load(saved, nil, crdt.Options{})
	if err != nil {
		panic(err)
	}
	return r
}

// A choice decision with criteria: a member marks cells and chooses an
// option in the shared draft, then saves it. The answer keeps the marked
// cells, and the committed projection carries them as its marks attribute.
func Example() {
	ctx := context.Background()
	ana := question.Member{Login: "ana", Write: true}
	a, store := exampleAuthority()

	out, err := a.Create(ctx, ana, []question.CreateRequest{{
		Key: "reset-flow", Origin: question.FromPlanner, Definition: exampleChoice(),
	}})
	if err != nil {
		panic(err)
	}
	id := out[0].Record.ID
	q := out[0].Record.Definition.Questions[0].ID
	fmt.Println(id, out[0].Record.Status, "generation", out[0].Record.Generation)

	// ana's replica: edit, then send the changes.
	r := exampleReplica(a, id)
	h := r.Heads()
	_ = r.SetMark(q, "email", "cheap", marks.Yes)
	_ = r.SetMark(q, "sms", "no-device", marks.No)
	_ = r.Choose(q, "email", true)
	changes, _ := r.ChangesSince(h)
	if _, err := a.Edit(ctx, ana, id, changes); err != nil {
		panic(err)
	}

	// Save what ana's screen displays.
	res, err := a.Submit(ctx, ana, []question.SubmitRequest{{ID: id, Heads: r.Heads()}})
	if err != nil || res[0].Err != nil {
		panic(fmt.Sprint(err, res))
	}
	rec := res[0].Record
	ans := rec.Answer.Answers[0]
	fmt.Println(rec.Status, "by", rec.Answer.By, "choices", ans.Choices)
	fmt.Printf("marks=%q\n", ans.Marks.Attribute())

	// The projection was committed with the answer.
	sd, _ := store.LoadDocument(ctx, "plan-1")
	fmt.Print(string(sd.Projections[id]))
	// Output:
	// rec-1 open generation 1
	// settled by ana choices [email]
	// marks="email/cheap:yes sms/no-device:no"
	// <Questionnaire id="rec-1" status="settled">
	//   <Question id="q1">
	//     <Text>Which password reset flow?</Text>
	//     <Option id="email" label="Email link" />
	//     <Option id="sms" label="SMS code" />
	//     <Criterion id="cheap" label="Cheap" />
	//     <Criterion id="no-device" label="No new device" />
	//     <Answer by="ana" choices="email" marks="email/cheap:yes sms/no-device:no" />
	//   </Question>
	// </Questionnaire>
}

// A save claims the revision the member displays. ben's screen still shows
// the draft from before ana's edit, so his save is refused as stale and
// writes nothing; saved from the accepted revision, it goes through.
func ExampleAuthority_Submit_stale() {
	ctx := context.Background()
	ana := question.Member{Login: "ana", Write: true}
	ben := question.Member{Login: "ben", Write: true}
	a, _ := exampleAuthority()
	out, _ := a.Create(ctx, ana, []question.CreateRequest{{Key: "reset-flow", Definition: exampleChoice()}})
	id := out[0].Record.ID

	benShows := exampleReplica(a, id).Heads()

	r := exampleReplica(a, id)
	h := r.Heads()
	_ = r.Choose("q1", "sms", true)
	changes, _ := r.ChangesSince(h)
	if _, err := a.Edit(ctx, ana, id, changes); err != nil {
		panic(err)
	}

	res, err := a.Submit(ctx, ben, []question.SubmitRequest{{ID: id, Heads: benShows}})
	if err != nil {
		panic(err)
	}
	fmt.Println(question.ReasonOf(res[0].Err), errors.Is(res[0].Err, question.ErrStale))
	rec, _ := a.Record(id)
	fmt.Println(rec.Status)

	_, accepted, _ := a.Draft(id)
	res, _ = a.Submit(ctx, ben, []question.SubmitRequest{{ID: id, Heads: accepted}})
	fmt.Println(res[0].Err, res[0].Record.Status, res[0].Record.Answer.Answers[0].Choices)
	// Output:
	// stale true
	// open
	// <nil> settled [sms]
}

// Reopening keeps the answer in the history, with who saved it, and starts
// an empty draft of the next generation; the question is unchanged.
func ExampleAuthority_Reopen() {
	ctx := context.Background()
	ana := question.Member{Login: "ana", Write: true}
	ben := question.Member{Login: "ben", Write: true}
	a, _ := exampleAuthority()
	out, _ := a.Create(ctx, ana, []question.CreateRequest{{Key: "reset-flow", Definition: exampleChoice()}})
	id := out[0].Record.ID

	r := exampleReplica(a, id)
	h := r.Heads()
	_ = r.Choose("q1", "email", true)
	_ = r.SetMark("q1", "email", "cheap", marks.Partly)
	changes, _ := r.ChangesSince(h)
	_, _ = a.Edit(ctx, ana, id, changes)
	_, _ = a.Submit(ctx, ana, []question.SubmitRequest{{ID: id, Heads: r.Heads()}})

	recApplied, err := a.Reopen(ctx, ben, id, 0)
	rec := recApplied.Record
	if err != nil {
		panic(err)
	}
	fmt.Println(rec.Status, "generation", rec.Generation)
	fmt.Println("history:", rec.History[0].By, rec.History[0].Answers[0].Choices, rec.History[0].Answers[0].Marks.Attribute(), "reopened by", rec.History[0].ReopenedBy)
	draft, _, _ := a.Draft(id)
	fmt.Println("fresh draft:", len(draft.Questions["q1"].Choices), "choices,", len(draft.Questions["q1"].Marks), "marks")

	_, err = a.Reopen(ctx, ben, id, 0)
	fmt.Println(err)
	// Output:
	// open generation 2
	// history: ana [email] email/cheap:partly reopened by ben
	// fresh draft: 0 choices, 0 marks
	// question: not_settled: the decision is already open
}

// Appends carry an idempotency key: repeating the key returns what it
// minted. Refusals name the spec's reason.
func ExampleAuthority_AppendCriterion() {
	ctx := context.Background()
	ana := question.Member{Login: "ana", Write: true}
	a, _ := exampleAuthority()
	out, _ := a.Create(ctx, ana, []question.CreateRequest{{Key: "reset-flow", Definition: exampleChoice()}})
	id := out[0].Record.ID

	req := question.AppendRequest{ID: id, Question: "q1", Key: "crit-from-ana-1", Label: "Works offline"}
	first, _ := a.AppendCriterion(ctx, ana, req)
	again, _ := a.AppendCriterion(ctx, ana, req) // a retry after a lost reply
	fmt.Println(first.Item.ID, first.Item.Label, first.Repeated)
	fmt.Println(again.Item.ID, again.Repeated, len(again.Definition.Questions[0].Criteria), "criteria")

	_, err := a.AppendCriterion(ctx, ana, question.AppendRequest{ID: id, Question: "q1", Key: "crit-from-ben-1", Label: "CHEAP"})
	fmt.Println(question.ReasonOf(err), errors.Is(err, question.ErrDuplicate))
	fmt.Println(err)
	// Output:
	// rec-2 Works offline false
	// rec-2 true 3 criteria
	// duplicate true
	// question: duplicate: question "q1" already has the criterion "Cheap"
}
