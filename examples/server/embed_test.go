package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWebHandlerServesTheBundle(t *testing.T) {
	h := webHandler()
	for _, c := range []struct {
		path, method string
		code         int
		ctype, body  string
	}{
		{"/", "GET", 200, "text/html", `<script type="module" src="app.js">`},
		{"/", "GET", 200, "text/html", `<link rel="icon" href="favicon.ico"`},
		{"/app.js", "GET", 200, "text/javascript", ""},
		{"/app.css", "GET", 200, "text/css", ""},
		{"/automerge.wasm", "GET", 200, "application/wasm", "\x00asm"},
		// Browsers ask for /favicon.ico on every load: an icon, not a 404.
		{"/favicon.ico", "GET", 200, "image/", "\x00\x00\x01\x00"},
		{"/", "HEAD", 200, "text/html", ""},
		{"/index.html", "GET", http.StatusMovedPermanently, "", ""},
		{"/nope.js", "GET", 404, "", ""},
		{"/", "POST", 405, "", ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		res := rec.Result()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != c.code {
			t.Errorf("%s %s: status %d, want %d", c.method, c.path, res.StatusCode, c.code)
			continue
		}
		if c.ctype != "" && !strings.HasPrefix(res.Header.Get("Content-Type"), c.ctype) {
			t.Errorf("%s %s: Content-Type %q, want %s", c.method, c.path, res.Header.Get("Content-Type"), c.ctype)
		}
		if c.body != "" && !strings.Contains(string(body), c.body) {
			t.Errorf("%s %s: body lacks %q", c.method, c.path, c.body)
		}
		if c.code == 200 && res.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("%s %s: Cache-Control %q", c.method, c.path, res.Header.Get("Cache-Control"))
		}
	}
}
