package crdt_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
)

// newDecision is what the authority does when a decision is opened: one
// choice question with two options and two criteria, and the first draft.
func newDecision() *crdt.Doc {
	d, err := crdt.New(crdt.Options{})
	if err != nil {
		panic(err)
	}
	err = d.AddQuestion(crdt.QuestionShape{
		ID:       "db",
		Options:  []crdt.Item{{ID: "pg", Label: "Postgres"}, {ID: "lite", Label: "SQLite"}},
		Criteria: []crdt.Item{{ID: "cost", Label: "Cheap"}, {ID: "ops", Label: "Easy to run"}},
	})
	if err != nil {
		panic(err)
	}
	if err := d.StartGeneration(1); err != nil {
		panic(err)
	}
	return d
}

// printMarks prints a question's marks in key order; a cleared cell shows
// as null, a cell nobody marked not at all.
func printMarks(d *crdt.Doc, q string) {
	dr, err := d.Draft()
	if err != nil {
		panic(err)
	}
	m := dr.Questions[q].Marks
	var cells []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := string(m[k])
		if m[k] == marks.Cleared {
			v = "null"
		}
		cells = append(cells, k+"="+v)
	}
	fmt.Println(strings.Join(cells, " "))
}

// Two members mark the matrix while apart; each sends its changes as a
// batch through the authority, which forwards them to the other.
func Example() {
	authority := newDecision()
	saved := authority.Save()
	ana, _ := crdt.Load(saved, nil, crdt.Options{})
	ben, _ := crdt.Load(saved, nil, crdt.Options{})

	// Ana marks two cells and clears one of them; Ben marks another.
	before := ana.Heads()
	_ = ana.SetMark("db", "pg", "cost", marks.Yes)
	_ = ana.SetMark("db", "lite", "ops", marks.Partly)
	_ = ana.SetMark("db", "lite", "ops", marks.Cleared)
	fromAna, _ := ana.ChangesSince(before)

	before = ben.Heads()
	_ = ben.SetMark("db", "lite", "cost", marks.No)
	fromBen, _ := ben.ChangesSince(before)

	// The authority applies each batch, then forwards it.
	_, _ = authority.ApplyChanges(fromAna)
	_, _ = authority.ApplyChanges(fromBen)
	_, _ = ana.ApplyChanges(fromBen)
	_, _ = ben.ApplyChanges(fromAna)

	for _, d := range []*crdt.Doc{authority, ana, ben} {
		printMarks(d, "db")
	}
	dr, _ := authority.Draft()
	fmt.Printf("snapshot: %s\n", dr.Questions["db"].Snapshot().Attribute())
	// Output:
	// lite/cost=no lite/ops=null pg/cost=yes
	// lite/cost=no lite/ops=null pg/cost=yes
	// lite/cost=no lite/ops=null pg/cost=yes
	// snapshot: lite/cost:no pg/cost:yes
}

// A replica that was offline catches up with a sync session per peer.
func ExampleSession() {
	authority := newDecision()
	member, _ := crdt.Load(authority.Save(), nil, crdt.Options{})

	// Both edit while apart.
	_ = authority.SetMark("db", "pg", "ops", marks.No)
	_ = member.Choose("db", "lite", true)

	a, m := authority.NewSession(), member.NewSession()
	for {
		msgA, okA := a.Generate()
		if okA {
			_ = m.Receive(msgA) // over the network, in real life
		}
		msgM, okM := m.Generate()
		if okM {
			_ = a.Receive(msgM)
		}
		if !okA && !okM {
			break
		}
	}
	fmt.Println("in sync:", a.InSync(), m.InSync())
	fmt.Println("same heads:", authority.Heads().Equal(member.Heads()))
	dr, _ := member.Draft()
	fmt.Println("choices:", dr.Questions["db"].Choices)
	printMarks(member, "db")
	// Output:
	// in sync: true true
	// same heads: true
	// choices: [lite]
	// pg/ops=no
}

// Appends are idempotent: a key seen before returns the item it minted
// then, and writes nothing. Options and criteria share the keys.
func ExampleDoc_AppendOption() {
	d := newDecision()
	it, repeated, _ := d.AppendOption("db", "req-1", crdt.Item{ID: "files", Label: "Flat files"})
	fmt.Println(it.ID, repeated)

	heads := d.Heads()
	it, repeated, _ = d.AppendCriterion("db", "req-1", crdt.Item{ID: "speed", Label: "Fast"})
	fmt.Println(it.ID, repeated, d.Heads().Equal(heads))

	st, _ := d.State()
	fmt.Println(len(st.Questions["db"].Options), len(st.Questions["db"].Criteria))
	// Output:
	// files false
	// files true true
	// 3 2
}

// Reopening starts a fresh, empty draft. An edit made by a replica that
// had not yet heard of the reopen lands in the old generation's draft.
func ExampleDoc_StartGeneration() {
	authority := newDecision()
	member, _ := crdt.Load(authority.Save(), nil, crdt.Options{})
	_ = authority.SetMark("db", "pg", "cost", marks.Yes)

	_ = authority.StartGeneration(2)

	before := member.Heads()
	_ = member.SetMark("db", "lite", "ops", marks.No) // still on generation 1
	late, _ := member.ChangesSince(before)
	_, _ = authority.ApplyChanges(late)

	st, _ := authority.State()
	fmt.Println("generation", st.Generation)
	fmt.Println("current draft marks:", len(st.Drafts[2].Questions["db"].Marks))
	fmt.Println("generation 1 draft:", st.Drafts[1].Questions["db"].Snapshot().Attribute())
	// Output:
	// generation 2
	// current draft marks: 0
	// generation 1 draft: lite/ops:no pg/cost:yes
}
