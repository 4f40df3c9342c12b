package planner

import (
	"slices"
	"strings"
	"time"

	"github.com/accord-crdt/accord/question"
)

// Default batching times (requirement T4).
const (
	// DefaultQuiet is how long after the last waiting save a turn starts.
	DefaultQuiet = 5 * time.Second
	// DefaultCap is how long after the first waiting save a turn starts at
	// the latest.
	DefaultCap = 30 * time.Second
)

// Gate is the host's state that decides whether a turn nobody typed may
// start in a document's Chat now.
type Gate struct {
	// Owner is the existing Planner owner; "" when there is none. Turns
	// run only under it and never claim ownership.
	Owner string
	// Remote is true under a remote harness, where a Planner must be
	// Attached.
	Remote   bool
	Attached bool
	// Busy is true while a Planner turn runs or waits in the Chat.
	Busy bool
}

// Blocked says why a gate is closed.
type Blocked string

// Why a turn cannot start now.
const (
	NoOwner     Blocked = "no Planner owner"
	NotAttached Blocked = "no Planner attached to the remote harness"
	ChatBusy    Blocked = "a Planner turn runs or waits in Chat"
)

// Closed returns why the gate is closed, or "" when a turn may start.
func (g Gate) Closed() Blocked {
	switch {
	case g.Owner == "":
		return NoOwner
	case g.Remote && !g.Attached:
		return NotAttached
	case g.Busy:
		return ChatBusy
	}
	return ""
}

// PlanInput is everything the core decides from.
type PlanInput struct {
	Now  time.Time
	Rows []question.AnswerRow
	Gate Gate
	// Unaccepted holds claimed turns that Chat said it has not accepted.
	Unaccepted map[string]bool
	// Quiet and Cap are the batching times; zero means the defaults.
	Quiet, Cap time.Duration
}

// Plan is the core's decision. At most one of Check, Start and Claim is
// set; when none is, nothing is due before Wake (zero: not until the rows
// or the host change).
type Plan struct {
	// Check is a claimed turn to look up in Chat: if it was accepted, its
	// rows are marked delivered; if not, it is started again (Start).
	Check string
	// Start is a claimed turn Chat has not accepted: hand it to Chat under
	// the same id, with its rows that are not stale.
	Start string
	// Claim lists the decisions whose waiting rows a new turn claims now,
	// under a fresh id, before it starts.
	Claim   []string
	Wake    time.Time
	Blocked Blocked
}

// Idle reports whether the plan has nothing to do now.
func (p Plan) Idle() bool { return p.Check == "" && p.Start == "" && len(p.Claim) == 0 }

// Next is the deterministic core of answer delivery: from the time, the
// rows and the host's gate it decides what happens next, with no I/O.
//
//  1. A claimed turn not yet looked up is checked first (no gate): claimed
//     but not marked means it may already have started.
//  2. Nothing starts while the gate is closed: no owner, a remote harness
//     without a Planner, or a busy Chat.
//  3. A claimed turn Chat has not accepted is started again, same id.
//  4. Waiting rows form one turn once Quiet passed since the last save, or
//     Cap since the first, whichever is sooner.
func Next(in PlanInput) Plan {
	quiet, limit := in.Quiet, in.Cap
	if quiet <= 0 {
		quiet = DefaultQuiet
	}
	if limit <= 0 {
		limit = DefaultCap
	}
	claimed := map[string]time.Time{}
	var waiting []question.AnswerRow
	for _, r := range in.Rows {
		switch {
		case r.Turn != "":
			if at, ok := claimed[r.Turn]; !ok || r.ClaimedAt.Before(at) {
				claimed[r.Turn] = r.ClaimedAt
			}
		case r.State == question.RowWaiting:
			waiting = append(waiting, r)
		}
	}
	turns := make([]string, 0, len(claimed))
	for id := range claimed {
		turns = append(turns, id)
	}
	slices.SortFunc(turns, func(x, y string) int {
		if c := claimed[x].Compare(claimed[y]); c != 0 {
			return c
		}
		return strings.Compare(x, y)
	})
	for _, id := range turns {
		if !in.Unaccepted[id] {
			return Plan{Check: id}
		}
	}
	if b := in.Gate.Closed(); b != "" {
		return Plan{Blocked: b}
	}
	if len(turns) > 0 {
		return Plan{Start: turns[0]}
	}
	if len(waiting) == 0 {
		return Plan{}
	}
	first, last := waiting[0].SavedAt, waiting[0].SavedAt
	for _, r := range waiting[1:] {
		if r.SavedAt.Before(first) {
			first = r.SavedAt
		}
		if r.SavedAt.After(last) {
			last = r.SavedAt
		}
	}
	due := last.Add(quiet)
	if c := first.Add(limit); c.Before(due) {
		due = c
	}
	if in.Now.Before(due) {
		return Plan{Wake: due}
	}
	slices.SortFunc(waiting, func(x, y question.AnswerRow) int {
		if c := x.SavedAt.Compare(y.SavedAt); c != 0 {
			return c
		}
		return strings.Compare(x.Decision, y.Decision)
	})
	ids := make([]string, len(waiting))
	for i, r := range waiting {
		ids[i] = r.Decision
	}
	return Plan{Claim: ids}
}
