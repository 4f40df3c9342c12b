package main

// Browser tests of the plan itself: a person edits its text in one window
// and the other sees it live; the demo's whole-document rewrite relinks a
// card in both windows; an agent over MCP opens decisions that appear in
// the page, re-anchors one after a person's rewrite of its passage, and
// gets the page's save exactly once; page edits survive a restart.

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/accord-crdt/accord/question/planner"
)

// passage is the expression of a plan row's text as the page shows it
// outside edit mode.
func passage(block string) string {
	return fmt.Sprintf(`($(%q)?.querySelector(".passage")?.textContent ?? "")`, "block-"+block)
}

// blockByText is the expression of the id of the block with this text in
// the plan the page holds ("" if none).
func blockByText(text string) string {
	return fmt.Sprintf(`((window.accordPlan?.blocks || []).find((b) => b.kind !== "decision" && b.text === %q)?.id || "")`, text)
}

// cardIn is the expression that the card of decision id sits in block's
// row, linked to link.
func cardIn(id, block, link string) string {
	return fmt.Sprintf(`$(%q)?.querySelector('[data-testid="card-%s"]')?.dataset.link === %q`, "block-"+block, id, link)
}

// markPage marks the page's window so a test can tell it was not reloaded.
func (b *browser) markPage() { b.eval(`(window.__notReloaded = true)`, nil) }

func (b *browser) waitNotReloaded() {
	b.t.Helper()
	b.waitFor("the same page, never reloaded", `window.__notReloaded === true`)
}

// A person edits the plan's text in the page (edit mode: change a
// paragraph, insert a heading, delete it again) and the other window
// shows each change live, without a reload. The heading inserted inside
// the recovery decision's passage (b5, b6) is an unrelated gap (W8), so
// edit_plan lists the decision in anchors_pending and both windows mark
// its card "Needs review" (W10); deleting the heading mends the passage
// and the mark goes from both. An edit made while the plan moved on
// elsewhere goes through when its block is unchanged, and is kept for
// review when someone changed that block.
func TestBrowserPlanEditLive(t *testing.T) {
	_, ids, ana, ben := twoWriters(t)
	ana.markPage()
	ben.markPage()
	rec := ids["recovery"]

	ana.click("edit-plan")
	ana.waitFor("the plan's fields", `!!$("block-input-b3") && $("edit-plan").getAttribute("aria-pressed") === "true"`)
	ana.replaceText("block-input-b3", "New users sign in from the invitation link; no password is ever set.")
	ana.click("block-save-b3")
	ana.waitText("block-note-b3", "Saved.")
	ben.waitEqual("Ana's paragraph in Ben's window", passage("b3"), "New users sign in from the invitation link; no password is ever set.")

	// A heading inside the recovery passage, added below b5 and so after
	// the recovery card beside it, which stays beside b5.
	ana.click("block-add-b5")
	ana.choose("new-kind-b5", "heading")
	ana.typeInto("new-input-b5", "Channels")
	ana.click("new-save-b5")
	var heading string
	ben.waitFor("the new heading in Ben's plan", blockByText("Channels"))
	ben.eval(blockByText("Channels"), &heading)
	ben.waitEqual("the heading's row in Ben's window", passage(heading), "Channels")
	for _, b := range []*browser{ana, ben} {
		b.waitFor("the recovery card to need a review", fmt.Sprintf(`($("review-%s")?.textContent ?? "") === "Needs review"`, rec))
		b.waitText("review-why-"+rec, "Editing the text of a passage never needs a review.")
		b.waitFor("the recovery card still beside b5", cardIn(rec, "b5", "b5"))
	}
	for _, other := range []string{ids["onboarding"], ids["rollout"]} {
		if ben.exists("review-" + other) {
			t.Errorf("decision %s is marked for review, but its passage stands", other)
		}
	}

	// Deleting the heading mends the passage.
	ana.click("block-delete-" + heading)
	for _, b := range []*browser{ana, ben} {
		b.waitFor("the heading to go", fmt.Sprintf(`!$("block-%s") && %s === ""`, heading, blockByText("Channels")))
		b.waitFor("the review mark to go", fmt.Sprintf(`!$("review-%s") && !!$("card-%s")`, rec, rec))
	}

	// Ben edits b8 while Ana changes b3: Ben's page is a revision behind
	// when he saves, but b8 is as he found it, so his edit goes through.
	ben.click("edit-plan")
	ben.waitFor("Ben's plan fields", `!!$("block-input-b8")`)
	ben.replaceText("block-input-b8", "Existing users switch in June.")
	ana.replaceText("block-input-b3", "Invitations carry a sign-in link.")
	ana.click("block-save-b3")
	ben.waitEqual("Ana's second edit in Ben's field", `$("block-input-b3").value`, "Invitations carry a sign-in link.")
	ben.click("block-save-b8")
	ben.waitText("block-note-b8", "Saved.")
	ana.waitEqual("Ben's paragraph in Ana's field", `$("block-input-b8").value`, "Existing users switch in June.")

	// Both change b8: Ana saves first; Ben's save is refused and his text
	// stays in his field; saving again puts his in place of hers.
	ben.replaceText("block-input-b8", "Existing users switch in July.")
	ana.replaceText("block-input-b8", "Existing users switch in May.")
	ana.click("block-save-b8")
	ana.waitText("block-note-b8", "Saved.")
	ben.click("block-save-b8")
	ben.waitText("block-note-b8", "Someone changed this block while you were editing it: your text is kept.")
	ben.waitEqual("Ben's text kept", `$("block-input-b8").value`, "Existing users switch in July.")
	ben.click("block-save-b8")
	ben.waitText("block-note-b8", "Saved.")
	ana.waitEqual("Ben's text in Ana's field", `$("block-input-b8").value`, "Existing users switch in July.")

	// Edit mode stays while a change is unsaved, so no text is lost.
	ana.typeInto("block-input-b3", " Draft")
	ana.waitFor("Done editing held back by the unsaved change", `$("edit-plan").disabled`)
	ana.click("block-revert-b3")
	ana.waitEqual("the reverted field", `$("block-input-b3").value`, "Invitations carry a sign-in link.")
	ana.click("edit-plan")
	ana.waitEqual("Ana's plan out of edit mode", passage("b8"), "Existing users switch in July.")
	ana.waitNotReloaded()
	ben.waitNotReloaded()
}

