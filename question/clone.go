package question

import (
	"maps"
	"slices"
)

// Clone returns a deep copy of r: every slice, map and pointer it holds,
// at any depth, is copied, so that the copy and r may each be changed
// without the other seeing it. A nil slice or map stays nil and an empty
// one stays empty.
//
// The authority hands out clones of its records, and the replica client
// keeps clones of those it receives and hands out clones of its own.
func (r Record) Clone() Record {
	r.Definition = r.Definition.Clone()
	if r.Answer != nil {
		a := r.Answer.Clone()
		r.Answer = &a
	}
	if r.History != nil {
		h := make([]HistoryEntry, len(r.History))
		for i, e := range r.History {
			e.Answer = e.Answer.Clone()
			h[i] = e
		}
		r.History = h
	}
	r.Passage = slices.Clone(r.Passage)
	r.Appended = maps.Clone(r.Appended)
	r.Suggested = cloneSuggestion(r.Suggested)
	r.WriteUp, r.WhyDraft = cloneJob(r.WriteUp), cloneJob(r.WhyDraft)
	r.Findings = cloneFindings(r.Findings)
	return r
}

// Clone returns a deep copy of d (see Record.Clone).
func (d Definition) Clone() Definition {
	if d.Questions == nil {
		return d
	}
	qs := make([]Question, len(d.Questions))
	for i, q := range d.Questions {
		q.Options = slices.Clone(q.Options)
		q.Criteria = slices.Clone(q.Criteria)
		qs[i] = q
	}
	return Definition{Questions: qs}
}

// Clone returns a deep copy of a (see Record.Clone).
func (a Answer) Clone() Answer {
	if a.Answers != nil {
		qa := make([]QuestionAnswer, len(a.Answers))
		for i, x := range a.Answers {
			x.Choices = slices.Clone(x.Choices)
			x.Marks = maps.Clone(x.Marks)
			qa[i] = x
		}
		a.Answers = qa
	}
	a.Provenance = slices.Clone(a.Provenance)
	return a
}

func cloneJob(j *Job) *Job {
	if j == nil {
		return nil
	}
	c := *j
	return &c
}

func cloneSuggestion(s *Suggestion) *Suggestion {
	if s == nil {
		return nil
	}
	c := *s
	c.Choices = slices.Clone(s.Choices)
	return &c
}

func cloneFinding(f Finding) Finding {
	f.Sources = slices.Clone(f.Sources)
	return f
}

func cloneFindings(fs []Finding) []Finding {
	if fs == nil {
		return nil
	}
	out := make([]Finding, len(fs))
	for i, f := range fs {
		out[i] = cloneFinding(f)
	}
	return out
}
