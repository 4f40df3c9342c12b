package main

// Browser tests of presence, provenance, overwrite notices and the audit
// download (docs/CONFORMANCE.md X1 to X4): Ana and Ben on the same plan,
// each in their own Chromium.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// labelsOf returns the labels of decision id's first question's option
// o and criterion c, as the definition has them.
func (b *browser) labelsOf(id string, o, c int) (option, criterion string) {
	b.t.Helper()
	var l []string
	b.eval(fmt.Sprintf(`(() => { const q = D(%q).record.definition.questions[0]; return [q.options[%d].label, q.criteria[%d].label] })()`, id, o, c), &l)
	return l[0], l[1]
}

// focusPage clicks the page's header, as a person does before using the
// keyboard: a headless browser's first tab is not focused until then, and
// an unfocused page gets no focus events.
func (b *browser) focusPage() {
	b.t.Helper()
	b.click("doc-name")
}

// TestBrowserPresence: Ben sees Ana's face on the card she works in,
// "Ana is typing…" under the written answer while she types (and not
// two seconds after), her initials on the matrix cell she focuses, her
// face on the card whose page she opens, and nothing of her once she
// closes her tab.
func TestBrowserPresence(t *testing.T) {
	srv := newTestServer(t)
	ids := srv.startDemo()
	on, rec := ids["onboarding"], ids["recovery"]
	ben := newBrowser(t, "ben", 1280, 900)
	ben.open(srv, "ben", "")
	profile := newBrowser(t, "ana", 1280, 900) // its first tab stays blank: closing it would close the browser
	ana, closeTab := profile.tab("ana-tab")
	ana.open(srv, "ana", "")
	for _, id := range ids {
		ana.waitCard(id, "open")
		ben.waitCard(id, "open")
	}
	if ben.exists("presence-" + on) {
		t.Fatal("Ben sees someone on the onboarding card before anyone worked in it")
	}

	ana.focusPage()
	qOn := ana.questions(on)[0]
	typing := "typing-" + on + "-" + qOn.ID
	ana.typeInto("answer-"+on+"-"+qOn.ID, "Skip the name screen on a phone.")
	ben.waitFor("Ana's face on the onboarding card", fmt.Sprintf(`$("presence-%s-ana")`, on))
	ben.waitText(typing, "Ana is typing…")
	ben.waitFor("the typing line to go once Ana stopped", fmt.Sprintf(`$(%q).hidden && $(%q).textContent === ""`, typing, typing))
	if !ben.exists("presence-" + on + "-ana") {
		t.Fatal("Ana's face left the card when she stopped typing")
	}
	var self bool
	ana.eval(fmt.Sprintf(`!!$("presence-%s") || !$(%q).hidden`, on, typing), &self)
	if self {
		t.Fatal("Ana sees herself on the card")
	}

	q := ana.questions(rec)[0]
	cell := markID(rec, q.ID, q.Options[1], q.Criteria[0])
	ana.eval(fmt.Sprintf(`$(%q).focus(), true`, cell), nil)
	ben.waitFor("Ana's initials on the cell she focused, her face on its card",
		fmt.Sprintf(`$("peer-%s")?.textContent === "A" && $(%q).parentElement.classList.contains("peer") && $("presence-%s-ana") && !$("presence-%s")`, cell, cell, rec, on))
	var marked int
	ben.eval(`document.querySelectorAll('[data-testid^="peer-mark-"]').length`, &marked)
	if marked != 1 {
		t.Fatalf("%d cells marked, want the one Ana focused", marked)
	}
	ben.eval(`(() => { document.activeElement?.blur(); return true })()`, nil)
	ben.screenshot(shotDir(t), "presence.png", "card-"+rec)

	// Ana opens the onboarding decision's page: she has that one open now.
	ana.click("expand-" + on)
	ana.waitFor("the decision's page", `$("decision-page")`)
	ben.waitFor("Ana's face back on the onboarding card alone, no cell marked",
		fmt.Sprintf(`$("presence-%s-ana") && !$("presence-%s") && !document.querySelector('[data-testid^="peer-mark-"]')`, on, rec))

	closeTab()
	ben.waitFor("Ana's presence to go with her tab",
		`!document.querySelector('[data-testid^="presence-"], [data-testid^="peer-mark-"]') && !window.accord.others().size`)
}

