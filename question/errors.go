package question

import (
	"errors"
	"fmt"
)

// Reason is the spec's word for why a command was refused.
type Reason string

// Reasons a command is refused. The first six are the append refusals of
// the spec (question:option, question:criterion).
const (
	Invalid        Reason = "invalid"        // malformed or not allowed by the definition
	Duplicate      Reason = "duplicate"      // a label already present (case-insensitively)
	Full           Reason = "full"           // no room for another option or criterion
	Resolved       Reason = "resolved"       // the decision is settled or discarded
	Resolving      Reason = "resolving"      // the decision is being saved in this same batch
	Implementation Reason = "implementation" // an implementation of the decision is active
	Stale          Reason = "stale"          // the displayed draft is not the accepted one
	Forbidden      Reason = "forbidden"      // the member may not write
	NotFound       Reason = "not_found"      // no such decision or question
	TooMany        Reason = "too_many"       // a batch above its limit
	NotSettled     Reason = "not_settled"    // reopen or why on a decision that is not settled
	Unavailable    Reason = "unavailable"    // storage failed; nothing was acknowledged
	TooLarge       Reason = "too_large"      // the decision's document would pass a limit it must load within
)

// Refusal is the one error type every refused command returns. A refused
// command changes nothing. Compare reasons with errors.Is against the
// sentinels below, or read Reason with errors.As.
type Refusal struct {
	Reason  Reason
	Message string
	// Reset tells the client that sent a refused draft edit to return its
	// replica to the accepted draft.
	Reset bool
	// Err is the underlying cause, if any (e.g. a storage error).
	Err error
}

func (r *Refusal) Error() string {
	if r.Message == "" {
		return "question: " + string(r.Reason)
	}
	return fmt.Sprintf("question: %s: %s", r.Reason, r.Message)
}

// Is matches any Refusal with the same Reason, so errors.Is(err, ErrStale)
// holds for every stale refusal whatever its message.
func (r *Refusal) Is(target error) bool {
	t, ok := target.(*Refusal)
	return ok && t.Reason == r.Reason
}

func (r *Refusal) Unwrap() error { return r.Err }

// Sentinels, one per Reason, for errors.Is.
var (
	ErrInvalid        = &Refusal{Reason: Invalid}
	ErrDuplicate      = &Refusal{Reason: Duplicate}
	ErrFull           = &Refusal{Reason: Full}
	ErrResolved       = &Refusal{Reason: Resolved}
	ErrResolving      = &Refusal{Reason: Resolving}
	ErrImplementation = &Refusal{Reason: Implementation}
	ErrStale          = &Refusal{Reason: Stale}
	ErrForbidden      = &Refusal{Reason: Forbidden}
	ErrNotFound       = &Refusal{Reason: NotFound}
	ErrTooMany        = &Refusal{Reason: TooMany}
	ErrNotSettled     = &Refusal{Reason: NotSettled}
	ErrUnavailable    = &Refusal{Reason: Unavailable}
	ErrTooLarge       = &Refusal{Reason: TooLarge}
)

func refuse(reason Reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// ReasonOf returns the refusal reason of err, or "" if err is not a Refusal.
func ReasonOf(err error) Reason {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}
