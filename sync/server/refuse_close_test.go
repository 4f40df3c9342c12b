package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// A client that asks with refuse=close gets a refusal as a close code and
// reason right after the upgrade; one that does not gets the HTTP status.
func TestRefusalsAsCloseCodes(t *testing.T) {
	st, err := boltstore.Open(t.TempDir()+"/accord.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv, err := server.New(server.Options{Store: st, Authorize: func(r *http.Request, doc string) (question.Member, error) {
		switch r.URL.Query().Get("member") {
		case "":
			return question.Member{}, server.ErrUnauthorized
		case "mallory":
			return question.Member{}, errors.New("mallory may not open this plan")
		}
		if doc == "ghost" {
			return question.Member{}, server.ErrUnknownDocument
		}
		return question.Member{Login: r.URL.Query().Get("member"), Write: true}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Shutdown(context.Background())
	})
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	for _, c := range []struct {
		query  string
		code   int
		status int
		reason string
	}{
		{"doc=plan-1", server.CloseUnauthorized, http.StatusUnauthorized, "server: unauthorized"},
		{"doc=plan-1&member=mallory", server.CloseForbidden, http.StatusForbidden, "mallory may not open this plan"},
		{"doc=ghost&member=ana", server.CloseUnknownDocument, http.StatusNotFound, "server: unknown document"},
	} {
		ws, _, err := websocket.DefaultDialer.Dial(url+"?"+c.query+"&refuse=close", nil)
		if err != nil {
			t.Fatalf("%s with refuse=close: the upgrade failed: %v", c.query, err)
		}
		_, _, err = ws.ReadMessage()
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != c.code || ce.Text != c.reason {
			t.Fatalf("%s with refuse=close: read %v, want close %d %q", c.query, err, c.code, c.reason)
		}
		ws.Close()
		_, resp, err := websocket.DefaultDialer.Dial(url+"?"+c.query, nil)
		if err == nil || resp == nil || resp.StatusCode != c.status {
			t.Fatalf("%s without refuse=close: %v, want HTTP %d", c.query, err, c.status)
		}
	}

	// A hello of another protocol version: the error frame, then 4426.
	ws, _, err := websocket.DefaultDialer.Dial(url+"?doc=plan-1&member=ana&refuse=close", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	hello, err := wire.Encode(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version + 1}, wire.Text)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteMessage(websocket.TextMessage, hello); err != nil {
		t.Fatal(err)
	}
	if _, data, err := ws.ReadMessage(); err != nil {
		t.Fatalf("no error frame: %v", err)
	} else if m, err := wire.Decode(data, wire.Text); err != nil || m.FrameKind() != wire.KindError {
		t.Fatalf("first frame %s (%v), want an error", data, err)
	}
	_, _, err = ws.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != server.CloseVersion {
		t.Fatalf("after the version error: %v, want close %d", err, server.CloseVersion)
	}
}
