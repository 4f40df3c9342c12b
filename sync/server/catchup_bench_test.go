package server_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// missedWrites builds the peers' W3 workload in doc: a 10×5 matrix with a
// written "meta" question; a replica's heads are taken, then n writes
// follow, each a mark and a rewrite of one "seq:<n>" line, accepted by
// the authority one by one. It returns the decision and the heads the
// replica holds.
func missedWrites(tb testing.TB, ts *testServer, doc string, n int) (string, []string) {
	tb.Helper()
	card := matrixCard("w3", 10, 5, false, false)
	card.Definition.Questions = append(card.Definition.Questions, question.Question{ID: "meta", Text: "Sequence", Response: question.Text, Options: []question.Option{}})
	ana := question.Member{Login: "ana", Write: true}
	var id string
	var have []string
	vals := []marks.Mark{marks.Yes, marks.Partly, marks.No}
	err := ts.srv.Do(context.Background(), doc, func(a *question.Authority) error {
		out, err := a.Create(context.Background(), ana, []question.CreateRequest{{Key: card.Key, Origin: question.FromPerson, Definition: card.Definition}})
		if err != nil {
			return err
		}
		id = out[0].Record.ID
		saved, err := a.Save(id)
		if err != nil {
			return err
		}
		local, err := crdt.Load(saved, nil, crdt.Options{})
		if err != nil {
			return err
		}
		have = hexHeads(local.Heads())
		line := ""
		for i := range n {
			before := local.Heads()
			if err := local.SetMark("q1", "o"+strconv.Itoa(i%10), "c"+strconv.Itoa(i/10%5), vals[i%3]); err != nil {
				return err
			}
			next := "seq:" + strconv.Itoa(i+1) + "\n"
			if err := local.SpliceText("meta", 0, len([]rune(line)), next); err != nil {
				return err
			}
			line = next
			ch, err := local.ChangesSince(before)
			if err != nil {
				return err
			}
			ed, err := a.Edit(context.Background(), ana, id, ch)
			if err != nil {
				return err
			}
			if ed.Rebased {
				// The history was compacted: the writer carries on with
				// the server's document, as a replica does.
				if saved, err = a.Save(id); err != nil {
					return err
				}
				if local, err = crdt.Load(saved, nil, crdt.Options{}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return id, have
}

// BenchmarkCatchUpAfter1000Writes: a member who missed 1,000 writes of
// one decision reconnects with the heads it holds; each iteration is one
// reconnect, from dial to the decision's catch-up frame. It reports the
// bytes received (welcome and catch-up frame) per reconnect, which the
// issue bounds at 7 KB, and the time, bounded at 15 ms.
//
// With deflate, the hello asks for compressed documents.
func BenchmarkCatchUpAfter1000Writes(b *testing.B) {
	ts := startWith(b, setup{})
	id, have := missedWrites(b, ts, "w3", 1000)
	b.Run("plain", func(b *testing.B) { benchCatchUp(b, ts, id, have, false) })
	b.Run("deflate", func(b *testing.B) { benchCatchUp(b, ts, id, have, true) })
}

func benchCatchUp(b *testing.B, ts *testServer, id string, have []string, deflate bool) {
	hello, err := wire.Encode(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version, Have: map[string][]string{id: have},
		Deflate: deflate}, wire.Binary)
	if err != nil {
		b.Fatal(err)
	}
	url := ts.url + "?doc=w3&member=ben"
	var welcome, frame int
	var kind wire.Kind
	for b.Loop() {
		ws, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := ws.WriteMessage(websocket.BinaryMessage, hello); err != nil {
			b.Fatal(err)
		}
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		welcome, frame = 0, 0
		for frame == 0 {
			_, data, err := ws.ReadMessage()
			if err != nil {
				b.Fatal(err)
			}
			h := wire.PeekHeader(data, wire.Binary)
			switch h.Kind {
			case wire.KindWelcome:
				welcome = len(data)
			case wire.KindDoc, wire.KindChanges:
				frame, kind = len(data), h.Kind
			}
		}
		ws.Close()
	}
	b.ReportMetric(float64(welcome), "welcome-B")
	b.ReportMetric(float64(frame), "catchup-B")
	b.ReportMetric(float64(welcome+frame), "B/reconnect")
	b.Logf("catch-up by %s", kind)
}

// TestCatchUpFrames: a replica that missed 1,000 writes gets the whole
// document (smaller than the changes), compressed when its hello asked,
// and it loads to the server's heads; the same reconnect again gets the
// very same frame (cached at the decision's heads); a replica one write
// behind gets that write's changes, which apply; one at the current heads
// gets an empty changes frame.
func TestCatchUpFrames(t *testing.T) {
	ts := startWith(t, setup{})
	id, have := missedWrites(t, ts, "w3", 1000)
	var cur crdt.Heads
	var saved []byte
	if err := ts.srv.Do(testCtx(t, 10*time.Second), "w3", func(a *question.Authority) (err error) {
		_, cur, _ = a.Draft(id)
		saved, err = a.Save(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	reconnect := func(have []string, deflate bool) (wire.Message, []byte) {
		t.Helper()
		ws, _, err := websocket.DefaultDialer.Dial(ts.url+"?doc=w3&member=ben", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		h := &wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version, Deflate: deflate}
		if have != nil {
			h.Have = map[string][]string{id: have}
		}
		sendFrame(t, ws, h)
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			m, err := wire.DecodeServerFrame(data, wire.Binary)
			if err != nil {
				t.Fatal(err)
			}
			if k := m.FrameKind(); k == wire.KindDoc || k == wire.KindChanges {
				return m, data
			}
		}
	}

	m, first := reconnect(have, true)
	doc, ok := m.(*wire.Doc)
	if !ok || !doc.Deflated || len(doc.Doc) >= len(saved) {
		t.Fatalf("after 1,000 writes: %s, deflated=%v, %d bytes for a %d-byte document", m.FrameKind(), ok && doc.Deflated, len(first), len(saved))
	}
	raw, err := wire.InflateDoc(doc.Doc, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := crdt.Load(raw, nil, crdt.Options{})
	if err != nil || !loaded.Heads().Equal(cur) {
		t.Fatalf("the inflated document loads at %v (%v), want %v", loaded.Heads(), err, cur)
	}
	if _, again := reconnect(have, true); string(again) != string(first) {
		t.Fatal("the same reconnect got a different frame")
	}
	if m, _ := reconnect(have, false); m.(*wire.Doc).Deflated || len(m.(*wire.Doc).Doc) != len(saved) {
		t.Fatal("a hello without deflate got a compressed document")
	}
	if m, _ := reconnect(hexHeads(cur), true); m.FrameKind() != wire.KindChanges || len(m.(*wire.Changes).Changes) != 0 {
		t.Fatalf("at the current heads: %s", m.FrameKind())
	}

	// One write behind: the changes are smaller than the document.
	behind := hexHeads(cur)
	before := loaded.Heads()
	if err := loaded.SetMark("q1", "o9", "c4", marks.No); err != nil { // it was yes
		t.Fatal(err)
	}
	ch, err := loaded.ChangesSince(before)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.srv.Do(testCtx(t, 10*time.Second), "w3", func(a *question.Authority) error {
		_, err := a.Edit(context.Background(), question.Member{Login: "ana", Write: true}, id, ch)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	m, _ = reconnect(behind, true)
	c, ok := m.(*wire.Changes)
	if !ok || len(c.Changes) == 0 || len(c.Changes) > len(saved)/4 {
		t.Fatalf("one write behind: %s of %d bytes (the document: %d)", m.FrameKind(), len(c.Changes), len(saved))
	}
	old, err := crdt.Load(raw, nil, crdt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.ApplyChanges(c.Changes); err != nil || !old.Heads().Equal(loaded.Heads()) {
		t.Fatalf("the catch-up changes: %v", err)
	}
}
