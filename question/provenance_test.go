package question_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
)

var cleo = question.Member{Login: "cleo", Write: true}

// provDef holds one of each kind of value: a single choice with marks, a
// multiple choice and a written answer.
func provDef() question.Definition {
	return question.Definition{Questions: []question.Question{
		{ID: "q1", Text: "Which reset flow?",
			Options:  []question.Option{{ID: "email", Label: "Email link"}, {ID: "sms", Label: "SMS code"}},
			Criteria: []question.Criterion{{ID: "cheap", Label: "Cheap"}, {ID: "easy", Label: "Easy reset"}}},
		{ID: "q2", Text: "Which channels?", Multiple: true,
			Options: []question.Option{{ID: "web", Label: "Web"}, {ID: "app", Label: "App"}}},
		{ID: "q3", Text: "Why?", Response: question.Text, Options: []question.Option{}},
	}}
}

// provOf returns the decision's provenance keyed by question, kind and cell.
func provOf(t fatalT, a *question.Authority, id string) map[string]question.CellProvenance {
	t.Helper()
	ps, err := a.Provenance(id)
	if err != nil {
		t.Fatal(err)
	}
	return byCell(ps)
}

func byCell(ps []question.CellProvenance) map[string]question.CellProvenance {
	out := map[string]question.CellProvenance{}
	for _, p := range ps {
		out[cellName(p.Question, p.Kind, p.Cell)] = p
	}
	return out
}

func cellName(q string, k question.CellKind, c string) string { return q + "|" + string(k) + "|" + c }

// TestProvenanceNamesTheSetter: each accepted edit attributes the values
// it changed to its member, with the time, the edit's last change and
// what it replaced; a value set again to what it holds keeps its setter.
func TestProvenanceNamesTheSetter(t *testing.T) {
	type step struct {
		who  question.Member
		edit func(*crdt.Doc) error
	}
	mark := func(o, c string, m marks.Mark) func(*crdt.Doc) error {
		return func(d *crdt.Doc) error { return d.SetMark("q1", o, c, m) }
	}
	choose := func(q, o string, on bool) func(*crdt.Doc) error {
		return func(d *crdt.Doc) error { return d.Choose(q, o, on) }
	}
	text := func(s string) func(*crdt.Doc) error {
		return func(d *crdt.Doc) error { return d.SetText("q3", s) }
	}
	tests := []struct {
		name  string
		steps []step
		cell  string
		want  question.CellProvenance
	}{
		{"a mark", []step{{ana, mark("email", "easy", marks.Yes)}}, cellName("q1", question.CellMark, "email/easy"),
			question.CellProvenance{By: "ana", Value: "yes"}},
		{"a mark replaced", []step{{ana, mark("email", "easy", marks.Yes)}, {ben, mark("email", "easy", marks.No)}},
			cellName("q1", question.CellMark, "email/easy"),
			question.CellProvenance{By: "ben", Value: "no", Was: "yes", WasBy: "ana"}},
		{"a mark cleared", []step{{ana, mark("email", "easy", marks.Yes)}, {ben, mark("email", "easy", marks.Cleared)}},
			cellName("q1", question.CellMark, "email/easy"),
			question.CellProvenance{By: "ben", Value: "", Was: "yes", WasBy: "ana"}},
		{"the same mark again keeps its setter", []step{{ana, mark("email", "easy", marks.Yes)}, {ben, mark("email", "easy", marks.Yes)}},
			cellName("q1", question.CellMark, "email/easy"),
			question.CellProvenance{By: "ana", Value: "yes"}},
		{"a single choice", []step{{ana, choose("q1", "email", true)}, {ben, choose("q1", "sms", true)}},
			cellName("q1", question.CellChoice, ""),
			question.CellProvenance{By: "ben", Value: "sms", Was: "email", WasBy: "ana"}},
		{"a multiple choice", []step{{ana, choose("q2", "web", true)}, {ben, choose("q2", "web", false)}},
			cellName("q2", question.CellChoice, "web"),
			question.CellProvenance{By: "ben", Value: "", Was: question.ChoiceChosen, WasBy: "ana"}},
		{"a written answer", []step{{ana, text("Because.")}, {ben, text("Because it is cheap.")}},
			cellName("q3", question.CellText, ""),
			question.CellProvenance{By: "ben", WasBy: "ana"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			rec := f.create("k", provDef())
			var last question.Edited
			for _, s := range tc.steps {
				r := f.replica(rec.ID)
				before := r.Heads()
				must(t, s.edit(r))
				ed, err := f.edit(s.who, rec.ID, r, before)
				must(t, err)
				last = ed
			}
			got, ok := provOf(t, f.a, rec.ID)[tc.cell]
			if !ok {
				t.Fatalf("no provenance for %s", tc.cell)
			}
			if got.By != tc.want.By || got.Value != tc.want.Value || got.Was != tc.want.Was || got.WasBy != tc.want.WasBy {
				t.Fatalf("provenance %+v, want by %q value %q was %q wasBy %q", got, tc.want.By, tc.want.Value, tc.want.Was, tc.want.WasBy)
			}
			if got.At.IsZero() || got.Change == "" || got.Generation != 1 {
				t.Fatalf("provenance %+v lacks its time, change or generation", got)
			}
			if got.By == tc.steps[len(tc.steps)-1].who.Login {
				if got.Change != last.Heads[len(last.Heads)-1].String() || len(last.Cells) == 0 {
					t.Fatalf("change %s, the edit's head is %v; edit reported cells %v", got.Change, last.Heads, last.Cells)
				}
			}
		})
	}
}

