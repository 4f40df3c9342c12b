package cluster

import (
	"net/http"
	"net/http/httputil"
	"net/url"
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
