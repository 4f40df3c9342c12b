package main

import (
	"embed"
	"io/fs"
	"net/http"
)

// webDist is the web page's built bundle (index.html, app.js, app.css,
// favicon.ico and automerge.wasm). It is committed, so the server builds
// without Node; `make web` rebuilds it from web/src and `make web-check`
// proves the committed copy matches its sources.
//
//go:embed web/dist
var webDist embed.FS

// webHandler serves the bundle: index.html at /, the assets beside it, 404
// for anything else. Only GET and HEAD are allowed.
func webHandler() http.Handler {
	dist, err := fs.Sub(webDist, "web/dist")
	if err != nil {
		panic(err) // the embed pattern above guarantees the folder
	}
	files := http.FileServerFS(dist)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		// The embedded files carry no modification time; revalidating on
		// every load keeps a rebuilt server from serving a stale page.
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; "+
			"style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'")
		files.ServeHTTP(w, r)
	})
}