// TestProvenanceOfConcurrentWrites: Ana and Ben set the same cell from the
// same revision; whichever value the document keeps is attributed to the
// member who wrote it, and when Ben's wins it says it replaced Ana's.
func TestProvenanceOfConcurrentWrites(t *testing.T) {
	f := newFixture(t)
	rec := f.create("k", provDef())
	ra, rb := f.replica(rec.ID), f.replica(rec.ID)
	base := ra.Heads()
	must(t, ra.SetMark("q1", "email", "easy", marks.Yes))
	must(t, rb.SetMark("q1", "email", "easy", marks.No))
	_, err := f.edit(ana, rec.ID, ra, base)
	must(t, err)
	edB, err := f.edit(ben, rec.ID, rb, base)
	must(t, err)
	dr, _, err := f.a.Draft(rec.ID)
	must(t, err)
	got := provOf(t, f.a, rec.ID)[cellName("q1", question.CellMark, "email/easy")]
	switch v := dr.Questions["q1"].Marks["email/easy"]; v {
	case marks.No:
		if got.By != "ben" || got.Was != "yes" || got.WasBy != "ana" || len(edB.Cells) != 1 {
			t.Fatalf("Ben's No won; provenance %+v, edit cells %+v", got, edB.Cells)
		}
	case marks.Yes:
		if got.By != "ana" || len(edB.Cells) != 0 {
			t.Fatalf("Ana's Yes won; provenance %+v, Ben's edit cells %+v", got, edB.Cells)
		}
	default:
		t.Fatalf("the cell reads %q", v)
	}
}

