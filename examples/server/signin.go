package main

// Signing in (README: "Signing in"): the server mints an invite link per
// demo member, an HMAC-signed token naming the member, whether they may
// write, and when it expires. Opening a link starts a session: a second
// signed token, in an HttpOnly SameSite cookie. Every route and
// WebSocket takes the member from that session (or from a token in an
// Authorization header, for programs), never from the URL; MCP has a
// bearer token of its own (mcp.go). The key lives in the data folder, so
// a restart keeps sessions; rotating it ends every session at once. The
// page lists the links only on a loopback address (demoOptions.DemoLinks).
//
// The library has no authentication of its own: a host decides who a
// connection is in server.Options.Authorize, as app.go does with
// sessions.memberOf, and ends live connections with Server.Reauthorize
// or Server.Revoke.

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

const (
	// sessionCookie holds a signed-in browser's session token.
	sessionCookie = "accord_session"
	// inviteTTL is how long a printed invite link works; sessionTTL how
	// long a session lasts once a link was opened.
	inviteTTL  = 30 * 24 * time.Hour
	sessionTTL = 7 * 24 * time.Hour
	// sweepEvery is how often live connections are checked against
	// expired and revoked sessions.
	sweepEvery = 30 * time.Second
)

// claims is what a token says.
type claims struct {
	Kind   string `json:"k"` // "invite" or "session"
	Member string `json:"m"`
	Write  bool   `json:"w"`
	Exp    int64  `json:"e"` // Unix seconds
	ID     string `json:"i"` // a session's id, which sign-out revokes
}

var errBadToken = errors.New("the sign-in token is not valid")

// sessions mints and checks tokens with the key kept in the data folder,
// and remembers revoked sessions until they expire.
type sessions struct {
	dir   string
	now   func() time.Time
	log   *slog.Logger
	trust bool // the member may come from ?member= (load tools only)
	// differs says why this node's key is not its cluster's
	// (demoOptions.Differs): sign-ins are then refused.
	differs string
	// fixedKey is set when the key comes from the environment, which
	// rotation cannot change.
	fixedKey bool

	mu      sync.Mutex
	key     []byte
	revoked map[string]int64 // session id → expiry
}

// openSessions loads the signing key under dir, creating it on first
// start, and the sessions revoked so far. A non-empty key (hex,
// ACCORD_SESSION_KEY) is used instead of the file: the nodes of a
// cluster share one, so that any of them can check a session.
func openSessions(dir, key string, trustParam bool, log *slog.Logger) (*sessions, error) {
	s := &sessions{dir: dir, now: time.Now, log: log, trust: trustParam, revoked: make(map[string]int64), fixedKey: key != ""}
	b, err := os.ReadFile(s.keyPath())
	if key != "" {
		b, err = []byte(key), nil
	}
	switch {
	case err == nil:
		if s.key, err = hex.DecodeString(strings.TrimSpace(string(b))); err != nil || len(s.key) < 32 {
			if key != "" {
				return nil, errors.New("ACCORD_SESSION_KEY must be at least 32 bytes in hex (64 characters)")
			}
			return nil, fmt.Errorf("sign-in key %s is damaged: delete it to start with a new one (every session ends)", s.keyPath())
		}
	case errors.Is(err, os.ErrNotExist):
		if err := s.rotate(); err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	if b, err := os.ReadFile(s.revokedPath()); err == nil {
		if err := json.Unmarshal(b, &s.revoked); err != nil {
			return nil, fmt.Errorf("revoked sessions %s: %w", s.revokedPath(), err)
		}
	}
	if trustParam {
		log.Warn("the member is taken from ?member= of any request: anyone can act as anyone (for load tools on a machine you control only)")
	}
	return s, nil
}

// localSessionKey is the key kept under dir, in hex, or a new one if
// there is none (not written: a cluster node offers it to the cluster,
// shareSecrets).
func localSessionKey(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "session.key"))
	switch {
	case err == nil:
		return strings.TrimSpace(string(b)), nil
	case errors.Is(err, os.ErrNotExist):
		key := make([]byte, 32)
		rand.Read(key)
		return hex.EncodeToString(key), nil
	}
	return "", err
}

func (s *sessions) keyPath() string     { return filepath.Join(s.dir, "session.key") }
func (s *sessions) revokedPath() string { return filepath.Join(s.dir, "revoked-sessions.json") }

