package question

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
)

// BenchmarkProvenancePerEdit is what provenance adds to one accepted
// draft edit of a decision of the peers' shape (a 10 × 5 matrix, every
// cell marked, and 19 written questions of 2,000 characters): finding the
// values the edit changed (a mark and a written answer), attributing them,
// and wrapping the edit's chunk in its provenance record. The authority's
// whole edit of the same shape is BenchmarkEditPeersShape.
func BenchmarkProvenancePerEdit(b *testing.B) {
	qs := map[string]*crdt.QuestionState{}
	before := crdt.Draft{Generation: 1, Questions: map[string]crdt.QuestionDraft{}}
	m := &crdt.QuestionState{}
	cells := map[string]marks.Mark{}
	for o := range 10 {
		m.Options = append(m.Options, crdt.Item{ID: fmt.Sprint("o", o)})
		for c := range 5 {
			cells[marks.Key(fmt.Sprint("o", o), fmt.Sprint("c", c))] = marks.Yes
		}
	}
	for c := range 5 {
		m.Criteria = append(m.Criteria, crdt.Item{ID: fmt.Sprint("c", c)})
	}
	qs["m"] = m
	before.Questions["m"] = crdt.QuestionDraft{Choices: []string{"o1"}, Marks: cells}
	text := string(make([]byte, 2000))
	for i := range 19 {
		id := fmt.Sprint("w", i)
		qs[id] = &crdt.QuestionState{Written: true}
		before.Questions[id] = crdt.QuestionDraft{Text: text}
	}
	after := crdt.Draft{Generation: 1, Questions: maps.Clone(before.Questions)}
	nm := maps.Clone(cells)
	nm["o3/c2"] = marks.No
	after.Questions["m"] = crdt.QuestionDraft{Choices: []string{"o1"}, Marks: nm}
	after.Questions["w4"] = crdt.QuestionDraft{Text: text + "x"}
	index := provIndex{}
	chunk := make([]byte, 300)
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	change := "8718aff49960cd81ee214f6cc04deb23851cc4865a93016a05086d76120d1fa0"
	b.ReportAllocs()
	for b.Loop() {
		rec := &provRecord{By: "ana", At: &at, Changes: []string{change}}
		rec.Cells = editCells(index, qs, 1, before, after, "ana", at, change)
		if _, err := wrapDraft(rec, chunk); err != nil {
			b.Fatal(err)
		}
		index = index.apply(rec.Cells)
	}
}
