package main

// Browser tests of undo and redo in a card (docs/PROTOCOL.md, "Undo";
// web/src/undo.jsx): the shortcuts from a matrix cell and from a written
// answer's field, the toolbar's buttons and what they say, a written
// answer's undo that keeps another member's typing, and an undo skipped
// because another member changed the value since; the same on the
// decision's page.

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// press sends a key with modifiers to the focused element, as a person
// holding them does.
func (b *browser) press(key string, mods ...chromedp.Modifier) {
	b.t.Helper()
	b.do(chromedp.KeyEvent(key, chromedp.KeyModifiers(mods...)))
}

// shortcut presses undo's shortcuts as a person on Linux or Windows does:
// "undo" Ctrl+Z, "redo" Ctrl+Shift+Z, "redo-y" Ctrl+Y.
func (b *browser) shortcut(way string) {
	b.t.Helper()
	switch way {
	case "undo":
		b.press("z", chromedp.ModifierCtrl)
	case "redo":
		b.press("z", chromedp.ModifierCtrl, chromedp.ModifierShift)
	case "redo-y":
		b.press("y", chromedp.ModifierCtrl)
	default:
		b.t.Fatalf("no shortcut %q", way)
	}
}

// undoButton waits until the Undo (or Redo, way "redo") button of
// decision id is enabled and its label is want.
func (b *browser) undoButton(way, id, want string) {
	b.t.Helper()
	b.waitEqual(way+" button of "+id, fmt.Sprintf(`[$("%s-%s")?.disabled, $("%s-%s")?.getAttribute("aria-label")]`, way, id, way, id), []any{false, want})
}

// undoDisabled waits until the Undo (or Redo) button of decision id is
// disabled, its title saying why.
func (b *browser) undoDisabled(way, id, title string) {
	b.t.Helper()
	b.waitEqual(way+" button of "+id+" disabled", fmt.Sprintf(`[$("%s-%s")?.disabled, $("%s-%s")?.title]`, way, id, way, id), []any{true, title})
}

// focus focuses the element with the data-testid (after the page itself,
// which a headless tab is not until clicked).
func (b *browser) focus(testid string) {
	b.t.Helper()
	b.focusPage()
	b.waitFor(testid+" to be enabled", fmt.Sprintf(`$(%q) && !$(%q).disabled`, testid, testid))
	b.eval(fmt.Sprintf(`$(%q).focus(), document.activeElement === $(%q)`, testid, testid), nil)
}

// A matrix cell set, then Ctrl+Z in it: the cell goes back, the Redo
// button names the mark, Ctrl+Shift+Z sets it again and Ctrl+Y redoes as
// well; the other member sees each step.
func TestBrowserUndoMatrixCell(t *testing.T) {
	_, ids, ana, ben := twoWriters(t)
	rec := ids["recovery"]
	cell, label, value := ana.yesCell(rec)

	ana.undoDisabled("undo", rec, "Nothing to undo")
	ana.undoDisabled("redo", rec, "Nothing to redo")
	ana.focus(cell)
	ana.choose(cell, "yes")
	ana.undoButton("undo", rec, "Undo: "+label)
	ana.waitText("undo-"+rec, "Undo: "+label)
	ben.waitEqual("Ana's Yes on Ben's page", value, "yes")

	ana.shortcut("undo")
	ana.waitEqual("the cell undone", value, "")
	ana.undoButton("redo", rec, "Redo: "+label)
	ana.undoDisabled("undo", rec, "Nothing to undo")
	ben.waitEqual("the undo on Ben's page", value, "")

	ana.shortcut("redo")
	ana.waitEqual("the cell redone", value, "yes")
	ana.undoButton("undo", rec, "Undo: "+label)
	ana.undoDisabled("redo", rec, "Nothing to redo")
	ben.waitEqual("the redo on Ben's page", value, "yes")

	ana.shortcut("undo")
	ana.waitEqual("the cell undone again", value, "")
	ana.shortcut("redo-y")
	ana.waitEqual("the cell redone by Ctrl+Y", value, "yes")
	ana.waitAccepted(rec)
	ben.waitEqual("the last redo on Ben's page", value, "yes")
	ben.undoDisabled("undo", rec, "Nothing to undo") // Ana's edits are not Ben's to undo
}

