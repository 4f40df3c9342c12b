package cluster

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

// Handler serves a host's other per-document endpoints (its HTTP API, an
// MCP endpoint) the way ServeHTTP serves the sync protocol: a request
// about a document this node owns (taking its lease if nobody holds it)
// goes to local; one about a document another node owns is forwarded,
// path and query unchanged, to the owner's origin (the scheme and host of
// its Options.URL), so that everything about a document, its Planner's
// work included, happens on the one node that decides for it. doc names
// the request's document; "" serves the request locally (static files,
// health checks).
func (r *Router) Handler(doc func(*http.Request) string, local http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		d := doc(req)
		if d == "" {
			local.ServeHTTP(w, req)
			return
		}
		if to := req.Header.Get(headerForwarded); to != "" {
			if to != r.o.Node || !r.Owns(d) {
				http.Error(w, "document moved; retry", http.StatusServiceUnavailable)
				return
			}
			local.ServeHTTP(w, req)
			return
		}
		node, target, err := r.Owner(req.Context(), d)
		if err != nil {
			r.log.Warn("cluster: no owner", "doc", d, "err", err)
			http.Error(w, "document unavailable; retry", http.StatusServiceUnavailable)
			return
		}
		if node == r.o.Node {
			local.ServeHTTP(w, req)
			return
		}
		u, err := url.Parse(target)
		if err != nil {
			http.Error(w, "bad owner address", http.StatusBadGateway)
			return
		}
		proxy := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.URL.Scheme, pr.Out.URL.Host = u.Scheme, u.Host
				pr.Out.Host = req.Host
				pr.Out.Header.Set(headerForwarded, node)
			},
			FlushInterval: -1, // streamed answers (MCP) pass through at once
			ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
				r.log.Warn("cluster: forward failed", "doc", d, "owner", node, "err", err)
				http.Error(w, "owner unreachable; retry", http.StatusBadGateway)
			},
		}
		proxy.ServeHTTP(w, req)
	})
}

// headerForwarded marks a request a node forwarded to the owner it found:
// the owner serves it only while it still holds the lease, and never
// forwards it again.
const headerForwarded = "Accord-Forwarded-To"

// errOwnerMoved is a forwarded connection the owner refused because the
// document is no longer its (handed off, or its lease lost).
var errOwnerMoved = errors.New("cluster: the owner no longer serves the document")

// forward proxies req to the owner node at target. It returns nil once the
// owner answered (the request is done), or why the owner could not serve
// it (unreachable, or no longer the owner) with nothing written to w, so
// that the caller may route the request again.
func (r *Router) forward(w http.ResponseWriter, req *http.Request, doc, node, target string) error {
	u, err := url.Parse(target)
	if err != nil {
		http.Error(w, "bad owner address", http.StatusBadGateway)
		return nil
	}
	r.count(func(c *routerCounts) { c.forwarded++ })
	var gone error
	tw := &touchedWriter{ResponseWriter: w}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.URL.Path = u.Path
			pr.Out.URL.RawQuery = req.URL.RawQuery
			pr.Out.Host = req.Host // the owner checks Origin against it
			pr.Out.Header.Set(headerForwarded, node)
		},
		Transport: r.transport,
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get(headerMoved) != "" {
				return errOwnerMoved
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			if !tw.touched && req.Context().Err() == nil {
				gone = err
				return
			}
			r.log.Warn("cluster: forward failed", "doc", doc, "owner", node, "err", err)
			r.count(func(c *routerCounts) { c.forwardFailed++ })
			http.Error(w, "owner unreachable; retry", http.StatusBadGateway)
		},
	}
	proxy.ServeHTTP(tw, req)
	return gone
}

// headerMoved marks a 503 that says the document is no longer served by
// the node that answered: the node that forwarded the request holds it
// and routes it again once the lease moved.
const headerMoved = "Accord-Moved"

// touchedWriter records whether anything was written to the client (or
// the connection taken over), after which a request cannot be routed
// again.
type touchedWriter struct {
	http.ResponseWriter
	touched bool
}

func (w *touchedWriter) WriteHeader(code int) { w.touched = true; w.ResponseWriter.WriteHeader(code) }
func (w *touchedWriter) Write(p []byte) (int, error) {
	w.touched = true
	return w.ResponseWriter.Write(p)
}
func (w *touchedWriter) Flush() {
	w.touched = true
	http.NewResponseController(w.ResponseWriter).Flush()
}
func (w *touchedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.touched = true
	return http.NewResponseController(w.ResponseWriter).Hijack()
}
func (w *touchedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// forwardTransport is the transport a Router forwards with: a clone of
// http.DefaultTransport's settings when it is the standard one, or the
// same defaults when the host replaced it (a test wrapping it, say).
func forwardTransport() *http.Transport {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		return t.Clone()
	}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}
