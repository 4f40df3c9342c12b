package interop_test

// Ready when it resolves, Go ↔ JavaScript: a request of the package's client
// (src/client.js) whose reply names heads resolves only once its
// replica holds them, so an edit made right after builds on the request's
// effect. The Go side plays the server and delivers each reply before its
// changes, as a client sees them when the changes take a slower path.

import (
	"slices"
	"testing"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// request starts a request of the package's client and returns its rid.
func (p *pageClient) request(kind wire.Kind, fields map[string]any) string {
	p.t.Helper()
	return p.js.call("request", map[string]any{"name": p.name, "kind": string(kind), "fields": fields})["rid"].(string)
}

// settled reports whether the request resolved, and whether as ok.
func (p *pageClient) settled(rid string) (done, ok bool) {
	p.t.Helper()
	res := p.js.call("settled", map[string]any{"name": p.name, "rid": rid})
	if res["settled"] != true {
		return false, false
	}
	r, _ := res["reply"].(map[string]any)
	return true, r["ok"] == true
}

func TestInteropRequestsResolveReady(t *testing.T) {
	p := newPageClient(t)

	// A settled decision: generation 1 with a written answer.
	g := sampleDraft(t)
	must(t, g.SetText("q-text", "The first answer."))
	settled := rebaseRecord
	settled.Status = question.Settled
	p.frame(&wire.Welcome{Header: wire.Header{Kind: wire.KindWelcome}, V: wire.Version, Doc: "interop", Member: "ana", Write: true,
		Records: []question.Record{settled}})
	p.frame(&wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: "d1", Doc: g.Save(), Heads: hexHeads(g.Heads())})

	// Reopen: the reply first, the fresh generation's changes after.
	rid := p.request(wire.KindReopen, map[string]any{"id": "d1"})
	before := g.Heads()
	must(t, g.StartGeneration(2))
	reopened := rebaseRecord
	reopened.Generation = 2
	p.frame(&wire.Reply{Header: wire.Header{Kind: wire.KindReopen, RID: rid}, ID: "d1", OK: true, Record: &reopened, Heads: hexHeads(g.Heads())})
	if done, _ := p.settled(rid); done {
		t.Fatal("reopen resolved before the replica held the fresh draft")
	}
	p.frame(changesFrame(t, g, before, hexHeads(g.Heads())))
	if done, ok := p.settled(rid); !done || !ok {
		t.Fatalf("reopen: settled %v ok %v once its changes arrived", done, ok)
	}
	p.sent() // the reopen request
	st, _, _, _ := p.decision()
	if gen := st["generation"]; gen != float64(2) {
		t.Fatalf("generation %v after the reopen resolved, want 2", gen)
	}
	// The next edit builds on the fresh draft: Go's copy takes it.
	p.edit("settext", map[string]any{"q": "q-text", "text": "The second answer."})
	e := p.oneEdit()
	if _, err := g.ApplyEdit(e.Changes); err != nil {
		t.Fatalf("the edit after the reopen does not apply to the fresh draft: %v", err)
	}
	dr, err := g.Draft()
	must(t, err)
	if dr.Generation != 2 || dr.Questions["q-text"].Text != "The second answer." {
		t.Fatalf("draft %+v after the edit", dr)
	}
	p.frame(&wire.Reply{Header: wire.Header{Kind: wire.KindEdit, RID: e.RID}, ID: "d1", OK: true, Heads: hexHeads(g.Heads())})

	// Append an option: its cell can be marked once the request resolves.
	rid = p.request(wire.KindOption, map[string]any{"id": "d1", "question": "q-pick", "key": "k1", "label": "Video"})
	before = g.Heads()
	item, _, err := g.AppendOption("q-pick", "k1", crdt.Item{ID: "o4", Label: "Video"})
	must(t, err)
	def := reopened.Definition
	def.Questions = slices.Clone(def.Questions)
	def.Questions[1].Options = append(slices.Clone(def.Questions[1].Options), question.Option{ID: item.ID, Label: item.Label})
	opt := def.Questions[1].Options[3]
	p.frame(&wire.Reply{Header: wire.Header{Kind: wire.KindOption, RID: rid}, ID: "d1", OK: true, Option: &opt, Definition: &def, Heads: hexHeads(g.Heads())})
	if done, _ := p.settled(rid); done {
		t.Fatal("the append resolved before the replica held the new option")
	}
	// A frame of another decision's kind changes nothing.
	p.frame(&wire.Event{Header: wire.Header{Kind: wire.KindOptionAdded}, ID: "d1", Question: "q-pick", Option: &opt, Definition: &def, By: "ana"})
	if done, _ := p.settled(rid); done {
		t.Fatal("the append resolved at its event, before its changes")
	}
	p.frame(changesFrame(t, g, before, hexHeads(g.Heads())))
	if done, ok := p.settled(rid); !done || !ok {
		t.Fatalf("append: settled %v ok %v once its changes arrived", done, ok)
	}
	p.sent()
	p.edit("mark", map[string]any{"q": "q-pick", "o": "o4", "c": "c1", "mark": "yes"})
	e = p.oneEdit()
	if _, err := g.ApplyEdit(e.Changes); err != nil {
		t.Fatalf("the mark on the new option does not apply: %v", err)
	}
	dr, err = g.Draft()
	must(t, err)
	if dr.Questions["q-pick"].Marks["o4/c1"] != "yes" {
		t.Fatalf("marks %v, want o4/c1 yes", dr.Questions["q-pick"].Marks)
	}
}
