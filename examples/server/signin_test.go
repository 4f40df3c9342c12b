package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/examples/internal/signintest"
	"github.com/accord-crdt/accord/sync/replica"
)

// Tests name the member a request acts as with member= in its URL, a
// shorthand that signedTransport turns into what a real client sends: a
// session token in the Authorization header, signed with the key of the
// server at that address. The server itself never reads member= (see
// TestMemberComesFromTheSession).

// testSessions maps a test server's host:port to its sign-in keys.
var testSessions = struct {
	sync.Mutex
	byHost map[string]*sessions
}{byHost: make(map[string]*sessions)}

// useSessions records the sign-in keys of the server at host.
func useSessions(t testing.TB, host string, s *sessions) {
	testSessions.Lock()
	testSessions.byHost[host] = s
	testSessions.Unlock()
	t.Cleanup(func() {
		testSessions.Lock()
		delete(testSessions.byHost, host)
		testSessions.Unlock()
	})
}

// sessionsAt returns the sign-in keys recorded for host, or nil.
func sessionsAt(host string) *sessions {
	testSessions.Lock()
	defer testSessions.Unlock()
	return testSessions.byHost[host]
}

// prepareSessions makes the sign-in key of a server about to start on
// the data folder dir, and records it for host.
func prepareSessions(t testing.TB, dir, key, host string) *sessions {
	t.Helper()
	s, err := openSessions(dir, key, false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	useSessions(t, host, s)
	return s
}

// sessionToken returns a session token for member from the server at
// host, valid for an hour.
func sessionToken(t testing.TB, host, member string) string {
	t.Helper()
	s := sessionsAt(host)
	if s == nil {
		t.Fatalf("no sign-in keys recorded for %s", host)
	}
	return testSession(s, member)
}

// testSession mints a session of an hour for member: a writer if the
// demo says so, or if the demo does not know them.
func testSession(s *sessions, member string) string {
	p, ok := personaNamed(member)
	return s.mint(claims{Kind: "session", Member: member, Write: !ok || p.Write, Exp: time.Now().Add(time.Hour).Unix(), ID: rand.Text()})
}

// memberHeader is the handshake header of a connection to rawURL as the
// member its member= names.
func memberHeader(t testing.TB, rawURL string) http.Header {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return http.Header{"Authorization": {"Bearer " + sessionToken(t, u.Host, u.Query().Get("member"))}}
}

// dialAs opens a replica of rawURL's document as the member its member=
// names.
func dialAs(t testing.TB, ctx context.Context, rawURL string) (*replica.Client, error) {
	t.Helper()
	return replica.Dial(ctx, rawURL, replica.Options{Header: memberHeader(t, rawURL)})
}

// signedTransport moves a request's member= into a session token.
type signedTransport struct{ next http.RoundTripper }

func (st signedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	member := q.Get("member")
	if member == "" || req.Header.Get("Authorization") != "" {
		return st.next.RoundTrip(req)
	}
	s := sessionsAt(req.URL.Host)
	if s == nil {
		return st.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	q.Del("member")
	req.URL.RawQuery = q.Encode()
	req.Header.Set("Authorization", "Bearer "+testSession(s, member))
	return st.next.RoundTrip(req)
}

// plainTransport is http.DefaultTransport without the shorthand.
var plainTransport http.RoundTripper

func TestMain(m *testing.M) {
	plainTransport = http.DefaultTransport
	http.DefaultTransport = signedTransport{next: plainTransport}
	code := m.Run()
	stopChromium()
	os.Exit(code)
}

func mustRequest(t *testing.T, method, target string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// rawPost sends a POST with exactly the given headers.
func rawPost(t *testing.T, target string, header http.Header, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	res, err := plainTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// TestMemberComesFromTheSession: no route takes the member from the URL.
// A request naming ana in member= but carrying no session, or a forged,
// expired or revoked one, is refused; a session's own member is who the
// request acts as, with that member's rights.
func TestMemberComesFromTheSession(t *testing.T) {
	s := newTestServer(t)
	waitHealthy(t, s)
	keys := sessionsAt(s.addr)
	forged := &sessions{key: []byte("not the server's key, not at all"), now: time.Now, revoked: map[string]int64{}}
	exp := time.Now().Add(time.Hour).Unix()
	expired := keys.mint(claims{Kind: "session", Member: "ana", Write: true, Exp: time.Now().Add(-time.Minute).Unix(), ID: "old"})
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	bearer := func(tok string) http.Header {
		h := jsonHeader.Clone()
		h.Set("Authorization", "Bearer "+tok)
		return h
	}
	for _, tc := range []struct {
		name   string
		header http.Header
		want   int
	}{
		{"member= alone", jsonHeader, http.StatusUnauthorized},
		{"a forged session", bearer(forged.mint(claims{Kind: "session", Member: "ana", Write: true, Exp: exp, ID: "f"})), http.StatusUnauthorized},
		{"an expired session", bearer(expired), http.StatusUnauthorized},
		{"a garbled token", bearer("v1.e30.AAAA"), http.StatusUnauthorized},
		{"rita's session naming ana", bearer(keys.mint(claims{Kind: "session", Member: "rita", Exp: exp, ID: "r"})), http.StatusForbidden},
		{"ana's session with the rights of a reader", bearer(keys.mint(claims{Kind: "session", Member: "ana", Exp: exp, ID: "a"})), http.StatusForbidden},
	} {
		if got := rawPost(t, s.url("/api/demo/start?member=ana"), tc.header, ""); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	// Reading the plan, Chat and the roster needs a session too.
	for _, route := range []string{"/api/plan", "/api/chat", "/api/roster"} {
		res, err := plainTransport.RoundTrip(mustRequest(t, http.MethodGet, s.url(route+"?member=ana")))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with member= alone: %d, want 401", route, res.StatusCode)
		}
	}
	// The sync socket, likewise.
	ws := "ws://" + s.addr + "/sync?doc=" + demoDoc + "&member=ana"
	if _, res, err := websocket.DefaultDialer.Dial(ws, nil); err == nil || res == nil || res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the sync socket with member= alone: %v %v, want 401", res, err)
	}
	if got := rawPost(t, s.url("/api/demo/start"), bearer(keys.mint(claims{Kind: "session", Member: "ana", Write: true, Exp: exp, ID: "ok"})), ""); got != http.StatusOK {
		t.Errorf("ana's session: %d, want 200", got)
	}
}

// TestSignInLinks follows an invite link as a browser does: it sets an
// HttpOnly, SameSite session cookie that names the member; a forged or
// expired link is refused; signing out ends the session, across a
// restart too, and closes its live connection.
func TestSignInLinks(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "127.0.0.1:0")
	waitHealthy(t, s)
	keys := sessionsAt(s.addr)
	browser := signintest.New(plainTransport)

	invite := keys.invite("http://"+s.addr, persona{Login: "ben", Name: "Ben", Write: true})
	for name, link := range map[string]string{
		"a forged link":   strings.Replace(invite, "invite=v1.", "invite=v1.x", 1),
		"an expired link": s.url("/signin?invite=" + keys.mint(claims{Kind: "invite", Member: "ben", Write: true, Exp: time.Now().Add(-time.Second).Unix()})),
		"a session token": s.url("/signin?invite=" + sessionToken(t, s.addr, "ben")),
	} {
		if res := browser.Open(t, link); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, res.StatusCode)
		}
	}

	ck := browser.SignIn(t, invite)
	if ck.Name != sessionCookie || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode {
		t.Fatalf("the invite link set the cookie %+v, want the HttpOnly SameSite=Lax session cookie", ck)
	}
	who := func() string {
		t.Helper()
		res, err := browser.Get(s.url("/api/session"))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out struct {
			Member *persona `json:"member"`
		}
		json.NewDecoder(res.Body).Decode(&out)
		if out.Member == nil {
			return ""
		}
		return out.Member.Login
	}
	if got := who(); got != "ben" {
		t.Fatalf("signed in as %q, want ben", got)
	}

	// A live connection of the session, as the page's socket.
	header := http.Header{"Cookie": {sessionCookie + "=" + ck.Value}}
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+s.addr+"/sync?doc="+demoDoc, header)
	if err != nil {
		t.Fatalf("the session's socket: %v", err)
	}
	defer conn.Close()

	req, _ := http.NewRequest(http.MethodPost, s.url("/signout"), strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	if res, err := browser.Do(req); err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("sign out: %v %v", res, err)
	}
	if got := who(); got != "" {
		t.Fatalf("after signing out the page is still %q", got)
	}
	conn.SetReadDeadline(time.Now().Add(waitTime))
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			break // closed by the server
		}
	}

	// The revoked session stays revoked after a restart.
	s.stop()
	s = startServer(t, dir, s.addr)
	waitHealthy(t, s)
	if code := rawPost(t, s.url("/api/demo/start"), http.Header{"Content-Type": {"application/json"}, "Cookie": header["Cookie"]}, ""); code != http.StatusUnauthorized {
		t.Fatalf("the signed-out session after a restart: %d, want 401", code)
	}
}

