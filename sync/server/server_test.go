package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// members maps a ?member= query to who they are; "rita" only reads.
func authorize(r *http.Request, doc string) (question.Member, error) {
	m := r.URL.Query().Get("member")
	if m == "" {
		return question.Member{}, server.ErrUnauthorized
	}
	return question.Member{Login: m, Write: m != "rita"}, nil
}

type testServer struct {
	t     testing.TB
	url   string
	srv   *server.Server
	hs    *httptest.Server
	path  string
	store *boltstore.Store
}

func startServer(t *testing.T, path string) *testServer {
	t.Helper()
	return startServerWith(t, path, server.Options{Outbox: 64})
}

// startServerWith starts a server with opts on a bbolt file at path (a
// fresh one if empty); opts' Store and Authorize are filled in.
func startServerWith(t *testing.T, path string, opts server.Options) *testServer {
	t.Helper()
	if path == "" {
		path = t.TempDir() + "/accord.db"
	}
	st, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.Store, opts.Authorize = st, authorize
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	ts := &testServer{t: t, url: "ws" + strings.TrimPrefix(hs.URL, "http"), srv: srv, hs: hs, path: path, store: st}
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) stop() {
	if ts.hs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		ts.t.Errorf("shutdown: %v", err)
	}
	ts.hs.Close()
	if err := ts.store.Check(); err != nil {
		ts.t.Errorf("bbolt check: %v", err)
	}
	ts.store.Close()
	ts.hs = nil
}

// peer is a raw protocol client.
type peer struct {
	t      *testing.T
	ws     *websocket.Conn
	format wire.Format
	frames chan wire.Message
	docs   map[string]*crdt.Doc
	rid    int
	// closeCode is the close frame's code, once frames is closed (0 if
	// the connection ended without one).
	closeCode int
	// self and presence: the connection's presence id, and presence
	// entries not yet taken (presence_test.go).
	self     string
	presence []wire.Presence
}

func dial(t *testing.T, ts *testServer, member string, format wire.Format) *peer {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(ts.url+"?doc=plan-1&member="+member, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{t: t, ws: ws, format: format, frames: make(chan wire.Message, 4096), docs: map[string]*crdt.Doc{}}
	go func() {
		defer close(p.frames)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					p.closeCode = ce.Code
				}
				return
			}
			m, err := wire.DecodeServerFrame(data, format)
			if err != nil {
				t.Errorf("decode: %v", err)
				return
			}
			p.frames <- m
		}
	}()
	t.Cleanup(func() { ws.Close() })
	p.send(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version})
	p.expect(wire.KindWelcome)
	return p
}

func (p *peer) send(m wire.Message) {
	p.t.Helper()
	b, err := wire.Encode(m, p.format)
	if err != nil {
		p.t.Fatal(err)
	}
	typ := websocket.BinaryMessage
	if p.format == wire.Text {
		typ = websocket.TextMessage
	}
	if err := p.ws.WriteMessage(typ, b); err != nil {
		p.t.Fatal(err)
	}
}

// next returns the next frame, applying documents and changes to the
// peer's replicas as a client would.
func (p *peer) next() wire.Message {
	p.t.Helper()
	select {
	case m, ok := <-p.frames:
		if !ok {
			p.t.Fatal("connection closed")
		}
		switch f := m.(type) {
		case *wire.Doc:
			d, err := crdt.Load(f.Doc, nil, crdt.Options{})
			if err != nil {
				p.t.Fatal(err)
			}
			p.docs[f.ID] = d
		case *wire.Changes:
			if _, err := p.docs[f.ID].ApplyChanges(f.Changes); err != nil {
				p.t.Fatal(err)
			}
		case *wire.Presence:
			if f.You {
				p.self = f.Conn
			}
		}
		return m
	case <-time.After(5 * time.Second):
		p.t.Fatal("no frame within 5s")
	}
	return nil
}

func (p *peer) expect(kind wire.Kind) wire.Message {
	p.t.Helper()
	for {
		m := p.next()
		if m.FrameKind() == kind {
			return m
		}
	}
}

func (p *peer) request(m wire.Message, h *wire.Header) *wire.Reply {
	p.t.Helper()
	p.rid++
	h.RID = string(rune('a'+p.rid%26)) + strings.Repeat("x", p.rid/26)
	p.send(m)
	return p.reply(h.RID)
}

// reply reads p's frames until the reply to rid.
func (p *peer) reply(rid string) *wire.Reply {
	p.t.Helper()
	for {
		if r, ok := p.next().(*wire.Reply); ok && r.RID == rid {
			return r
		}
	}
}

