// Package signintest opens the example server's sign-in links in tests as
// a browser does: the session cookie a link sets is kept for the requests
// that follow, and the test sees the link's own answer, not the page it
// redirects to.
package signintest

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"testing"
	"time"
)

// Browser is an HTTP client that keeps cookies and does not follow
// redirects.
type Browser struct{ *http.Client }

// New returns a Browser whose requests go through transport (nil for
// http.DefaultTransport).
func New(transport http.RoundTripper) *Browser {
	jar, _ := cookiejar.New(nil) // never fails without options
	return &Browser{&http.Client{
		Jar:       jar,
		Transport: transport,
		// A server that never answers fails the test instead of hanging it.
		Timeout:       time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Open requests link and returns the answer, its body read and closed.
func (b *Browser) Open(t testing.TB, link string) *http.Response {
	t.Helper()
	res, err := b.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// SignIn opens the sign-in link and fails t unless it signs in: answers
// 303 See Other and sets one cookie, the session's, which b keeps and
// SignIn returns.
func (b *Browser) SignIn(t testing.TB, link string) *http.Cookie {
	t.Helper()
	res := b.Open(t, link)
	ck := res.Cookies()
	if res.StatusCode != http.StatusSeeOther || len(ck) != 1 {
		t.Fatalf("GET %s: %s with cookies %+v, want 303 See Other setting the session cookie (signed in)", link, res.Status, ck)
	}
	return ck[0]
}
