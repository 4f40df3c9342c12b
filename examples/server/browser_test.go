package main

// Browser tests: the example server's page (web/dist, as embedded) in
// headless Chromium, driven as members use it. Each test starts its own
// server on a fresh data folder (browser_harness_test.go) and waits by
// polling with deadlines, never by fixed sleeps. Without Chromium they fail:
// CI installs it (.ci/run).

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/accord-crdt/accord/internal/testutil"
)

// Texts the page shows (web/README.md, "Messages a test can expect").
const (
	staleText   = "Someone changed this answer since you loaded it — review and save again."
	readerText  = "You can read this plan but not change it: ask a writer to answer, save, reopen or discard."
	offlineText = "Not connected — the page is reconnecting. Try again in a moment."
)

// twoWriters starts a server with the demo's decisions and opens the page
// for Ana and Ben, each in a browser of their own.
func twoWriters(t *testing.T) (srv *testServer, ids map[string]string, ana, ben *browser) {
	t.Helper()
	srv = newTestServer(t)
	ids = srv.startDemo()
	ana = newBrowser(t, "ana", 1280, 900)
	ben = newBrowser(t, "ben", 1280, 900)
	ana.open(srv, "ana", "")
	ben.open(srv, "ben", "")
	for _, id := range ids {
		ana.waitCard(id, "open")
		ben.waitCard(id, "open")
	}
	return srv, ids, ana, ben
}

// L2, M1, M2: two writers mark one criteria matrix at the same time, set,
// change and clear cells, and both pages end up showing the same cells,
// the same choice and the same accepted draft.
func TestBrowserMatrixConverges(t *testing.T) {
	_, ids, ana, ben := twoWriters(t)
	id := ids["recovery"]
	q := ana.questions(id)[0]
	if len(q.Options) != 3 || len(q.Criteria) != 3 {
		t.Fatalf("recovery question: %+v, want 3 options and 3 criteria", q)
	}
	cell := func(o, c int) string { return markID(id, q.ID, q.Options[o], q.Criteria[c]) }
	key := func(o, c int) string { return q.Options[o] + "/" + q.Criteria[c] }

	// Both edit different cells without waiting for each other, and one
	// cell (Passkey / New device) both set at once, to different values.
	errc := make(chan error, 2)
	go func() {
		errc <- chromedp.Do(ana.ctx,
			chromedp.SetValue(chromedp.CSS(sel(cell(0, 0))), "yes"),
			chromedp.SetValue(chromedp.CSS(sel(cell(2, 0))), "yes"),
			chromedp.SetValue(chromedp.CSS(sel(cell(1, 0))), "no"),
			chromedp.SetValue(chromedp.CSS(sel(cell(2, 1))), "partly"),
		)
	}()
	go func() {
		errc <- chromedp.Do(ben.ctx,
			chromedp.SetValue(chromedp.CSS(sel(cell(2, 0))), "no"),
			chromedp.SetValue(chromedp.CSS(sel(cell(0, 1))), "partly"),
			chromedp.SetValue(chromedp.CSS(sel(cell(1, 1))), "yes"),
			chromedp.SetValue(chromedp.CSS(sel(cell(2, 2))), "no"),
		)
	}()
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	// Ben picks the option; Ana changes one of Ben's cells and clears one
	// of her own.
	ben.click("option-" + id + "-" + q.ID + "-" + q.Options[0])
	ana.waitFor("Ben's cell to reach Ana", fmt.Sprintf(`$(%q).value === "yes"`, cell(1, 1)))
	ana.choose(cell(1, 1), "partly")
	ana.choose(cell(1, 0), "")

	want := map[string]string{}
	for o := range 3 {
		for c := range 3 {
			want[key(o, c)] = ""
		}
	}
	want[key(0, 0)] = "yes"
	want[key(0, 1)] = "partly"
	want[key(1, 1)] = "partly"
	want[key(2, 1)] = "partly"
	want[key(2, 2)] = "no"
	conflict := key(2, 0)

	ana.waitAccepted(id)
	ben.waitAccepted(id)
	testutil.EventuallyWithin(t, waitTime, "both pages to show the same matrix", func() (bool, string) {
		a, b := ana.cells(id, q), ben.cells(id, q)
		w := maps.Clone(want)
		w[conflict] = a[conflict]
		ok := maps.Equal(a, w) && maps.Equal(b, w) && (a[conflict] == "yes" || a[conflict] == "no")
		return ok, fmt.Sprintf("ana %v, ben %v, want %v with %s yes or no", a, b, want, conflict)
	})
	t.Logf("the concurrent cell %s settled on %q on both pages", conflict, ana.cells(id, q)[conflict])

	opt := "option-" + id + "-" + q.ID + "-" + q.Options[0]
	for _, b := range []*browser{ana, ben} {
		b.waitFor("Email link to be chosen", fmt.Sprintf(`$(%q).checked`, opt))
	}
	// The replicas agree on the accepted draft, not only on what they show.
	headsExpr := fmt.Sprintf(`[...D(%q).accepted].sort()`, id)
	testutil.EventuallyWithin(t, waitTime, "both replicas to hold the same accepted draft", func() (bool, string) {
		var a, b []string
		ana.eval(headsExpr, &a)
		ben.eval(headsExpr, &b)
		return len(a) > 0 && slices.Equal(a, b), fmt.Sprintf("ana %v, ben %v", a, b)
	})
}

