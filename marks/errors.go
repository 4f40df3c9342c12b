package marks

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrInvalid is returned (wrapped in an *Error) when a mark, id, cell key or
// projection attribute is malformed.
var ErrInvalid = errors.New("marks: invalid")

// Error describes exactly what is wrong with a malformed input. It matches
// ErrInvalid with errors.Is.
type Error struct {
	// What names the kind of input: "mark", "id", "key" or "attribute".
	What string
	// Input is the offending text, truncated to at most 80 bytes (cut at a
	// character boundary) followed by "…".
	Input string
	// Reason says why it was refused, in words a person can act on.
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("marks: invalid %s %q: %s", e.What, e.Input, e.Reason)
}

// Is reports whether target is ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// maxInput is how many bytes of the offending input an Error keeps.
const maxInput = 80

func invalid(what, input, reason string) error {
	if len(input) > maxInput {
		n := maxInput
		for n > 0 && !utf8.RuneStart(input[n]) {
			n--
		}
		input = input[:n] + "…"
	}
	return &Error{What: what, Input: input, Reason: reason}
}
