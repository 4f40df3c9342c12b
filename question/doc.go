// Package question is the decision domain and its authority: definitions
// (written and choice questions, options, criteria), records and their
// lifecycle (open, settled, discarded, reopened), shared drafts, refusals
// and the card projection written into the plan document.
//
// An Authority owns the decisions of one document. Every command is
// validated, its effects (records, CRDT draft changes, projections) are
// committed to a persist.Store in one Write, and only then applied in
// memory and returned. A command that returns an error changed nothing. An
// Authority is not safe for concurrent use: one goroutine owns a document
// and feeds it commands in order, which is what makes its history
// linearizable.
//
// # Usage
//
// Open an authority on a store, then send it commands. Reply to a client,
// or broadcast, only after the command returned: by then it is durable.
//
//	a, err := question.NewAuthority(ctx, question.Options{Store: store, Doc: "plan-1"})
//
//	// Open a card (or a batch of up to MaxBatch, all or none). Creating
//	// with a key seen before returns that card.
//	out, err := a.Create(ctx, who, []question.CreateRequest{{Key: "reset-flow", Definition: def}})
//	id := out[0].Record.ID
//
//	// A member's replica of the shared draft: load the accepted document,
//	// edit it, send the changes. A refused edit carries Reset: the
//	// replica goes back to the accepted draft.
//	saved, _ := a.Save(id)
//	r, _ := crdt.Load(saved, nil, crdt.Options{})
//	h := r.Heads()
//	r.Choose("q1", "email", true)
//	r.SetMark("q1", "email", "cheap", marks.Yes)
//	changes, _ := r.ChangesSince(h)
//	_, err = a.Edit(ctx, who, id, changes)
//
//	// Save claims the revision the member displays; several decisions can
//	// be saved at once, each with its own result.
//	res, err := a.Submit(ctx, who, []question.SubmitRequest{{ID: id, Heads: r.Heads()}})
//
//	// Reopen moves the answer into the history and starts a fresh draft
//	// of the next generation; it names the generation the member saw
//	// saved (0: the current one).
//	reopened, err := a.Reopen(ctx, who, id, res[0].Record.Generation)
//
// Discard, AppendOption, AppendCriterion (with idempotency keys), SetWhy
// and Expand follow the same pattern.
//
// # Resent requests
//
// A request whose reply was lost may come again. Each command knows its
// own repeat by what the request carries and answers it as it did the
// first time, changing nothing: Edit by changes the history holds
// (Edited.Repeated), Submit by the same member's save of the same heads
// (Submitted.Repeated), Reopen and SetWhy by the same member and
// generation, Discard of a discarded decision (Applied.Repeated),
// appends and Create by their keys. A request that never took effect is
// decided as new, so nothing is reported refused that took effect.
//
// # Refusals
//
// Every refused command returns a *Refusal whose Reason is one of the
// spec's words: invalid, duplicate, full, resolved, resolving,
// implementation (the append refusals), and stale, forbidden, not_found,
// too_many, not_settled, unavailable. Compare with errors.Is against the
// sentinels (ErrStale, ErrDuplicate, ...) or read the reason with ReasonOf.
// A save of a revision other than the accepted draft is refused as stale
// and writes nothing. unavailable means the store failed: nothing was
// acknowledged, and the authority reloads from the store before its next
// command.
//
// # Projection
//
// Each decision is also rendered as a <Questionnaire> element (see
// Projection, RenderProjection and ParseProjection) that reads on its own
// in the plan document: the questions, options, criteria and, once
// settled, the answer with its marks attribute. It is committed with the
// record whenever the definition, status or answer changes; the record
// stays authoritative.
//
// # Determinism
//
// The package does no I/O of its own besides the Store and starts no
// goroutines. It reads the time only through Options.Now and mints the ids
// of records, options and criteria only through Options.NewID (by default
// time.Now and random ids); a test that injects both gets the same records,
// answers and projections on every run. Draft documents get a fresh CRDT
// actor id each time an Authority loads, which keeps the authority's
// changes unique across restarts.
//
// Only the Options.LiveDecisions most recently used decisions (64 by
// default) keep a live automerge document; the others are parked with
// their stored bytes, their checked state and heads, and are woken,
// exactly as they were, by whatever needs the document. ParkUnused parks
// the decisions nothing used since its previous call, however few are
// live: a driver calling it every few seconds keeps live only the
// decisions in use. A sync session (NewSession) pins its decision's
// document until ReleaseSession.
package question
