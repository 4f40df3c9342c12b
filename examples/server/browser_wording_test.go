package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestBrowserPlainWording: what the page and the demo Planner say is
// plain to someone new. Start demo counts every card it adds, the
// Planner's own question among them; that question says what a run is and
// offers no criteria or options to add; a choice's criteria count says
// what it counts; the research menu offers no investigation to a member
// without a paired machine; a drafted why states what the answer gives,
// with no filler reason; the plan's write-up lines name people as the
// page does, not by login.
func TestBrowserPlainWording(t *testing.T) {
	srv := startDemoServer(t, t.TempDir(), "127.0.0.1:0", fastDemo(0))
	ben := newBrowser(t, "ben", 1280, 900)
	ben.open(srv, "ben", "")
	ben.click("start-demo")
	ben.waitText("app-message", "The Planner opened 3 decisions on the plan's passages and asked you a question of its own: 4 cards in all.")
	ben.waitFor("the 4 cards", `document.querySelectorAll('[data-testid^="card-"][data-decision]').length === 4`)

	var ids struct {
		Ask, Recovery, Rollout string
	}
	ben.waitFor("the Planner's question", `[...window.accord.decisions.values()].some((d) => d.record.key === "planner:ask:new-run")`)
	ben.eval(`(() => {
		const by = (k) => [...window.accord.decisions.values()].find((d) => d.record.key === k)?.id || "";
		return {ask: by("planner:ask:new-run"), recovery: by("planner:recovery"), rollout: by("planner:rollout")};
	})()`, &ids)
	if ids.Ask == "" || ids.Recovery == "" || ids.Rollout == "" {
		var keys []string
		ben.eval(`[...window.accord.decisions.values()].map((d) => d.record.key)`, &keys)
		t.Fatalf("the demo's decisions by key: %+v (keys %q)", ids, keys)
	}

	// The Planner's question explains its run and takes no additions.
	ben.waitCard(ids.Ask, "open")
	ask := ben.text("card-" + ids.Ask)
	for _, want := range []string{"Once these decisions are settled, should I start a new run?", "A run is one pass of the Planner over the plan"} {
		if !strings.Contains(ask, want) {
			t.Errorf("the Planner's question card says %q, want it to say %q", ask, want)
		}
	}
	var adds []string
	ben.eval(fmt.Sprintf(`[...$("card-%s").querySelectorAll('[data-testid^="add-"]')].map((e) => e.dataset.testid)`, ids.Ask), &adds)
	if len(adds) != 0 {
		t.Errorf("the Planner's yes/no question offers %v", adds)
	}

	// The criteria count says what it counts.
	ben.waitCard(ids.Recovery, "open")
	q := ben.questions(ids.Recovery)[0]
	ben.waitText(fmt.Sprintf("criterion-count-%s-%s", ids.Recovery, q.ID), "3 of at most 5 criteria")

	// Ben has no paired machine: his menu offers no investigation.
	ben.openMenu("research-" + ids.Rollout)
	ben.waitFor("Ben's research menu", fmt.Sprintf(`!!$("research-web-%s")`, ids.Rollout))
	if menu := ben.text("research-menu-" + ids.Rollout); strings.Contains(menu, "Investigate") || strings.Contains(menu, "paired machine") {
		t.Errorf("Ben's research menu offers an investigation he cannot start: %q", menu)
	}
	ben.closeMenu("research-" + ids.Rollout)

	// A saved choice: the drafted why says what the marks say, and the
	// plan's write-up names Ben.
	ben.click("option-" + ids.Recovery + "-" + q.ID + "-" + q.Options[2])
	ben.choose(markID(ids.Recovery, q.ID, q.Options[2], q.Criteria[0]), "yes")
	ben.choose(markID(ids.Recovery, q.ID, q.Options[2], q.Criteria[1]), "partly")
	ben.waitAccepted(ids.Recovery)
	ben.click("save-" + ids.Recovery)
	ben.waitCard(ids.Recovery, "settled")
	ben.waitText("why-"+ids.Recovery, "Why: The team chose “Passkey”, which meets “New device”, and partly meets “No new storage”. — drafted")
	ben.waitFor("the write-up in the recovery paragraph", passage("b5")+`.includes("Decided: ")`)
	ben.waitFor("the write-up naming Ben", passage("b5")+`.includes("saved by Ben")`)
	if p := ben.text("block-b5"); strings.Contains(p, "@ben") {
		t.Errorf("the plan's write-up names a login: %q", p)
	}
}
