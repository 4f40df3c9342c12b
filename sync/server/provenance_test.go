package server_test

import (
	"testing"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// TestProvenanceOverRealSockets: when Ben replaces Ana's mark, Ana's
// connection is sent the change with the cell attributed to Ben and
// naming Ana as who had set it; a member who only reads asks
// question:provenance and hears who set each value, also after a restart
// of the server on the same bbolt file.
func TestProvenanceOverRealSockets(t *testing.T) {
	ts := startServer(t, "")
	ana := dial(t, ts, "ana", wire.Binary)
	ben := dial(t, ts, "ben", wire.Text)
	rec := ana.create("k1")
	ben.expect(wire.KindDoc)
	if r := ana.edit(rec.ID, func(d *crdt.Doc) error { return d.SetMark("q1", "email", "cheap", marks.Yes) }); !r.OK {
		t.Fatalf("edit refused: %s", r.Message)
	}
	ben.expect(wire.KindChanges)
	if r := ben.edit(rec.ID, func(d *crdt.Doc) error { return d.SetMark("q1", "email", "cheap", marks.No) }); !r.OK {
		t.Fatalf("edit refused: %s", r.Message)
	}
	ch := ana.expect(wire.KindChanges).(*wire.Changes)
	if len(ch.Cells) != 1 {
		t.Fatalf("changes carry cells %+v, want one", ch.Cells)
	}
	if c := ch.Cells[0]; c.By != "ben" || c.WasBy != "ana" || c.Was != "yes" || c.Value != "no" || c.Cell != "email/cheap" {
		t.Fatalf("cell %+v, want Ben's no replacing Ana's yes", c)
	}
	ask := func(p *peer) []question.CellProvenance {
		t.Helper()
		m := &wire.Target{Header: wire.Header{Kind: wire.KindProvenance}, ID: rec.ID}
		r := p.request(m, &m.Header)
		if !r.OK {
			t.Fatalf("provenance refused: %s %s", r.Reason, r.Message)
		}
		return r.Provenance
	}
	rita := dial(t, ts, "rita", wire.Binary)
	if ps := ask(rita); len(ps) != 1 || ps[0].By != "ben" || ps[0].WasBy != "ana" {
		t.Fatalf("provenance %+v", ps)
	}
	m := &wire.Target{Header: wire.Header{Kind: wire.KindProvenance}, ID: "nope"}
	if r := rita.request(m, &m.Header); r.OK || r.Reason != question.NotFound {
		t.Fatalf("provenance of an unknown decision: %+v", r)
	}
	path := ts.path
	ts.stop()
	ts = startServer(t, path)
	if ps := ask(dial(t, ts, "rita", wire.Text)); len(ps) != 1 || ps[0].By != "ben" {
		t.Fatalf("provenance after a restart %+v", ps)
	}
}