// TestBrowserProvenancePopover: Ana marks a cell Partly, Ben marks it
// Yes; hovering the cell shows "Yes, set by Ben just now (was Partly,
// Ana)" as a tooltip that describes the cell, focusing it shows the same,
// a change while it shows is looked up afresh, Escape hides it, the
// choice says who chose, and a reader sees it too.
func TestBrowserProvenancePopover(t *testing.T) {
	_, ids, ana, ben := twoWriters(t)
	rec := ids["recovery"]
	q := ana.questions(rec)[0]
	cell := markID(rec, q.ID, q.Options[0], q.Criteria[0])
	tip := "provenance-" + cell
	ana.choose(cell, "partly")
	ana.waitAccepted(rec)
	ben.waitFor("Ana's Partly on Ben's page", fmt.Sprintf(`$(%q).value === "partly"`, cell))
	ben.choose(cell, "yes")
	ben.waitAccepted(rec)
	ana.waitFor("Ben's Yes on Ana's page", fmt.Sprintf(`$(%q).value === "yes"`, cell))

	ana.hover(cell)
	ana.waitText(tip, "Yes, set by Ben just now (was Partly, Ana)")
	ana.waitFor("a tooltip describing the cell", fmt.Sprintf(`$(%q).getAttribute("role") === "tooltip" && $(%q).getAttribute("aria-describedby") === %q`, tip, cell, tip))
	ana.screenshot(shotDir(t), "provenance.png", "card-"+rec)
	ana.hover("doc-name")
	ana.waitFor("the tooltip to go with the pointer", fmt.Sprintf(`!$(%q) && !$(%q).hasAttribute("aria-describedby")`, tip, cell))

	// The keyboard: focus shows it; a change while it shows is looked up
	// afresh; Escape hides it.
	ben.focusPage()
	ben.eval(fmt.Sprintf(`$(%q).focus(), true`, cell), nil)
	ben.waitText(tip, "Yes, set by Ben just now (was Partly, Ana)")
	ana.choose(cell, "no")
	ben.waitText(tip, "No, set by Ana just now (was Yes, Ben)")
	ben.do(chromedp.KeyEvent(kb.Escape))
	ben.waitFor("Escape to hide the tooltip", fmt.Sprintf(`!$(%q) && document.activeElement === $(%q)`, tip, cell))

	// The choice.
	opt := "option-" + rec + "-" + q.ID + "-" + q.Options[1]
	label, _ := ana.labelsOf(rec, 1, 0)
	ana.click(opt)
	ana.waitAccepted(rec)
	ben.waitFor("Ana's choice on Ben's page", fmt.Sprintf(`$(%q).checked`, opt))
	ben.hover("options-" + rec + "-" + q.ID)
	ben.waitText("provenance-options-"+rec+"-"+q.ID, label+", chosen by Ana just now")

	// A reader's cells are disabled; pointing at one shows who set it all the same.
	rita := newBrowser(t, "rita", 1280, 900)
	rita.open(ana.srv, "rita", "")
	rita.waitCard(rec, "open")
	rita.hover(cell)
	rita.waitText(tip, "No, set by Ana just now (was Yes, Ben)")
}

