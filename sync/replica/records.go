package replica

import (
	"maps"
	"slices"

	"github.com/accord-crdt/accord/question"
)

// forward returns the definition to hold when in arrives while held is
// held: in, unless it has fewer options or criteria than held for any
// question (or lacks one of held's questions), in which case held stays.
// Definitions only grow (C5), so a shorter one is an older one.
func forward(held, in question.Definition) question.Definition {
	for _, hq := range held.Questions {
		i := slices.IndexFunc(in.Questions, func(q question.Question) bool { return q.ID == hq.ID })
		if i < 0 {
			return held
		}
		iq := in.Questions[i]
		if len(iq.Options) < len(hq.Options) || len(iq.Criteria) < len(hq.Criteria) {
			return held
		}
	}
	return in
}

// adoptRecord stores a copy of in, keeping the held definition if in's is
// older. The caller holds c.mu.
func (c *Client) adoptRecord(in question.Record) {
	if in.ID == "" {
		return
	}
	rec := cloneRecord(in)
	if rep := c.reps[in.ID]; rep != nil {
		rep.file.recDirty = true
	}
	if held := c.records[in.ID]; held != nil {
		rec.Definition = forward(held.Definition, rec.Definition)
	} else {
		c.order = append(c.order, in.ID)
	}
	c.records[in.ID] = &rec
}

// adoptDefinition applies a definition that arrived on its own (an
// append's reply or broadcast). The caller holds c.mu.
func (c *Client) adoptDefinition(id string, def question.Definition) {
	if rec := c.records[id]; rec != nil {
		rec.Definition = forward(rec.Definition, cloneDefinition(def))
		if rep := c.reps[id]; rep != nil {
			rep.file.recDirty = true
		}
	}
}

func cloneRecord(r question.Record) question.Record {
	r.Definition = cloneDefinition(r.Definition)
	if r.Answer != nil {
		a := cloneAnswer(*r.Answer)
		r.Answer = &a
	}
	if r.History != nil {
		h := make([]question.HistoryEntry, len(r.History))
		for i, e := range r.History {
			e.Answer = cloneAnswer(e.Answer)
			h[i] = e
		}
		r.History = h
	}
	r.Passage = slices.Clone(r.Passage)
	r.Appended = maps.Clone(r.Appended)
	if r.Findings != nil {
		r.Findings = slices.Clone(r.Findings)
		for i := range r.Findings {
			r.Findings[i].Sources = slices.Clone(r.Findings[i].Sources)
		}
	}
	return r
}

func cloneDefinition(d question.Definition) question.Definition {
	if d.Questions == nil {
		return d
	}
	qs := make([]question.Question, len(d.Questions))
	for i, q := range d.Questions {
		q.Options = slices.Clone(q.Options)
		q.Criteria = slices.Clone(q.Criteria)
		qs[i] = q
	}
	return question.Definition{Questions: qs}
}

func cloneAnswer(a question.Answer) question.Answer {
	if a.Answers == nil {
		return a
	}
	qa := make([]question.QuestionAnswer, len(a.Answers))
	for i, x := range a.Answers {
		x.Choices = slices.Clone(x.Choices)
		x.Marks = maps.Clone(x.Marks)
		qa[i] = x
	}
	a.Answers = qa
	return a
}
