package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserRefusesCrossSiteWrites signs Ana in, then opens a page of
// another origin in her browser that tries what a hostile page would: a
// form-like POST with her cookie, a JSON POST, a sign-out and the sync
// socket. Each is refused, and nothing changed: the demo then starts for
// the first time, and Ana is still signed in.
func TestBrowserRefusesCrossSiteWrites(t *testing.T) {
	srv := newTestServer(t)
	ana := newBrowser(t, "ana", 1280, 900)
	ana.open(srv, "ana", "")

	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>another site</title><p>hello</p>`)
	}))
	defer evil.Close()
	ana.do(chromedp.Navigate(evil.URL))

	target := "http://" + srv.addr
	var out struct {
		Simple, JSON, SignOut, Socket string
	}
	ana.eval(fmt.Sprintf(`(async () => {
  const t = %q;
  const status = (p) => p.then((r) => r.type === "opaque" ? "sent" : String(r.status), (e) => "blocked");
  const simple = await status(fetch(t + "/api/demo/start", {method: "POST", mode: "no-cors", credentials: "include",
    headers: {"Content-Type": "text/plain"}, body: "{}"}));
  const json = await status(fetch(t + "/api/demo/start", {method: "POST", credentials: "include",
    headers: {"Content-Type": "application/json"}, body: "{}"}));
  const signOut = await status(fetch(t + "/signout", {method: "POST", mode: "no-cors", credentials: "include"}));
  const socket = await new Promise((done) => {
    const ws = new WebSocket(t.replace("http", "ws") + "/sync?doc=plan-1");
    ws.onopen = () => { ws.close(); done("open"); };
    ws.onerror = () => done("refused");
  });
  return {Simple: simple, JSON: json, SignOut: signOut, Socket: socket};
})()`, target), &out)
	// A no-cors request leaves the browser (its answer is opaque to the
	// page); a JSON one needs a CORS preflight the server never grants.
	if out.JSON != "blocked" || out.Socket != "refused" {
		t.Errorf("from another origin: %+v, want the JSON POST blocked and the socket refused", out)
	}

	// Nothing changed: back on the page, Ana is still signed in and the
	// demo starts now for the first time.
	ana.do(chromedp.Navigate(srv.url("/")))
	ana.waitConnected()
	var first bool
	ana.eval(`fetch("api/demo/start", {method: "POST", headers: {"Content-Type": "application/json"}})
  .then((r) => r.json()).then((b) => Array.isArray(b.opened) && b.opened.length > 0 && !b.opened[0].repeated)`, &first)
	if !first {
		t.Fatal("the demo had already started: a cross-site request started it")
	}
}