// TestBrowserOverwriteNotice: Ben replaces Ana's Yes by No. Ana's card
// says so once, with the option's and criterion's labels, through a
// change of a cell she never set and a reconnect, until she dismisses
// it; Ben's says nothing until Ana replaces his No in turn.
func TestBrowserOverwriteNotice(t *testing.T) {
	_, ids, ana, ben := twoWriters(t)
	rec := ids["recovery"]
	q := ana.questions(rec)[0]
	cell := markID(rec, q.ID, q.Options[0], q.Criteria[1])
	other := markID(rec, q.ID, q.Options[2], q.Criteria[0])
	notices := func(b *browser) int {
		var n int
		b.eval(fmt.Sprintf(`$("overwrites-%s").querySelectorAll(".overwrite").length`, rec), &n)
		return n
	}
	ana.choose(cell, "yes")
	ana.waitAccepted(rec)
	ben.waitFor("Ana's Yes on Ben's page", fmt.Sprintf(`$(%q).value === "yes"`, cell))
	ben.choose(cell, "no")
	ben.waitAccepted(rec)
	option, criterion := ana.labelsOf(rec, 0, 1)
	ana.waitText("overwrites-"+rec, fmt.Sprintf("Ben changed your Yes to No on %s / %s", option, criterion))
	if n := notices(ana); n != 1 {
		t.Fatalf("Ana's card shows %d notices, want 1", n)
	}
	if n := notices(ben); n != 0 {
		t.Fatalf("Ben's card shows %d notices of his own change", n)
	}

	// Once: a cell Ana never set, and a reconnect's catch-up, add nothing.
	ben.choose(other, "partly")
	ben.waitAccepted(rec)
	ana.waitFor("Ben's other mark on Ana's page", fmt.Sprintf(`$(%q).value === "partly"`, other))
	ana.eval(`window.accord.resync(), true`, nil)
	ana.waitConnected()
	ana.waitCard(rec, "open")
	if n := notices(ana); n != 1 {
		t.Fatalf("after another change and a reconnect Ana's card shows %d notices, want 1", n)
	}
	ana.click("overwrite-dismiss-" + rec + "-1")
	ana.waitFor("the notice dismissed", fmt.Sprintf(`$("overwrites-%s").children.length === 0`, rec))

	// Ana replaces Ben's No: now his card says it.
	ana.choose(cell, "partly")
	ben.waitText("overwrites-"+rec, fmt.Sprintf("Ana changed your No to Partly on %s / %s", option, criterion))
	if n := notices(ana); n != 0 {
		t.Fatalf("Ana's card shows %d notices of her own change", n)
	}
}

// TestBrowserAuditDownload: the decision's page offers its history as
// NDJSON to a writer and to a reader, and the link downloads it with the
// member's session.
func TestBrowserAuditDownload(t *testing.T) {
	srv := newTestServer(t)
	rec := srv.startDemo()["recovery"]
	ana := newBrowser(t, "ana", 1280, 900)
	ana.open(srv, "ana", "")
	ana.waitCard(rec, "open")
	q := ana.questions(rec)[0]
	ana.choose(markID(rec, q.ID, q.Options[0], q.Criteria[0]), "yes")
	ana.waitAccepted(rec)
	ana.click("expand-" + rec)
	rita := newBrowser(t, "rita", 1280, 900)
	rita.open(srv, "rita", "page="+rec)
	for _, b := range []*browser{ana, rita} {
		b.waitText("page-audit", "Download history (NDJSON)")
		var got struct {
			Status   int
			Type     string
			Download string
			Lines    []string
		}
		b.eval(`fetch($("page-audit").href).then(async (r) => ({status: r.status, type: r.headers.get("content-type"),
			download: $("page-audit").getAttribute("download"), lines: (await r.text()).trim().split("\n")}))`, &got)
		if got.Status != 200 || got.Type != "application/x-ndjson" || got.Download != rec+".audit.ndjson" || len(got.Lines) < 3 {
			t.Fatalf("%s's download: %+v", b.name, got)
		}
		var first, edit struct{ Type, Decision, By string }
		if err := json.Unmarshal([]byte(got.Lines[0]), &first); err != nil || first.Type != "decision" || first.Decision != rec {
			t.Fatalf("%s's download starts with %s (%v)", b.name, got.Lines[0], err)
		}
		for _, l := range got.Lines {
			if strings.Contains(l, `"type":"edit"`) {
				_ = json.Unmarshal([]byte(l), &edit)
			}
		}
		if edit.By != "ana" {
			t.Fatalf("%s's download has no edit by Ana: %s", b.name, strings.Join(got.Lines, "\n"))
		}
	}
}