// L3, L2: a save in one page settles the card in the other, with the saved
// answer (and its marks) shown read-only and the settler named.
func TestBrowserSaveSettlesOtherCard(t *testing.T) {
	_, ids, ana, ben := twoWriters(t)

	// A written answer: Ana types, Ben sees it live. Ben puts his caret in
	// the text; Ana's next words reach him without moving it; then both
	// type at once in different places.
	on := ids["onboarding"]
	oq := ana.questions(on)[0]
	answer := "answer-" + on + "-" + oq.ID
	ana.typeInto(answer, "Sign in from the invitation link; ask for the name.")
	ben.waitEqual("Ana's typing on Ben's page", fmt.Sprintf(`$(%q).value`, answer), "Sign in from the invitation link; ask for the name.")
	ben.eval(fmt.Sprintf(`(() => { const e = $(%q); e.focus(); e.setSelectionRange(7, 7); return true })()`, answer), nil)
	ana.eval(fmt.Sprintf(`(() => { const e = $(%q); e.focus(); e.setSelectionRange(e.value.length - 1, e.value.length - 1); return true })()`, answer), nil)
	ana.do(chromedp.KeyEvent(" later"))
	ben.waitEqual("Ana's words on Ben's page, his caret where he put it",
		fmt.Sprintf(`[$(%q).value, document.activeElement === $(%q), $(%q).selectionStart]`, answer, answer, answer),
		[]any{"Sign in from the invitation link; ask for the name later.", true, 7})
	ana.typeInto(answer, "")
	errc := make(chan error, 2)
	go func() { errc <- chromedp.Do(ana.ctx, chromedp.KeyEvent(" Keep it short.")) }()
	go func() { errc <- chromedp.Do(ben.ctx, chromedp.KeyEvent(" in one step")) }()
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	const merged = "Sign in in one step from the invitation link; ask for the name later. Keep it short."
	ana.waitEqual("both edits on Ana's page", fmt.Sprintf(`$(%q).value`, answer), merged)
	ben.waitEqual("both edits on Ben's page", fmt.Sprintf(`$(%q).value`, answer), merged)
	ana.waitAccepted(on)
	ana.click("save-" + on)
	ana.waitText("message-"+on, "Saved.")
	ben.waitCard(on, "settled")
	ben.waitFor("Ben's status pill to name Ana", fmt.Sprintf(`/^Settled by Ana, \d{1,2} [A-Z][a-z]{2}$/.test($("status-%s").textContent)`, on))
	ben.waitText("message-"+on, "Ana saved this decision.")
	var view struct {
		Value    string `json:"value"`
		Disabled bool   `json:"disabled"`
		Save     bool   `json:"save"`
		Reopen   bool   `json:"reopen"`
	}
	// The saved answer is text to read, not a field.
	ben.eval(fmt.Sprintf(`({value: $(%q).textContent, disabled: !["TEXTAREA", "INPUT"].includes($(%q).tagName), save: !!$("save-%s"), reopen: !!$("reopen-%s")})`, answer, answer, on, on), &view)
	if view.Value != merged || !view.Disabled || view.Save || !view.Reopen {
		t.Errorf("Ben's settled written card: %+v, want the saved text, read-only, Reopen and no Save", view)
	}

	// A choice with marks: Ben decides, Ana's card settles with the marks.
	rec := ids["recovery"]
	q := ben.questions(rec)[0]
	ben.click("option-" + rec + "-" + q.ID + "-" + q.Options[2])
	ben.choose(markID(rec, q.ID, q.Options[2], q.Criteria[0]), "yes")
	ben.choose(markID(rec, q.ID, q.Options[1], q.Criteria[1]), "no")
	ben.click("save-" + rec)
	ben.waitText("message-"+rec, "Saved.")
	ana.waitCard(rec, "settled")
	ana.waitText("status-"+rec, "Settled by Ben")
	ana.waitText("message-"+rec, "Ben saved this decision.")
	cells := ana.cells(rec, q)
	if cells[q.Options[2]+"/"+q.Criteria[0]] != "yes" || cells[q.Options[1]+"/"+q.Criteria[1]] != "no" {
		t.Errorf("Ana's settled matrix %v lacks Ben's marks", cells)
	}
	var disabled bool
	ana.eval(fmt.Sprintf(`[...document.querySelectorAll('[data-testid="card-%s"] select, [data-testid="card-%s"] input[type=radio]')].every((e) => e.disabled)
		&& $("option-%s-%s-%s").checked`, rec, rec, rec, q.ID, q.Options[2]), &disabled)
	if !disabled {
		t.Errorf("Ana's settled choice card: controls still enabled, or Passkey not shown as chosen")
	}
	// The other cards stay open.
	if s := ana.text("status-" + ids["rollout"]); s != "Open" {
		t.Errorf("rollout card: status %q, want Open", s)
	}

	// L6: Ben discards Ana's settled answer (after confirming); Ana's page
	// tells the discarded card apart and still shows who saved what.
	ben.click("discard-" + on)
	ben.click("discard-confirm-" + on)
	ana.waitCard(on, "discarded")
	ana.waitEqual("the discarded pill", fmt.Sprintf(`$("status-%s").textContent`, on), "Discarded by Ben")
	ana.waitText("card-"+on, "Saved by Ana")
	ana.waitText("message-"+on, "Ben discarded this decision.")
}

