package planner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/accord-crdt/accord/question"
)

// JobReport says what one RunJobs pass did.
type JobReport struct {
	// Applied counts write-ups written into the document.
	Applied int
	// Drafted counts why drafts stored.
	Drafted int
	// Done, Failed and Skipped count jobs ended in this pass.
	Done, Failed, Skipped int
	// Waiting is why pending jobs were left waiting, if they were.
	Waiting Blocked
}

// RunJobs runs doc's pending write-up and why jobs once. They run only
// under the existing, authorised Planner owner (never claiming one) and,
// under a remote harness, only while a Planner is attached; otherwise they
// keep waiting, across restarts too.
//
// A why job needs the settler's captured session; without one the settle
// simply has no draft. A write-up writes the passage of its scope (every
// decision whose passage shares a block) with every saved answer of the
// scope, and commits source, anchors and receipts together; an answer
// whose receipt is already in the document is never written again. A lost
// or ambiguous passage fails the job, which keeps its id when retried.
func (d *Driver) RunJobs(ctx context.Context, doc string) (JobReport, error) {
	var rep JobReport
	if d.ctx.Err() != nil {
		return rep, ErrClosed
	}
	ctx = driverContext(ctx)
	s := d.state(doc)
	s.jobs.Lock()
	defer s.jobs.Unlock()
	recs, err := d.records(ctx, doc)
	if err != nil {
		return rep, err
	}
	if !hasPending(recs) {
		return rep, nil
	}
	g, err := d.Gate(ctx, doc)
	if err != nil {
		return rep, err
	}
	if g.Owner == "" {
		rep.Waiting = NoOwner
		return rep, nil
	}
	if g.Remote && !g.Attached {
		rep.Waiting = NotAttached
		return rep, nil
	}
	for _, rec := range byQueued(recs, func(r question.Record) *question.Job { return r.WhyDraft }) {
		if err := d.draftWhy(ctx, doc, rec, &rep); err != nil {
			return rep, err
		}
	}
	done := map[string]bool{}
	for _, rec := range byQueued(recs, func(r question.Record) *question.Job { return r.WriteUp }) {
		if done[rec.ID] {
			continue
		}
		// Fresh records: an earlier write-up of this pass may have ended
		// this one's job too.
		if recs, err = d.records(ctx, doc); err != nil {
			return rep, err
		}
		decisions, blocks := scopeOf(recs, rec.ID)
		for _, id := range decisions {
			done[id] = true
		}
		if err := d.writeUp(ctx, doc, g.Owner, recs, decisions, blocks, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func (d *Driver) records(ctx context.Context, doc string) ([]question.Record, error) {
	var recs []question.Record
	err := d.opts.Authorities.Do(ctx, doc, func(a *question.Authority) error {
		recs = a.Records()
		return nil
	})
	return recs, err
}

func hasPending(recs []question.Record) bool {
	for _, r := range recs {
		if pending(r.WriteUp) || pending(r.WhyDraft) {
			return true
		}
	}
	return false
}

func pending(j *question.Job) bool { return j != nil && j.State == question.JobPending }

// byQueued returns the records whose job (picked by job) is pending,
// oldest first.
func byQueued(recs []question.Record, job func(question.Record) *question.Job) []question.Record {
	var out []question.Record
	for _, r := range recs {
		if pending(job(r)) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(x, y question.Record) int { return job(x).QueuedAt.Compare(job(y).QueuedAt) })
	return out
}

// finish ends a job; a job that is no longer pending (reopened, ended by
// another pass) is left as it is.
func (d *Driver) finish(ctx context.Context, doc, id, job string, state question.JobState, note string, rep *JobReport) error {
	err := d.opts.Authorities.Do(ctx, doc, func(a *question.Authority) error {
		_, err := a.FinishJob(ctx, id, job, state, note)
		return err
	})
	switch {
	case question.ReasonOf(err) == question.Stale:
		return nil
	case err != nil:
		return err
	}
	switch state {
	case question.JobDone:
		rep.Done++
	case question.JobFailed:
		rep.Failed++
	case question.JobSkipped:
		rep.Skipped++
	}
	return nil
}

// draftWhy runs one why-only job: once per settle, under the settler's
// captured session, never replacing a person's why.
func (d *Driver) draftWhy(ctx context.Context, doc string, rec question.Record, rep *JobReport) error {
	j := rec.WhyDraft
	if rec.WhyBy != "" {
		return d.finish(ctx, doc, rec.ID, j.ID, question.JobSkipped, "@"+rec.WhyBy+" wrote or cleared the why", rep)
	}
	if rec.Status != question.Settled || rec.Answer == nil || rec.Answer.Generation != j.Generation {
		return nil // a reopen already made it stale
	}
	sess, ok, err := d.opts.Members.Session(ctx, doc, j.Settler)
	if err != nil {
		return fmt.Errorf("planner: session of %q: %w", j.Settler, err)
	}
	if !ok {
		return d.finish(ctx, doc, rec.ID, j.ID, question.JobSkipped, "no captured session of @"+j.Settler+"; no draft", rep)
	}
	ans, _ := AnswerOf(rec)
	text, err := d.opts.Runtime.DraftWhy(ctx, doc, WhyRequest{Doc: doc, Job: j.ID, Session: sess, Answer: ans, Prompt: WhyPrompt(ans)})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return d.finish(ctx, doc, rec.ID, j.ID, question.JobFailed, "the Planner could not draft it: "+err.Error(), rep)
	}
	err = d.opts.Authorities.Do(ctx, doc, func(a *question.Authority) error {
		_, err := a.DraftWhy(ctx, rec.ID, j.Generation, text)
		return err
	})
	switch question.ReasonOf(err) {
	case "":
		if err != nil {
			return err
		}
		rep.Drafted++
		rep.Done++
		return nil
	case question.Resolved:
		return d.finish(ctx, doc, rec.ID, j.ID, question.JobSkipped, "a person wrote or cleared the why first", rep)
	case question.Invalid:
		return d.finish(ctx, doc, rec.ID, j.ID, question.JobFailed, "the draft was refused: "+err.Error(), rep)
	case question.Stale, question.NotSettled:
		return nil
	}
	return err
}

// scopeOf returns the write scope of a decision: every decision (not
// discarded) whose passage shares a block with it, transitively, in
// creation order, and the blocks of their passages.
func scopeOf(recs []question.Record, id string) ([]string, map[string]bool) {
	blocks := map[string]bool{}
	in := map[string]bool{id: true}
	for grew := true; grew; {
		grew = false
		for _, r := range recs {
			if r.Status == question.Discarded || len(r.Passage) == 0 {
				continue
			}
			touches := in[r.ID]
			for _, b := range r.Passage {
				touches = touches || blocks[b]
			}
			if !touches {
				continue
			}
			if !in[r.ID] {
				in[r.ID] = true
				grew = true
			}
			for _, b := range r.Passage {
				if !blocks[b] {
					blocks[b] = true
					grew = true
				}
			}
		}
	}
	var out []string
	for _, r := range recs {
		if in[r.ID] {
			out = append(out, r.ID)
		}
	}
	return out, blocks
}

// locate finds a scope's blocks in a snapshot, in document order. Every
// block must be there exactly once and together they must form one run,
// decision cards between them aside.
func locate(snap Snapshot, scope map[string]bool) ([]Block, error) {
	seen := map[string]int{}
	first, last := -1, -1
	for i, b := range snap.Blocks {
		if !scope[b.ID] {
			continue
		}
		seen[b.ID]++
		if first < 0 {
			first = i
		}
		last = i
	}
	for id := range scope {
		switch seen[id] {
		case 0:
			return nil, fmt.Errorf("%w: block %s is gone", ErrTargetLost, id)
		case 1:
		default:
			return nil, fmt.Errorf("%w: block %s appears %d times", ErrTargetAmbiguous, id, seen[id])
		}
	}
	var out []Block
	for _, b := range snap.Blocks[first : last+1] {
		switch {
		case scope[b.ID]:
			out = append(out, b)
		case b.Kind != Card:
			return nil, fmt.Errorf("%w: block %s now sits inside the passage", ErrTargetAmbiguous, b.ID)
		}
	}
	return out, nil
}

// writeUp writes one scope's pending answers into its passage.
func (d *Driver) writeUp(ctx context.Context, doc, owner string, recs []question.Record, decisions []string, scope map[string]bool, rep *JobReport) error {
	byID := map[string]question.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	var owed []question.Record // settled, with a pending write-up of that settle
	var answers []TurnAnswer
	anchors := make([]Anchor, 0, len(decisions))
	for _, id := range decisions {
		r := byID[id]
		anchors = append(anchors, Anchor{Decision: id, Blocks: slices.Clone(r.Passage)})
		if r.Status != question.Settled || r.Answer == nil {
			continue
		}
		a, _ := AnswerOf(r)
		answers = append(answers, a)
		if pending(r.WriteUp) && r.WriteUp.Generation == r.Answer.Generation {
			owed = append(owed, r)
		}
	}
	slices.SortStableFunc(answers, func(x, y TurnAnswer) int { return x.SavedAt.Compare(y.SavedAt) })
	fail := func(list []question.Record, note string) error {
		for _, r := range list {
			if err := d.finish(ctx, doc, r.ID, r.WriteUp.ID, question.JobFailed, note, rep); err != nil {
				return err
			}
		}
		return nil
	}
	for attempt := 0; attempt < 3 && len(owed) > 0; attempt++ {
		snap, err := d.opts.Document.Read(ctx, doc)
		if err != nil {
			return fmt.Errorf("planner: read %q: %w", doc, err)
		}
		blocks, err := locate(snap, scope)
		if err != nil {
			return fail(owed, err.Error())
		}
		var apply []Receipt
		var rest []question.Record
		for _, r := range owed {
			rc := Receipt{Decision: r.ID, Generation: r.WriteUp.Generation}
			if snap.Has(rc) {
				if err := d.finish(ctx, doc, r.ID, r.WriteUp.ID, question.JobDone, "already written", rep); err != nil {
					return err
				}
				continue
			}
			apply = append(apply, rc)
			rest = append(rest, r)
		}
		owed = rest
		if len(apply) == 0 {
			return nil
		}
		res, err := d.opts.Runtime.WriteUp(ctx, doc, WriteUpRequest{
			Doc: doc, Owner: owner, Blocks: blocks, Answers: answers, New: apply, Prompt: WriteUpPrompt(blocks, answers),
		})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fail(owed, "the Planner could not write it: "+err.Error())
		}
		for _, id := range slices.Sorted(maps.Keys(res.Source)) {
			if !scope[id] {
				return fail(owed, fmt.Sprintf("the write-up wrote block %s, outside its passage", id))
			}
		}
		ids := make([]string, len(blocks))
		for i, b := range blocks {
			ids[i] = b.ID
		}
		err = d.opts.Document.ApplyWriteUp(ctx, doc, WriteUp{Base: snap.Revision, Scope: ids, Source: res.Source, Anchors: anchors, Receipts: apply})
		switch {
		case err == nil:
			rep.Applied++
			for _, r := range owed {
				if err := d.finish(ctx, doc, r.ID, r.WriteUp.ID, question.JobDone, "", rep); err != nil {
					return err
				}
			}
			return nil
		case errors.Is(err, ErrConflict):
			continue
		case errors.Is(err, ErrTargetLost), errors.Is(err, ErrTargetAmbiguous):
			return fail(owed, err.Error())
		default:
			// Unknown outcome: the job stays pending; its receipts tell the
			// next pass whether it was applied.
			return fmt.Errorf("planner: apply the write-up of %s: %w", strings.Join(receiptIDs(apply), ", "), err)
		}
	}
	if len(owed) > 0 {
		return fmt.Errorf("planner: %q kept changing; the write-up stays queued: %w", doc, ErrConflict)
	}
	return nil
}

func receiptIDs(rs []Receipt) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%s:%d", r.Decision, r.Generation)
	}
	return out
}
