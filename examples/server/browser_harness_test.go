package main

// The harness of the browser tests (browser_test.go): the example server
// in-process on 127.0.0.1 with a temporary data folder, restartable on the
// same folder and port, and headless Chromium (Debian's `chromium`) driven
// over the DevTools protocol with chromedp: one browser process, with a
// browser context of its own (an empty profile) per member.
//
// The tests fail, never skip, when Chromium is missing: CI installs it
// (.ci/run). ACCORD_CHROMIUM names another binary.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/accord-crdt/accord/internal/testutil"
)

// waitTime bounds every wait of the browser tests. The waits poll, so a
// passing test takes as long as the page needs and no longer.
const waitTime = 20 * time.Second

// ---- the server ----

// testServer is the example server running in-process through serve, as
// main runs it.
type testServer struct {
	t      *testing.T
	dir    string
	addr   string
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// newTestServer starts a server on a fresh data folder and a free port.
func newTestServer(t *testing.T) *testServer {
	t.Helper()
	return startServer(t, t.TempDir(), "127.0.0.1:0")
}

// startServer starts a server on the data folder dir, listening on addr.
// A port that a stopped server just released is retried until it is free.
func startServer(t *testing.T, dir, addr string) *testServer {
	t.Helper()
	return startServerLogging(t, dir, addr, slog.New(slog.NewTextHandler(&testLogWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// listen listens on addr, waiting while it is in use: a test that
// restarts a server on its address waits for the old one to let go.
func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	testutil.EventuallyWithin(t, waitTime, addr+" to be free", func() (bool, string) {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil && !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatalf("listen on %s: %v", addr, err)
		}
		return err == nil, fmt.Sprint(err)
	})
	return ln
}

// startServerLogging is startServer with the server's log going to log.
func startServerLogging(t *testing.T, dir, addr string, log *slog.Logger) *testServer {
	t.Helper()
	ln := listen(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	s := &testServer{t: t, dir: dir, addr: ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	prepareSessions(t, dir, "", s.addr)
	go func() { s.done <- serve(ctx, ln, dir, log, io.Discard) }()
	t.Cleanup(s.stop)
	return s
}

// stop shuts the server down gracefully (as SIGTERM does) and waits for it.
func (s *testServer) stop() {
	s.once.Do(func() {
		s.cancel()
		select {
		case err := <-s.done:
			if err != nil {
				s.t.Errorf("server on %s stopped with: %v", s.addr, err)
			}
		case <-time.After(30 * time.Second):
			s.t.Errorf("server on %s did not stop within 30 s", s.addr)
		}
	})
}

func (s *testServer) url(path string) string { return "http://" + s.addr + path }

// startDemo asks the demo Planner to open its decisions and returns their
// ids by key (onboarding and rollout are written; recovery is a choice with
// criteria).
func (s *testServer) startDemo() map[string]string {
	s.t.Helper()
	res, err := http.Post(s.url("/api/demo/start?member=ana"), "application/json", nil)
	if err != nil {
		s.t.Fatalf("POST /api/demo/start: %v", err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	var body struct {
		Opened []struct{ Key, ID string }
	}
	if err == nil {
		err = json.Unmarshal(raw, &body)
	}
	if err != nil || res.StatusCode != 200 {
		s.t.Fatalf("POST /api/demo/start: status %d, %v: %s", res.StatusCode, err, raw)
	}
	ids := map[string]string{}
	for _, o := range body.Opened {
		ids[o.Key] = o.ID
	}
	for _, k := range []string{"onboarding", "recovery", "rollout"} {
		if ids[k] == "" {
			s.t.Fatalf("the demo opened no %q decision: %+v", k, body.Opened)
		}
	}
	return ids
}

// testLogWriter sends the server's warnings to the test log while the test
// runs.
type testLogWriter struct {
	t *testing.T
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	defer func() { _ = recover() }() // a line logged after the test ended is dropped
	w.t.Logf("server: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// ---- the browser ----

// chromiumPath finds Chromium, failing the test with what to install.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ACCORD_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("Chromium is not installed: the browser tests need it (Debian: apt-get update && apt-get install -y chromium; " +
		".ci/run does this), or set ACCORD_CHROMIUM to a Chromium or Chrome binary")
	return ""
}

// browser is a member's own browser: a browser context of its own (its
// own cookies, storage and cache, as a fresh profile has) in the Chromium
// the tests share. Its tab is ctx.
type browser struct {
	t    *testing.T
	name string
	ctx  context.Context
	srv  *testServer

	mu       sync.Mutex
	problems []string
}

// chromium is the one Chromium process the browser tests share. Starting
// one per member cost two seconds each, a minute and a half of the
// suite; a browser context isolates members as well as a profile does.
var chromium struct {
	once        sync.Once
	ctx         context.Context // its first tab, which keeps it running
	stop        func()
	startFailed error
}

// sharedChromium returns the shared Chromium's first tab, starting it on
// first use.
func sharedChromium(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	chromium.once.Do(func() {
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path),
			chromedp.Headless,
			chromedp.NoSandbox, // the tests run as root
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-extensions", true),
			chromedp.Flag("disable-default-apps", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.Flag("disable-background-timer-throttling", true),
			chromedp.Flag("disable-renderer-backgrounding", true),
			chromedp.Flag("disable-backgrounding-occluded-windows", true),
			chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
			chromedp.Flag("metrics-recording-only", true),
			chromedp.Flag("password-store", "basic"),
			chromedp.Flag("use-mock-keychain", true),
			chromedp.Flag("hide-scrollbars", true),
			chromedp.Flag("mute-audio", true),
			chromedp.Flag("force-color-profile", "srgb"),
			chromedp.Flag("lang", "en-US"),
			chromedp.WindowSize(1280, 900),
			chromedp.Env("TZ=UTC"),
		}
		actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(actx)
		chromium.ctx = ctx
		chromium.stop = func() { cancel(); acancel() }
		if err := chromedp.Do(ctx); err != nil {
			chromium.startFailed = err
		}
	})
	if chromium.startFailed != nil {
		t.Fatalf("start Chromium: %v", chromium.startFailed)
	}
	return chromium.ctx
}

// stopChromium ends the shared Chromium, if it was started.
func stopChromium() {
	if chromium.stop != nil {
		chromium.stop()
	}
}

// newBrowser opens a member's browser with a viewport of w × h CSS pixels.
func newBrowser(t *testing.T, name string, w, h int) *browser {
	t.Helper()
	ctx, cancel := chromedp.NewContext(sharedChromium(t), chromedp.WithNewBrowserContext())
	b := &browser{t: t, name: name, ctx: ctx}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(w), int64(h))); err != nil {
		cancel()
		t.Fatalf("open a browser for %s: %v", name, err)
	}
	// Uncaught exceptions and the page's own console.error calls are bugs;
	// the browser's log (a refused WebSocket while the server restarts) is
	// not.
	lctx, lcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for m, err := range chromedp.Console(lctx) {
			if err != nil {
				return
			}
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source == "") {
				b.mu.Lock()
				b.problems = append(b.problems, m.String())
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		lcancel()
		wg.Wait()
		// Cancel closes the tab and disposes of the browser context.
		cctx, ccancel := context.WithTimeout(ctx, waitTime)
		_ = chromedp.Cancel(cctx)
		ccancel()
		cancel()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, p := range b.problems {
			t.Errorf("%s's page: %s", name, p)
		}
	})
	return b
}

// open signs in as member and loads the page with extra query
// parameters, and waits until it is connected.
func (b *browser) open(srv *testServer, member, query string) {
	b.t.Helper()
	b.srv = srv
	keys := sessionsAt(srv.addr)
	p, ok := personaNamed(member)
	if !ok {
		b.t.Fatalf("no demo member %q", member)
	}
	u := srv.url("/")
	if query != "" {
		u += "?" + query
	}
	// Sign in through the member's invite link, as a person does; the
	// session cookie then carries who they are.
	b.do(chromedp.Navigate(keys.invite("http://"+srv.addr, p)), chromedp.Navigate(u))
	b.waitConnected()
}

// do runs actions in the tab, failing the test on an error.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, waitTime)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", b.name, err)
	}
}

// helpers is the prelude of every expression: $ finds an element by its
// data-testid, D a decision of the live client.
const helpers = `const $ = (id) => document.querySelector('[data-testid="' + id + '"]');
const D = (id) => window.accord && window.accord.decisions.get(id);
`

// eval evaluates a JavaScript expression (which may use $ and D) in the
// page and decodes its value into out (nil ignores it).
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	if err := b.tryEval(expr, out); err != nil {
		b.t.Fatalf("%s: evaluate %s: %v", b.name, expr, err)
	}
}

