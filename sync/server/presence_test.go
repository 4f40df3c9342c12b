package server_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// nextPresence returns the peer's next presence frame, skipping others.
func (p *peer) nextPresence() *wire.Presence {
	p.t.Helper()
	for {
		if m, ok := p.next().(*wire.Presence); ok {
			return m
		}
	}
}

func publish(p *peer, st wire.PresenceState, claim string) {
	p.send(&wire.Presence{Header: wire.Header{Kind: wire.KindPresence}, Member: claim, Conn: "forged", State: &st})
}

// TestPresenceOverRealSockets: a presence frame reaches the document's
// other connections (not its sender) named by the connection's member,
// whatever it claims; a reader may publish; a late joiner is sent the
// states that stand; frames faster than the rate are dropped; a
// connection that leaves, or stops publishing, is announced; and nothing
// of it reaches the store.
func TestPresenceOverRealSockets(t *testing.T) {
	path := t.TempDir() + "/accord.db"
	st, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Store: st, Authorize: authorize, PresenceRate: 5, PresenceSilence: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	ts := &testServer{t: t, url: "ws" + strings.TrimPrefix(hs.URL, "http"), srv: srv, hs: hs, path: path, store: st}
	t.Cleanup(ts.stop)

	ana := dial(t, ts, "ana", wire.Binary)
	rita := dial(t, ts, "rita", wire.Text) // reads only
	rec := ana.create("k1")
	rita.expect(wire.KindDoc)

	publish(ana, wire.PresenceState{Decision: rec.ID, Question: "q1", Field: "email/cheap"}, "mallory")
	got := rita.nextPresence()
	if got.Member != "ana" || got.Conn == "" || got.Conn == "forged" || got.State == nil || got.State.Field != "email/cheap" {
		t.Fatalf("rita heard %+v", got)
	}
	anaConn := got.Conn
	publish(rita, wire.PresenceState{Decision: rec.ID, Question: "q1", Field: "text", Selection: []int{2, 5}, Editing: true}, "")
	if got := ana.nextPresence(); got.Member != "rita" || !got.State.Editing || len(got.State.Selection) != 2 {
		t.Fatalf("ana heard %+v", got)
	}
	// Two more at once: the second comes sooner than 1/PresenceRate.
	before := srv.Stats().PresenceDropped
	time.Sleep(250 * time.Millisecond) // past ana's last frame's 1/PresenceRate
	publish(ana, wire.PresenceState{Decision: rec.ID, Field: "a"}, "")
	publish(ana, wire.PresenceState{Decision: rec.ID, Field: "b"}, "")
	if got := rita.nextPresence(); got.State == nil || got.State.Field != "a" {
		t.Fatalf("rita heard %+v", got)
	}
	waitFor(t, "the frame over the rate to be dropped", 5*time.Second, func() bool { return srv.Stats().PresenceDropped == before+1 })

	// A late joiner hears the states that stand.
	ben := dial(t, ts, "ben", wire.Binary)
	seen := map[string]string{}
	for len(seen) < 2 {
		p := ben.nextPresence()
		seen[p.Member] = p.State.Field
	}
	if seen["ana"] != "a" || seen["rita"] != "text" {
		t.Fatalf("ben joined to %v", seen)
	}
	// Rita stops publishing (ana keeps on): she goes silent.
	for range 6 {
		time.Sleep(250 * time.Millisecond)
		publish(ana, wire.PresenceState{Decision: rec.ID, Field: "a"}, "")
	}
	for {
		p := ben.nextPresence()
		if p.Member == "rita" && p.Silent {
			break
		}
		if p.Member == "ana" && p.Silent {
			t.Fatal("ana, who kept publishing, was reported silent")
		}
	}
	// Ana leaves.
	ana.ws.Close()
	for {
		p := ben.nextPresence()
		if p.Conn == anaConn && p.Left {
			break
		}
	}
	sd, err := st.LoadDocument(context.Background(), "plan-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range sd.Records {
		if strings.Contains(string(raw), "email/cheap") {
			t.Fatal("presence reached the store")
		}
	}
}
