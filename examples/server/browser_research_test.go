package main

// Browser tests of findings and the decision's page: the Research menu,
// research and investigations of the demo research host, asks and takes,
// demo personas, eviction at 20 findings, the sweep after a restart, and
// the page (E1–E3) on a desktop and a phone. The research host's delays
// are short here; the page is the one a person clicks through.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
)

// startDemoServer starts the server on dir and addr with the demo's
// research and personas configured by demo (its Dir is set to dir).
func startDemoServer(t *testing.T, dir, addr string, demo demoOptions) *testServer {
	t.Helper()
	ln := listen(t, addr)
	demo.Dir = dir
	ctx, cancel := context.WithCancel(context.Background())
	s := &testServer{t: t, dir: dir, addr: ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	prepareSessions(t, dir, demo.SessionKey, s.addr)
	log := slog.New(slog.NewTextHandler(&testLogWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	go func() { s.done <- serveDemo(ctx, ln, demo, log, io.Discard) }()
	t.Cleanup(s.stop)
	return s
}

// fastDemo is the demo with research ready after research, investigations
// after half a second and personas answering at once.
func fastDemo(research time.Duration) demoOptions {
	return demoOptions{ResearchDelay: research, InvestigationDelay: 500 * time.Millisecond, Personas: true, PersonaDelay: 200 * time.Millisecond}
}

// researchWriters starts a demo server and opens the page for Ana and Ben.
func researchWriters(t *testing.T, demo demoOptions) (srv *testServer, ids map[string]string, ana, ben *browser) {
	t.Helper()
	srv = startDemoServer(t, t.TempDir(), "127.0.0.1:0", demo)
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

// openMenu opens the Research menu whose button is the testid (the
// card's "research-<id>" or the page's "page-research") unless it is open.
func (b *browser) openMenu(button string) {
	b.t.Helper()
	menu := strings.Replace(button, "research", "research-menu", 1)
	if !b.exists(menu) {
		b.click(button)
	}
	b.waitFor("the menu "+menu, fmt.Sprintf(`$(%q)`, menu))
}

// closeMenu closes the Research menu of the button if it is open.
func (b *browser) closeMenu(button string) {
	b.t.Helper()
	menu := strings.Replace(button, "research", "research-menu", 1)
	if b.exists(menu) {
		b.click(button)
	}
	b.waitFor("the menu "+menu+" closed", fmt.Sprintf(`!$(%q)`, menu))
}

// chatTexts returns the texts of the demo Chat's notices.
func (s *testServer) chatTexts() []string {
	s.t.Helper()
	res, err := http.Get(s.url("/api/chat?member=rita"))
	if err != nil {
		s.t.Fatalf("GET /api/chat: %v", err)
	}
	defer res.Body.Close()
	var body struct{ Notices []struct{ ID, Text string } }
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		s.t.Fatal(err)
	}
	var out []string
	for _, n := range body.Notices {
		out = append(out, n.Text)
	}
	return out
}

// findings returns the findings of decision id as the page's client holds
// them: [{id, kind, status, ...}].
func (b *browser) findings(id string) []pageFinding {
	b.t.Helper()
	var fs []pageFinding
	b.eval(fmt.Sprintf(`D(%q).record.findings || []`, id), &fs)
	return fs
}

type pageFinding struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	Ref     string `json:"ref"`
	Focus   string `json:"focus"`
	Title   string `json:"title"`
	Summary string `json:"summary"`
	Branch  string `json:"branch"`
	Stance  string `json:"stance"`
	By      string `json:"by"`
	Sources []struct {
		URL string `json:"url"`
	} `json:"sources"`
}

// R1, R2, R3, R8 (menu), E1, E2, E3: Ana researches the web from the card's
// menu with Details and Cmd/Ctrl+Enter; the button becomes the quiet
// "Researching" capsule while Save stays enabled; the work becomes ready,
// the card shows "1 finding", which opens the page: status row, question,
// control, the finding with its summary, plain source links, no Takes, and
// Notes with its placeholder. Ana writes a note and Ben, on the same page,
// sees it live; it survives a restart.
func TestBrowserResearchToPage(t *testing.T) {
	srv, ids, ana, ben := researchWriters(t, fastDemo(1500*time.Millisecond))
	id := ids["recovery"]
	q := ana.questions(id)[0]
	ana.click("option-" + id + "-" + q.ID + "-" + q.Options[2])
	ana.waitAccepted(id)

	ana.openMenu("research-" + id)
	ana.waitFor("the Research menu", fmt.Sprintf(`$("research-menu-%s")`, id))
	for _, row := range []string{"research-web-", "research-spike-", "research-ask-"} {
		if !ana.exists(row + id) {
			t.Fatalf("the Research menu lacks %s", row)
		}
	}
	// One row folds open at a time.
	ana.click("research-spike-" + id)
	ana.waitFor("the investigation's fold", fmt.Sprintf(`$("fold-spike-%s") && !$("fold-research-%s")`, id, id))
	ana.click("research-web-" + id)
	ana.waitFor("the research fold alone", fmt.Sprintf(`$("fold-research-%s") && !$("fold-spike-%s")`, id, id))
	ana.typeInto("details-research-"+id, "passkeys after a lost phone")
	ana.eval(fmt.Sprintf(`$("details-research-%s").dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", ctrlKey: true, bubbles: true}))`, id), nil)

	ana.waitFor("the Researching capsule", fmt.Sprintf(`$("research-%s")?.dataset.state === "running" && $("research-%s").textContent.includes("Researching") && $("research-%s").querySelector(".spinner")`, id, id, id))
	ben.waitFor("the capsule on Ben's card", fmt.Sprintf(`$("research-%s")?.dataset.state === "running"`, id))
	if ana.exists("findings-" + id) {
		t.Fatal("the findings button shows while the research runs")
	}
	var saveEnabled bool
	ana.eval(fmt.Sprintf(`!$("save-%s").disabled`, id), &saveEnabled)
	if !saveEnabled {
		t.Fatal("Save is disabled while research runs")
	}
	// The menu of running work shows its focus, Stop and Ask someone.
	ana.openMenu("research-" + id)
	ana.waitText("research-focus-"+id, "passkeys after a lost phone")
	if !ana.exists("research-stop-"+id) || !ana.exists("research-ask-"+id) {
		t.Fatal("the running menu lacks Stop or Ask someone")
	}
	ana.eval(fmt.Sprintf(`(() => { const r = $("card-%s").getBoundingClientRect(); window.scrollTo(0, window.scrollY + r.top - 120); return true })()`, id), nil)
	ana.viewportShot(shotDir(t), "research.png")
	ana.closeMenu("research-" + id)

	var saveBefore, saveAfter float64
	ben.eval(fmt.Sprintf(`$("save-%s").getBoundingClientRect().left - $("card-%s").getBoundingClientRect().left`, id, id), &saveBefore)
	ana.waitText("findings-"+id, "1 finding")
	ben.waitText("findings-"+id, "1 finding")
	// The link appears at the end of the card's buttons: Save stays put.
	ben.eval(fmt.Sprintf(`$("save-%s").getBoundingClientRect().left - $("card-%s").getBoundingClientRect().left`, id, id), &saveAfter)
	if saveAfter != saveBefore {
		t.Errorf("Save moved from x=%v to x=%v when the findings link appeared", saveBefore, saveAfter)
	}
	ana.waitFor("the idle Research button", fmt.Sprintf(`$("research-%s")?.dataset.state === "idle"`, id))
	fs := ana.findings(id)
	if len(fs) != 1 || fs[0].Status != "ready" || fs[0].Kind != "research" || fs[0].Focus != "passkeys after a lost phone" || fs[0].Title == "" || len(fs[0].Sources) == 0 {
		t.Fatalf("findings after the research: %+v", fs)
	}
	f := fs[0]
	testutil.EventuallyWithin(t, waitTime, "the Chat notice of the ready research", func() (bool, string) {
		texts := srv.chatTexts()
		n := 0
		for _, s := range texts {
			if strings.HasPrefix(s, "Research for “Which recovery channel should we build first?” is ready") {
				n++
			}
		}
		return n == 1, strings.Join(texts, " | ")
	})

	// The findings button opens the page: question:page creates the child
	// document; the record learns childId.
	ana.click("findings-" + id)
	ana.waitFor("the decision's page", `$("decision-page")`)
	ana.waitFor("childId on the record", fmt.Sprintf(`D(%q).record.childId === "question:%s"`, id, id))
	ana.waitText("page-status-pill", "Open")
	ana.waitText("page-question", "Which recovery channel should we build first?")
	ana.waitText("page-crumb", "plan-1")
	ana.waitFor("the control at page width with Ana's choice", fmt.Sprintf(`$("option-%s-%s-%s")?.checked`, id, q.ID, q.Options[2]))
	ana.waitText("finding-"+f.ID, f.Summary)
	var links []string
	ana.eval(fmt.Sprintf(`[...$("finding-%s").querySelectorAll(".sources a")].map((a) => a.getAttribute("href"))`, f.ID), &links)
	if len(links) != len(f.Sources) || links[0] != f.Sources[0].URL {
		t.Fatalf("source links %v, want %+v", links, f.Sources)
	}
	if ana.exists("page-takes") {
		t.Fatal("Takes show though nobody was asked")
	}
	ana.waitFor("the empty Notes", `$("page-notes")?.dataset.state === "ready" && $("page-notes").placeholder === "Add a note" && $("page-notes").value === ""`)
	var saveOK bool
	ana.eval(`!$("page-save").disabled`, &saveOK)
	if !saveOK {
		t.Fatal("the page's Save is disabled though the decision is answerable")
	}

	// Ben reaches the same page through its link; Notes are shared live.
	var link string
	ana.eval(`$("page-more").click(), true`, nil)
	ana.waitFor("the ⋯ menu", `$("page-copy-link")`)
	ana.eval(`$("page-copy-link").dataset.link`, &link)
	if !strings.Contains(link, "page="+id) || strings.Contains(link, "member=") {
		t.Fatalf("copied link %q", link)
	}
	ana.eval(`document.body.dispatchEvent(new MouseEvent("mousedown", {bubbles: true})), true`, nil)
	ben.open(srv, "ben", "page="+id)
	ben.waitFor("Ben's page", `$("decision-page") && $("page-notes")?.dataset.state === "ready"`)
	ana.typeInto("page-notes", "Support says most lockouts follow a new phone.")
	ben.waitEqual("Ana's note on Ben's page", `$("page-notes").value`, "Support says most lockouts follow a new phone.")
	ben.typeInto("page-notes", " Check with Lily.")
	ana.waitEqual("Ben's note on Ana's page", `$("page-notes").value`, "Support says most lockouts follow a new phone. Check with Lily.")

	// The Notes are the child document's "notes" decision, never saved.
	var notes struct {
		Key, Status string
	}
	ana.eval(`(() => { const n = window.accordNotes; const d = n.order.map((i) => n.decisions.get(i)).find((x) => x.record.key === "notes"); return {key: d.record.key, status: d.record.status} })()`, &notes)
	if notes.Key != "notes" || notes.Status != "open" {
		t.Fatalf("the Notes decision: %+v", notes)
	}
	ana.waitFor("Ana's notes accepted", `(() => { const n = window.accordNotes; return n.welcomed && [...n.decisions.values()].every((d) => !n.unsent(d)) })()`)

	// Back returns to the plan; a restart keeps the page and its Notes.
	ana.click("page-back")
	ana.waitFor("the plan", fmt.Sprintf(`!$("decision-page") && $("card-%s")`, id))
	dir, addr := srv.dir, srv.addr
	srv.stop()
	srv2 := startDemoServer(t, dir, addr, fastDemo(1500*time.Millisecond))
	ana.open(srv2, "ana", "page="+id)
	ana.waitEqual("the Notes after a restart", `$("page-notes")?.dataset.state === "ready" && $("page-notes").value`, "Support says most lockouts follow a new phone. Check with Lily.")
	ana.waitText("finding-"+f.ID, f.Summary)
}

// R8, R9, E3: Ana asks Ben from the card's menu: both cards show the amber
// waiting pill, Chat names Ben; Ben opens the page from "Waiting for you",
// answers with objects, and the chip shows on Ana's page under Takes. A
// demo persona asked the same way answers by itself, as itself.
func TestBrowserAskAndTake(t *testing.T) {
	srv, ids, ana, ben := researchWriters(t, fastDemo(time.Second))
	id := ids["onboarding"]

	ana.openMenu("research-" + id)
	ana.click("research-ask-" + id)
	ana.waitFor("the member list", fmt.Sprintf(`$("ask-%s-ben") && $("ask-%s-demo:lily") && !$("ask-%s-ana")`, id, id, id))
	ana.click("ask-" + id + "-ben")
	ana.waitText("waiting-"+id, "Waiting for Ben")
	ben.waitText("waiting-"+id, "Waiting for you")
	testutil.EventuallyWithin(t, waitTime, "the Chat notice naming Ben", func() (bool, string) {
		texts := srv.chatTexts()
		for _, s := range texts {
			if strings.Contains(s, "@ana asked @ben about “How should onboarding work?”") {
				return true, ""
			}
		}
		return false, strings.Join(texts, " | ")
	})
	// The page shows the names the cards use, not the handles.
	ana.waitFor("the notice with names in the page's Chat", `[...document.querySelectorAll('[data-testid^="chat-notice-"]')].some((e) => e.textContent.includes("Ana asked Ben about “How should onboarding work?”"))`)
	fs := ana.findings(id)
	if len(fs) != 1 || fs[0].Kind != "ask" || fs[0].Status != "running" || fs[0].Ref != "ben" {
		t.Fatalf("findings after the ask: %+v", fs)
	}
	ask := fs[0]

	// Ana's page waits for Ben; only Ben has the take form.
	ana.click("expand-" + id)
	ana.waitFor("Ana's page", `$("decision-page")`)
	ana.waitText("page-status", "Waiting for")
	ana.waitText("page-status", "Ben")
	ana.waitText("take-"+ask.ID, "Waiting for a reply")
	if ana.exists("take-form-" + ask.ID) {
		t.Fatal("Ana, who asked, has the take form")
	}
	ben.click("waiting-" + id)
	ben.waitFor("Ben's page", `$("decision-page")`)
	ben.typeInto("take-reply-"+ask.ID, "Skip the name screen: the invitation already has the name.")
	ben.click("take-stance-" + ask.ID + "-objects")
	ben.click("take-send-" + ask.ID)
	ana.waitText("stance-"+ask.ID, "Objects")
	ana.waitText("take-"+ask.ID, "Skip the name screen: the invitation already has the name.")
	ana.waitText("page-status-pill", "Open")
	fs = ana.findings(id)
	if fs[0].Status != "ready" || fs[0].Stance != "objects" || fs[0].Summary != "Skip the name screen: the invitation already has the name." {
		t.Fatalf("the take: %+v", fs[0])
	}
	ben.waitFor("the take form gone", fmt.Sprintf(`!$("take-form-%s")`, ask.ID))

	// Demo personas answer as themselves (R9), through the same take.
	ana.openMenu("page-research")
	ana.click("page-research-ask")
	ana.click("page-ask-demo:lily")
	ana.waitText("page-status", "Lily")
	ana.waitFor("Lily's take", `[...document.querySelectorAll('[data-testid^="stance-"]')].some((e) => e.textContent === "Supports")`)
	fs = ana.findings(id)
	var lily *pageFinding
	for i := range fs {
		if fs[i].Ref == "demo:lily" {
			lily = &fs[i]
		}
	}
	if lily == nil || lily.Status != "ready" || lily.Stance != "supports" || lily.Summary != fmt.Sprintf(demoRoster[0].Reply, "How should onboarding work?") {
		t.Fatalf("Lily's take: %+v", fs)
	}
	ana.waitText("take-"+lily.ID, "Lily")
	ana.waitText("page-status-pill", "Open")
}

// R5, R2 (paired machine), E3: Ben cannot investigate (no paired machine
// online: his menu does not offer it); Ana starts an investigation, Ben's Stop is
// refused with the server's reason, Ana's own Stop on the page (which
// says Exploring) stops it. Research whose focus asks to fail settles
// failed with a quiet notice: the card says "research failed" without
// counting it as a finding, and the page gives the reason.
func TestBrowserStopAndInvestigate(t *testing.T) {
	srv, ids, ana, ben := researchWriters(t, demoOptions{ResearchDelay: 700 * time.Millisecond, InvestigationDelay: 20 * time.Second, Personas: true})
	id := ids["rollout"]

	ben.openMenu("research-" + id)
	ben.waitFor("Ben's menu without an investigation, which he has no machine for", fmt.Sprintf(`!!$("research-web-%s") && !$("research-spike-%s") && !$("research-menu-%s").textContent.includes("paired machine")`, id, id, id))
	ben.closeMenu("research-" + id)

	ana.openMenu("research-" + id)
	ana.click("research-spike-" + id)
	ana.typeInto("details-spike-"+id, "email templates")
	ana.click("start-spike-" + id)
	ana.waitFor("the Investigating capsule", fmt.Sprintf(`$("research-%s")?.dataset.state === "running" && $("research-%s").textContent.includes("Investigating")`, id, id))
	ben.waitFor("the capsule on Ben's card", fmt.Sprintf(`$("research-%s")?.dataset.state === "running"`, id))

	ben.openMenu("research-" + id)
	ben.click("research-stop-" + id)
	ben.waitText("message-"+id, "who started this investigation, can stop it")
	fs := ana.findings(id)
	if len(fs) != 1 || fs[0].Status != "running" {
		t.Fatalf("findings after Ben's refused stop: %+v", fs)
	}

	// Ana stops it from the page, which says Exploring meanwhile.
	ana.click("expand-" + id)
	ana.waitText("page-status-pill", "Exploring")
	ana.waitText("finding-"+fs[0].ID, "Investigating…")
	ana.waitFor("the page's capsule", `$("page-research")?.dataset.state === "running"`)
	ana.openMenu("page-research")
	ana.waitText("page-research-focus", "email templates")
	ana.click("page-research-stop")
	ana.waitFor("the stopped finding", fmt.Sprintf(`(D(%q).record.findings || [])[0]?.status === "stopped"`, id))
	ana.waitText("page-status-pill", "Open")
	ana.waitFor("the page's idle button", `$("page-research")?.dataset.state === "idle"`)
	ana.click("page-back")
	ana.waitFor("the idle button", fmt.Sprintf(`$("research-%s")?.dataset.state === "idle"`, id))
	ana.waitText("findings-"+id, "1 finding")

	// Research that fails: settled failed, a quiet notice.
	ana.openMenu("research-" + id)
	ana.click("research-web-" + id)
	ana.typeInto("details-research-"+id, "please fail")
	ana.click("start-research-" + id)
	// The card says it failed and does not count it as a finding.
	ana.waitFor("the card's findings button saying the research failed", fmt.Sprintf(`$("findings-%s")?.dataset.failed === "1"`, id))
	if got := ana.text("findings-" + id); got != "1 finding, research failed" {
		t.Errorf("the card's findings button after a failed request says %q, want %q", got, "1 finding, research failed")
	}
	fs = ana.findings(id)
	if fs[1].Status != "failed" {
		t.Fatalf("the failing research: %+v", fs[1])
	}
	ana.waitFor("the failure's quiet notice in Chat", `[...document.querySelectorAll('[data-testid^="chat-notice-"].quiet')].some((e) => e.textContent.includes("Research for “What should we tell existing users?” failed"))`)
	testutil.EventuallyWithin(t, waitTime, "the failure's notice", func() (bool, string) {
		texts := srv.chatTexts()
		for _, s := range texts {
			if strings.HasPrefix(s, "Research for “What should we tell existing users?” failed: The demo's research service turned this request down") {
				return true, ""
			}
		}
		return false, strings.Join(texts, " | ")
	})
	ana.click("findings-" + id)
	ana.waitFor("the page", `$("decision-page")`)
	ana.waitText("finding-"+fs[0].ID, "Stopped")
	ana.waitText("finding-"+fs[1].ID, "Research failed")
	// The page gives the reason.
	ana.waitText("finding-reason-"+fs[1].ID, "Research failed: The demo's research service turned this request down: it fails every request whose details mention “fail”.")
}

// An investigation that finishes shows its branch on the page.
func TestBrowserInvestigationBranch(t *testing.T) {
	_, ids, ana, _ := researchWriters(t, fastDemo(time.Second))
	id := ids["onboarding"]
	ana.openMenu("research-" + id)
	ana.click("research-spike-" + id)
	ana.typeInto("details-spike-"+id, "Invite flow")
	ana.click("start-spike-" + id)
	ana.waitText("findings-"+id, "1 finding")
	fs := ana.findings(id)
	if len(fs) != 1 || fs[0].Kind != "spike" || fs[0].Status != "ready" || fs[0].Branch != "spike/invite-flow" {
		t.Fatalf("the investigation: %+v", fs)
	}
	ana.click("findings-" + id)
	ana.waitText("finding-branch-"+fs[0].ID, "spike/invite-flow")
}

// R7: at 20 findings the oldest settled research makes room for the 21st;
// the card and the page show 20.
func TestBrowserFindingsEviction(t *testing.T) {
	_, ids, ana, _ := researchWriters(t, fastDemo(150*time.Millisecond))
	id := ids["recovery"]
	start := func(focus string) {
		var errText string
		ana.eval(fmt.Sprintf(`window.accordStartWork(%q, "research", %q)`, id, focus), &errText)
		if errText != "" {
			t.Fatalf("research %q: %s", focus, errText)
		}
	}
	for i := 1; i <= 20; i++ {
		start(fmt.Sprintf("topic %d", i))
	}
	ana.waitText("findings-"+id, "20 findings")
	first := ana.findings(id)[0]
	if first.Focus != "topic 1" {
		t.Fatalf("the oldest finding: %+v", first)
	}
	start("topic 21")
	ana.waitFor("the 21st finding settled", fmt.Sprintf(`(D(%q).record.findings || []).some((f) => f.focus === "topic 21" && f.status === "ready")`, id))
	fs := ana.findings(id)
	if len(fs) != 20 || fs[0].Focus != "topic 2" || fs[19].Focus != "topic 21" {
		t.Fatalf("after the 21st: %d findings, first %q, last %q", len(fs), fs[0].Focus, fs[len(fs)-1].Focus)
	}
	ana.waitText("findings-"+id, "20 findings")
	ana.click("findings-" + id)
	ana.waitFor("the page with 20 findings", `document.querySelectorAll('[data-testid^="finding-"][data-kind]').length === 20`)
	if ana.exists("finding-" + first.ID) {
		t.Fatal("the evicted finding still shows on the page")
	}
}

// R4: the server stops while research runs and the research ends while it
// is down, so its event is lost; after the restart the sweep settles the
// finding, once, with one Chat notice.
func TestBrowserResearchSweepAfterRestart(t *testing.T) {
	demo := fastDemo(1200 * time.Millisecond)
	srv, ids, ana, _ := researchWriters(t, demo)
	id := ids["recovery"]
	ana.openMenu("research-" + id)
	ana.click("research-web-" + id)
	ana.click("start-research-" + id)
	ana.waitFor("the running finding", fmt.Sprintf(`(D(%q).record.findings || [])[0]?.status === "running"`, id))
	started := time.Now()
	dir, addr := srv.dir, srv.addr
	srv.stop()
	ana.waitFor("the page to notice", `$("connection-status")?.dataset.state !== "open"`)
	time.Sleep(time.Until(started.Add(demo.ResearchDelay + 300*time.Millisecond))) // the work ends while the server is down
	srv2 := startDemoServer(t, dir, addr, demo)
	ana.waitConnected()
	ana.waitText("findings-"+id, "1 finding")
	fs := ana.findings(id)
	if len(fs) != 1 || fs[0].Status != "ready" || fs[0].Title == "" {
		t.Fatalf("after the restart: %+v", fs)
	}
	testutil.EventuallyWithin(t, waitTime, "one notice of the ready research", func() (bool, string) {
		n := 0
		texts := srv2.chatTexts()
		for _, s := range texts {
			if strings.HasPrefix(s, "Research for “Which recovery channel should we build first?” is ready") {
				n++
			}
		}
		return n == 1, strings.Join(texts, " | ")
	})
}

// E3 on a phone: the ⋯ menu in the top bar, Research and Save above the
// status pill; once settled the control stays read-only with Reopen, and
// Discard asks for confirmation. A compact layout puts ⋯ first among the
// actions above the pill.
func TestBrowserPagePhone(t *testing.T) {
	srv, ids, ana, _ := researchWriters(t, fastDemo(500*time.Millisecond))
	id := ids["recovery"]
	q := ana.questions(id)[0]
	ana.openMenu("research-" + id)
	ana.click("research-web-" + id)
	ana.typeInto("details-research-"+id, "SMS codes")
	ana.click("start-research-" + id)
	ana.waitText("findings-"+id, "1 finding")
	ana.openMenu("research-" + id)
	ana.click("research-ask-" + id)
	ana.click("ask-" + id + "-demo:omar")
	ana.waitFor("Omar's take", fmt.Sprintf(`(D(%q).record.findings || []).some((f) => f.ref === "demo:omar" && f.status === "ready")`, id))

	// The page on a desktop: the finding and Omar's take, Notes below.
	ana.click("findings-" + id)
	ana.waitText("page-takes", "Objects")
	ana.typeInto("page-notes", "SMS costs 4 cents a reset and needs a new vendor; Omar wants security to review it first.")
	ana.waitFor("the note accepted", `(() => { const n = window.accordNotes; return n.welcomed && [...n.decisions.values()].every((d) => !n.unsent(d)) })()`)
	ana.eval(`(() => { document.activeElement?.blur(); window.scrollTo(0, 0); return true })()`, nil)
	ana.screenshot(shotDir(t), "page.png", "")

	phone := newBrowser(t, "ana-phone", 390, 844)
	phone.open(srv, "ana", "page="+id)
	phone.waitFor("the phone page", `$("decision-page")?.dataset.layout === "phone" && $("page-notes")?.dataset.state === "ready"`)
	var place struct {
		MoreInBar, ActionsAbovePill, NoCrumb bool
	}
	phone.eval(`({moreInBar: !!$("page-bar").querySelector('[data-testid="page-more"]'),
		actionsAbovePill: $("page-actions").getBoundingClientRect().bottom <= $("page-status").getBoundingClientRect().top
			&& !!$("page-actions").querySelector('[data-testid="page-research"]') && !!$("page-actions").querySelector('[data-testid="page-save"]'),
		noCrumb: !$("page-crumb")})`, &place)
	if !place.MoreInBar || !place.ActionsAbovePill || !place.NoCrumb {
		t.Fatalf("phone layout: %+v", place)
	}
	phone.click("option-" + id + "-" + q.ID + "-" + q.Options[0])
	phone.waitAccepted(id)
	phone.click("page-save")
	phone.waitText("page-status-pill", "Settled")
	phone.waitText("page-settled-by", "by Ana")
	opt := "option-" + id + "-" + q.ID + "-" + q.Options[0]
	phone.waitFor("the saved option, read-only", fmt.Sprintf(`$(%q).checked && $(%q).disabled`, opt, opt))
	phone.waitFor("Reopen instead of Save and Research", `$("page-reopen") && !$("page-save") && !$("page-research")`)
	phone.waitText("page-findings", "SMS codes")
	phone.waitText("page-takes", "Objects")
	phone.eval(`window.scrollTo(0, 0), true`, nil)
	phone.viewportShot(shotDir(t), "phone-page.png")

	// The compact layout: ⋯ first among the actions above the pill.
	compact := newBrowser(t, "ana-compact", 700, 900)
	compact.open(srv, "ana", "page="+id)
	compact.waitFor("the compact page", `$("decision-page")?.dataset.layout === "compact" && $("page-actions")`)
	var first string
	compact.eval(`$("page-actions").firstElementChild.querySelector("[data-testid]")?.dataset.testid`, &first)
	if first != "page-more" {
		t.Fatalf("the compact page's first action is %q", first)
	}

	// Reopen, then Discard decision… asks first.
	phone.click("page-reopen")
	phone.waitText("page-status-pill", "Open")
	phone.click("page-more")
	phone.click("page-discard")
	phone.waitText("page-more-menu", "Discard this decision?")
	phone.click("page-discard-confirm")
	phone.waitText("page-status-pill", "Discarded")
}

// shotDir is where the page's screenshots go: -screenshots, or a
// temporary folder.
func shotDir(t *testing.T) string {
	if *screenshotDir != "" {
		return *screenshotDir
	}
	return t.TempDir()
}
