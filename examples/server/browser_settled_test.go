package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestBrowserSettledCardShowsWhyOnce: a settled card with a long written
// answer and the Planner's drafted why, on a phone (390 px) and on a
// laptop. The why shows once, as text (its field opens only on Edit why),
// and the saved answer shows whole, as text, not cut off in a field that
// takes nothing.
func TestBrowserSettledCardShowsWhyOnce(t *testing.T) {
	srv := newTestServer(t)
	ids := srv.startDemo()
	on := ids["onboarding"]
	answer := "Ask for an invitation link first, then let people set a display name on the first screen. " +
		"Keep the name optional for guests, remember it across devices, and show the workspace right after, " +
		"with a short tour that people can skip. Admins see who has not finished signing up yet."

	ana := newBrowser(t, "ana", 1280, 900)
	ana.open(srv, "ana", "")
	ana.waitCard(on, "open")
	ana.typeInto("answer-"+on+"-"+ana.questions(on)[0].ID, answer)
	ana.waitAccepted(on)
	ana.click("save-" + on)
	ana.waitCard(on, "settled")
	ana.waitText("why-"+on, " — drafted")

	phone := newBrowser(t, "ana-phone", 390, 844)
	phone.open(srv, "ana", "")
	for _, b := range []*browser{ana, phone} {
		b.waitCard(on, "settled")
		b.waitText("why-"+on, " — drafted")
		field := "answer-" + on + "-" + b.questions(on)[0].ID
		var got struct {
			Why      string   `json:"why"`
			Text     string   `json:"text"`
			Fields   []string `json:"fields"`
			Tag      string   `json:"tag"`
			Answer   string   `json:"answer"`
			Clipped  bool     `json:"clipped"`
			Overflow bool     `json:"overflow"`
		}
		b.eval(fmt.Sprintf(`(() => {
			const card = $("card-%s"), a = $(%q), r = a.getBoundingClientRect(), cr = card.getBoundingClientRect();
			return {
				why: D(%q).record.why,
				text: card.innerText,
				fields: [...card.querySelectorAll("input, textarea")].map((e) => e.value),
				tag: a.tagName,
				answer: a.tagName === "TEXTAREA" ? a.value : a.textContent,
				clipped: a.scrollHeight > a.clientHeight + 1 || a.scrollWidth > a.clientWidth + 1,
				overflow: r.right > cr.right + 1 || r.left < cr.left - 1 || r.right > window.innerWidth,
			};
		})()`, on, field, on), &got)
		if got.Why == "" {
			t.Fatalf("%s: no why on the settled card", b.name)
		}
		shown := strings.Count(got.Text, got.Why)
		for _, v := range got.Fields {
			shown += strings.Count(v, got.Why)
		}
		if shown != 1 {
			t.Errorf("%s: the why %q shows %d times on the settled card, want once (fields: %q)", b.name, got.Why, shown, got.Fields)
		}
		if got.Tag == "TEXTAREA" || got.Tag == "INPUT" || got.Answer != answer || got.Clipped || got.Overflow {
			t.Errorf("%s: the saved answer shows in a %s, clipped %v, beyond the card %v, text %q", b.name, got.Tag, got.Clipped, got.Overflow, got.Answer)
		}
	}

	// Edit why opens the field with the why in it; Cancel closes it.
	ana.click("why-edit-" + on)
	ana.waitFor("the why in the field", fmt.Sprintf(`$("why-input-%s").value === D(%q).record.why && $("why-save-%s").disabled`, on, on, on))
	ana.click("why-cancel-" + on)
	ana.waitFor("the field closed", fmt.Sprintf(`!$("why-input-%s") && !!$("why-edit-%s")`, on, on))
}