// L11: a reload gets back the accepted shared draft: the written answer
// typed before it, the choice and the matrix.
func TestBrowserReloadRestoresDraft(t *testing.T) {
	srv := newTestServer(t)
	ids := srv.startDemo()
	ana := newBrowser(t, "ana", 1280, 900)
	ana.open(srv, "ana", "")
	on, rec := ids["onboarding"], ids["recovery"]
	ana.waitCard(on, "open")
	ana.waitCard(rec, "open")
	oq := ana.questions(on)[0]
	q := ana.questions(rec)[0]

	answer := "answer-" + on + "-" + oq.ID
	text := "Skip the name screen — ask on first use. Ça marche ✓"
	ana.typeInto(answer, text)
	ana.click("option-" + rec + "-" + q.ID + "-" + q.Options[1])
	ana.choose(markID(rec, q.ID, q.Options[1], q.Criteria[2]), "partly")
	ana.choose(markID(rec, q.ID, q.Options[0], q.Criteria[0]), "no")
	ana.waitAccepted(on)
	ana.waitAccepted(rec)
	before := ana.cells(rec, q)

	ana.do(chromedp.Reload())
	ana.waitConnected()
	ana.waitCard(on, "open")
	ana.waitCard(rec, "open")
	ana.waitEqual("the written answer after the reload", fmt.Sprintf(`$(%q).value`, answer), text)
	ana.waitFor("the choice after the reload", fmt.Sprintf(`$("option-%s-%s-%s").checked`, rec, q.ID, q.Options[1]))
	ana.waitFor("the Edited tags after the reload", fmt.Sprintf(`!!$("edited-%s") && !!$("edited-%s")`, on, rec))
	if after := ana.cells(rec, q); !maps.Equal(before, after) {
		t.Errorf("matrix after the reload %v, before %v", after, before)
	}
	// The restored draft is the member's to save; a page of another member
	// shows the same draft, without Ana's Edited tag.
	ben := newBrowser(t, "ben", 1280, 900)
	ben.open(srv, "ben", "")
	ben.waitCard(on, "open")
	ben.waitEqual("Ana's answer on Ben's page", fmt.Sprintf(`$(%q).value`, answer), text)
	if ben.exists("edited-" + on) {
		t.Errorf("Ben's page shows Ana's Edited tag")
	}
	ana.click("save-" + on)
	ana.waitCard(on, "settled")
	ana.do(chromedp.Reload())
	ana.waitConnected()
	ana.waitCard(on, "settled")
	ana.waitCard(rec, "open")
	if ana.exists("edited-"+on) || !ana.exists("edited-"+rec) {
		t.Errorf("Edited tags after saving and reloading: onboarding %v (want none), recovery %v (want one)", ana.exists("edited-"+on), ana.exists("edited-"+rec))
	}
}

