package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// nextPresence returns the peer's next presence entry from another
// connection, taking batches apart and skipping other frames and its own
// entries.
func (p *peer) nextPresence() *wire.Presence {
	p.t.Helper()
	for {
		if len(p.presence) > 0 {
			e := p.presence[0]
			p.presence = p.presence[1:]
			if e.Conn != p.self {
				return &e
			}
			continue
		}
		m, ok := p.next().(*wire.Presence)
		switch {
		case !ok:
		case m.You:
			p.self = m.Conn
		case len(m.All) > 0:
			p.presence = append(p.presence, m.All...)
		default:
			p.t.Fatalf("a presence frame that is neither a batch nor the connection's id: %+v", m)
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
	ts := startServerWith(t, "", server.Options{PresenceRate: 5, PresenceSilence: time.Second})

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
	// Six at once: past the burst, some are dropped.
	before := ts.srv.Stats().PresenceDropped
	for _, f := range []string{"u", "v", "w", "x", "y", "z"} {
		publish(ana, wire.PresenceState{Decision: rec.ID, Field: f}, "")
	}
	testutil.Eventually(t, "frames over the rate to be dropped", func() bool { return ts.srv.Stats().PresenceDropped >= before+2 })
	time.Sleep(700 * time.Millisecond) // the bucket fills again
	publish(ana, wire.PresenceState{Decision: rec.ID, Field: "a"}, "")
	for {
		got := rita.nextPresence()
		if got.Member != "ana" || got.State == nil {
			t.Fatalf("rita heard %+v", got)
		}
		if got.State.Field == "z" {
			t.Fatal("a frame over the rate was relayed")
		}
		if got.State.Field == "a" {
			break
		}
	}
	publish(rita, wire.PresenceState{Decision: rec.ID, Question: "q1", Field: "text", Selection: []int{2, 5}, Editing: true}, "")
	for {
		got := ana.nextPresence()
		if got.Member == "rita" {
			if !got.State.Editing || len(got.State.Selection) != 2 {
				t.Fatalf("ana heard %+v", got)
			}
			break
		}
	}

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
	sd, err := ts.store.LoadDocument(context.Background(), "plan-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range sd.Records {
		if strings.Contains(string(raw), "email/cheap") {
			t.Fatal("presence reached the store")
		}
	}
}