func (p *peer) create(key string) question.Record {
	p.t.Helper()
	m := &wire.Create{Header: wire.Header{Kind: wire.KindCreate}, Cards: []wire.Card{{Key: key, Definition: question.Definition{
		Questions: []question.Question{{Text: "Which reset flow?",
			Options:  []question.Option{{ID: "email", Label: "Email"}, {ID: "sms", Label: "SMS"}},
			Criteria: []question.Criterion{{ID: "cheap", Label: "Cheap"}}}}}}}}
	r := p.request(m, &m.Header)
	if !r.OK {
		p.t.Fatalf("create: %s %s", r.Reason, r.Message)
	}
	p.expect(wire.KindDoc)
	return r.Records[0]
}

func (p *peer) edit(id string, change func(d *crdt.Doc) error) *wire.Reply {
	p.t.Helper()
	d := p.docs[id]
	h := d.Heads()
	if err := change(d); err != nil {
		p.t.Fatal(err)
	}
	ch, err := d.ChangesSince(h)
	if err != nil {
		p.t.Fatal(err)
	}
	m := &wire.Edit{Header: wire.Header{Kind: wire.KindEdit}, ID: id, Changes: ch}
	return p.request(m, &m.Header)
}

func (p *peer) submit(id string) *wire.Reply {
	p.t.Helper()
	m := &wire.Submit{Header: wire.Header{Kind: wire.KindSubmit}, Items: []wire.SubmitItem{{ID: id, Heads: hexHeads(p.docs[id].Heads())}}}
	return p.request(m, &m.Header)
}

func hexHeads(h crdt.Heads) []string {
	out := make([]string, len(h))
	for i := range h {
		out[i] = h[i].String()
	}
	return out
}

func TestEditSubmitAndBroadcastOverRealSockets(t *testing.T) {
	ts := startServer(t, "")
	ana := dial(t, ts, "ana", wire.Binary)
	ben := dial(t, ts, "ben", wire.Text)
	rec := ana.create("k1")
	if ev := ben.expect(wire.KindCreated).(*wire.Event); ev.ID != rec.ID {
		t.Fatalf("created event for %s", ev.ID)
	}
	ben.expect(wire.KindDoc)
	r := ana.edit(rec.ID, func(d *crdt.Doc) error {
		if err := d.Choose("q1", "sms", true); err != nil {
			return err
		}
		return d.SetMark("q1", "sms", "cheap", marks.Yes)
	})
	if !r.OK {
		t.Fatalf("edit refused: %s %s", r.Reason, r.Message)
	}
	ch := ben.expect(wire.KindChanges).(*wire.Changes)
	if ch.By != "ana" {
		t.Fatalf("changes by %q", ch.By)
	}
	dr, _ := ben.docs[rec.ID].Draft()
	if dr.Questions["q1"].Marks["sms/cheap"] != marks.Yes {
		t.Fatalf("ben's replica: %+v", dr)
	}
	// Both save the same draft: exactly one settles.
	r1 := ben.submit(rec.ID)
	r2 := ana.submit(rec.ID)
	oks := 0
	for _, r := range []*wire.Reply{r1, r2} {
		if r.Results[0].OK {
			oks++
		} else if r.Results[0].Reason != question.Stale {
			t.Fatalf("second save refused as %q", r.Results[0].Reason)
		}
	}
	if oks != 1 {
		t.Fatalf("%d saves settled", oks)
	}
	res := ben.expect(wire.KindResolved).(*wire.Event) // ben saved first: its reply, then the broadcast
	if res.Answer == nil || !res.Answer.Answers[0].Marks.Equal(marks.Snapshot{"sms/cheap": marks.Yes}) {
		t.Fatalf("resolved: %+v", res.Answer)
	}
}

func TestStaleSaveAndRogueClient(t *testing.T) {
	ts := startServer(t, "")
	ana := dial(t, ts, "ana", wire.Binary)
	ben := dial(t, ts, "ben", wire.Binary)
	rec := ana.create("k1")
	ben.expect(wire.KindDoc)
	stale := ben.docs[rec.ID].Heads()
	ana.edit(rec.ID, func(d *crdt.Doc) error { return d.Choose("q1", "email", true) })
	m := &wire.Submit{Header: wire.Header{Kind: wire.KindSubmit}, Items: []wire.SubmitItem{{ID: rec.ID, Heads: hexHeads(stale)}}}
	r := ben.request(m, &m.Header)
	if r.Results[0].OK || r.Results[0].Reason != question.Stale {
		t.Fatalf("stale save: %+v", r.Results[0])
	}
	// A rogue edit: garbage bytes, then a crafted sync message: refused
	// with reset; the server carries on for everyone.
	e := &wire.Edit{Header: wire.Header{Kind: wire.KindEdit}, ID: rec.ID, Changes: []byte{0x85, 0x6f, 0x4a, 0x83, 0, 0, 0, 0, 1, 200}}
	r = ben.request(e, &e.Header)
	if r.OK || r.Reason != question.Invalid || !r.Reset || len(r.Doc) == 0 {
		t.Fatalf("rogue edit: %+v", r)
	}
	// An oversized frame closes only that connection.
	rogue := dial(t, ts, "mallory", wire.Binary)
	big := make([]byte, wire.MaxFrameBytes+10)
	rogue.ws.WriteMessage(websocket.BinaryMessage, big)
	ok := ana.edit(rec.ID, func(d *crdt.Doc) error { return d.SetMark("q1", "email", "cheap", marks.Partly) })
	if !ok.OK {
		t.Fatalf("after the rogue client: %s", ok.Message)
	}
	// A reader receives drafts but cannot write.
	rita := dial(t, ts, "rita", wire.Binary)
	if _, has := rita.docs[rec.ID]; !has {
		rita.expect(wire.KindDoc)
	}
	r = rita.edit(rec.ID, func(d *crdt.Doc) error { return d.SetMark("q1", "sms", "cheap", marks.No) })
	if r.OK || r.Reason != question.Forbidden {
		t.Fatalf("reader edit: %+v", r)
	}
}