// L10 (acknowledged means committed), L11: the server stops gracefully and
// a new one starts on the same data folder and port. The page shows
// Reconnecting…, keeps the edit made meanwhile, reconnects by itself, and
// no acknowledged edit is lost.
func TestBrowserServerRestartReconnects(t *testing.T) {
	srv := newTestServer(t)
	ids := srv.startDemo()
	ana := newBrowser(t, "ana", 1280, 900)
	ana.open(srv, "ana", "")
	on, rec := ids["onboarding"], ids["recovery"]
	ana.waitCard(on, "open")
	ana.waitCard(rec, "open")
	oq := ana.questions(on)[0]
	q := ana.questions(rec)[0]
	answer := "answer-" + on + "-" + oq.ID

	ana.typeInto(answer, "Acknowledged before the restart.")
	ana.choose(markID(rec, q.ID, q.Options[0], q.Criteria[1]), "yes")
	ana.click("option-" + rec + "-" + q.ID + "-" + q.Options[0])
	ana.waitAccepted(on)
	ana.waitAccepted(rec)
	acked := ana.cells(rec, q)

	srv.stop()
	ana.waitFor("the page to show Reconnecting…", `["reconnecting", "unreachable"].includes($("connection-status").dataset.state)
		&& $("connection-status").textContent.includes("Reconnecting…") && !!$("reconnecting-banner")`)
	// Edits keep working while the connection is down; Save says why it
	// cannot save yet.
	ana.typeInto(answer, " And typed while it was down.")
	ana.waitText("sending-"+on, "Not sent yet")
	ana.click("save-" + on)
	ana.waitText("message-"+on, offlineText)

	srv = startServer(t, srv.dir, srv.addr)
	ana.waitConnected()
	ana.waitFor("the reconnecting banner to go", `!$("reconnecting-banner")`)
	ana.waitAccepted(on)

	// A member who opens the page now gets everything Ana was told was
	// accepted, and the edit made while the server was down.
	ben := newBrowser(t, "ben", 1280, 900)
	ben.open(srv, "ben", "")
	ben.waitCard(on, "open")
	ben.waitCard(rec, "open")
	ben.waitEqual("Ana's answer on a fresh page", fmt.Sprintf(`$(%q).value`, answer),
		"Acknowledged before the restart. And typed while it was down.")
	if got := ben.cells(rec, q); !maps.Equal(got, acked) {
		t.Errorf("matrix after the restart %v, acknowledged before it %v", got, acked)
	}
	ben.waitFor("Ana's choice after the restart", fmt.Sprintf(`$("option-%s-%s-%s").checked`, rec, q.ID, q.Options[0]))

	// The restarted server takes new work: Ana saves, Ben sees it settle.
	ana.click("save-" + on)
	ana.waitText("message-"+on, "Saved.")
	ben.waitCard(on, "settled")
}