func (b *browser) tryEval(expr string, out any) error {
	ctx, cancel := context.WithTimeout(b.ctx, waitTime)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte]("(() => {\n"+helpers+"return ("+expr+");\n})()", chromedp.EvalAwaitPromise))
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// waitFor polls the expression until it is truthy. what describes it.
func (b *browser) waitFor(what, expr string) {
	b.t.Helper()
	b.wait(what, func() (bool, string) {
		var ok bool
		err := b.tryEval("!!("+expr+")", &ok)
		return err == nil && ok, fmt.Sprintf("(%s) error: %v", expr, err)
	})
}

// waitEqual polls the expression until its JSON value equals want's.
func (b *browser) waitEqual(what, expr string, want any) {
	b.t.Helper()
	wantJSON, err := json.Marshal(want)
	if err != nil {
		b.t.Fatal(err)
	}
	b.wait(what, func() (bool, string) {
		var got json.RawMessage
		err := b.tryEval(expr, &got)
		return err == nil && jsonEqual(got, wantJSON), fmt.Sprintf("\n got %s\nwant %s", got, wantJSON)
	})
}

// wait polls check until it holds, for waitTime; a failure names the page
// and ends with what the page shows (its summary, read only then).
func (b *browser) wait(what string, check func() (bool, string)) {
	b.t.Helper()
	deadline := time.Now().Add(waitTime)
	testutil.EventuallyWithin(b.t, waitTime, b.name+": "+what, func() (bool, string) {
		ok, why := check()
		if !ok && time.Now().After(deadline) {
			why += "\npage: " + b.summary()
		}
		return ok, why
	})
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// summary describes the page for a failure message: the connection and each
// card's status and message.
func (b *browser) summary() string {
	var s string
	err := b.tryEval(`JSON.stringify({
		conn: $("connection-status")?.dataset.state,
		app: $("app-message")?.textContent,
		cards: [...document.querySelectorAll('[data-testid^="card-"]')].map((c) => [c.dataset.testid, c.dataset.status,
			c.querySelector('[data-testid^="status-"]')?.textContent, c.querySelector('[data-testid^="message-"]')?.textContent]),
		href: location.href,
	})`, &s)
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return s
}

// waitConnected waits until the page is connected and caught up.
func (b *browser) waitConnected() {
	b.t.Helper()
	b.waitFor("the page to connect", `$("connection-status")?.dataset.state === "open" && window.accord?.welcomed`)
}

// waitCard waits until the card of decision id shows with its draft loaded
// and the given status.
func (b *browser) waitCard(id, status string) {
	b.t.Helper()
	b.waitFor("card "+id+" to be "+status, fmt.Sprintf(`$("card-%s")?.dataset.status === %q && D(%q)?.doc && D(%q)?.synced`, id, status, id, id))
}

// waitAccepted waits until every edit of decision id is accepted by the
// server (nothing in flight or unsent), as the "Sending…" tag shows.
func (b *browser) waitAccepted(id string) {
	b.t.Helper()
	b.waitFor("the edits of "+id+" to be accepted",
		fmt.Sprintf(`window.accord.welcomed && D(%q) && !window.accord.unsent(D(%q)) && !$("sending-%s")`, id, id, id))
}

// questions returns the question ids of decision id, in order.
func (b *browser) questions(id string) []pageQuestion {
	b.t.Helper()
	var qs []pageQuestion
	b.eval(fmt.Sprintf(`D(%q).record.definition.questions.map((q) => ({id: q.id, written: q.response === "text",
		options: (q.options || []).map((o) => o.id), criteria: (q.criteria || []).map((c) => c.id)}))`, id), &qs)
	if len(qs) == 0 {
		b.t.Fatalf("%s: decision %s has no questions", b.name, id)
	}
	return qs
}

type pageQuestion struct {
	ID       string   `json:"id"`
	Written  bool     `json:"written"`
	Options  []string `json:"options"`
	Criteria []string `json:"criteria"`
}

// click clicks the element with the data-testid, as a person does (a mouse
// click in its middle, scrolled into view).
func (b *browser) click(testid string) {
	b.t.Helper()
	// A click lands where the button was when it was looked up: wait
	// until it stays put between two looks, so a banner or a scroll that
	// moves it just then does not send the click elsewhere.
	b.waitFor(testid+" to be enabled and still", fmt.Sprintf(`(() => {
		const e = $(%q);
		if (!e || e.disabled) return false;
		const r = e.getBoundingClientRect(), at = [r.x, r.y, r.width, r.height].join();
		const seen = (window.testClickAt ||= new WeakMap()), still = seen.get(e) === at;
		seen.set(e, at);
		return still;
	})()`, testid))
	b.do(chromedp.Click(chromedp.CSS(sel(testid)), chromedp.NodeVisible))
}

// hover moves the mouse over the middle of the element with the
// data-testid, scrolled into view, as a person pointing at it does.
func (b *browser) hover(testid string) {
	b.t.Helper()
	b.waitFor(testid+" to show", fmt.Sprintf(`$(%q)`, testid))
	var at struct{ X, Y float64 }
	b.eval(fmt.Sprintf(`(() => { const e = $(%q); e.scrollIntoView({block: "center"});
		const r = e.getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + r.height / 2} })()`, testid), &at)
	b.do(chromedp.MouseEvent("mouseMoved", at.X, at.Y))
}

// typeInto focuses the field with the data-testid and types text at its end,
// key by key.
func (b *browser) typeInto(testid, text string) {
	b.t.Helper()
	b.typeAfter(testid, text, `e.setSelectionRange(e.value.length, e.value.length)`)
}

// replaceText selects everything in the field and types text over it.
func (b *browser) replaceText(testid, text string) {
	b.t.Helper()
	b.typeAfter(testid, text, `e.select()`)
}

func (b *browser) typeAfter(testid, text, selection string) {
	b.t.Helper()
	b.waitFor(testid+" to be enabled", fmt.Sprintf(`$(%q) && !$(%q).disabled`, testid, testid))
	b.eval(fmt.Sprintf(`(() => { const e = $(%q); e.focus(); %s; return true })()`, testid, selection), nil)
	b.do(chromedp.SendKeys(chromedp.CSS(sel(testid)), text, chromedp.NodeVisible))
}

// choose picks a value of the <select> with the data-testid (the change
// event a person's choice fires).
func (b *browser) choose(testid, value string) {
	b.t.Helper()
	b.waitFor(testid+" to be enabled", fmt.Sprintf(`$(%q) && !$(%q).disabled`, testid, testid))
	b.do(chromedp.SetValue(chromedp.CSS(sel(testid)), value))
}

func sel(testid string) string { return fmt.Sprintf(`[data-testid=%q]`, testid) }

// text returns the text of the element with the data-testid ("" if none).
func (b *browser) text(testid string) string {
	b.t.Helper()
	var s string
	b.eval(fmt.Sprintf(`$(%q)?.textContent ?? ""`, testid), &s)
	return s
}

// exists reports whether an element with the data-testid is on the page.
func (b *browser) exists(testid string) bool {
	b.t.Helper()
	var ok bool
	b.eval(fmt.Sprintf(`!!$(%q)`, testid), &ok)
	return ok
}

// waitText waits until the element's text contains want.
func (b *browser) waitText(testid, want string) {
	b.t.Helper()
	b.waitFor(fmt.Sprintf("%s to say %q", testid, want), fmt.Sprintf(`($(%q)?.textContent ?? "").includes(%q)`, testid, want))
}

// markID is the data-testid of a criteria matrix cell.
func markID(id, q, opt, crit string) string { return "mark-" + id + "-" + q + "-" + opt + "-" + crit }

// cells reads the criteria matrix of decision id's question q as the page
// shows it: "option/criterion" → "yes", "partly", "no" or "" (blank).
func (b *browser) cells(id string, q pageQuestion) map[string]string {
	b.t.Helper()
	var parts []string
	for _, o := range q.Options {
		for _, c := range q.Criteria {
			parts = append(parts, fmt.Sprintf(`%q: $(%q)?.value ?? "missing"`, o+"/"+c, markID(id, q.ID, o, c)))
		}
	}
	m := map[string]string{}
	b.eval("({"+strings.Join(parts, ", ")+"})", &m)
	return m
}

// screenshot writes a PNG of the element with the data-testid (or the whole
// page for "") into dir/name.
func (b *browser) screenshot(dir, name, testid string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, waitTime)
	defer cancel()
	var png []byte
	var err error
	if testid == "" {
		png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
	} else {
		png, err = chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel(testid)), chromedp.NodeVisible))
	}
	if err != nil {
		b.t.Fatalf("%s: screenshot %s: %v", b.name, name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("wrote %s", filepath.Join(dir, name))
}