func TestRestartKeepsAcknowledgedWork(t *testing.T) {
	path := t.TempDir() + "/accord.db"
	ts := startServer(t, path)
	ana := dial(t, ts, "ana", wire.Binary)
	rec := ana.create("k1")
	var acked []string
	cells := []string{"email", "sms"}
	for i := range 20 {
		r := ana.edit(rec.ID, func(d *crdt.Doc) error {
			return d.SetMark("q1", cells[i%2], "cheap", marks.All[i%3])
		})
		if r.OK {
			acked = append(acked, strings.Join(r.Heads, ","))
		}
	}
	want, _ := ana.docs[rec.ID].Draft()
	ts.stop()
	ts2 := startServer(t, path)
	ben := dial(t, ts2, "ben", wire.Binary)
	ben.expect(wire.KindDoc)
	got, _ := ben.docs[rec.ID].Draft()
	if !got.Equal(want) {
		t.Fatalf("after restart %+v, want %+v", got, want)
	}
	if len(acked) != 20 {
		t.Fatalf("%d edits acknowledged", len(acked))
	}
}

func TestUnauthorizedAndBadOrigin(t *testing.T) {
	ts := startServer(t, "")
	_, resp, err := websocket.DefaultDialer.Dial(ts.url+"?doc=plan-1", nil)
	if err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no member: %v", err)
	}
	h := http.Header{"Origin": {"http://evil.example"}}
	_, resp, err = websocket.DefaultDialer.Dial(ts.url+"?doc=plan-1&member=ana", h)
	if err == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign origin: %v", err)
	}
	if !errors.Is(server.ErrUnauthorized, server.ErrUnauthorized) {
		t.Fatal()
	}
}

func TestSyncProtocolCatchUpAndCraftedMessages(t *testing.T) {
	ts := startServer(t, "")
	ana := dial(t, ts, "ana", wire.Binary)
	rec := ana.create("k1")
	ana.edit(rec.ID, func(d *crdt.Doc) error { return d.SetMark("q1", "sms", "cheap", marks.No) })
	ben := dial(t, ts, "ben", wire.Binary)
	// ben catches up from nothing over the automerge sync protocol.
	empty, err := crdt.Load(nil, nil, crdt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sess := empty.NewSession()
	for round := 0; round < 20; round++ {
		if msg, ok := sess.Generate(); ok {
			ben.send(&wire.Sync{Header: wire.Header{Kind: wire.KindSync}, ID: rec.ID, Msg: msg})
		}
		want, _ := ana.docs[rec.ID].Draft()
		if got, err := empty.Draft(); err == nil && got.Equal(want) {
			break
		}
		m := ben.expect(wire.KindSync).(*wire.Sync)
		if err := sess.Receive(m.Msg); err != nil {
			t.Fatal(err)
		}
	}
	got, err := empty.Draft()
	want, _ := ana.docs[rec.ID].Draft()
	if err != nil || !got.Equal(want) {
		t.Fatalf("synced draft %+v, want %+v (%v)", got, want, err)
	}
	// A have whose Bloom filter declares entries with zero bits each would
	// abort automerge; it is refused and the server carries on.
	crafted := []byte{0x42, 0, 0, 1, 0, 3, 1, 0, 7, 0}
	ben.send(&wire.Sync{Header: wire.Header{Kind: wire.KindSync, RID: "s1"}, ID: rec.ID, Msg: crafted})
	if e := ben.expect(wire.KindError).(*wire.Error); e.Reason != "invalid" || e.RID != "s1" {
		t.Fatalf("crafted sync: %+v", e)
	}
	if r := ana.edit(rec.ID, func(d *crdt.Doc) error { return d.SetMark("q1", "email", "cheap", marks.Yes) }); !r.OK {
		t.Fatalf("server did not carry on: %s", r.Message)
	}
}
