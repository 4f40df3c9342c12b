package planner

import "errors"

// ErrConflict is returned by Document.ApplyWriteUp when the document moved
// past the write-up's base revision; the write-up is prepared again.
var ErrConflict = errors.New("planner: the document changed since the write-up was prepared")

// ErrTargetLost is returned by Document.ApplyWriteUp (and recorded on the
// failed job) when a block of the write-up's passage is gone.
var ErrTargetLost = errors.New("planner: the write-up's passage is lost")

// ErrTargetAmbiguous is returned by Document.ApplyWriteUp (and recorded on
// the failed job) when the passage can no longer be told apart: a block is
// duplicated, or other blocks now sit inside it.
var ErrTargetAmbiguous = errors.New("planner: the write-up's passage is ambiguous")

// ErrClosed is returned by a Driver's methods after Close.
var ErrClosed = errors.New("planner: driver closed")
