package question_test

import (
	"reflect"
	"testing"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
)

// TestRecordCloneSharesNothing: a record with every field filled, at
// every depth, is cloned; the clone equals it, and changing everything
// the clone reaches (each slice element, map entry and pointee, each
// value) leaves the record as it was. A field added to Record or to a
// type it holds is filled too, so one that Clone does not copy fails
// here.
func TestRecordCloneSharesNothing(t *testing.T) {
	var orig, want question.Record
	for _, r := range []*question.Record{&orig, &want} {
		if err := testutil.Fill(r); err != nil {
			t.Fatal(err)
		}
	}
	if zero := testutil.Zeros(orig); len(zero) > 0 {
		t.Fatalf("the filled record still holds zero values at %v", zero)
	}

	c := orig.Clone()
	if d := testutil.Diff(c, orig); len(d) > 0 {
		t.Fatalf("the clone differs from the record: %v", d)
	}
	testutil.Mutate(&c)
	if d := testutil.Diff(c, want); len(d) == 0 {
		t.Fatal("changing the clone changed nothing")
	}
	if d := testutil.Diff(orig, want); len(d) > 0 {
		t.Fatalf("changing the clone changed the record at %v", d)
	}
}

// TestRecordCloneKeepsNilAndEmpty: Clone copies a nil slice, map or
// pointer as nil and an empty one as empty, so that a clone encodes as
// the record does.
func TestRecordCloneKeepsNilAndEmpty(t *testing.T) {
	empty := question.Record{
		Definition: question.Definition{Questions: []question.Question{{Options: []question.Option{}, Criteria: []question.Criterion{}}}},
		Answer: &question.Answer{Answers: []question.QuestionAnswer{{Choices: []string{}, Marks: marks.Snapshot{}}},
			Provenance: []question.CellProvenance{}},
		History:   []question.HistoryEntry{},
		Passage:   []string{},
		Appended:  map[string]question.Appended{},
		Suggested: &question.Suggestion{Choices: []string{}},
		Findings:  []question.Finding{{Sources: []question.Source{}}},
	}
	for _, r := range []question.Record{{}, empty} {
		if c := r.Clone(); !reflect.DeepEqual(c, r) {
			t.Errorf("the clone differs from the record at %v", testutil.Diff(c, r))
		}
	}
}