// L10: a save claims the draft revision the page displays. Ben's page is
// made to miss Ana's latest edit (its incoming changes are held back), so
// his Save claims an older draft: the server refuses it, the card says so
// in plain words, and nothing is saved. Once his page catches up, saving
// again works.
func TestBrowserStaleSave(t *testing.T) {
	_, ids, ana, ben := twoWriters(t)
	id := ids["recovery"]
	q := ana.questions(id)[0]
	opt := "option-" + id + "-" + q.ID + "-" + q.Options[0]
	ana.click(opt)
	ana.waitAccepted(id)
	ben.waitFor("Ana's choice to reach Ben", fmt.Sprintf(`$(%q).checked`, opt))

	// Ben's page stops applying the changes others make.
	ben.eval(`(() => { window.accord.applyChanges = () => {}; return true })()`, nil)
	mark := markID(id, q.ID, q.Options[0], q.Criteria[0])
	ana.choose(mark, "yes")
	ana.waitAccepted(id)

	if v := ben.text("status-" + id); v != "Open" {
		t.Fatalf("Ben's card: %q before his save", v)
	}
	var shown string
	ben.eval(fmt.Sprintf(`$(%q).value`, mark), &shown)
	if shown != "" {
		t.Fatalf("Ben's page shows %q in the cell Ana just marked: it was meant to hold an older draft", shown)
	}
	ben.click("save-" + id)
	ben.waitEqual("the stale message", fmt.Sprintf(`$("message-%s").textContent`, id), staleText)
	ben.waitFor("the card to stay open", fmt.Sprintf(`$("card-%s").dataset.status === "open" && !D(%q).busy`, id, id))
	if s := ana.text("status-" + id); s != "Open" {
		t.Fatalf("Ana's card after Ben's stale save: %q, want Open (nothing saved)", s)
	}

	// Ben's page catches up (a reconnect), shows Ana's mark, and his
	// second save settles the decision for both.
	ben.eval(`(() => { delete window.accord.applyChanges; window.accord.resync(); return true })()`, nil)
	ben.waitConnected()
	ben.waitEqual("Ana's mark on Ben's page", fmt.Sprintf(`$(%q).value`, mark), "yes")
	ben.click("save-" + id)
	ben.waitText("message-"+id, "Saved.")
	ana.waitCard(id, "settled")
	ana.waitText("status-"+id, "Settled by Ben")
}

// L2, E3: Rita, a reader, sees the plan's decisions (open drafts, settled
// answers, their why) with every control disabled, and a write forced past
// the page is refused by the server with the reader's message.
func TestBrowserReaderCannotEdit(t *testing.T) {
	srv := newTestServer(t)
	ids := srv.startDemo()
	ana := newBrowser(t, "ana", 1280, 900)
	ana.open(srv, "ana", "")
	on, rec := ids["onboarding"], ids["recovery"]
	ana.waitCard(on, "open")
	ana.waitCard(rec, "open")
	oq := ana.questions(on)[0]
	q := ana.questions(rec)[0]
	answer := "answer-" + on + "-" + oq.ID

	ana.typeInto(answer, "Ana's draft.")
	ana.click("option-" + rec + "-" + q.ID + "-" + q.Options[0])
	ana.choose(markID(rec, q.ID, q.Options[0], q.Criteria[2]), "yes")
	ana.click("save-" + rec)
	ana.waitCard(rec, "settled")
	ana.waitText("why-"+rec, " — drafted") // the Planner's draft fills the field first; Ana replaces it
	ana.click("why-edit-" + rec)
	ana.replaceText("why-input-"+rec, "Every user already has email.")
	ana.click("why-save-" + rec)
	ana.waitText("why-"+rec, "Every user already has email.")
	ana.waitAccepted(on)

	rita := newBrowser(t, "rita", 1280, 900)
	rita.open(srv, "rita", "")
	rita.waitCard(on, "open")
	rita.waitCard(rec, "settled")
	rita.waitText("reader-banner", "can read this plan but not change it")
	// Start demo is a write too: disabled for her, and refused by the
	// server when forced.
	rita.waitFor("Rita's disabled Start demo", `$("start-demo").disabled`)
	var status int
	rita.eval(`fetch("api/demo/start", {method: "POST", headers: {"Content-Type": "application/json"}}).then((r) => r.status)`, &status)
	if status != 403 {
		t.Errorf("Rita's forced Start demo: HTTP %d, want 403", status)
	}
	rita.waitText("status-"+rec, "Settled by Ana")
	rita.waitText("why-"+rec, "Every user already has email.")
	rita.waitEqual("Ana's draft on Rita's page", fmt.Sprintf(`$(%q).value`, answer), "Ana's draft.")
	if v := rita.cells(rec, q)[q.Options[0]+"/"+q.Criteria[2]]; v != "yes" {
		t.Errorf("Rita's matrix cell: %q, want yes", v)
	}

	// Every control is disabled, and none of the forms that write is there.
	var enabled []string
	rita.eval(`[...document.querySelectorAll('[data-testid^="card-"] :is(input, textarea, select, button)')]
		.filter((e) => !e.disabled).map((e) => e.dataset.testid || e.outerHTML.slice(0, 80))`, &enabled)
	if len(enabled) > 0 {
		t.Errorf("enabled controls on Rita's page: %v", enabled)
	}
	var forms []string
	rita.eval(`[...document.querySelectorAll('[data-testid^="add-option"], [data-testid^="add-criterion"], [data-testid^="why-input"]')].map((e) => e.dataset.testid)`, &forms)
	if len(forms) > 0 {
		t.Errorf("write forms on Rita's page: %v", forms)
	}

	// A write forced past the page: the server refuses it, the card says
	// why, and the replica returns to the accepted draft.
	rita.eval(fmt.Sprintf(`(() => { window.accord.write = true; window.accord.setText(%q, %q, "Rita was here."); return true })()`, on, oq.ID), nil)
	rita.waitEqual("the reader's refusal", fmt.Sprintf(`$("message-%s").textContent`, on), readerText)
	rita.eval(`(() => { window.accord.write = false; return true })()`, nil)
	rita.waitEqual("Rita's replica back at the accepted draft", fmt.Sprintf(`$(%q).value`, answer), "Ana's draft.")
	var replies []string
	rita.eval(fmt.Sprintf(`Promise.all([
		window.accord.request("question:submit", {items: [{id: %q, heads: [...D(%q).accepted]}]}),
		window.accord.request("question:reopen", {id: %q}),
		window.accord.request("question:why", {id: %q, text: "Rita's why."}),
	]).then((rs) => rs.map((r) => r.ok ? "ok" : r.reason))`, on, on, rec, rec), &replies)
	if !slices.Equal(replies, []string{"forbidden", "forbidden", "forbidden"}) {
		t.Errorf("forced save, reopen and why from the reader: %v, want all forbidden", replies)
	}
	// Nothing reached Ana.
	if v := ana.text("status-" + rec); !strings.HasPrefix(v, "Settled by Ana") {
		t.Errorf("Ana's card after Rita's forced writes: %q", v)
	}
	var got string
	ana.eval(fmt.Sprintf(`$(%q).value`, answer), &got)
	if got != "Ana's draft." {
		t.Errorf("Ana's draft after Rita's forced edit: %q", got)
	}
	ana.waitText("why-"+rec, "Every user already has email.")
}