// A choice undone and redone by the buttons; after a save the buttons
// say the save cleared them, and a why set then is undone.
func TestBrowserUndoChoiceButtons(t *testing.T) {
	srv := newTestServer(t)
	rec := srv.startDemo()["recovery"]
	ana := newBrowser(t, "ana", 1280, 900)
	ana.open(srv, "ana", "")
	ana.waitCard(rec, "open")
	q := ana.questions(rec)[0]
	first, _ := ana.labelsOf(rec, 0, 0)
	third, _ := ana.labelsOf(rec, 2, 0)
	opt := func(i int) string { return "option-" + rec + "-" + q.ID + "-" + q.Options[i] }
	chosen := fmt.Sprintf(`[$(%q).checked, $(%q).checked]`, opt(0), opt(2))

	ana.click(opt(0))
	ana.undoButton("undo", rec, "Undo: choose "+first)
	ana.click(opt(2))
	ana.undoButton("undo", rec, "Undo: choose "+third)
	ana.click("undo-" + rec)
	ana.waitEqual("the first option chosen again", chosen, []bool{true, false})
	ana.undoButton("undo", rec, "Undo: choose "+first)
	ana.undoButton("redo", rec, "Redo: choose "+third)
	ana.click("undo-" + rec)
	ana.waitEqual("no option chosen", chosen, []bool{false, false})
	ana.undoDisabled("undo", rec, "Nothing to undo")
	ana.waitFor("the focus on Redo once Undo has nothing left", fmt.Sprintf(`document.activeElement === $("redo-%s")`, rec))
	ana.click("redo-" + rec)
	ana.waitEqual("the first option chosen by the redo", chosen, []bool{true, false})
	ana.click("clear-choice-" + rec + "-" + q.ID)
	ana.undoButton("undo", rec, "Undo: unchoose "+first)
	ana.undoDisabled("redo", rec, "Nothing to redo") // a new edit empties the redo stack
	ana.click("undo-" + rec)
	ana.waitEqual("the cleared choice back", chosen, []bool{true, false})

	ana.waitAccepted(rec)
	ana.click("save-" + rec)
	ana.waitCard(rec, "settled")
	ana.undoDisabled("undo", rec, "Nothing to undo since the decision was saved")
	ana.undoDisabled("redo", rec, "Nothing to redo since the decision was saved")

	// After the save only the why is undone: Ana replaces the Planner's
	// draft, and Undo puts its text back.
	ana.waitText("why-"+rec, " — drafted")
	var drafted string
	ana.eval(fmt.Sprintf(`D(%q).record.why`, rec), &drafted)
	ana.click("why-edit-" + rec)
	ana.replaceText("why-input-"+rec, "Every user already has email.")
	ana.click("why-save-" + rec)
	ana.waitText("why-"+rec, "Every user already has email. — Ana")
	ana.undoButton("undo", rec, "Undo: why")
	ana.click("undo-" + rec)
	// Back as a why of Ana's: an undo is an edit of hers.
	ana.waitText("why-"+rec, drafted+" — Ana")
	ana.undoButton("redo", rec, "Redo: why")
}

