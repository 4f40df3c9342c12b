package question_test

import (
	"errors"
	"testing"

	"github.com/accord-crdt/accord/crdt/crdttest"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
)

// TestEditRefusesShapeChanges: a member's raw automerge change that
// removes or replaces a draft map, its marks or choices, a written
// answer's text, or anything of the definition side is refused (invalid,
// reset) and changes nothing, so SetMark and text edits keep working on
// every replica afterwards.
func TestEditRefusesShapeChanges(t *testing.T) {
	f := newFixture(t)
	choice := f.create("c", choiceDef())
	written := f.create("w", writtenDef())
	r := f.replica(written.ID)
	h := r.Heads()
	must(t, r.SetText("q1", "first words"))
	_, err := f.edit(ana, written.ID, r, h)
	must(t, err)
	type rogue func(saved []byte) ([]byte, error)
	at := func(p ...any) []any { return p }
	tests := []struct {
		name string
		id   string
		make rogue
	}{
		{"delete marks", choice.ID, func(s []byte) ([]byte, error) { return crdttest.RawDelete(s, at("drafts", "1", "q1", "marks")) }},
		{"replace marks with a new map", choice.ID, func(s []byte) ([]byte, error) { return crdttest.RawNewMap(s, at("drafts", "1", "q1", "marks")) }},
		{"replace marks with a value", choice.ID, func(s []byte) ([]byte, error) { return crdttest.RawChange(s, at("drafts", "1", "q1", "marks"), "yes") }},
		{"delete chosen", choice.ID, func(s []byte) ([]byte, error) { return crdttest.RawDelete(s, at("drafts", "1", "q1", "chosen")) }},
		{"replace chosen", choice.ID, func(s []byte) ([]byte, error) { return crdttest.RawNewMap(s, at("drafts", "1", "q1", "chosen")) }},
		{"delete the question's draft", choice.ID, func(s []byte) ([]byte, error) { return crdttest.RawDelete(s, at("drafts", "1", "q1")) }},
		{"replace the question's draft", choice.ID, func(s []byte) ([]byte, error) { return crdttest.RawNewMap(s, at("drafts", "1", "q1")) }},
		{"delete the generation's draft", choice.ID, func(s []byte) ([]byte, error) { return crdttest.RawDelete(s, at("drafts", "1")) }},
		{"delete questions", choice.ID, func(s []byte) ([]byte, error) { return crdttest.RawDelete(s, at("questions")) }},
		{"relabel an option", choice.ID, func(s []byte) ([]byte, error) {
			return crdttest.RawChange(s, at("questions", "q1", "options", 0, "label"), "Pigeon")
		}},
		{"add an appended map", choice.ID, func(s []byte) ([]byte, error) { return crdttest.RawNewMap(s, at("appended")) }},
		{"delete the generation", choice.ID, func(s []byte) ([]byte, error) { return crdttest.RawDelete(s, at("generation")) }},
		{"delete the version", choice.ID, func(s []byte) ([]byte, error) { return crdttest.RawDelete(s, at("v")) }},
		{"delete text", written.ID, func(s []byte) ([]byte, error) { return crdttest.RawDelete(s, at("drafts", "1", "q1", "text")) }},
		{"replace text", written.ID, func(s []byte) ([]byte, error) {
			return crdttest.RawNewText(s, at("drafts", "1", "q1", "text"), "first words")
		}},
		{"text replaced by a string", written.ID, func(s []byte) ([]byte, error) {
			return crdttest.RawChange(s, at("drafts", "1", "q1", "text"), "first words")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			saved, err := f.a.Save(tt.id)
			must(t, err)
			before, heads, _ := f.a.Draft(tt.id)
			ch, err := tt.make(saved)
			must(t, err)
			_, err = f.a.Edit(ctx, ana, tt.id, ch)
			mustReason(t, err, question.Invalid)
			var rf *question.Refusal
			if errors.As(err, &rf); !rf.Reset {
				t.Fatal("a refused edit must tell the replica to reset")
			}
			after, heads2, _ := f.a.Draft(tt.id)
			if !before.Equal(after) || !heads.Equal(heads2) {
				t.Fatal("a refused edit changed the accepted draft")
			}
			// Replicas of the accepted document keep editing.
			m := f.replica(tt.id)
			h := m.Heads()
			if tt.id == choice.ID {
				must(t, m.SetMark("q1", "email", "cheap", marks.Yes))
			} else {
				must(t, m.SetText("q1", "first words, then more"))
			}
			if _, err := f.edit(ana, tt.id, m, h); err != nil {
				t.Fatalf("an honest edit after the refusal: %v", err)
			}
		})
	}
	// Restarting reads every accepted edit back.
	f.a = f.open()
	d, _, err := f.a.Draft(choice.ID)
	must(t, err)
	if d.Questions["q1"].Marks["email/cheap"] != marks.Yes {
		t.Fatalf("draft after restart: %+v", d)
	}
}

// TestEditKeepsConcurrentHonestEdits: two members editing the same draft
// concurrently (marks, a choice, text) are both accepted.
func TestEditKeepsConcurrentHonestEdits(t *testing.T) {
	f := newFixture(t)
	rec := f.create("c", choiceDef())
	a, b := f.replica(rec.ID), f.replica(rec.ID)
	h := a.Heads()
	must(t, a.SetMark("q1", "email", "cheap", marks.Yes))
	must(t, a.Choose("q1", "email", true))
	must(t, b.SetMark("q1", "sms", "easy", marks.Partly))
	must(t, b.SetMark("q1", "email", "cheap", marks.No))
	if _, err := f.edit(ana, rec.ID, a, h); err != nil {
		t.Fatal(err)
	}
	ed, err := f.edit(ben, rec.ID, b, h)
	must(t, err)
	q := ed.Draft.Questions["q1"]
	if q.Marks["sms/easy"] != marks.Partly || q.Marks["email/cheap"] == "" || len(q.Choices) != 1 {
		t.Fatalf("merged draft %+v", q)
	}
}
