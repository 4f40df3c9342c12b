package interop_test

// Rebased documents, Go ↔ JavaScript: the package's own protocol client
// (src/client.js, under Node through test/interop.mjs) is handed
// frames the Go side encodes, as the server would send them, and what it
// sends back is applied by Go's crdt.
//
// The rule (docs/PROTOCOL.md): a question:doc, or a reset Reply.Doc, whose
// history does not contain the replica's accepted heads is a rebased
// document. The replica replaces its document with it, never merging the
// two histories, and carries its not-yet-accepted draft values over as
// fresh local edits. An edit made against the old history is refused with
// reason stale, reset, and the rebased document; the replica carries its
// values over the same way.

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// rebaseRecord is the record of the sample decision (the shapes of
// goSample) as the welcome carries it.
var rebaseRecord = question.Record{ID: "d1", Status: question.Open, Generation: 1, Definition: question.Definition{Questions: []question.Question{
	{ID: "q-text", Text: "How should onboarding start?", Response: question.Text, Options: []question.Option{}},
	{ID: "q-pick", Text: "Which onboarding?", Options: []question.Option{{ID: "o1", Label: "Guided tour"}, {ID: "o2", Label: "Template workspace"}, {ID: "o3", Label: "Both"}},
		Criteria: []question.Criterion{{ID: "c1", Label: "New device"}, {ID: "c2", Label: "Easy reset"}}},
	{ID: "q-many", Text: "Which channels?", Multiple: true, Options: []question.Option{{ID: "m1", Label: "Email"}, {ID: "m2", Label: "Chat"}, {ID: "m3", Label: "Phone"}}},
}}}

// freshCopy builds, with a history of its own, a document whose state is
// src's: what a server that rebased the decision holds.
func freshCopy(t *testing.T, src *crdt.Doc) *crdt.Doc {
	t.Helper()
	dr, err := src.Draft()
	must(t, err)
	d, err := crdt.New(crdt.Options{})
	must(t, err)
	must(t, d.AddQuestion(qText))
	must(t, d.AddQuestion(qPick))
	must(t, d.AddQuestion(qMany))
	must(t, d.StartGeneration(dr.Generation))
	for qid, qd := range dr.Questions {
		if qd.Text != "" {
			must(t, d.SetText(qid, qd.Text))
		}
		for k, m := range qd.Marks {
			o, c, _ := strings.Cut(k, "/")
			must(t, d.SetMark(qid, o, c, m))
		}
		for _, o := range qd.Choices {
			must(t, d.Choose(qid, o, true))
		}
	}
	if !slices.Equal(hexHeads(d.Heads()), hexHeads(src.Heads())) {
		return d
	}
	t.Fatal("the fresh copy has the same history")
	return nil
}

// newPageClient starts Node with the package's Client of member ana.
func newPageClient(t *testing.T) *pageClient {
	t.Helper()
	js := startJS(t)
	js.call("client", map[string]any{"name": "ana", "member": "ana"})
	return &pageClient{t: t, js: js, name: "ana"}
}

// sampleDraft returns a document of the sample decision's shapes at
// generation 1, with no answer yet.
func sampleDraft(t *testing.T) *crdt.Doc {
	t.Helper()
	d, err := crdt.New(crdt.Options{})
	must(t, err)
	must(t, d.AddQuestion(qText))
	must(t, d.AddQuestion(qPick))
	must(t, d.AddQuestion(qMany))
	must(t, d.StartGeneration(1))
	return d
}

// pageClient is the package's Client under Node, named name.
type pageClient struct {
	t    *testing.T
	js   *jsReplica
	name string
}

func (p *pageClient) frame(m wire.Message) {
	p.t.Helper()
	b, err := wire.Encode(m, wire.Binary)
	must(p.t, err)
	p.js.call("frame", map[string]any{"name": p.name, "frame": base64.StdEncoding.EncodeToString(b)})
}