// A written answer: Ana's Ctrl+Z in the field removes her phrase and
// keeps what Ben typed around it, on both pages; then both type at once
// and Ana's undos take out every character of hers and none of Ben's.
func TestBrowserUndoWrittenAnswer(t *testing.T) {
	_, ids, ana, ben := twoWriters(t)
	on := ids["onboarding"]
	answer := "answer-" + on + "-" + ana.questions(on)[0].ID
	value := fmt.Sprintf(`$(%q).value`, answer)

	ben.typeInto(answer, "Ben's words.")
	ana.waitEqual("Ben's words on Ana's page", value, "Ben's words.")
	ana.focusPage()
	ana.typeInto(answer, " Ana's phrase.")
	ana.undoButton("undo", on, "Undo typing “Ana's phrase.”")
	ben.waitEqual("Ana's phrase on Ben's page", value, "Ben's words. Ana's phrase.")
	ben.typeAfter(answer, "Ben first. ", `e.setSelectionRange(0, 0)`)
	ana.waitEqual("Ben's second words on Ana's page", value, "Ben first. Ben's words. Ana's phrase.")

	ana.waitFor("Ana's caret in the field", fmt.Sprintf(`document.activeElement === $(%q)`, answer))
	ana.shortcut("undo")
	ana.waitEqual("Ana's phrase undone", value, "Ben first. Ben's words.")
	ben.waitEqual("Ana's undo on Ben's page", value, "Ben first. Ben's words.")
	ana.undoButton("redo", on, "Redo typing “Ana's phrase.”")
	ana.shortcut("redo")
	ana.waitEqual("Ana's phrase redone", value, "Ben first. Ben's words. Ana's phrase.")
	ana.shortcut("undo")
	ana.waitEqual("Ana's phrase undone again", value, "Ben first. Ben's words.")

	// Both at once: Ana at the end, Ben at the start. Ben's keystrokes
	// arriving split Ana's typing into several groups.
	ana.eval(fmt.Sprintf(`(() => { const e = $(%q); e.focus(); e.setSelectionRange(e.value.length, e.value.length); return true })()`, answer), nil)
	ben.eval(fmt.Sprintf(`(() => { const e = $(%q); e.focus(); e.setSelectionRange(0, 0); return true })()`, answer), nil)
	errc := make(chan error, 2)
	go func() { errc <- chromedp.Do(ana.ctx, chromedp.KeyEvent(" Typed at the same time.")) }()
	go func() { errc <- chromedp.Do(ben.ctx, chromedp.KeyEvent("Meanwhile: ")) }()
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	const both = "Meanwhile: Ben first. Ben's words. Typed at the same time."
	ana.waitEqual("both on Ana's page", value, both)
	ben.waitEqual("both on Ben's page", value, both)
	ana.waitAccepted(on)
	ana.waitFor("Ana's caret in the field", fmt.Sprintf(`document.activeElement === $(%q)`, answer))
	groups := 0
	for {
		var st struct {
			Text string `json:"text"`
			Undo bool   `json:"undo"`
		}
		ana.eval(fmt.Sprintf(`({text: $(%q).value, undo: !$("undo-%s").disabled})`, answer, on), &st)
		if !st.Undo {
			break
		}
		if groups++; groups > 40 {
			t.Fatalf("more than 40 undos and Ana's page still has one: %q", st.Text)
		}
		ana.shortcut("undo")
		ana.waitFor("an undo", fmt.Sprintf(`%s !== %q`, value, st.Text))
	}
	const bens = "Meanwhile: Ben first. Ben's words."
	ana.waitEqual("Ana's typing undone, Ben's kept", value, bens)
	ben.waitEqual("Ana's typing undone on Ben's page, his kept", value, bens)
	t.Logf("Ana's typing made %d groups", groups)
}

