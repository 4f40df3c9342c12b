package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/accord-crdt/accord/examples/internal/signintest"
	"github.com/accord-crdt/accord/internal/testutil"
)

// printed is what a server printed at start, safe to read while it runs.
type printed struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (p *printed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.Write(b)
}

func (p *printed) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// startListening starts the server as main does, listening on listen
// (which may be an unspecified address such as 0.0.0.0:0, reached here
// through 127.0.0.1), and returns it with what it prints, once it has
// printed every demo member's sign-in link.
func startListening(t *testing.T, listen string) (*testServer, *printed) {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatalf("listen on %s: %v", listen, err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	s := &testServer{t: t, dir: dir, addr: addr, cancel: cancel, done: make(chan error, 1)}
	prepareSessions(t, dir, "", s.addr)
	log := slog.New(slog.NewTextHandler(&testLogWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	out := &printed{}
	go func() { s.done <- serve(ctx, ln, dir, log, out) }()
	t.Cleanup(s.stop)
	testutil.EventuallyWithin(t, waitTime, "the sign-in links printed at start", func() (bool, string) {
		return strings.Contains(out.String(), "Rita (reads only): http://"), out.String()
	})
	return s, out
}

// sessionLinks returns the sign-in links GET /api/session lists, by
// member, to a visitor with the given Authorization header ("" for one
// not signed in).
func sessionLinks(t *testing.T, s *testServer, authorization string) map[string]string {
	t.Helper()
	req := mustRequest(t, http.MethodGet, s.url("/api/session"))
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	res, err := plainTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Members []struct {
			Login  string `json:"login"`
			SignIn string `json:"signIn"`
		} `json:"members"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/session: %d %v", res.StatusCode, err)
	}
	if len(body.Members) != len(personas) {
		t.Fatalf("GET /api/session lists %d members, want %d", len(body.Members), len(personas))
	}
	links := map[string]string{}
	for _, m := range body.Members {
		if m.SignIn != "" {
			links[m.Login] = m.SignIn
		}
	}
	return links
}

// TestDemoLinksListedOnLoopback: a server on a loopback address, which
// only this machine reaches, lists every demo member's sign-in link to a
// visitor not signed in, and each link signs its member in.
func TestDemoLinksListedOnLoopback(t *testing.T) {
	t.Setenv("ACCORD_DEMO_LINKS", "")
	s, out := startListening(t, "127.0.0.1:0")
	links := sessionLinks(t, s, "")
	for _, p := range personas {
		link, ok := links[p.Login]
		if !ok || !strings.HasPrefix(link, "/signin?invite=") {
			t.Fatalf("%s's link is %q, want /signin?invite=…", p.Login, link)
		}
		if ck := signintest.New(plainTransport).SignIn(t, s.url(link)); ck.Name != sessionCookie {
			t.Errorf("%s's listed link set the cookie %s, want the session's", p.Login, ck.Name)
		}
	}
	if strings.Contains(out.String(), "does not list") {
		t.Errorf("on loopback the server says the page hides the links:\n%s", out)
	}
}

// TestDemoLinksHiddenBeyondLoopback: a server listening where others
// reach it (here every interface) lists no sign-in link, to a visitor
// not signed in or to a signed-in reader, yet prints them at start for
// its operator; ACCORD_DEMO_LINKS=1 lists them anyway.
func TestDemoLinksHiddenBeyondLoopback(t *testing.T) {
	for _, tc := range []struct {
		env    string
		listed bool
	}{
		{"", false},
		{"0", false},
		{"1", true},
	} {
		t.Run("ACCORD_DEMO_LINKS="+tc.env, func(t *testing.T) {
			t.Setenv("ACCORD_DEMO_LINKS", tc.env)
			s, out := startListening(t, "0.0.0.0:0")
			for who, authorization := range map[string]string{
				"a visitor not signed in": "",
				"rita, who reads":         "Bearer " + sessionToken(t, s.addr, "rita"),
			} {
				links := sessionLinks(t, s, authorization)
				if tc.listed && len(links) != len(personas) {
					t.Errorf("%s gets links for %v, want every member's", who, links)
				}
				if !tc.listed && len(links) != 0 {
					t.Errorf("%s gets sign-in links %v, want none", who, links)
				}
			}
			for _, p := range personas {
				if !strings.Contains(out.String(), p.Name+" ") || !strings.Contains(out.String(), "/signin?invite=") {
					t.Fatalf("the server did not print %s's link at start:\n%s", p.Name, out)
				}
			}
			if said := strings.Contains(out.String(), "does not list"); said == tc.listed {
				t.Errorf("the start message says the page does not list the links: %v, want %v:\n%s", said, !tc.listed, out)
			}
		})
	}
}

func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8080", true},
		{"127.1.2.3:8080", true},
		{"[::1]:8080", true},
		{"0.0.0.0:8080", false},
		{"[::]:8080", false},
		{"192.168.1.20:8080", false},
		{"[2001:db8::1]:8080", false},
		{"[::ffff:127.0.0.1]:8080", true},
	} {
		addr := net.TCPAddrFromAddrPort(netip.MustParseAddrPort(tc.addr))
		if got := loopback(addr); got != tc.want {
			t.Errorf("loopback(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}

// TestBrowserSignInAsksForALink: on a server others can reach, the page
// of someone not signed in offers no member to pick and says to ask for
// a link.
func TestBrowserSignInAsksForALink(t *testing.T) {
	t.Setenv("ACCORD_DEMO_LINKS", "")
	s, _ := startListening(t, "0.0.0.0:0")
	guest := newBrowser(t, "guest", 1280, 900)
	guest.do(chromedp.Navigate(s.url("/")))
	guest.waitFor("the page asking for a link", `!!$("signin-ask") && !document.querySelector('[data-testid^="signin-"]:not([data-testid="signin-ask"])')`)
	if got := guest.text("signin-ask"); !strings.Contains(got, "Ask the person who runs this server") {
		t.Fatalf("the sign-in page says %q", got)
	}
}
