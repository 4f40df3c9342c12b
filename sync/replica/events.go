package replica

import (
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// Kinds of events that are not frames, from the one typed set in
// sync/wire. Every other Event.Kind is the kind of the server frame it
// reports: wire.KindCreated, KindMeta, KindResolved, KindReopened,
// KindDiscarded, KindOptionAdded, KindCriterionAdded, KindChanges (a
// draft changed), KindDoc (a whole document arrived) and KindError (the
// server reported a fault).
const (
	// KindConnected: the server welcomed the client; By is the member.
	KindConnected = wire.KindConnected
	// KindReconnecting: the connection was lost or could not be made; the
	// client is backing off and will redial. Err says why.
	KindReconnecting = wire.KindReconnecting
	// KindEditRefused: the server refused the decision's draft edit; Err is
	// the *question.Refusal. If its Reset is set, the replica went back to
	// the accepted draft and the local changes not yet accepted are gone;
	// otherwise the changes are kept and sent again with the next edit.
	KindEditRefused = wire.KindEditRefused
	// KindOverwritten: another member's accepted edit replaced a value
	// this member had set; Cell holds its provenance (the value now, what
	// it replaced) and By who replaced it.
	KindOverwritten = wire.KindOverwritten
)

// Event reports what others did to the decisions, or a change of the
// connection. Record is the client's copy after the event, where there
// is one.
type Event struct {
	Kind      wire.Kind
	ID        string
	Record    *question.Record
	Answer    *question.Answer
	Question  string
	Option    *question.Option
	Criterion *question.Criterion
	By        string
	// Cell is the value a KindOverwritten event is about.
	Cell *question.CellProvenance
	// Presence is another connection's presence (a wire.KindPresence
	// event; ID is the decision it is in): its state, or that it left or
	// went silent.
	Presence *wire.Presence
	Err      error
}

// emit queues an event without ever blocking: when the buffer is full the
// oldest event is dropped and counted. Only the run goroutine emits, so
// run can close the channel when it ends.
func (c *Client) emit(e Event) {
	for {
		select {
		case c.events <- e:
			return
		default:
		}
		select {
		case <-c.events:
			c.dropped.Add(1)
		default:
		}
	}
}

// eventFor builds an event carrying a copy of the record held for id. The
// caller holds c.mu.
func (c *Client) eventFor(kind wire.Kind, id, by string) Event {
	e := Event{Kind: kind, ID: id, By: by}
	if rec := c.records[id]; rec != nil {
		r := rec.Clone()
		e.Record = &r
	}
	return e
}
