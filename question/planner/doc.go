// Package planner brings saved answers back to the Planner. The library
// owns decisions and the delivery of their answers; the host owns the plan
// document, Chat, members and the Planner runtime, and hands them to this
// package behind small interfaces (memhost implements all of them in
// memory).
//
// # What it does
//
// Planner tools (Tools, and Tools.Definitions for an agent): read_plan
// returns the plan's revision and blocks, which the other tools name;
// open_decisions opens 1 to 10 written or choice cards in one durable
// batch beside their passages; open_decision opens one written card placed beside a named
// block or the first section; ask opens a card and blocks until a person
// saves it; suggest_choice stores an advisory suggestion that never
// resolves anything; anchor_plan, after the Planner rewrote a passage in
// the foreground, moves every decision sharing that write scope to the
// reviewed replacement passage in one commit (CheckPassage: at most eight
// paragraphs, tables or diagrams in one run, cards between them kept). A
// host with an Editor also serves edit_plan, whose result lists
// anchors_pending, and update_document, a whole-document rewrite after
// which Rewritten keeps the Planner's own cards linked. A host whose
// Planner is an agent outside it (over MCP, say) gives the tools Chat's
// turns (AgentTurns) and serves await_answers too, which hands the agent
// each turn Chat accepted, under its claim id, until the agent says it is
// done (AwaitAnswers); ask and await_answers are marked Long, since they
// wait for people. A turn focused on a decision's page cannot create
// decisions in the root document.
//
// A revision the plan cannot have been read at (made up, or one that
// nothing in the plan is unchanged since) is refused stale, and a block
// the plan does not hold is refused invalid, naming it: a tool never
// places a card by input that names nothing real. Every tool's result is
// a JSON object described by its ToolDef.OutputSchema, as MCP requires.
//
// The decision_answers queue lives in package question: saving a decision
// the Planner left open writes its row in the same commit as the save
// (unless a blocking ask is waiting for it, which gets the answer instead);
// saving again replaces the row; reopening makes it stale in the reopen's
// commit. Next, the deterministic core, decides from the time, the rows
// and the host's Gate when a turn starts: 5 s after the last waiting save
// or 30 s after the first, never while a Planner turn runs or waits in
// that Chat, only under the existing Planner owner and, under a remote
// harness, only while a Planner is attached. The Driver carries out its
// plans with exactly-once delivery:
//
//  1. claim the waiting rows under a fresh id (a durable commit);
//  2. Chat.Accept the turn, whose notice carries that id;
//  3. mark the rows delivered (a durable commit).
//
// After a crash between 1 and 3, the claimed rows are recognised: Chat is
// asked whether that id was accepted; if so the rows are marked, if not
// the same turn is handed over again under the same id. No waiting answer
// is lost and no turn runs twice.
//
// Each save queues the write-up of the decision's passage (decisions
// sharing blocks share one write scope, and a write-up keeps every saved
// answer of the scope) and, for a Planner's or a person's decision, a
// why-only draft keyed why:<id>:<generation>. Both run under the existing
// Planner owner (the why under the settler's captured session), wait for an
// attached Planner under a remote harness, and resume after a restart.
//
// # Usage
//
// A host implements, per the contracts on each interface:
//
//   - Document: Read (blocks, revision, receipts), Unchanged (has a block
//     stayed as it was at a revision), Place (put cards beside blocks,
//     idempotently) and ApplyWriteUp (source, anchors and receipts in one
//     commit; ErrConflict, ErrTargetLost, ErrTargetAmbiguous).
//   - Chat: Post (a system notice with an id), Accept (a turn nobody typed:
//     its notice and the queued turn, atomically, once per id) and Accepted
//     (was that id accepted, also after a restart). The host starts an
//     accepted turn under Turn.Owner when the Chat is free.
//   - Runtime: Owner, Remote, Attached, Busy, and WriteUp and DraftWhy,
//     which run the Planner's write_decision_prose job and return its text.
//   - Members: Member (may this login write) and Session (the captured
//     Planner session of a login).
//   - Authorities: serialized access to each document's
//     question.Authority, with durable commits; NewLocal provides one.
//
// Then:
//
//	local := planner.NewLocal(func(ctx context.Context, doc string) (*question.Authority, error) {
//		return question.NewAuthority(ctx, question.Options{Store: store, Doc: doc})
//	})
//	d, err := planner.New(planner.Options{Authorities: local, Document: doc, Chat: chat, Runtime: rt, Members: members})
//	local.OnChange(d.Poke) // saves, reopens and discards wake the driver
//	d.Watch("plan-1")      // on opening a document, also after a restart
//	defer d.Close()
//
//	tools, err := planner.NewTools(planner.ToolsOptions{Authorities: local, Document: doc, Turns: chat})
//	for _, t := range tools.Definitions() { agent.Register(t.Name, t.Description, t.InputSchema, t.Handle) }
//
// A transport serves the definitions as they are: sync/mcp's Tool takes
// each one's name, description and schemas, Long, TakesTurns (as Holds)
// and Handle with the session's document as the Call, and
// AgentInstructions as what a session is told first.
//
// A host whose document is rewritten outside any Planner turn (a
// workflow's update_document, say) calls Tools.Rewritten with the blocks
// before and after, or serves update_document through Tools with an
// Editor, which does it.
//
// The host calls Driver.Poke(doc) when a Planner owner appears, a Planner
// attaches, or a Chat turn ends, and routes every decision command of a
// document through the same Authorities, so that a save cannot slip
// between an ask's card and its wait.
package planner
