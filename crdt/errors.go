package crdt

import (
	"errors"
	"fmt"
)

// ErrTooLarge is returned when bytes from outside exceed a size cap.
var ErrTooLarge = errors.New("crdt: input too large")

// ErrMalformed is returned when a saved document, a change batch or a
// decoded structure cannot be read.
var ErrMalformed = errors.New("crdt: malformed input")

// ErrMissingDeps is returned by ApplyChanges when a change depends on a
// change that is neither in the document nor in the same batch. Applying it
// would park it invisibly inside automerge, out of reach of validation.
var ErrMissingDeps = errors.New("crdt: change depends on unknown changes")

// ErrNoQuestion is returned when an operation names a question the document
// does not hold.
var ErrNoQuestion = errors.New("crdt: no such question")

// ErrWrongKind is returned when an edit does not fit the question: a mark
// or choice on a written question, text on a choice question.
var ErrWrongKind = errors.New("crdt: edit does not fit the question")

// ErrInvalid is returned when an argument is malformed (an id, a mark, a
// text position).
var ErrInvalid = errors.New("crdt: invalid argument")

// errorf wraps one of the sentinels above with detail.
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}

// amError wraps an error from automerge, which are plain strings, so that
// callers can still test for ErrMalformed.
func amError(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %s: %v", ErrMalformed, op, err)
}

// ErrShape is returned by ApplyEdit (and an edit Session) for a change that
// does more than edit draft values: one that deletes or replaces a draft,
// its marks or choices map or its text, creates an object, or touches the
// definition side (format version, questions, appended, generation).
var ErrShape = errors.New("crdt: edit changes the document's shape")

// ErrBudget is returned when a change would take the document past a limit
// Load enforces (see Budget); it wraps ErrTooLarge.
var ErrBudget = fmt.Errorf("%w: over the document's load budget", ErrTooLarge)
