package interop_test

// Compressed documents, Go ↔ JavaScript: the package's client asks for them
// in its hello (deflate), inflates a question:doc with deflated set before
// it loads it, and handles the frames that arrived meanwhile after it, in
// order. A frame that does not inflate closes the connection, so the
// reconnect catches up again, and changes nothing.

import (
	"testing"

	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

func (p *pageClient) receive(ms ...wire.Message) (waiting, closed bool) {
	p.t.Helper()
	out := p.js.call("receive", map[string]any{"name": p.name, "frames": p.encoded(ms)})
	return out["waiting"] == true, out["closed"] == true
}

func TestInteropClientInflatesDocuments(t *testing.T) {
	js := startJS(t)
	p := &pageClient{t: t, js: js, name: "ana"}
	js.call("client", map[string]any{"name": "ana", "member": "ana"})
	g := goSample(t)
	welcome := &wire.Welcome{Header: wire.Header{Kind: wire.KindWelcome}, V: wire.Version, Doc: "interop", Member: "ana", Write: true,
		Records: []question.Record{rebaseRecord}}
	saved := g.Save()
	z := wire.DeflateDoc(saved)
	if len(z) >= len(saved) {
		t.Fatalf("the sample does not compress (%d → %d bytes)", len(saved), len(z))
	}
	prev := g.Heads()
	must(t, g.SetMark("q-pick", "o3", "c2", marks.Partly))
	after := changesFrame(t, g, prev, nil)

	// The doc, compressed, and a changes frame right behind it.
	waiting, closed := p.receive(welcome,
		&wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: "d1", Doc: z, Heads: hexHeads(prev), Deflated: true},
		after)
	if waiting || closed {
		t.Fatalf("after the frames: waiting %v, closed %v", waiting, closed)
	}
	st, heads, accepted, _ := p.decision()
	sameHeads(t, "inflated doc then changes", g.Heads(), heads)
	sameValues(t, "inflated doc then changes", goState(t, g), st)
	sameHeads(t, "accepted", g.Heads(), accepted)

	// Bytes that are not DEFLATE: the connection closes, nothing changes.
	_, closed = p.receive(&wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: "d1", Doc: []byte{0xff, 0xfe, 0xfd, 0x00, 0x01}, Heads: hexHeads(prev), Deflated: true})
	if !closed {
		t.Fatal("a document that does not inflate left the connection open")
	}
	st, heads, _, _ = p.decision()
	sameHeads(t, "after a bad frame", g.Heads(), heads)
	sameValues(t, "after a bad frame", goState(t, g), st)
}
