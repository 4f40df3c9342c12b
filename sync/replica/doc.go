// Package replica is the Go client of Accord's sync protocol: a member's
// connection to one document's decisions, holding a local replica (a
// crdt.Doc) of every decision's shared draft.
//
// Edits (SetMark, Choose, SpliceText, SetText) apply to the local replica
// at once, connected or not, and are sent to the server as question:edit
// frames carrying the changes since the last accepted revision. At most
// one edit per decision is in flight; changes made meanwhile go in the
// next one. A refused edit that asks for a reset returns the replica to
// the accepted draft the refusal carries: the decision's accepted edits
// stay, the refused and later unaccepted local changes are dropped.
//
// Dial returns once the server has welcomed the client and every decision
// the welcome names has its document (or its catch-up changes) applied,
// so those decisions are ready to edit: SetMark right after Dial works.
// Create likewise returns once the new decisions' documents have arrived.
// Both waits are bounded by the caller's context. With Options.Background
// Dial returns at once, and Flush (with no ids) is the wait for the same.
// ErrNoReplica is then what an edit of a decision whose document has not
// arrived returns.
//
// Requests (Submit, Reopen, Discard, Expand, SetWhy, AppendOption,
// AppendCriterion, Create, the findings calls) wait for their reply,
// bounded by their context, and for a connection when there is none. A
// refusal is a *question.Refusal: test it with errors.Is(err,
// question.ErrStale) and the other sentinels. Submit first waits until
// the replica's edits are accepted, so the revision it claims is the one
// displayed.
//
// Every call that returns success returns ready: the local replica,
// Draft, Record and Definition already show its effect, so the next call
// can build on it. Reopen returns once the replica holds the fresh draft
// (an edit right after goes into the new generation, and a save of it
// succeeds); AppendOption and AppendCriterion once the new cells can be
// marked; Create once the new decisions' documents are here; the calls
// that change only the record (SetWhy, Discard, the findings calls) once
// their reply's record is adopted. The server's reply names the heads
// the request produced, and the client waits until its replica holds
// them (docs/PROTOCOL.md, "Ready when it returns"). If ctx ends first,
// the call returns an error wrapping ErrNoReplica and ctx's error: the
// request took effect and its changes are still on their way.
//
// When the connection is lost the client backs off (exponential, jittered)
// and redials. Its hello lists, per decision, the last revision the server
// accepted, never the replica's own heads, which may hold changes the
// server never saw; the server answers with the changes since then (or
// the whole document), which merge into the replica beside its local
// changes, and the changes the server has not accepted are then pushed.
// So a reconnecting client holds the accepted shared draft together with
// its own offline edits once they are accepted (L11).
//
// A request whose connection was lost before its reply is sent again,
// unchanged, on the next connection, and the server answers a request
// that had already taken effect as it did (docs/PROTOCOL.md, "Outcomes of
// a resent request"): the caller sees the outcome, never a guess. A save
// claims the heads it was made with, a reopen or why the generation the
// client showed saved. Only an ask fails with ErrDisconnected instead.
//
// A question:doc (or the Doc of a reset reply) whose history does not
// contain the replica's accepted heads is a rebased document: the server
// replaced the decision's history by a new one holding the same state.
// The replica never merges the two histories (that would duplicate the
// draft's structure): it takes the rebased document as it is and makes
// its own draft values not yet accepted again on it, as fresh local
// edits (marks and choices it changed set again, its written answer
// spliced from the accepted text to its text where that span now sits),
// which are then sent like any local change. An edit made against the
// old history that reaches the server after the rebase is refused as
// stale with reset and the rebased document; the replica then carries
// its values over the same way, instead of dropping them, and Flush
// reports no reset. Values of an earlier generation, or that the new
// definition has no place for, do not carry.
//
// Undo and Redo revert the member's own edit groups of a decision, newest
// first (docs/PROTOCOL.md, "Undo"): a mark, a choice, a why, or a typing
// burst on one written answer (text edits each within a second of the one
// before and touching the span it changed; a pause, an edit elsewhere or
// another member's typing arriving there starts a new group). An undo is
// an ordinary local edit, or for a why a question:why claiming the why
// the group set as seen. A mark, choice or why goes back only while it
// still holds the value the group set; otherwise the undo is skipped and
// names who set the value, when the client knows (the cells of the
// changes it received, the record's whyBy). A burst is undone on the
// characters themselves, found by the document's history as they were
// where it ended: those it inserted are deleted wherever they are now,
// those it deleted go back right after the character that preceded them
// (or, that one deleted since, on a fork of the document at the burst's
// end heads, after its place), and others' typing stays; every such
// change is made under a fresh actor. A redo is made on the replica as
// the undo left it, and characters put back stand for the ones they
// replace, so undos and redos give the text back exactly. The stacks (100
// groups each) are
// the client's: they survive reconnects, are kept with Options.Dir in the
// replica's snapshot and log, and are emptied when the record leaves open,
// a new generation starts, a rebased document is taken or a refused edit
// resets the replica; UndoState says which, until the next group.
//
// Definitions only grow: a record or definition that arrives with fewer
// options or criteria for any question than the client holds (an older
// one) never replaces the held definition (C5).
//
// With Options.Dir set, each decision's replica, its accepted revision
// and its record are saved after every local change and every applied
// frame: a line appended (and synced) to the decision's change log holds
// what changed, so a save costs the change, not the document's history;
// once the log has grown as large as the last snapshot, a new snapshot
// (written to a temporary file, then renamed) replaces both. A client
// started again on the same Dir restores its drafts and unsent edits
// (up to the last whole line of a log a crash cut short), works offline
// with Options.Background, and pushes them on connecting.
//
// # Usage
//
//	c, err := replica.Dial(ctx, "wss://host/decisions?doc=plan-7", replica.Options{
//		Header: http.Header{"Authorization": {"Bearer " + token}},
//		Dir:    filepath.Join(stateDir, "plan-7"),
//		Logger: logger,
//	})
//	if err != nil { ... }
//	defer c.Close()
//	go func() {
//		for e := range c.Events() { // others' edits and saves, connection state
//			render(e)
//		}
//	}()
//	recs, err := c.Create(ctx, wire.Card{Key: "store", Definition: def}) // or a decision from Records()
//	id := recs[0].ID
//	c.SetMark(id, "q1", "opt-a", "cost", marks.Yes) // local at once, sent when it can be
//	draft, heads, err := c.Draft(id)                 // what to display
//	results, err := c.Submit(ctx, id)               // flush, then save the displayed revision
//	if errors.Is(err, question.ErrStale) { ... }
//
// The README's "Use it" program (examples/readme) runs this against a
// real server on a bbolt file.
//
// # Goroutines
//
// Dial starts one goroutine, run, which owns the connection's lifecycle:
// it dials, sends the hello and reads the welcome, then reads and applies
// every frame of the connection itself; when the connection fails it
// backs off and redials. For each connection run starts one writer
// goroutine, the only one that writes to the connection: it sends the
// edits local changes call for, the queued requests, and pings. run waits
// for the writer before redialling, and Close waits for run. run is also
// the only goroutine that sends on Events, which it closes when it ends.
//
// The replicas, records, undo stacks and pending requests are guarded by
// one mutex. The exported methods and both goroutines hold it only for
// short sections that never wait on anything but, with Options.Dir, the
// replica's file (a local edit, applying one frame, choosing the next
// edits; an undo of text forks the document), and never while reading
// from or writing to the connection: a why's undo waits for its reply
// without it.
// Events never block the reader: when the buffer is full the oldest event
// is dropped and counted (Dropped).
package replica
