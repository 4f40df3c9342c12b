package marks

import (
	"errors"
	"fmt"
)

// ErrInvalid is returned (wrapped in an *Error) when a mark, id, cell key or
// projection attribute is malformed.
var ErrInvalid = errors.New("marks: invalid")

// Error describes exactly what is wrong with a malformed input. It matches
// ErrInvalid with errors.Is.
type Error struct {
	// What names the kind of input: "mark", "id", "key" or "attribute".
	What string
	// Input is the offending text (truncated to 80 bytes).
	Input string
	// Reason says why it was refused, in words a person can act on.
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("marks: invalid %s %q: %s", e.What, e.Input, e.Reason)
}

// Is reports whether target is ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

func invalid(what, input, reason string) error {
	if len(input) > 80 {
		input = input[:80] + "…"
	}
	return &Error{What: what, Input: input, Reason: reason}
}
