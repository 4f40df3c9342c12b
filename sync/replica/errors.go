package replica

import (
	"errors"
	"fmt"

	"github.com/accord-crdt/accord/question"
)

// ErrClosed is returned by every method called after Close, and by
// requests still waiting when Close is called.
var ErrClosed = errors.New("replica: client closed")

// ErrDisconnected is returned (wrapped) by an ask (Ask) when the
// connection was lost after it was written and before its reply arrived:
// the server may or may not have recorded it, and the records the client
// receives on reconnecting say which. Every other request is sent again
// on the next connection, and the server answers one that had already
// taken effect as it did.
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
