package interop_test

// question:changes frames carrying several changes, Go ↔ JavaScript: the
// page's protocol client applies a frame of several concatenated changes
// (a commit group's) in one call, coalesces frames that arrive together,
// and takes a frame's heads as accepted exactly when its history holds
// them, which it decides from the heads it has held instead of automerge's
// hasHeads.

import (
	"encoding/base64"
	"slices"
	"testing"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

func changesFrame(t *testing.T, d *crdt.Doc, since crdt.Heads, heads []string) *wire.Changes {
	t.Helper()
	b, err := d.ChangesSince(since)
	must(t, err)
	if heads == nil {
		heads = hexHeads(d.Heads())
	}
	return &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: "d1", Changes: b, Heads: heads}
}

func (p *pageClient) frames(ms ...wire.Message) {
	p.t.Helper()
	p.js.call("frames", map[string]any{"name": p.name, "frames": p.encoded(ms)})
}

// encoded is each message as the server sends it (msgpack), in base64.
func (p *pageClient) encoded(ms []wire.Message) []string {
	p.t.Helper()
	var fs []string
	for _, m := range ms {
		b, err := wire.Encode(m, wire.Binary)
		must(p.t, err)
		fs = append(fs, base64.StdEncoding.EncodeToString(b))
	}
	return fs
}