// sent returns the frames the client sent since the last call, decoded by
// the Go side.
func (p *pageClient) sent() []wire.Message {
	p.t.Helper()
	var out []wire.Message
	for _, f := range strs(p.js.call("sent", map[string]any{"name": p.name})["frames"]) {
		b, err := base64.StdEncoding.DecodeString(f)
		must(p.t, err)
		m, err := wire.Decode(b, wire.Binary)
		if err != nil {
			p.t.Fatalf("the client sent a frame Go cannot read: %v", err)
		}
		out = append(out, m)
	}
	return out
}

// oneEdit returns the one question:edit the client sent since the last
// call.
func (p *pageClient) oneEdit() *wire.Edit {
	p.t.Helper()
	fs := p.sent()
	if len(fs) != 1 {
		p.t.Fatalf("the client sent %d frames, want one edit: %+v", len(fs), fs)
	}
	e, ok := fs[0].(*wire.Edit)
	if !ok || e.ID != "d1" || len(e.Changes) == 0 {
		p.t.Fatalf("the client sent %+v, want an edit of d1", fs[0])
	}
	return e
}

func (p *pageClient) edit(op string, args map[string]any) {
	p.t.Helper()
	m := map[string]any{"name": p.name, "id": "d1", "op": op}
	for k, v := range args {
		m[k] = v
	}
	p.js.call("edit", m)
}

// decision is the client's view of d1: its replica's state (in goState's
// form), heads and accepted heads.
func (p *pageClient) decision() (state map[string]any, heads, accepted []string, res map[string]any) {
	p.t.Helper()
	res = p.js.call("decision", map[string]any{"name": p.name, "id": "d1"})
	state = roundTrip(res["state"])
	return state, strs(res["heads"]), strs(res["accepted"]), res
}