// TestCrossSiteWritesRefused sends a signed-in member's state-changing
// requests as a page of another site would make the browser send them:
// each is refused and changes nothing.
func TestCrossSiteWritesRefused(t *testing.T) {
	s := newTestServer(t)
	waitHealthy(t, s)
	cookie := sessionCookie + "=" + sessionToken(t, s.addr, "ana")
	for _, tc := range []struct {
		name   string
		header http.Header
		want   int
	}{
		{"another origin", http.Header{"Cookie": {cookie}, "Content-Type": {"application/json"}, "Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"another port", http.Header{"Cookie": {cookie}, "Content-Type": {"application/json"}, "Origin": {"http://127.0.0.1:1"}}, http.StatusForbidden},
		{"a cross-site fetch", http.Header{"Cookie": {cookie}, "Content-Type": {"application/json"}, "Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"a same-site fetch from another origin", http.Header{"Cookie": {cookie}, "Content-Type": {"application/json"}, "Sec-Fetch-Site": {"same-site"}}, http.StatusForbidden},
		{"a form post", http.Header{"Cookie": {cookie}, "Content-Type": {"application/x-www-form-urlencoded"}}, http.StatusUnsupportedMediaType},
		{"a text/plain post", http.Header{"Cookie": {cookie}, "Content-Type": {"text/plain"}}, http.StatusUnsupportedMediaType},
	} {
		for _, route := range []string{"/api/demo/start", "/api/plan/edit", "/api/research", "/signout"} {
			if got := rawPost(t, s.url(route), tc.header, "{}"); got != tc.want {
				t.Errorf("%s to %s: %d, want %d", tc.name, route, got, tc.want)
			}
		}
	}
	// Nothing changed: the demo starts now for the first time, and the
	// session was not signed out.
	ctx, cancel := context.WithTimeout(context.Background(), waitTime)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url("/api/demo/start"), nil)
	req.Header = http.Header{"Cookie": {cookie}, "Content-Type": {"application/json"}, "Origin": {"http://" + s.addr}, "Sec-Fetch-Site": {"same-origin"}}
	res, err := plainTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Opened []struct {
			Repeated bool `json:"repeated"`
		} `json:"opened"`
	}
	json.NewDecoder(res.Body).Decode(&body)
	if res.StatusCode != http.StatusOK || len(body.Opened) == 0 || body.Opened[0].Repeated {
		t.Fatalf("the same-origin start after the refused ones: %d %+v, want the demo's first start", res.StatusCode, body)
	}
}