// rotate replaces the signing key: every invite and session minted
// before stops working.
func (s *sessions) rotate() error {
	key := make([]byte, 32)
	rand.Read(key)
	if err := writeFileAtomic(s.keyPath(), []byte(hex.EncodeToString(key)+"\n")); err != nil {
		return fmt.Errorf("sign-in key: %w", err)
	}
	s.mu.Lock()
	s.key = key
	s.mu.Unlock()
	return nil
}

// mint returns a signed token holding c.
func (s *sessions) mint(c claims) string {
	payload, _ := json.Marshal(c)
	p := base64.RawURLEncoding.EncodeToString(payload)
	return "v1." + p + "." + base64.RawURLEncoding.EncodeToString(s.sign(p))
}

func (s *sessions) sign(payload string) []byte {
	s.mu.Lock()
	m := hmac.New(sha256.New, s.key)
	s.mu.Unlock()
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// verify returns what tok says if this server signed it with its current
// key, it has not expired and, for a session, it was not revoked. For an
// authentic token that expired or was revoked it returns the error with
// what the token says, so that a refusal can name the member.
func (s *sessions) verify(tok string) (claims, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0] != "v1" {
		return claims{}, errBadToken
	}
	mac, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(mac, s.sign(parts[1])) {
		return claims{}, errBadToken
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	var c claims
	if err != nil || json.Unmarshal(payload, &c) != nil || (c.Kind != "invite" && c.Kind != "session") {
		return claims{}, errBadToken
	}
	// An authentic token that expired or was signed out still says whose
	// it was, for the log; the error says it no longer counts.
	if s.now().Unix() >= c.Exp {
		return c, errors.New("the sign-in link or session has expired")
	}
	if c.Kind == "session" {
		s.mu.Lock()
		_, gone := s.revoked[c.ID]
		s.mu.Unlock()
		if gone {
			return c, errors.New("the session was signed out")
		}
	}
	return c, nil
}

// invite returns a sign-in link for p under base (http://host).
func (s *sessions) invite(base string, p persona) string {
	tok := s.mint(claims{Kind: "invite", Member: p.Login, Write: p.Write, Exp: s.now().Add(inviteTTL).Unix()})
	return base + "/signin?" + url.Values{"invite": {tok}}.Encode()
}

// memberOf returns the demo member a request acts as: the session in its
// cookie, or the invite or session token of its Authorization header.
// The rights are the smaller of the token's and the member's.
func (s *sessions) memberOf(r *http.Request) (persona, bool) {
	tok := ""
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		tok = strings.TrimPrefix(h, "Bearer ")
	} else if ck, err := r.Cookie(sessionCookie); err == nil {
		tok = ck.Value
	}
	if tok == "" {
		if s.trust {
			return personaNamed(r.URL.Query().Get("member"))
		}
		return persona{}, false
	}
	c, err := s.verify(tok)
	if err != nil {
		return persona{}, false
	}
	p, ok := personaNamed(c.Member)
	p.Write = p.Write && c.Write
	return p, ok
}