// TestProvenanceSurvivesRestartCompactionAndRebase: attribution set by
// several members is the same after a restart on a real bbolt file, after
// compaction into a snapshot, and after a rebase that replaces the history
// by one change of the authority's actor.
func TestProvenanceSurvivesRestartCompactionAndRebase(t *testing.T) {
	f := newBoltFixture(t)
	out, err := f.a.Create(ctx, ana, []question.CreateRequest{{Key: "k", Origin: question.FromPlanner, Definition: provDef()}})
	must(t, err)
	id := out[0].Record.ID
	ma, mb := f.member(id), f.member(id)
	must(t, ma.doc.SetMark("q1", "email", "easy", marks.Yes))
	_, err = ma.send(ana)
	must(t, err)
	mb.reload()
	must(t, mb.doc.Choose("q1", "sms", true))
	_, err = mb.send(ben)
	must(t, err)
	want := provOf(t, f.a, id)
	if len(want) != 2 {
		t.Fatalf("provenance %v, want two cells", want)
	}
	check := func(when string) {
		t.Helper()
		got := provOf(t, f.a, id)
		for k, w := range want {
			if g, ok := got[k]; !ok || g.By != w.By || g.Value != w.Value || !g.At.Equal(w.At) || g.Change != w.Change {
				t.Fatalf("%s: %s is %+v, want %+v", when, k, g, w)
			}
		}
	}
	f.reopen()
	check("after a restart")
	// 101 edits of a mark by Cleo: the draft is compacted into a snapshot.
	mc := f.member(id)
	for i := range 101 {
		must(t, mc.doc.SetMark("q1", "sms", "easy", []marks.Mark{marks.Yes, marks.No}[i%2]))
		_, err := mc.send(cleo)
		must(t, err)
	}
	want[cellName("q1", question.CellMark, "sms/easy")] = provOf(t, f.a, id)[cellName("q1", question.CellMark, "sms/easy")]
	sd, err := f.st.LoadDocument(ctx, "plan-1")
	must(t, err)
	if n := len(sd.Drafts[id].Chunks); n >= 100 {
		t.Fatalf("%d chunks stored: the draft was never compacted", n)
	}
	f.reopen()
	check("after compaction and a restart")
	// One edit whose history dwarfs its values: the authority rebases.
	mc = f.member(id)
	must(t, mc.doc.SpliceText("q3", 0, 0, strings.Repeat("x", 5000)))
	must(t, mc.doc.SpliceText("q3", 0, 5000, ""))
	must(t, mc.doc.SetMark("q1", "sms", "cheap", marks.Partly))
	ed, err := mc.send(cleo)
	must(t, err)
	if !ed.Rebased {
		t.Fatal("the churning edit did not rebase the decision")
	}
	want[cellName("q1", question.CellMark, "sms/cheap")] = provOf(t, f.a, id)[cellName("q1", question.CellMark, "sms/cheap")]
	if want[cellName("q1", question.CellMark, "sms/cheap")].By != "cleo" {
		t.Fatalf("the rebasing edit's mark is attributed to %+v", want[cellName("q1", question.CellMark, "sms/cheap")])
	}
	check("after a rebase")
	f.reopen()
	check("after a rebase and a restart")
}

// TestSavedAnswerKeepsAttribution: a save copies the draft's provenance
// into the answer; after a reopen and further edits the history still
// holds it as it was at the save.
func TestSavedAnswerKeepsAttribution(t *testing.T) {
	f := newFixture(t)
	rec := f.create("k", provDef())
	steps := []struct {
		who  question.Member
		edit func(*crdt.Doc) error
	}{
		{ana, func(d *crdt.Doc) error { return d.Choose("q1", "email", true) }},
		{ben, func(d *crdt.Doc) error { return d.Choose("q2", "app", true) }},
		{cleo, func(d *crdt.Doc) error { return d.SetText("q3", "Cheapest.") }},
	}
	for _, s := range steps {
		r := f.replica(rec.ID)
		before := r.Heads()
		must(t, s.edit(r))
		_, err := f.edit(s.who, rec.ID, r, before)
		must(t, err)
	}
	_, heads, err := f.a.Draft(rec.ID)
	must(t, err)
	res, err := f.a.Submit(ctx, ana, []question.SubmitRequest{{ID: rec.ID, Heads: heads}})
	must(t, err)
	must(t, res[0].Err)
	want := map[string]string{cellName("q1", question.CellChoice, ""): "ana", cellName("q2", question.CellChoice, "app"): "ben", cellName("q3", question.CellText, ""): "cleo"}
	checkBy := func(when string, ps []question.CellProvenance) {
		t.Helper()
		got := map[string]string{}
		for k, p := range byCell(ps) {
			got[k] = p.By
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: the answer's attribution is %v, want %v", when, got, want)
		}
	}
	checkBy("at the save", res[0].Record.Answer.Provenance)
	_, err = f.a.Reopen(ctx, ben, rec.ID, 0)
	must(t, err)
	r := f.replica(rec.ID)
	before := r.Heads()
	must(t, r.Choose("q1", "sms", true))
	_, err = f.edit(ben, rec.ID, r, before)
	must(t, err)
	f.a = f.open()
	got, _ := f.a.Record(rec.ID)
	checkBy("in the history after a reopen, an edit and a restart", got.History[0].Provenance)
	if ps := provOf(t, f.a, rec.ID); len(ps) != 1 || ps[cellName("q1", question.CellChoice, "")].By != "ben" {
		t.Fatalf("the new generation's provenance is %v, want only Ben's choice", ps)
	}
}

