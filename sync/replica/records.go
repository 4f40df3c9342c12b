package replica

import (
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
	rec := in.Clone()
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
		rec.Definition = forward(rec.Definition, def.Clone())
		if rep := c.reps[id]; rep != nil {
			rep.file.recDirty = true
		}
	}
}
