package question_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
)

// acknowledged is what the authority has acknowledged of one document: every
// record, and every decision's whole CRDT state (all generations' drafts,
// the definition side) with its heads.
type acknowledged struct {
	records map[string][]byte
	states  map[string]*crdt.State
	heads   map[string]crdt.Heads
	// docs holds the documents loaded from the saves, for members to
	// take instead of loading the same saves again.
	docs map[string]*crdt.Doc
}

// snapshotOf reads what a has acknowledged. A decision whose heads are
// the ones it had in known keeps the state read there: the same history
// holds the same state, and known read it from a save that loaded. Its
// document is then not in docs.
func snapshotOf(t fatalT, a *question.Authority, known acknowledged) acknowledged {
	t.Helper()
	ack := acknowledged{records: map[string][]byte{}, states: map[string]*crdt.State{}, heads: map[string]crdt.Heads{}, docs: map[string]*crdt.Doc{}}
	for _, r := range a.Records() {
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		ack.records[r.ID] = raw
		_, heads, err := a.Draft(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if st := known.states[r.ID]; st != nil && heads.Equal(known.heads[r.ID]) {
			ack.states[r.ID], ack.heads[r.ID] = st, heads
			continue
		}
		saved, err := a.Save(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		d, err := crdt.Load(saved, nil, crdt.Options{})
		if err != nil {
			t.Fatalf("decision %s: its accepted document does not load: %v", r.ID, err)
		}
		st, err := d.State()
		if err != nil {
			t.Fatal(err)
		}
		if !d.Heads().Equal(heads) {
			t.Fatalf("decision %s: its save loads at heads %v, the authority is at %v", r.ID, d.Heads(), heads)
		}
		ack.states[r.ID], ack.heads[r.ID], ack.docs[r.ID] = st, heads, d
	}
	return ack
}

func (ack acknowledged) mustEqual(t fatalT, got acknowledged) {
	t.Helper()
	if len(got.records) != len(ack.records) {
		t.Fatalf("%d records after restart, %d acknowledged", len(got.records), len(ack.records))
	}
	for id, raw := range ack.records {
		if !bytes.Equal(got.records[id], raw) {
			t.Fatalf("record %s after restart:\n%s\nacknowledged:\n%s", id, got.records[id], raw)
		}
		if !got.states[id].Equal(ack.states[id]) {
			t.Fatalf("decision %s: document state after restart differs from the acknowledged one", id)
		}
		if !got.heads[id].Equal(ack.heads[id]) {
			t.Fatalf("decision %s: heads after restart differ", id)
		}
	}
}

// TestAcknowledgedStatesLoadAgainProperty: random sequences of commands
// (create, draft edits including whole replacements of a written answer
// up to the 100,000-character limit, marks, choices, appends, saves,
// reopens, discards) against a real bbolt file; after every restart, and
// at the end, the store opens again and holds exactly what the authority
// had acknowledged: every record, and every decision's document.
func TestAcknowledgedStatesLoadAgainProperty(t *testing.T) {
	testutil.WithRapidChecks(15, func() {
		rapid.Check(t, func(rt *rapid.T) {
			dir, err := os.MkdirTemp("", "accord-prop-")
			if err != nil {
				rt.Fatal(err)
			}
			defer os.RemoveAll(dir)
			f := openBoltFixture(rt, dir)
			defer f.close()
			p := &reloadProp{f: f, members: map[string]*member{}}
			steps := rapid.IntRange(1, 30).Draw(rt, "steps")
			for range steps {
				p.step(rt)
			}
			p.restart(rt)
		})
	})
}

type reloadProp struct {
	f       *boltFixture
	ids     []string
	members map[string]*member
	huge    int
	// reloaded is what the store held at the last restart.
	reloaded acknowledged
}

// restart closes the store and opens it again; every member then loads
// its decision's document afresh.
func (p *reloadProp) restart(t *rapid.T) {
	ack := snapshotOf(t, p.f.a, p.reloaded)
	p.f.reopen()
	got := snapshotOf(t, p.f.a, acknowledged{})
	ack.mustEqual(t, got)
	for id, m := range p.members {
		if d := got.docs[id]; d != nil {
			m.doc, m.accepted = d, got.heads[id]
		} else {
			m.reload()
		}
	}
	got.docs = nil
	p.reloaded = got
}

// refusedOK reports whether err is a refusal (which changes nothing and
// needs no check here) rather than a failure.
func refusedOK(t *rapid.T, err error) {
	t.Helper()
	var r *question.Refusal
	if err != nil && !errors.As(err, &r) {
		t.Fatalf("command failed without a refusal: %v", err)
	}
	if r != nil && r.Reason == question.Unavailable {
		t.Fatalf("storage failed: %v", err)
	}
}

func (p *reloadProp) pick(t *rapid.T) (string, *member, question.Record) {
	id := rapid.SampledFrom(p.ids).Draw(t, "decision")
	rec, _ := p.f.a.Record(id)
	return id, p.members[id], rec
}

func (p *reloadProp) step(t *rapid.T) {
	ctx := context.Background()
	actions := []string{"create"}
	if len(p.ids) > 0 {
		actions = append(actions, "edit", "edit", "edit", "edit", "append", "submit", "reopen", "discard", "restart")
	}
	switch rapid.SampledFrom(actions).Draw(t, "action") {
	case "create":
		def := choiceDef()
		if rapid.Bool().Draw(t, "written") {
			def = writtenDef()
		} else if rapid.Bool().Draw(t, "multiple") {
			def.Questions[0].Multiple = true
		}
		out, err := p.f.a.Create(ctx, ana, []question.CreateRequest{{Key: fmt.Sprint("k", len(p.ids)), Origin: question.FromPlanner, Definition: def}})
		if err != nil {
			t.Fatal(err)
		}
		id := out[0].Record.ID
		p.ids = append(p.ids, id)
		p.members[id] = p.f.member(id)
	case "edit":
		id, m, rec := p.pick(t)
		q := rec.Definition.Questions[0]
		for n := rapid.IntRange(1, 3).Draw(t, "edits"); n > 0; n-- {
			if q.Written() {
				p.editText(t, m)
				continue
			}
			o := rapid.SampledFrom(q.Options).Draw(t, "option")
			if len(q.Criteria) > 0 && rapid.Bool().Draw(t, "mark") {
				c := rapid.SampledFrom(q.Criteria).Draw(t, "criterion")
				mk := rapid.SampledFrom([]marks.Mark{marks.Yes, marks.Partly, marks.No, marks.Cleared}).Draw(t, "value")
				_ = m.doc.SetMark("q1", o.ID, c.ID, mk)
			} else {
				_ = m.doc.Choose("q1", o.ID, rapid.Bool().Draw(t, "on"))
			}
		}
		_, err := m.send(ben)
		refusedOK(t, err)
		_ = id
	case "append":
		id, m, rec := p.pick(t)
		if rec.Definition.Questions[0].Written() {
			return
		}
		req := question.AppendRequest{ID: id, Question: "q1", Key: fmt.Sprint("a", rapid.IntRange(0, 5).Draw(t, "key")), Label: fmt.Sprint("item ", rapid.IntRange(0, 9).Draw(t, "label"))}
		var err error
		if rapid.Bool().Draw(t, "criterion") {
			_, err = p.f.a.AppendCriterion(ctx, ana, req)
		} else {
			_, err = p.f.a.AppendOption(ctx, ana, req)
		}
		refusedOK(t, err)
		m.reload()
	case "submit":
		id, m, _ := p.pick(t)
		out, err := p.f.a.Submit(ctx, ana, []question.SubmitRequest{{ID: id, Heads: m.accepted}})
		refusedOK(t, err)
		if err == nil {
			refusedOK(t, out[0].Err)
		}
	case "reopen":
		id, m, _ := p.pick(t)
		_, err := p.f.a.Reopen(ctx, ana, id, 0)
		refusedOK(t, err)
		m.reload()
	case "discard":
		id, _, _ := p.pick(t)
		if rapid.IntRange(0, 3).Draw(t, "really") == 0 {
			_, err := p.f.a.Discard(ctx, ana, id)
			refusedOK(t, err)
		}
	case "restart":
		p.restart(t)
	}
}

// editText splices the member's written answer: a few characters typed,
// or (at most once a case, it is slow) the whole answer replaced by one
// of up to the 100,000-character limit.
func (p *reloadProp) editText(t *rapid.T, m *member) {
	dr, err := m.doc.Draft()
	if err != nil {
		t.Fatal(err)
	}
	cur := []rune(dr.Questions["q1"].Text)
	if p.huge < 1 && rapid.IntRange(0, 9).Draw(t, "huge") == 0 {
		p.huge++
		n := rapid.SampledFrom([]int{question.MaxAnswerText, question.MaxAnswerText - 1, 99_000, 50_000}).Draw(t, "length")
		if err := m.doc.SetText("q1", answer(n, len(cur))); err != nil {
			t.Fatal(err)
		}
		return
	}
	pos := rapid.IntRange(0, len(cur)).Draw(t, "pos")
	del := rapid.IntRange(0, min(len(cur)-pos, 5)).Draw(t, "del")
	ins := rapid.SampledFrom([]string{"", "a", "é", "word ", "🙂"}).Draw(t, "ins")
	if len(cur)-del+len([]rune(ins)) > question.MaxAnswerText {
		ins = ""
	}
	if err := m.doc.SpliceText("q1", pos, del, ins); err != nil {
		t.Fatal(err)
	}
}