// A skipped undo: Ana sets two cells, Ben changes the second; Ana's undo
// leaves Ben's mark, says he changed it, and her next undo is the first
// cell's. The card then is docs/screenshots/undo.png.
func TestBrowserUndoSkipped(t *testing.T) {
	_, ids, ana, ben := twoWriters(t)
	rec := ids["recovery"]
	q := ana.questions(rec)[0]
	first := markID(rec, q.ID, q.Options[0], q.Criteria[0])
	second := markID(rec, q.ID, q.Options[2], q.Criteria[0])
	o1, c1 := ana.labelsOf(rec, 0, 0)
	o2, c2 := ana.labelsOf(rec, 2, 0)

	ana.choose(first, "yes")
	ana.choose(second, "yes")
	ana.undoButton("undo", rec, fmt.Sprintf("Undo: %s / %s → Yes", o2, c2))
	ana.waitAccepted(rec)
	ben.waitEqual("Ana's Yes on Ben's page", fmt.Sprintf(`$(%q).value`, second), "yes")
	ben.choose(second, "partly")
	ben.waitAccepted(rec)
	ana.waitEqual("Ben's Partly on Ana's page", fmt.Sprintf(`$(%q).value`, second), "partly")

	ana.click("undo-" + rec)
	ana.waitEqual("the skipped undo's notice", fmt.Sprintf(`$("message-%s").textContent`, rec), fmt.Sprintf("Ben changed %s / %s since; left as it is.", o2, c2))
	ana.undoButton("undo", rec, fmt.Sprintf("Undo: %s / %s → Yes", o1, c1))
	ana.undoDisabled("redo", rec, "Nothing to redo")
	for _, b := range []*browser{ana, ben} {
		b.waitEqual("Ben's Partly kept", fmt.Sprintf(`[$(%q).value, $(%q).value]`, first, second), []string{"yes", "partly"})
	}
	ana.eval(`(() => { document.activeElement?.blur(); window.scrollTo(0, 0); return true })()`, nil)
	ana.screenshot(shotDir(t), "undo.png", "card-"+rec)
}

// On the decision's page, the card's undo: a mark set there, Ctrl+Z in
// its cell reverts it after the Undo button in the page's title bar named
// it, and Ctrl+Shift+Z sets it again; in a written answer on another
// decision's page Ctrl+Z is the client's undo (Redo names the typing),
// not the browser's.
func TestBrowserUndoOnPage(t *testing.T) {
	srv := newTestServer(t)
	ids := srv.startDemo()
	rec, on := ids["recovery"], ids["onboarding"]
	ana := newBrowser(t, "ana", 1280, 900)
	page := func(id string) {
		ana.open(srv, "ana", "page="+id)
		ana.waitFor("the page of "+id, fmt.Sprintf(`$("decision-page")?.dataset.id === %q && D(%q)?.doc && D(%q)?.synced`, id, id, id))
	}

	page(rec)
	cell, label, value := ana.yesCell(rec)

	ana.undoDisabled("undo", rec, "Nothing to undo")
	ana.waitFor("Undo in the page's title bar", fmt.Sprintf(`$("page-bar").contains($("undo-%s"))`, rec))
	ana.focus(cell)
	ana.choose(cell, "yes")
	ana.undoButton("undo", rec, "Undo: "+label)
	ana.waitText("undo-"+rec, "Undo: "+label)
	ana.shortcut("undo")
	ana.waitEqual("the cell undone", value, "")
	ana.undoButton("redo", rec, "Redo: "+label)
	ana.undoDisabled("undo", rec, "Nothing to undo")
	ana.shortcut("redo")
	ana.waitEqual("the cell redone", value, "yes")
	ana.undoButton("undo", rec, "Undo: "+label)
	ana.waitAccepted(rec)

	page(on)
	answer := "answer-" + on + "-" + ana.questions(on)[0].ID
	text := fmt.Sprintf(`$(%q).value`, answer)
	var before string
	ana.eval(text, &before)
	ana.focusPage()
	ana.typeInto(answer, " Ana's words.")
	ana.undoButton("undo", on, "Undo typing “Ana's words.”")
	ana.waitFor("Ana's caret in the field", fmt.Sprintf(`document.activeElement === $(%q)`, answer))
	ana.shortcut("undo")
	ana.waitEqual("Ana's words undone", text, before)
	ana.undoButton("redo", on, "Redo typing “Ana's words.”")
	ana.undoDisabled("undo", on, "Nothing to undo")
	ana.waitAccepted(on)
}

// yesCell names the matrix cell the undo tests set to Yes (the third
// option against the first criterion of rec's first question): its
// element id, the label Undo gives that mark, and the script reading
// its value.
func (b *browser) yesCell(rec string) (cell, label, value string) {
	q := b.questions(rec)[0]
	cell = markID(rec, q.ID, q.Options[2], q.Criteria[0])
	option, criterion := b.labelsOf(rec, 2, 0)
	return cell, fmt.Sprintf("%s / %s → Yes", option, criterion), fmt.Sprintf(`$(%q).value`, cell)
}