// A reader's page offers no plan editing, and the demo's rewrite is
// disabled for them.
func TestBrowserPlanReaderCannotEdit(t *testing.T) {
	srv := newTestServer(t)
	rita := newBrowser(t, "rita", 1280, 900)
	rita.open(srv, "rita", "")
	rita.waitFor("Rita's disabled plan controls", `!!$("block-b3") && $("edit-plan").disabled && $("rewrite-doc").disabled && !$("block-input-b3")`)
}

// W10 in the page: Rewrite document performs the demo's whole-document
// rewrite, outside any Planner turn. The rollout card, whose paragraph was
// rewritten into a new block, relinks to the surviving Rollout heading;
// the recovery card keeps its surviving paragraph though its table went;
// both windows show the new anchors live.
//
// The rewrite changes everyone's plan, so it asks first, and it is not
// offered on a decision's page.
func TestBrowserPlanRewriteRelinks(t *testing.T) {
	_, ids, ana, ben := twoWriters(t)
	ben.markPage()
	roll, rec, on := ids["rollout"], ids["recovery"], ids["onboarding"]
	for _, b := range []*browser{ana, ben} {
		b.waitFor("the rollout card beside its paragraph", cardIn(roll, "b8", "b8"))
	}
	// A decision's page offers no rewrite of the whole plan.
	ana.click("expand-" + roll)
	ana.waitFor("the rollout decision's page", `!!$("decision-page") && !!$("page-question")`)
	if ana.exists("rewrite-doc") {
		t.Error("a decision's page offers Rewrite document")
	}
	ana.click("page-back")
	ana.waitFor("the plan again", `!!$("plan") && !!$("rewrite-doc")`)
	// The rewrite asks first; Cancel leaves the plan as it was.
	ana.click("rewrite-doc")
	ana.waitText("rewrite-confirm-box", "Rewrite the whole plan for everyone?")
	ana.click("rewrite-cancel")
	ana.waitFor("the confirmation gone", `!$("rewrite-confirm-box")`)
	if !ana.exists("block-b6") || !ana.exists("block-b8") {
		t.Fatal("a cancelled rewrite changed the plan")
	}
	ana.click("rewrite-doc")
	ana.click("rewrite-confirm")
	ana.waitText("app-message", "Ana rewrote the plan. 1 decision card moved to the nearest heading still in the plan. 2 decisions lost the passage their answers were written into; the Planner gets those answers again.")
	// Ben hears of it in Chat, with Ana's name.
	ben.waitFor("the rewrite's notice in Ben's Chat", `[...document.querySelectorAll('[data-testid^="chat-notice-rewrite-"]')].some((e) => e.textContent.startsWith("Ana rewrote the plan."))`)
	// The note can be dismissed.
	ana.click("app-message-close")
	ana.waitFor("the note dismissed", `$("app-message").hidden`)
	const rewritten = "Existing users move to passwordless sign-in over two weeks, team by team; the old password stops working a month after a team moved."
	for _, b := range []*browser{ana, ben} {
		b.waitFor("the rollout card under the Rollout heading", cardIn(roll, "b7", "b7"))
		b.waitFor("the Rollout heading shown as a heading, not a quote", `getComputedStyle($("block-b7").querySelector(".passage")).borderLeftWidth === "0px"`)
		b.waitFor("the recovery card on its surviving paragraph", cardIn(rec, "b5", "b5"))
		b.waitFor("the onboarding card where it was", cardIn(on, "b3", "b3"))
		b.waitFor("the old blocks gone and the new one there", fmt.Sprintf(`!$("block-b6") && !$("block-b8") && !!%s`, blockByText(rewritten)))
		for _, id := range []string{roll, rec, on} {
			if b.exists("review-" + id) {
				t.Errorf("%s: the Planner's card %s owes a review after a rewrite", b.name, id)
			}
		}
	}
	ben.waitNotReloaded()
}

