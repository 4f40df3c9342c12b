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

// TestBrowserLayoutAtEveryWidth opens the plan with the demo's cards at
// the widths people use (phone, tablets, split screens, laptops,
// desktops): no card covers the plan's text, every passage stays a
// readable column, the title, headings and header keep whole words, and
// the header takes at most two rows.
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
		if size[0] == 390 || size[0] == 820 || size[0] == 1440 {
			b.eval(`(() => { document.activeElement?.blur(); window.scrollTo(0, 0); return true })()`, nil)
			b.screenshot(dir, fmt.Sprintf("width-%d.png", size[0]), "")
		}
	}
}