// brokenWords lists the words of the matrix's header cells (criteria and
// options) that the layout breaks across lines or lets spill out of their
// cell.
const brokenWords = `((m) => {
	const out = [];
	for (const th of m.querySelectorAll("th")) {
		const cell = th.getBoundingClientRect();
		const walk = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
		for (let n = walk.nextNode(); n; n = walk.nextNode()) {
			for (const w of n.data.matchAll(/\S+/g)) {
				const r = document.createRange();
				r.setStart(n, w.index);
				r.setEnd(n, w.index + w[0].length);
				const rects = [...r.getClientRects()].filter((x) => x.width > 0);
				const box = r.getBoundingClientRect();
				if (rects.length > 1 || box.right > cell.right + 0.5 || box.left < cell.left - 0.5) out.push(th.textContent + ": " + w[0]);
			}
		}
	}
	return out;
})`

// The criteria matrix on a phone keeps every word of its headers whole:
// "No new storage" wraps between words, never as "storag e".
func TestBrowserPhoneMatrixKeepsWordsWhole(t *testing.T) {
	srv := newTestServer(t)
	ids := srv.startDemo()
	rec := ids["recovery"]
	for _, size := range [][2]int{{320, 640}, {360, 740}, {390, 844}} {
		b := newBrowser(t, fmt.Sprintf("ana-%d", size[0]), size[0], size[1])
		b.open(srv, "ana", "")
		b.waitCard(rec, "open")
		q := b.questions(rec)[0]
		m := fmt.Sprintf(`$("matrix-%s-%s")`, rec, q.ID)
		b.waitFor("the matrix", m)
		var broken []string
		b.eval(brokenWords+"("+m+")", &broken)
		if len(broken) > 0 {
			t.Errorf("%d px wide: words broken in the matrix header: %q", size[0], broken)
		}
		// And the matrix fits its card: no sideways scrolling at phone sizes.
		var fits bool
		b.eval(m+`.parentElement.scrollWidth <= `+m+`.parentElement.clientWidth`, &fits)
		if !fits {
			t.Errorf("%d px wide: the matrix is wider than its card", size[0])
		}
	}
}