// The Planner's tools over MCP with the page: an agent (the SDK's client,
// over the real HTTP listener) opens a decision and it appears in Ana's
// page. Ana rewrites its passage by hand (a new paragraph, the old one
// deleted): the card needs a review in her page until the agent reviews
// the new paragraph with anchor_plan (W6), which links the card to it.
// Then Ana saves the answer in the page: the agent's await_answers gets
// it once, and the write-up lands in the reviewed paragraph; its connection drops before it finishes the turn, and on a new
// one the same turn comes again, and after it nothing more. Chat in the
// page shows the turn's notice once.
func TestBrowserPlanMCPAgent(t *testing.T) {
	t.Setenv("ACCORD_MCP_TOKEN", "browser-token")
	srv := newTestServer(t)
	ana := newBrowser(t, "ana", 1280, 900)
	ana.open(srv, "ana", "")
	ana.markPage()
	ana.waitFor("the plan", `!!$("block-b3") && !!window.accordPlan`)

	agent := mcpAgent(t, srv.addr, "browser-token")
	var plan planView
	getJSON(t, srv.url("/api/plan?member=rita"), &plan)
	var opened planner.OpenedDecisions
	mcpCall(t, agent, "open_decisions", map[string]any{"cards": []map[string]any{{
		"revision": plan.Revision, "key": "welcome", "blocks": []string{"b3"},
		"question": "What should the welcome screen say?", "response": "text", "options": []any{},
	}}}, &opened)
	id := opened.Decisions[0].ID
	ana.waitCard(id, "open")
	ana.waitFor("the agent's card beside b3", cardIn(id, "b3", "b3"))

	// Ana's foreground rewrite of the passage, by hand.
	ana.click("edit-plan")
	ana.click("block-add-b2")
	ana.typeInto("new-input-b2", "The first screen greets the new user by name.")
	ana.click("new-save-b2")
	ana.waitFor("the new paragraph", blockByText("The first screen greets the new user by name."))
	var fresh string
	ana.eval(blockByText("The first screen greets the new user by name."), &fresh)
	ana.click("block-delete-b3")
	ana.waitFor("the card to need a review", fmt.Sprintf(`!$("block-b3") && !!$("review-%s")`, id))
	ana.click("edit-plan")

	getJSON(t, srv.url("/api/plan?member=rita"), &plan)
	var anchored planner.Anchored
	mcpCall(t, agent, "anchor_plan", map[string]any{"revision": plan.Revision, "decisions": []string{id}, "blocks": []string{fresh}}, &anchored)
	if len(anchored.Decisions) != 1 || anchored.Decisions[0].ID != id || len(anchored.AnchorsPending) != 0 {
		t.Fatalf("anchor_plan = %+v", anchored)
	}
	ana.waitFor("the card linked to the reviewed paragraph, review done", fmt.Sprintf(`%s && !$("review-%s")`, cardIn(id, fresh, fresh), id))

	// The agent waits; Ana saves in the page.
	got := make(chan planner.Awaited, 1)
	go func() {
		var out planner.Awaited
		ctx, cancel := context.WithTimeout(context.Background(), 2*waitTime)
		defer cancel()
		res, err := agent.CallTool(ctx, &sdk.CallToolParams{Name: "await_answers", Arguments: map[string]any{}})
		if err == nil && !res.IsError {
			err = json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &out)
		}
		if err != nil {
			t.Error(err)
		}
		got <- out
	}()
	q := ana.questions(id)[0]
	ana.typeInto("answer-"+id+"-"+q.ID, "Welcome aboard")
	ana.waitAccepted(id)
	ana.click("save-" + id)
	ana.waitText("message-"+id, "Saved.")
	var first planner.Awaited
	select {
	case first = <-got:
	case <-time.After(2 * waitTime):
		t.Fatal("the page's save never reached the agent")
	}
	if first.Turn == nil || len(first.Turn.Answers) != 1 || first.Turn.Answers[0].Decision != id || first.Turn.Answers[0].Questions[0].Answer != "Welcome aboard" {
		t.Fatalf("turn = %+v", first.Turn)
	}

	// The agent's connection drops after the claim, before it finished.
	agent.Close()
	again := mcpAgent(t, srv.addr, "browser-token")
	var second planner.Awaited
	mcpCall(t, again, "await_answers", map[string]any{"wait_seconds": 5}, &second)
	if second.Turn == nil || second.Turn.ID != first.Turn.ID || len(second.Turn.Answers) != 1 {
		t.Fatalf("after the drop: %+v, want turn %s again", second.Turn, first.Turn.ID)
	}
	var third planner.Awaited
	mcpCall(t, again, "await_answers", map[string]any{"done": first.Turn.ID, "wait_seconds": 1}, &third)
	if third.Turn != nil {
		t.Fatalf("a second turn came: %+v", third.Turn)
	}
	ana.waitFor("the turn's notice in the page's Chat", fmt.Sprintf(`!!$("chat-notice-%s")`, first.Turn.ID))
	var n int
	ana.eval(fmt.Sprintf(`document.querySelectorAll('[data-testid="chat-notice-%s"]').length`, first.Turn.ID), &n)
	if n != 1 {
		t.Fatalf("the turn's notice shows %d times in the page", n)
	}
	ana.waitCard(id, "settled")
	// The write-up writes into the passage the agent reviewed (its future
	// scope moved with the link), and the page shows it live.
	ana.waitFor("the write-up in the reviewed paragraph", fmt.Sprintf(`%s.includes("Decided: ") && %s.includes("Welcome aboard")`, passage(fresh), passage(fresh)))
	// Reopened, the plan no longer says the decision is decided.
	ana.click("reopen-" + id)
	ana.waitCard(id, "open")
	ana.waitFor("the write-up marked reopened", fmt.Sprintf(`!%s.includes("Decided: ") && %s.includes("Reopened: ") && %s.includes("Ana reopened it") && !%s.includes("@ana")`, passage(fresh), passage(fresh), passage(fresh), passage(fresh)))
	ana.waitNotReloaded()
}

