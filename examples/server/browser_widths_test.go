package main

import (
	"fmt"
	"testing"
)

// layoutProblems lists what is wrong with the page's layout as a person
// sees it: a decision card covering a passage of the plan, a passage
// squeezed narrower than a readable column, and a word of the title, a
// heading or the header broken across lines.
const layoutProblems = `(() => {
	const out = [];
	const passages = [...document.querySelectorAll(".plan .passage")].filter((p) => p.textContent.trim());
	const cards = [...document.querySelectorAll(".plan .card")];
	const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
	for (const p of passages) {
		const pr = p.getBoundingClientRect();
		if (pr.width < 240) out.push("a passage " + Math.round(pr.width) + " px wide: " + p.textContent.slice(0, 30));
		for (const c of cards) if (overlap(pr, c.getBoundingClientRect())) out.push("a card covers the passage " + p.textContent.slice(0, 30));
	}
	const whole = (el) => {
		const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
		for (let n = walk.nextNode(); n; n = walk.nextNode()) {
			for (const w of n.data.matchAll(/\S+/g)) {
				const r = document.createRange();
				r.setStart(n, w.index);
				r.setEnd(n, w.index + w[0].length);
				if ([...r.getClientRects()].filter((x) => x.width > 0).length > 1) out.push("the word " + w[0] + " breaks in " + el.tagName);
			}
		}
	};
	for (const el of document.querySelectorAll(".plan h1, .plan h2, .top")) whole(el);
	const title = document.querySelector(".plan h1.title");
	if (title) {
		const words = title.textContent.trim().split(/\s+/).length;
		const lines = Math.round(title.getBoundingClientRect().height / parseFloat(getComputedStyle(title).lineHeight || "30"));
		if (words > 2 && lines >= words) out.push("the title takes a line per word (" + lines + " lines)");
	}
	if (document.documentElement.scrollWidth > window.innerWidth + 1) out.push("the page scrolls sideways");
	const top = document.querySelector(".top").getBoundingClientRect().height;
	if (top > 110) out.push("the header is " + Math.round(top) + " px high: more than two rows");
	return out;
})()`

// columnProblems lists, on a page wide enough for the plan beside Chat and
// on a tablet, what wastes the plan's width: a passage narrower than most
// of the plan's column, a blank stretch of more than 60 px between a
// passage's text and the next passage's (a card beside a paragraph left
// one), and a card's footer whose buttons break onto a second line.
const columnProblems = `(() => {
	const out = [];
	const plan = document.querySelector(".plan");
	const ps = getComputedStyle(plan);
	const inner = plan.clientWidth - parseFloat(ps.paddingLeft) - parseFloat(ps.paddingRight);
	const rows = [...document.querySelectorAll(".plan .row")].filter((r) => r.querySelector(".passage")?.textContent.trim());
	const name = (r) => r.querySelector(".passage").textContent.trim().slice(0, 30);
	for (const r of rows) {
		const w = r.querySelector(".passage").getBoundingClientRect().width;
		if (w < 0.85 * inner) out.push("the passage " + name(r) + " is " + Math.round(w) + " px wide in a plan of " + Math.round(inner) + " px");
	}
	for (let i = 0; i + 1 < rows.length; i++) {
		const last = rows[i].querySelector(".passage").lastElementChild, next = rows[i + 1].querySelector(".passage").firstElementChild;
		if (!last || !next) continue;
		const from = last.getBoundingClientRect().bottom, to = next.getBoundingClientRect().top;
		const col = last.getBoundingClientRect();
		let filled = 0;
		for (const c of rows[i].querySelectorAll(".card")) {
			const cr = c.getBoundingClientRect();
			if (cr.top >= from - 1 && cr.bottom <= to + 1 && cr.left < col.right && cr.right > col.left) filled += cr.height;
		}
		const blank = to - from - filled;
		if (blank > 60) out.push(Math.round(blank) + " px of blank between " + name(rows[i]) + " and " + name(rows[i + 1]));
	}
	for (const f of document.querySelectorAll(".plan .card .actions")) {
		const items = [...f.children].filter((e) => e.getBoundingClientRect().width > 0);
		const tops = items.map((e) => Math.round(e.getBoundingClientRect().top + e.getBoundingClientRect().height / 2));
		if (Math.max(...tops) - Math.min(...tops) > 4) {
			out.push("the buttons of " + f.closest(".card").dataset.testid + " take more than one line: " + items.map((e) => e.textContent.trim()).join(" | "));
		}
	}
	return out;
})()`

// TestBrowserLayoutAtEveryWidth opens the plan with the demo's cards at
// the widths people use (phone, tablets, split screens, laptops,
// desktops): no card covers the plan's text, every passage stays a
// readable column, the title, headings and header keep whole words, and
// the header takes at most two rows. From a tablet up the plan's text
// uses the plan's width, with each passage's cards under it and no blank
// stretch between a paragraph and what follows it, and a card's buttons
// keep to one line.
//
// With -screenshots it also writes width-390.png, width-820.png and
// width-1440.png there (see TestScreenshots).
func TestBrowserLayoutAtEveryWidth(t *testing.T) {
	dir := *screenshotDir
	if dir == "" {
		dir = t.TempDir()
	}
	srv := newTestServer(t)
	ids := srv.startDemo()
	for _, size := range [][2]int{{390, 844}, {768, 1024}, {820, 1180}, {1024, 768}, {1280, 900}, {1440, 900}} {
		b := newBrowser(t, fmt.Sprintf("ana-%d", size[0]), size[0], size[1])
		b.open(srv, "ana", "")
		for _, id := range ids {
			b.waitCard(id, "open")
		}
		var problems []string
		b.eval(layoutProblems, &problems)
		for _, p := range problems {
			t.Errorf("%d px wide: %s", size[0], p)
		}
		if size[0] >= 768 {
			var wasted []string
			b.eval(columnProblems, &wasted)
			for _, p := range wasted {
				t.Errorf("%d px wide: %s", size[0], p)
			}
		}
		if size[0] == 390 || size[0] == 820 || size[0] == 1440 {
			b.eval(`(() => { document.activeElement?.blur(); window.scrollTo(0, 0); return true })()`, nil)
			b.screenshot(dir, fmt.Sprintf("width-%d.png", size[0]), "")
		}
	}
}