func roundTrip(v any) map[string]any {
	b, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// goDraft is one question's draft in goState's form.
func goDraft(st map[string]any, qid string) map[string]any {
	return st["drafts"].(map[string]any)["1"].(map[string]any)[qid].(map[string]any)
}

// The JavaScript client keeps its unaccepted draft values across a rebase,
// whether the rebased document arrives as a question:doc (with an edit in
// flight) or as the reset of a refused stale edit, and sends them as fresh
// edits that Go's crdt applies on the rebased document. An ordinary reset
// (same history) still drops them.
func TestInteropRebasedDocCarriesDraft(t *testing.T) {
	p := newPageClient(t)

	// The accepted draft the page loads.
	g := sampleDraft(t)
	must(t, g.SetText("q-text", "Start with the invitation email."))
	must(t, g.SetMark("q-pick", "o1", "c1", marks.Yes))
	must(t, g.SetMark("q-pick", "o2", "c1", marks.Partly))
	must(t, g.Choose("q-pick", "o1", true))
	must(t, g.Choose("q-many", "m1", true))
	p.frame(&wire.Welcome{Header: wire.Header{Kind: wire.KindWelcome}, V: wire.Version, Doc: "interop", Member: "ana", Write: true,
		Records: []question.Record{rebaseRecord}})
	p.frame(&wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: "d1", Doc: g.Save(), Heads: hexHeads(g.Heads())})
	st, _, accepted, _ := p.decision()
	sameValues(t, "the loaded draft", goState(t, g), st)
	if !slices.Equal(accepted, hexHeads(g.Heads())) {
		t.Fatalf("accepted %v, want %v", accepted, hexHeads(g.Heads()))
	}
	if fs := p.sent(); len(fs) != 0 {
		t.Fatalf("the client sent %+v after loading", fs)
	}

	// Local edits: the first goes out at once, the rest wait for it.
	p.edit("mark", map[string]any{"q": "q-pick", "o": "o2", "c": "c2", "mark": "no"})
	first := p.oneEdit()
	p.edit("mark", map[string]any{"q": "q-pick", "o": "o1", "c": "c1", "mark": nil})
	p.edit("choose", map[string]any{"q": "q-pick", "o": "o2", "on": true, "multiple": false})
	p.edit("choose", map[string]any{"q": "q-many", "o": "m1", "on": false, "multiple": true})
	p.edit("choose", map[string]any{"q": "q-many", "o": "m3", "on": true, "multiple": true})
	p.edit("settext", map[string]any{"q": "q-text", "text": "Start with the invitation email, then a short tour."})
	if fs := p.sent(); len(fs) != 0 {
		t.Fatalf("a second edit went out while the first was in flight: %+v", fs)
	}

	// The server rebases the decision (same accepted state, fresh
	// history) and sends it whole.
	h := freshCopy(t, g)
	sameValues(t, "the rebased document", goState(t, g), goState(t, h))
	// Someone else's edit accepted after the rebase: the local splice
	// lands after it.
	must(t, h.SpliceText("q-text", 0, 0, "Ben: "))
	rebasedHeads := hexHeads(h.Heads())
	p.frame(&wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: "d1", Doc: h.Save(), Heads: rebasedHeads})

	// The replica is the rebased document plus its own values, as fresh
	// edits, sent at once against the rebased heads.
	st, heads, accepted, res := p.decision()
	if !slices.Equal(accepted, rebasedHeads) {
		t.Fatalf("accepted after the rebase %v, want the rebased heads %v", accepted, rebasedHeads)
	}
	pick, many, text := goDraft(st, "q-pick"), goDraft(st, "q-many"), goDraft(st, "q-text")
	if text["text"] != "Ben: Start with the invitation email, then a short tour." ||
		!equalJSON(pick["choices"], []string{"o2"}) || !equalJSON(many["choices"], []string{"m3"}) ||
		!equalJSON(pick["marks"], map[string]any{"o1/c1": nil, "o2/c1": "partly", "o2/c2": "no"}) {
		t.Fatalf("the carried-over draft: %v", st["drafts"])
	}
	if res["edited"] != true {
		t.Fatalf("the carried-over draft is not marked edited")
	}
	carried := p.oneEdit()
	if _, err := h.ApplyChanges(carried.Changes); err != nil {
		t.Fatalf("Go cannot apply the carried-over edit to the rebased document: %v", err)
	}
	sameHeads(t, "after the carried-over edit", h.Heads(), heads)
	sameValues(t, "after the carried-over edit", goState(t, h), st)

	// The reply to the edit made against the old history arrives late: it
	// belongs to the old history and changes nothing.
	p.frame(&wire.Reply{Header: wire.Header{Kind: wire.KindEdit, RID: first.RID}, ID: "d1", Reason: question.Stale, Reset: true, Doc: h.Save()})
	if st2, heads2, _, _ := p.decision(); !slices.Equal(heads2, heads) || !equalJSON(st2, st) {
		t.Fatalf("a late reply for the old history changed the replica")
	}
	if fs := p.sent(); len(fs) != 0 {
		t.Fatalf("the client sent %+v after the late reply", fs)
	}
	p.frame(&wire.Reply{Header: wire.Header{Kind: wire.KindEdit, RID: carried.RID}, ID: "d1", OK: true, Heads: hexHeads(h.Heads())})
	if _, _, accepted, _ := p.decision(); !slices.Equal(accepted, hexHeads(h.Heads())) {
		t.Fatalf("accepted %v after the reply, want %v", accepted, hexHeads(h.Heads()))
	}

	// A stale edit: the page edits, the server has rebased again in the
	// meantime, and refuses the edit with reason stale, reset, and the
	// rebased document.
	p.edit("mark", map[string]any{"q": "q-pick", "o": "o3", "c": "c1", "mark": "partly"})
	p.edit("settext", map[string]any{"q": "q-text", "text": "Ben: Start with the invitation email, then a short tour and a checklist."})
	stale := p.oneEdit()
	k := freshCopy(t, h)
	p.frame(&wire.Reply{Header: wire.Header{Kind: wire.KindEdit, RID: stale.RID}, ID: "d1", Reason: question.Stale,
		Message: "the edit was made to a history the server has rebased", Reset: true, Doc: k.Save()})
	again := p.oneEdit()
	if _, err := k.ApplyChanges(again.Changes); err != nil {
		t.Fatalf("Go cannot apply the edit carried over after the stale refusal: %v", err)
	}
	st, heads, accepted, res = p.decision()
	sameHeads(t, "after the stale refusal", k.Heads(), heads)
	sameValues(t, "after the stale refusal", goState(t, k), st)
	if goDraft(st, "q-text")["text"] != "Ben: Start with the invitation email, then a short tour and a checklist." ||
		goDraft(st, "q-pick")["marks"].(map[string]any)["o3/c1"] != "partly" {
		t.Fatalf("the values carried over after the stale refusal: %v", st["drafts"])
	}
	if slices.Equal(accepted, heads) {
		t.Fatalf("the carried-over edit counts as accepted before its reply")
	}
	if res["note"] != "" {
		t.Errorf("a carried-over rebase told the member %q", res["note"])
	}
	p.frame(&wire.Reply{Header: wire.Header{Kind: wire.KindEdit, RID: again.RID}, ID: "d1", OK: true, Heads: hexHeads(k.Heads())})

	// An ordinary reset (the same history: an edit the server refuses)
	// still drops the refused values.
	before := goState(t, k)
	p.edit("mark", map[string]any{"q": "q-pick", "o": "o9", "c": "c1", "mark": "no"})
	bad := p.oneEdit()
	p.frame(&wire.Reply{Header: wire.Header{Kind: wire.KindEdit, RID: bad.RID}, ID: "d1", Reason: question.Invalid,
		Message: "no option o9", Reset: true, Doc: k.Save()})
	st, heads, _, res = p.decision()
	sameValues(t, "after an ordinary reset", before, st)
	sameHeads(t, "after an ordinary reset", k.Heads(), heads)
	if fs := p.sent(); len(fs) != 0 {
		t.Fatalf("the client sent %+v after an ordinary reset", fs)
	}
	if !strings.Contains(res["note"].(string), "not accepted") {
		t.Errorf("an ordinary reset's note: %q", res["note"])
	}
}

