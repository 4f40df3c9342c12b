package main

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/accord-crdt/accord/examples/internal/logbuf"
	"github.com/accord-crdt/accord/examples/internal/signintest"
)

// TestRefusalsAreLoggedOnce: a refused sign-in link and a cross-site write
// each leave one line naming the member, and a sign-out one line with the
// connections it closed, not one per connection.
func TestRefusalsAreLoggedOnce(t *testing.T) {
	var logged logbuf.Buffer
	s := startServerLogging(t, t.TempDir(), "127.0.0.1:0", slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelInfo})))
	waitHealthy(t, s)
	keys := sessionsAt(s.addr)
	browser := signintest.New(plainTransport)

	browser.Open(t, s.url("/signin?invite="+keys.mint(claims{Kind: "invite", Member: "ben", Write: true, Exp: time.Now().Add(-time.Minute).Unix()})))
	if got := logged.Lines("sign-in link refused", "why=expired", "member=ben"); len(got) != 1 {
		t.Errorf("an expired link logged %q, want one line naming Ben", got)
	}

	cookie := sessionCookie + "=" + sessionToken(t, s.addr, "ana")
	if code := rawPost(t, s.url("/api/demo/start?doc="+demoDoc), http.Header{"Cookie": {cookie}, "Content-Type": {"application/json"}, "Origin": {"http://evil.example"}}, "{}"); code != http.StatusForbidden {
		t.Fatalf("a cross-origin write: %d, want 403", code)
	}
	if got := logged.Lines("cross-origin request refused", "member=ana", "doc="+demoDoc, "origin=http://evil.example"); len(got) != 1 {
		t.Errorf("a cross-origin write logged %q, want one line naming Ana and the document", got)
	}

	// Ana signs in, opens the plan's sync socket twice, and signs out.
	browser.SignIn(t, keys.invite("http://"+s.addr, persona{Login: "ana", Name: "Ana", Write: true}))
	ctx, cancel := context.WithTimeout(context.Background(), waitTime)
	defer cancel()
	for range 2 {
		c, err := dialAs(t, ctx, "ws://"+s.addr+"/sync?doc="+demoDoc+"&member=ana")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url("/signout"), strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	res, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := logged.Lines("signed out", "member=ana"); len(got) != 1 {
		t.Errorf("a sign-out logged %q, want one line", got)
	}
	if got := logged.Lines("closing a connection whose member was refused"); len(got) != 0 {
		t.Errorf("a sign-out logged a line per connection: %q", got)
	}
}