// Plan edits made in the page are durable: after a restart on the same
// folder the open page (never reloaded) reconnects its plan stream and
// shows them, with the cards and their decisions, and a fresh window
// shows them too; edits made after the restart reach both windows live.
func TestBrowserPlanEditSurvivesRestart(t *testing.T) {
	srv, ids, ana, _ := twoWriters(t)
	ana.markPage()
	ana.click("edit-plan")
	ana.replaceText("block-input-b5", "A user who loses their device signs in again with a link sent to their email.")
	// Done editing waits for the changed block, and says so in words.
	ana.waitText("edit-plan-hint", "Save or revert the changed block to finish editing.")
	ana.click("block-save-b5")
	ana.waitText("block-note-b5", "Saved.")
	ana.click("block-add-b7")
	ana.typeInto("new-input-b7", "Support answers questions in the first week.")
	ana.click("new-save-b7")
	ana.waitFor("the inserted paragraph", blockByText("Support answers questions in the first week."))
	var added string
	ana.eval(blockByText("Support answers questions in the first week."), &added)
	ana.click("edit-plan")
	var before planView
	getJSON(t, srv.url("/api/plan?member=rita"), &before)

	srv.stop()
	ana.waitFor("the page to see the server go", `["reconnecting", "unreachable"].includes($("connection-status").dataset.state)`)
	srv = startServer(t, srv.dir, srv.addr)
	var after planView
	getJSON(t, srv.url("/api/plan?member=rita"), &after)
	if after.Revision != before.Revision || len(after.Blocks) != len(before.Blocks) {
		t.Fatalf("plan after the restart: %+v\nbefore: %+v", after, before)
	}
	ana.waitConnected()
	ben := newBrowser(t, "ben2", 1280, 900)
	ben.open(srv, "ben", "")
	for _, b := range []*browser{ana, ben} {
		b.waitEqual("the edited paragraph", passage("b5"), "A user who loses their device signs in again with a link sent to their email.")
		b.waitEqual("the inserted paragraph", passage(added), "Support answers questions in the first week.")
		for _, id := range ids {
			b.waitCard(id, "open")
		}
		b.waitFor("the recovery card beside its edited paragraph", cardIn(ids["recovery"], "b5", "b5"))
	}
	// The plan stream came back by itself: a new edit reaches both.
	ben.click("edit-plan")
	ben.replaceText("block-input-"+added, "Support answers questions for two weeks.")
	ben.click("block-save-" + added)
	ben.waitText("block-note-"+added, "Saved.")
	ana.waitEqual("Ben's edit after the restart", passage(added), "Support answers questions for two weeks.")
	ana.waitNotReloaded()
}
