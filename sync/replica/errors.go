package replica

import (
	"errors"
	"fmt"

	"github.com/accord-crdt/accord/question"
)

// ErrClosed is returned by every method called after Close, and by
// requests still waiting when Close is called.
var ErrClosed = errors.New("replica: client closed")

// ErrDisconnected is returned (wrapped) when the connection was lost after
// a request was written and before its reply arrived. The server may or
// may not have applied the request; the records and drafts the client
// receives on reconnecting say which.
var ErrDisconnected = errors.New("replica: connection lost before the reply")

// ErrNoReplica is returned when a decision's record is known but its
// document has not arrived yet: with Options.Background before the first
// catch-up, or (wrapped) by Create when its context ended first.
var ErrNoReplica = errors.New("replica: the decision's document has not arrived yet")

// ErrProtocol is returned (wrapped) when the server answers the hello with
// something other than a welcome of this protocol version.
var ErrProtocol = errors.New("replica: protocol error")

// errResync ends a connection whose replica fell out of step with the
// server (changes that do not apply); reconnecting catches it up.
var errResync = errors.New("replica: out of step with the server; resyncing")

// refusal builds a question.Refusal that callers match with errors.Is
// against question.ErrNotFound and the other sentinels.
func refusal(reason question.Reason, format string, args ...any) *question.Refusal {
	return &question.Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}