// TestDamagedProvenanceRecord: a provenance record that cannot be read
// costs its attribution only (the draft loads); an envelope whose framing
// is damaged costs its decision only (the neighbour loads).
func TestDamagedProvenanceRecord(t *testing.T) {
	tests := []struct {
		name    string
		damage  func([]byte) []byte
		damaged bool
	}{
		{"unreadable record", func(b []byte) []byte {
			c := slices.Clone(b)
			c[len("AcPv")+2] = '!' // inside the JSON record
			return c
		}, false},
		{"unknown version", func(b []byte) []byte {
			return []byte(strings.Replace(string(b), `"v":1`, `"v":9`, 1))
		}, false},
		{"framing cut", func(b []byte) []byte { return b[:len("AcPv")+3] }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			one, two := f.create("one", provDef()), f.create("two", provDef())
			for _, id := range []string{one.ID, two.ID} {
				r := f.replica(id)
				before := r.Heads()
				must(t, r.SetMark("q1", "email", "easy", marks.Yes))
				_, err := f.edit(ana, id, r, before)
				must(t, err)
			}
			sd, err := f.store.LoadDocument(ctx, "plan-1")
			must(t, err)
			chunks := sd.Drafts[one.ID].Chunks
			last := chunks[len(chunks)-1]
			if !strings.HasPrefix(string(last), "AcPv") {
				t.Fatalf("the edit's chunk is stored without its provenance: % x", last[:8])
			}
			// Replace the decision's draft by the same with the last chunk damaged.
			must(t, f.store.Commit(ctx, "plan-1", &persist.Write{Drafts: []persist.DraftPut{{Decision: one.ID, Chunk: sd.Drafts[one.ID].Snapshot, Snapshot: true}}}))
			for i, c := range chunks {
				if i == len(chunks)-1 {
					c = tc.damage(c)
				}
				must(t, f.store.Commit(ctx, "plan-1", &persist.Write{Drafts: []persist.DraftPut{{Decision: one.ID, Chunk: c}}}))
			}
			f.a = f.open()
			if _, err := f.a.Provenance(two.ID); err != nil || len(provOf(t, f.a, two.ID)) != 1 {
				t.Fatalf("the neighbour lost its provenance: %v", err)
			}
			dr, _, err := f.a.Draft(one.ID)
			if tc.damaged {
				mustReason(t, err, question.Unavailable)
				return
			}
			must(t, err)
			if dr.Questions["q1"].Marks["email/easy"] != marks.Yes {
				t.Fatal("the draft lost its value")
			}
			if ps := provOf(t, f.a, one.ID); len(ps) != 0 {
				t.Fatalf("a damaged record still gave provenance %v", ps)
			}
		})
	}
}

