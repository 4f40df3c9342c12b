package signintest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// server signs in at /signin?ok=1 with a session cookie and a redirect to
// /, refuses any other sign-in, and answers /who with the session.
func server(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/signin":
			if r.URL.Query().Get("ok") != "1" {
				http.Error(w, "expired", http.StatusUnauthorized)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "ana", Path: "/", HttpOnly: true})
			http.Redirect(w, r, "/", http.StatusSeeOther)
		case "/who":
			if c, err := r.Cookie("session"); err == nil {
				fmt.Fprint(w, c.Value)
			}
		default:
			fmt.Fprint(w, "the page")
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// TestSignInKeepsTheSession: a sign-in link's 303 is seen, not followed,
// and its cookie goes with the requests that follow.
func TestSignInKeepsTheSession(t *testing.T) {
	s := server(t)
	b := New(nil)
	if ck := b.SignIn(t, s.URL+"/signin?ok=1"); ck.Name != "session" || ck.Value != "ana" || !ck.HttpOnly {
		t.Fatalf("the sign-in's cookie: %+v", ck)
	}
	res, err := b.Get(s.URL + "/who")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	who, err := io.ReadAll(res.Body)
	if err != nil || string(who) != "ana" {
		t.Fatalf("after signing in the server sees %q (%v), want ana", who, err)
	}
	if res := New(nil).Open(t, s.URL+"/signin?ok=0"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a refused link: %s, want 401", res.Status)
	}
}

// fatalRecorder is a testing.TB whose Fatal and Fatalf note the failure
// and end the goroutine, as a test's do.
type fatalRecorder struct {
	testing.TB
	failure string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatal(args ...any) {
	r.failure = fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestSignInFailsARefusedLink: a link that does not sign in fails the
// test with its answer.
func TestSignInFailsARefusedLink(t *testing.T) {
	s := server(t)
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		New(nil).SignIn(r, s.URL+"/signin?ok=0")
	}()
	<-done
	if !strings.Contains(r.failure, "401 Unauthorized") {
		t.Fatalf("a refused sign-in failed with %q, want its 401 named", r.failure)
	}
}
