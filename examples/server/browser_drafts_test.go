package main

// Drafts that outlive a closed tab: the page keeps each decision's
// accepted revision and its unaccepted edits in IndexedDB (the package
// @accord-crdt/client, sync/js), so a member who edits while the server is
// down and closes the tab finds the draft in a new tab, which sends it
// once the server answers.

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// tab opens a new tab in b's browser (same profile: cookies and
// IndexedDB); closing it (the returned func) closes that tab only.
func (b *browser) tab(name string) (*browser, func()) {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		cancel()
		b.t.Fatalf("open a tab for %s: %v", name, err)
	}
	closeTab := func() {
		cctx, ccancel := context.WithTimeout(ctx, waitTime)
		defer ccancel()
		_ = chromedp.Cancel(cctx)
		cancel()
	}
	b.t.Cleanup(closeTab)
	return &browser{t: b.t, name: name, ctx: ctx}, closeTab
}

func TestBrowserClosedTabKeepsDraft(t *testing.T) {
	srv := newTestServer(t)
	ids := srv.startDemo()
	profile := newBrowser(t, "ana", 1280, 900) // its first tab stays blank: closing it would close the browser
	first, closeFirst := profile.tab("ana's first tab")
	first.open(srv, "ana", "")
	on, rec := ids["onboarding"], ids["recovery"]
	first.waitCard(on, "open")
	first.waitCard(rec, "open")
	oq := first.questions(on)[0]
	q := first.questions(rec)[0]
	answer := "answer-" + on + "-" + oq.ID
	cell := markID(rec, q.ID, q.Options[1], q.Criteria[0])

	// Offline: the server stops; Ana types an answer and marks a cell.
	srv.stop()
	first.waitFor("the page to show Reconnecting…", `["reconnecting", "unreachable"].includes($("connection-status").dataset.state)`)
	text := "Typed while offline, then the tab was closed."
	first.typeInto(answer, text)
	first.choose(cell, "partly")
	first.waitText("sending-"+on, "Not sent yet")
	var stored bool
	first.eval(`window.accord.flushStorage().then(() => !window.accord.storageProblem)`, &stored)
	if !stored {
		var problem string
		first.eval(`String(window.accord.storageProblem?.message)`, &problem)
		t.Fatalf("the draft was not stored: %s", problem)
	}
	closeFirst()

	// The server comes back; a new tab opens the page.
	srv = startServer(t, srv.dir, srv.addr)
	second, _ := profile.tab("ana's second tab")
	second.open(srv, "ana", "")
	second.waitCard(on, "open")
	second.waitCard(rec, "open")
	second.waitEqual("the answer typed offline in the new tab", fmt.Sprintf(`$(%q).value`, answer), text)
	second.waitEqual("the cell marked offline in the new tab", fmt.Sprintf(`$(%q).value`, cell), "partly")
	second.waitFor("the Edited tags in the new tab", fmt.Sprintf(`!!$("edited-%s") && !!$("edited-%s")`, on, rec))
	second.waitAccepted(on)
	second.waitAccepted(rec)

	// They reach the other member, and Ana saves.
	ben := newBrowser(t, "ben", 1280, 900)
	ben.open(srv, "ben", "")
	ben.waitCard(on, "open")
	ben.waitCard(rec, "open")
	ben.waitEqual("Ana's offline answer on Ben's page", fmt.Sprintf(`$(%q).value`, answer), text)
	ben.waitEqual("Ana's offline mark on Ben's page", fmt.Sprintf(`$(%q).value`, cell), "partly")
	second.click("save-" + on)
	second.waitText("message-"+on, "Saved.")
	ben.waitCard(on, "settled")
}