// TestProvenanceProperty: random sequences of edits by three members
// (marks, choices, written answers, and edits whose churn rebases the
// decision), saves, reopens and restarts, over several decisions of which
// only one document stays live (the others are parked), on a real bbolt
// file. After every step each value of the current draft is attributed to
// the member whose accepted edit last changed it, and holds the value the
// draft reads; each saved answer, in the record or its history, keeps the
// attribution it had at its save.
func TestProvenanceProperty(t *testing.T) {
	testutil.WithRapidChecks(20, func() {
		rapid.Check(t, func(rt *rapid.T) {
			dir, err := os.MkdirTemp("", "accord-prov-")
			if err != nil {
				rt.Fatal(err)
			}
			defer os.RemoveAll(dir)
			p := &provProp{t: rt, path: filepath.Join(dir, "accord.db"), now: time.Date(2026, 10, 19, 9, 0, 0, 0, time.UTC),
				model: map[string]map[string]string{}, saved: map[string]map[uint64]map[string]string{}}
			p.reopen()
			defer p.st.Close()
			for _, key := range []string{"a", "b", "c"} {
				out, err := p.a.Create(ctx, ana, []question.CreateRequest{{Key: key, Origin: question.FromPlanner, Definition: provDef()}})
				if err != nil {
					rt.Fatal(err)
				}
				p.ids = append(p.ids, out[0].Record.ID)
				p.model[out[0].Record.ID] = map[string]string{}
			}
			for range rapid.IntRange(1, 25).Draw(rt, "steps") {
				p.step()
				p.check()
			}
		})
	})
}

type provProp struct {
	t    *rapid.T
	path string
	st   *boltstore.Store
	a    *question.Authority
	now  time.Time
	n    int
	ids  []string
	// model is, per decision, the member who last changed each value of
	// the current draft; saved the same at each save, by generation.
	model map[string]map[string]string
	saved map[string]map[uint64]map[string]string
}

func (p *provProp) reopen() {
	if p.st != nil {
		if err := p.st.Close(); err != nil {
			p.t.Fatal(err)
		}
	}
	st, err := boltstore.Open(p.path, &boltstore.Options{NoSync: true})
	if err != nil {
		p.t.Fatal(err)
	}
	p.st = st
	p.a, err = question.NewAuthority(ctx, question.Options{Store: st, Doc: "plan-1", LiveDecisions: 1,
		Now:   func() time.Time { p.now = p.now.Add(time.Second); return p.now },
		NewID: func() string { p.n++; return fmt.Sprintf("id%d", p.n) }})
	if err != nil {
		p.t.Fatalf("the store does not load again: %v", err)
	}
}

// values reads every value of a draft under its provenance name.
func draftValues(dr crdt.Draft) map[string]string {
	out := map[string]string{}
	q1 := dr.Questions["q1"]
	out[cellName("q1", question.CellChoice, "")] = strings.Join(q1.Choices, ",")
	for k, m := range q1.Marks {
		out[cellName("q1", question.CellMark, k)] = string(m)
	}
	for _, o := range []string{"web", "app"} {
		v := ""
		if slices.Contains(dr.Questions["q2"].Choices, o) {
			v = question.ChoiceChosen
		}
		out[cellName("q2", question.CellChoice, o)] = v
	}
	out[cellName("q3", question.CellText, "")] = dr.Questions["q3"].Text
	return out
}