func TestInteropClientAppliesBatchedChanges(t *testing.T) {
	js := startJS(t)
	p := &pageClient{t: t, js: js, name: "ana"}
	js.call("client", map[string]any{"name": "ana", "member": "ana"})
	g := goSample(t)
	p.frame(&wire.Welcome{Header: wire.Header{Kind: wire.KindWelcome}, V: wire.Version, Doc: "interop", Member: "ana", Write: true,
		Records: []question.Record{rebaseRecord}})
	p.frame(&wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: "d1", Doc: g.Save(), Heads: hexHeads(g.Heads())})

	check := func(what string, wantAccepted []string) {
		t.Helper()
		st, heads, accepted, _ := p.decision()
		sameHeads(t, what, g.Heads(), heads)
		sameValues(t, what, goState(t, g), st)
		if !slices.Equal(accepted, wantAccepted) {
			t.Fatalf("%s: accepted %v, want %v", what, accepted, wantAccepted)
		}
	}

	// One frame, several changes.
	prev := g.Heads()
	must(t, g.SetMark("q-pick", "o3", "c2", marks.Partly))
	must(t, g.SpliceText("q-text", 0, 0, "Batched: "))
	must(t, g.Choose("q-many", "m3", true))
	must(t, g.SetMark("q-pick", "o3", "c2", marks.No))
	f := changesFrame(t, g, prev, nil)
	if n := checkChunkTypes(t, f.Changes); n != 4 {
		t.Fatalf("the batch holds %d changes, want 4", n)
	}
	p.frame(f)
	check("a frame of 4 changes", hexHeads(g.Heads()))

	// Frames that arrive together are applied together, in order.
	var fs []wire.Message
	for i, text := range []string{"One. ", "Two. ", "Three. "} {
		prev := g.Heads()
		must(t, g.SpliceText("q-text", 0, 0, text))
		must(t, g.SetMark("q-pick", "o1", "c1", marks.All[i]))
		fs = append(fs, changesFrame(t, g, prev, nil))
	}
	p.frames(fs...)
	check("3 frames in one task", hexHeads(g.Heads()))

	// An empty batch (the replica is up to date) keeps everything.
	p.frame(&wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: "d1", Heads: hexHeads(g.Heads())})
	check("an empty batch", hexHeads(g.Heads()))

	// Heads naming a change the replica does not hold (a concurrent change
	// whose frame has not come): the changes apply, the heads are not
	// taken as accepted until the missing change arrives.
	accepted := hexHeads(g.Heads())
	other, err := g.Fork("")
	must(t, err)
	must(t, other.SetMark("q-pick", "o2", "c1", marks.No))
	prev = g.Heads()
	must(t, g.SetMark("q-pick", "o3", "c1", marks.Yes))
	mine := changesFrame(t, g, prev, nil)
	theirs, err := other.ChangesSince(prev)
	must(t, err)
	_, err = g.ApplyChanges(theirs)
	must(t, err)
	mine.Heads = hexHeads(g.Heads()) // the server's heads: both changes
	p.frame(mine)
	if _, _, got, _ := p.decision(); !slices.Equal(got, accepted) {
		t.Fatalf("accepted %v with a head the replica lacks, want %v kept", got, accepted)
	}
	// Beyond its accepted heads, the replica holds a change: it offers it
	// as an edit (the server has it already), as it always has.
	resend := p.oneEdit()
	if fresh, err := g.ApplyChanges(resend.Changes); err != nil || len(fresh) != 0 {
		t.Fatalf("the resent change: %v new, %v", fresh, err)
	}
	p.frame(&wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: "d1", Changes: theirs, Heads: hexHeads(g.Heads())})
	check("after the missing change", hexHeads(g.Heads()))
	p.frame(&wire.Reply{Header: wire.Header{Kind: wire.KindEdit, RID: resend.RID}, ID: "d1", OK: true, Heads: hexHeads(g.Heads())})
	check("after the resend's reply", hexHeads(g.Heads()))

	// A local edit on top: the server's next heads are no longer the
	// replica's heads, but it held them, so they are accepted; the edit's
	// reply then accepts the edit.
	p.edit("mark", map[string]any{"q": "q-pick", "o": "o2", "c": "c2", "mark": "yes"})
	e := p.oneEdit()
	prev = g.Heads()
	must(t, g.SpliceText("q-text", 0, 0, "Concurrent. "))
	p.frame(changesFrame(t, g, prev, nil))
	if _, heads, got, _ := p.decision(); !slices.Equal(got, hexHeads(g.Heads())) || slices.Equal(heads, got) {
		t.Fatalf("with a local edit in flight: accepted %v (replica at %v), want the server's %v", got, heads, hexHeads(g.Heads()))
	}
	if fresh, err := g.ApplyChanges(e.Changes); err != nil || len(fresh) != 1 {
		t.Fatalf("the local edit: %v new, %v", fresh, err)
	}
	p.frame(&wire.Reply{Header: wire.Header{Kind: wire.KindEdit, RID: e.RID}, ID: "d1", OK: true, Heads: hexHeads(g.Heads())})
	check("after the edit's reply", hexHeads(g.Heads()))

	// An accepted edit's reply that arrives in the same task as the
	// changes the server sent before it does not apply them first: they
	// stay queued for one larger apply, and the reply's heads, which come
	// after theirs, are accepted once they are applied. Nothing is sent
	// again.
	p.edit("mark", map[string]any{"q": "q-pick", "o": "o1", "c": "c2", "mark": "no"})
	e = p.oneEdit()
	prev = g.Heads()
	must(t, g.SpliceText("q-text", 0, 0, "Queued. "))
	before := changesFrame(t, g, prev, nil)
	if fresh, err := g.ApplyChanges(e.Changes); err != nil || len(fresh) != 1 {
		t.Fatalf("the local edit: %v new, %v", fresh, err)
	}
	p.frames(before, &wire.Reply{Header: wire.Header{Kind: wire.KindEdit, RID: e.RID}, ID: "d1", OK: true, Heads: hexHeads(g.Heads())})
	check("changes and the edit's reply in one task", hexHeads(g.Heads()))
	if sent := p.sent(); len(sent) != 0 {
		t.Fatalf("the client sent %d frames after its edit was accepted, want none", len(sent))
	}

	// A local edit made while changes are queued is concurrent with them:
	// it goes out at once, and both sides end at the same state.
	prev = g.Heads()
	must(t, g.SetMark("q-pick", "o2", "c2", marks.Partly))
	must(t, g.SpliceText("q-text", 0, 0, "Theirs. "))
	theirsFrame := changesFrame(t, g, prev, nil)
	p.edit("settext", map[string]any{"q": "q-text", "text": "Mine. ", "frames": p.encoded([]wire.Message{theirsFrame})})
	e = p.oneEdit()
	if _, err := g.ApplyChanges(e.Changes); err != nil {
		t.Fatal(err)
	}
	p.frame(&wire.Reply{Header: wire.Header{Kind: wire.KindEdit, RID: e.RID}, ID: "d1", OK: true, Heads: hexHeads(g.Heads())})
	check("a local edit over queued changes", hexHeads(g.Heads()))
	if fs := p.sent(); len(fs) != 0 {
		t.Fatalf("the client sent %+v with nothing unsent", fs)
	}
}