// The JavaScript client carries its net intent, as the Go replica does
// (docs/PROTOCOL.md, Rebase): a deselect of the single choice it saw
// leaves an option another member chose in the rebased history chosen,
// and a select of its own replaces theirs.
func TestInteropRebaseCarriesIntent(t *testing.T) {
	p := newPageClient(t)

	g := sampleDraft(t)
	must(t, g.Choose("q-pick", "o1", true))
	must(t, g.Choose("q-many", "m1", true))
	p.frame(&wire.Welcome{Header: wire.Header{Kind: wire.KindWelcome}, V: wire.Version, Doc: "interop", Member: "ana", Write: true,
		Records: []question.Record{rebaseRecord}})
	p.frame(&wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: "d1", Doc: g.Save(), Heads: hexHeads(g.Heads())})

	// Ana deselects o1 and m1; meanwhile Ben chose o2 and m2, accepted
	// after a rebase.
	p.edit("choose", map[string]any{"q": "q-pick", "o": "o1", "on": false, "multiple": false})
	p.oneEdit()
	p.edit("choose", map[string]any{"q": "q-many", "o": "m1", "on": false, "multiple": true})
	h := freshCopy(t, g)
	must(t, h.Choose("q-pick", "o2", true))
	must(t, h.Choose("q-many", "m2", true))
	p.frame(&wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: "d1", Doc: h.Save(), Heads: hexHeads(h.Heads())})
	st, heads, _, _ := p.decision()
	if pick, many := goDraft(st, "q-pick"), goDraft(st, "q-many"); !equalJSON(pick["choices"], []string{"o2"}) || !equalJSON(many["choices"], []string{"m2"}) {
		t.Fatalf("after carrying deselects over Ben's choices: q-pick %v, q-many %v; want [o2] and [m2]", pick["choices"], many["choices"])
	}
	carried := p.oneEdit()
	if _, err := h.ApplyChanges(carried.Changes); err != nil {
		t.Fatalf("Go cannot apply the carried-over edit: %v", err)
	}
	sameHeads(t, "after the carried-over deselects", h.Heads(), heads)
	sameValues(t, "after the carried-over deselects", goState(t, h), st)
	p.frame(&wire.Reply{Header: wire.Header{Kind: wire.KindEdit, RID: carried.RID}, ID: "d1", OK: true, Heads: hexHeads(h.Heads())})

	// Ana selects o3; meanwhile Ben chose o1 again, accepted after another
	// rebase: Ana's select replaces it.
	p.edit("choose", map[string]any{"q": "q-pick", "o": "o3", "on": true, "multiple": false})
	p.oneEdit()
	k := freshCopy(t, h)
	must(t, k.Choose("q-pick", "o1", true))
	p.frame(&wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: "d1", Doc: k.Save(), Heads: hexHeads(k.Heads())})
	st, heads, _, _ = p.decision()
	if pick := goDraft(st, "q-pick"); !equalJSON(pick["choices"], []string{"o3"}) {
		t.Fatalf("after carrying a select over Ben's choice: q-pick %v, want [o3]", pick["choices"])
	}
	carried = p.oneEdit()
	if _, err := k.ApplyChanges(carried.Changes); err != nil {
		t.Fatalf("Go cannot apply the carried-over select: %v", err)
	}
	sameHeads(t, "after the carried-over select", k.Heads(), heads)
	sameValues(t, "after the carried-over select", goState(t, k), st)
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// An edit the server accepted before it rebased, whose reply the page
// never got, is in the rebased document already: the page's carry-over
// (as the Go replica's) reads the rebase's clock and makes only its later
// edit, never that one a second time.
func TestInteropRebaseDoesNotRepeatAnAcceptedEdit(t *testing.T) {
	p := newPageClient(t)
	g := sampleDraft(t)
	must(t, g.SetText("q-text", "hello"))
	p.frame(&wire.Welcome{Header: wire.Header{Kind: wire.KindWelcome}, V: wire.Version, Doc: "interop", Member: "ana", Write: true,
		Records: []question.Record{rebaseRecord}})
	p.frame(&wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: "d1", Doc: g.Save(), Heads: hexHeads(g.Heads())})

	p.edit("settext", map[string]any{"q": "q-text", "text": "hello world"})
	e := p.oneEdit()
	if _, err := g.ApplyEdit(e.Changes); err != nil { // accepted; its reply is lost
		t.Fatal(err)
	}
	must(t, g.SpliceText("q-text", 0, 0, "> ")) // another member's, after it
	p.edit("settext", map[string]any{"q": "q-text", "text": "hello world!"})
	rebased, err := g.Rebase()
	must(t, err)
	p.frame(&wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: "d1", Doc: rebased.Save(), Heads: hexHeads(rebased.Heads())})

	st, _, _, _ := p.decision()
	if got := goDraft(st, "q-text")["text"]; got != "> hello world!" {
		t.Fatalf("text %q after the rebase, want %q", got, "> hello world!")
	}
	// What the page sends next applies to the rebased document once.
	var edit *wire.Edit
	for _, f := range p.sent() {
		if x, ok := f.(*wire.Edit); ok {
			edit = x
		}
	}
	if edit == nil {
		t.Fatal("the client sent no edit after the rebase")
	}
	must(t, func() error { _, err := rebased.ApplyEdit(edit.Changes); return err }())
	dr, err := rebased.Draft()
	must(t, err)
	if got := dr.Questions["q-text"].Text; got != "> hello world!" {
		t.Fatalf("the server's text %q, want %q", got, "> hello world!")
	}
}