func (p *provProp) step() {
	t := p.t
	id := rapid.SampledFrom(p.ids).Draw(t, "decision")
	switch rapid.SampledFrom([]string{"edit", "edit", "edit", "edit", "churn", "submit", "reopen", "restart"}).Draw(t, "action") {
	case "edit", "churn":
		who := rapid.SampledFrom([]question.Member{ana, ben, cleo}).Draw(t, "member")
		saved, err := p.a.Save(id)
		if err != nil {
			t.Fatal(err)
		}
		r, err := crdt.Load(saved, nil, crdt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		base := r.Heads()
		before, err := r.Draft()
		if err != nil {
			t.Fatal(err)
		}
		touched := map[string]bool{}
		for range rapid.IntRange(1, 3).Draw(t, "ops") {
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 0:
				o, c := rapid.SampledFrom([]string{"email", "sms"}).Draw(t, "option"), rapid.SampledFrom([]string{"cheap", "easy"}).Draw(t, "criterion")
				_ = r.SetMark("q1", o, c, rapid.SampledFrom([]marks.Mark{marks.Yes, marks.Partly, marks.No, marks.Cleared}).Draw(t, "mark"))
				touched[cellName("q1", question.CellMark, o+"/"+c)] = true
			case 1:
				_ = r.Choose("q1", rapid.SampledFrom([]string{"email", "sms"}).Draw(t, "choice"), true)
				touched[cellName("q1", question.CellChoice, "")] = true
			case 2:
				o := rapid.SampledFrom([]string{"web", "app"}).Draw(t, "channel")
				_ = r.Choose("q2", o, rapid.Bool().Draw(t, "on"))
				touched[cellName("q2", question.CellChoice, o)] = true
			case 3:
				_ = r.SetText("q3", rapid.SampledFrom([]string{"", "Cheap.", "Easy.", "Both."}).Draw(t, "text"))
				touched[cellName("q3", question.CellText, "")] = true
			}
		}
		if rapid.Bool().Draw(t, "churn") {
			// History far beyond the values: the authority rebases.
			_ = r.SpliceText("q3", 0, 0, strings.Repeat("z", 4500))
			_ = r.SpliceText("q3", 0, 4500, "")
		}
		ch, err := r.ChangesSince(base)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.a.Edit(ctx, who, id, ch)
		refusedOK(t, err)
		if err != nil {
			return
		}
		after, err := r.Draft()
		if err != nil {
			t.Fatal(err)
		}
		bv, av := draftValues(before), draftValues(after)
		for cell := range touched {
			if bv[cell] != av[cell] {
				p.model[id][cell] = who.Login
			}
		}
	case "submit":
		_, heads, err := p.a.Draft(id)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.a.Submit(ctx, ana, []question.SubmitRequest{{ID: id, Heads: heads}})
		refusedOK(t, err)
		if err == nil && out[0].Err == nil {
			if p.saved[id] == nil {
				p.saved[id] = map[uint64]map[string]string{}
			}
			p.saved[id][out[0].Record.Answer.Generation] = maps2(p.model[id])
		}
	case "reopen":
		_, err := p.a.Reopen(ctx, ben, id, 0)
		refusedOK(t, err)
		if err == nil {
			p.model[id] = map[string]string{}
		}
	case "restart":
		p.reopen()
	}
}

func maps2(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func attribution(ps []question.CellProvenance) map[string]string {
	out := map[string]string{}
	for _, c := range ps {
		out[cellName(c.Question, c.Kind, c.Cell)] = c.By
	}
	return out
}

func (p *provProp) check() {
	t := p.t
	for _, id := range p.ids {
		ps, err := p.a.Provenance(id)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := attribution(ps), p.model[id]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("decision %s is attributed %v, want %v", id, got, want)
		}
		dr, _, err := p.a.Draft(id)
		if err != nil {
			t.Fatal(err)
		}
		vals := draftValues(dr)
		for _, c := range ps {
			if c.Kind != question.CellText && vals[cellName(c.Question, c.Kind, c.Cell)] != c.Value {
				t.Fatalf("decision %s: %s/%s/%s reads %q, provenance says %q", id, c.Question, c.Kind, c.Cell, vals[cellName(c.Question, c.Kind, c.Cell)], c.Value)
			}
		}
		rec, _ := p.a.Record(id)
		answers := map[uint64][]question.CellProvenance{}
		if rec.Answer != nil {
			answers[rec.Answer.Generation] = rec.Answer.Provenance
		}
		for _, h := range rec.History {
			answers[h.Generation] = h.Provenance
		}
		for g, want := range p.saved[id] {
			if got := attribution(answers[g]); fmt.Sprint(got) != fmt.Sprint(want) {
				raw, _ := json.Marshal(answers[g])
				t.Fatalf("decision %s: the answer saved at generation %d is attributed %s, want %v", id, g, raw, want)
			}
		}
	}
}
