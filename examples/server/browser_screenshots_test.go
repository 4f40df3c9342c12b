package main

// Screenshots of the page's main views, for docs/screenshots. A normal run
// takes them into a temporary folder (proving the views render); the flag
// writes them where the docs use them:
//
//	go test -run TestScreenshots -args -screenshots ../../docs/screenshots

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

var screenshotDir = flag.String("screenshots", "", "write the browser tests' screenshots (PNG) into this folder, e.g. ../../docs/screenshots")

func TestScreenshots(t *testing.T) {
	dir := *screenshotDir
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, ids, ana, ben := twoWriters(t)
	on, rec, ro := ids["onboarding"], ids["recovery"], ids["rollout"]
	q := ana.questions(rec)[0]
	mark := func(b *browser, o, c int, v string) { b.choose(markID(rec, q.ID, q.Options[o], q.Criteria[c]), v) }

	// 1. The plan with its cards and the criteria matrix being filled in by
	// two members.
	ben.typeInto("answer-"+on+"-"+ben.questions(on)[0].ID, "Sign in straight from the invitation link; ask for a display name on first use.")
	ana.click("option-" + rec + "-" + q.ID + "-" + q.Options[0])
	mark(ana, 0, 0, "yes")
	mark(ana, 0, 1, "yes")
	mark(ana, 0, 2, "partly")
	mark(ben, 1, 0, "no")
	mark(ben, 1, 1, "partly")
	mark(ben, 1, 2, "yes")
	mark(ana, 2, 0, "no")
	mark(ana, 2, 1, "yes")
	ana.waitAccepted(rec)
	ben.waitAccepted(on)
	ana.waitEqual("Ben's answer on Ana's page", fmt.Sprintf(`$("answer-%s-%s").value`, on, ana.questions(on)[0].ID),
		"Sign in straight from the invitation link; ask for a display name on first use.")
	ana.waitFor("Ben's marks on Ana's page", fmt.Sprintf(`$(%q).value === "yes"`, markID(rec, q.ID, q.Options[1], q.Criteria[2])))
	ana.eval(`(() => { document.activeElement?.blur(); window.scrollTo(0, 0); return true })()`, nil)
	ana.screenshot(dir, "plan.png", "")

	// 2. A settled card with its history and why: Ana saved Email link,
	// Ben reopened it, chose Passkey and wrote why.
	ana.click("save-" + rec)
	ana.waitCard(rec, "settled")
	ben.waitCard(rec, "settled")
	ben.click("reopen-" + rec)
	ben.waitCard(rec, "open")
	ben.click("option-" + rec + "-" + q.ID + "-" + q.Options[2])
	mark(ben, 2, 0, "yes")
	mark(ben, 2, 1, "yes")
	mark(ben, 2, 2, "partly")
	mark(ben, 0, 0, "no")
	ben.click("save-" + rec)
	ben.waitCard(rec, "settled")
	ben.waitText("why-"+rec, " — drafted") // the Planner's draft comes first; Ben replaces it
	ben.click("why-edit-" + rec)
	ben.replaceText("why-input-"+rec, "Passkeys survive a lost phone and need no storage of ours.")
	ben.click("why-save-" + rec)
	ana.waitText("why-"+rec, "Passkeys survive a lost phone and need no storage of ours. — Ben")
	ana.waitText("history-"+rec+"-0", "reopened by Ben")
	ana.eval(`(() => { document.activeElement?.blur(); return true })()`, nil)
	ana.screenshot(dir, "settled-card.png", "card-"+rec)

	// 3. The compact layout with the shared Save bar: Ana on a phone has
	// edited two answers.
	phone := newBrowser(t, "ana-phone", 390, 844)
	phone.open(ana.srv, "ana", "")
	phone.waitCard(ro, "open")
	phone.typeInto("answer-"+ro+"-"+phone.questions(ro)[0].ID, "Email everyone a week ahead, with a link to set up a passkey.")
	phone.typeInto("answer-"+on+"-"+phone.questions(on)[0].ID, " Keep the name screen optional.")
	phone.waitText("savebar-count", "2 edited answers")
	phone.waitAccepted(ro)
	phone.waitAccepted(on)
	phone.eval(`(() => { document.activeElement?.blur(); const r = $("block-b7").getBoundingClientRect();
		window.scrollTo(0, window.scrollY + r.top - 8); return true })()`, nil)
	phone.viewportShot(dir, "compact-savebar.png")

	// 4. The reader's view: Rita sees the decisions and their answers, and
	// can change nothing.
	rita := newBrowser(t, "rita", 1280, 900)
	rita.open(ana.srv, "rita", "")
	rita.waitCard(rec, "settled")
	rita.waitText("why-"+rec, "— Ben")
	rita.waitFor("Ana's edits on Rita's page", fmt.Sprintf(`$("answer-%s-%s").value.includes("optional")`, on, rita.questions(on)[0].ID))
	rita.waitFor("the reader banner", `!!$("reader-banner")`)
	rita.screenshot(dir, "reader.png", "")
}

// viewportShot writes a PNG of what the viewport shows (fixed elements such
// as the Save bar where a person sees them).
func (b *browser) viewportShot(dir, name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, waitTime)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("%s: screenshot %s: %v", b.name, name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("wrote %s", filepath.Join(dir, name))
}