// loopback reports whether addr is a loopback address (127.0.0.0/8,
// ::1), which only this machine reaches: a server listening there may
// hand the demo's sign-in links to whoever opens the page. An unspecified
// address (0.0.0.0, ::) listens on every interface, so it is not one.
func loopback(addr net.Addr) bool {
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

func personaNamed(login string) (persona, bool) {
	login = strings.ToLower(strings.TrimSpace(login))
	for _, p := range personas {
		if p.Login == login {
			return p, true
		}
	}
	return persona{}, false
}

// revoke ends the session with id until its expiry, keeping the list in
// the data folder so that a restart does not bring it back.
func (s *sessions) revoke(id string, exp int64) error {
	s.mu.Lock()
	now := s.now().Unix()
	for k, e := range s.revoked {
		if e <= now {
			delete(s.revoked, k)
		}
	}
	s.revoked[id] = exp
	b, _ := json.Marshal(maps.Clone(s.revoked))
	s.mu.Unlock()
	return writeFileAtomic(s.revokedPath(), b)
}

// routes serves sign-in, sign-out and key rotation.
func (s *sessions) routes(mux *http.ServeMux, a *app, adminToken string) {
	mux.HandleFunc("GET /signin", func(w http.ResponseWriter, r *http.Request) {
		if why := s.differs; why != "" {
			a.log.Warn("sign-in refused: this node's session key differs from the cluster's", "why", why, "remote", r.RemoteAddr)
			http.Error(w, "This server cannot sign you in: "+why+".", http.StatusServiceUnavailable)
			return
		}
		c, err := s.verify(r.URL.Query().Get("invite"))
		if err != nil || c.Kind != "invite" {
			msg, why := "This sign-in link is not valid. Ask for a new one (the server prints the demo members' links when it starts).", "not valid"
			if err != nil && !errors.Is(err, errBadToken) {
				msg, why = "This sign-in link has expired. Ask for a new one.", "expired"
			}
			a.log.Warn("sign-in link refused", "why", why, "member", c.Member, "remote", r.RemoteAddr)
			http.Error(w, msg, http.StatusUnauthorized)
			return
		}
		sess := claims{Kind: "session", Member: c.Member, Write: c.Write, Exp: s.now().Add(sessionTTL).Unix(), ID: rand.Text()}
		http.SetCookie(w, &http.Cookie{
			Name: sessionCookie, Value: s.mint(sess), Path: "/", Expires: time.Unix(sess.Exp, 0),
			HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil,
		})
		a.log.Info("signed in", "member", c.Member)
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
	mux.HandleFunc("POST /signout", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil})
		ck, err := r.Cookie(sessionCookie)
		if err != nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		c, err := s.verify(ck.Value)
		if err != nil || c.Kind != "session" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if err := s.revoke(c.ID, c.Exp); err != nil {
			a.log.Error("sign out", "member", c.Member, "err", err)
			http.Error(w, "could not sign out", http.StatusInternalServerError)
			return
		}
		// The session's live connections end; the member's others stay.
		ended, err := a.srv.Reauthorize(r.Context(), c.Member)
		if err != nil {
			a.log.Error("sign out", "member", c.Member, "err", err)
		}
		a.log.Info("signed out", "member", c.Member, "connections_closed", ended.Closed)
		w.WriteHeader(http.StatusNoContent)
	})
	if adminToken == "" {
		return
	}
	mux.Handle("/admin/rotate-session-key", adminOnly(adminToken, "key rotations", http.MethodPost, func(w http.ResponseWriter, r *http.Request) {
		if s.fixedKey {
			http.Error(w, "the key is fixed (ACCORD_SESSION_KEY, or a cluster's shared key): change it on every node and restart them", http.StatusConflict)
			return
		}
		if err := s.rotate(); err != nil {
			a.log.Error("rotate the sign-in key", "err", err)
			http.Error(w, "could not rotate the key", http.StatusInternalServerError)
			return
		}
		s.sweep(r.Context(), a)
		a.log.Info("sign-in key rotated: every session ended")
		writeJSON(w, map[string]string{"rotated": "every invite link and session signed before now stopped working"})
	}))
}

// sweep checks every demo member's live connections against their
// sessions again: an expired, revoked or rotated-away session ends them.
func (s *sessions) sweep(ctx context.Context, a *app) {
	for _, p := range personas {
		if _, err := a.srv.Reauthorize(ctx, p.Login); err != nil && ctx.Err() == nil {
			a.log.Warn("check sessions", "member", p.Login, "err", err)
		}
	}
}

// sweepLoop runs sweep every sweepEvery until ctx ends.
func (s *sessions) sweepLoop(ctx context.Context, a *app) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sweep(ctx, a)
		}
	}
}

// sameSite refuses state-changing requests that a page of another site
// could make in a signed-in visitor's browser: those whose Sec-Fetch-Site
// or Origin names another site, and those with a content type a plain
// HTML form can send (a cross-site fetch with application/json, or with
// an Authorization header, needs a CORS preflight this server never
// grants).
//
// Each refusal is logged once, with the member whose session the request
// carried: a page of another site acting on a member's behalf is worth
// an operator's attention.
func (s *sessions) sameSite(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			next.ServeHTTP(w, r)
			return
		}
		refuse := func(msg string, code int) {
			m, _ := s.memberOf(r)
			log.Warn("request refused: "+msg, "member", m.Login, "path", r.URL.Path, "doc", r.URL.Query().Get("doc"),
				"origin", r.Header.Get("Origin"), "remote", r.RemoteAddr)
			http.Error(w, msg, code)
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
			refuse("cross-site request refused", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			if u, err := url.Parse(o); err != nil || !strings.EqualFold(u.Host, r.Host) {
				refuse("cross-origin request refused", http.StatusForbidden)
				return
			}
		}
		// Only a request carrying the visitor's cookie can ride on their
		// session; one without is judged by its own credentials.
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if mt != "application/json" && r.Header.Get("Cookie") != "" && r.Header.Get("Authorization") == "" {
			refuse("a state-changing request needs Content-Type: application/json", http.StatusUnsupportedMediaType)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// writeFileAtomic writes b to path through a temporary file, readable by
// the owner only.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
