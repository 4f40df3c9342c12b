package question_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
)

// TestAuditExportReplays: a decision edited by three members, saved,
// reopened, edited and saved again, reopened and edited across a
// compaction, then discarded, is
// exported on a real bbolt file after a restart; every line is a valid
// event of the schema's version, and replaying the export alone rebuilds
// the decision's status, generation, saved answers with their
// attribution, and who set each value of the current draft.
func TestAuditExportReplays(t *testing.T) {
	f := newBoltFixture(t)
	out, err := f.a.Create(ctx, ana, []question.CreateRequest{{Key: "k", Origin: question.FromPlanner, Definition: provDef()}})
	must(t, err)
	id := out[0].Record.ID
	edit := func(who question.Member, change func(*crdt.Doc) error) {
		t.Helper()
		m := f.member(id)
		must(t, change(m.doc))
		_, err := m.send(who)
		must(t, err)
	}
	edit(ana, func(d *crdt.Doc) error { return d.SetMark("q1", "email", "easy", marks.Yes) })
	edit(ben, func(d *crdt.Doc) error { return d.Choose("q1", "sms", true) })
	edit(cleo, func(d *crdt.Doc) error { return d.Choose("q2", "web", true) })
	edit(ana, func(d *crdt.Doc) error { return d.SetText("q3", "Cheap and easy.") })
	submit := func() {
		t.Helper()
		_, heads, err := f.a.Draft(id)
		must(t, err)
		res, err := f.a.Submit(ctx, ben, []question.SubmitRequest{{ID: id, Heads: heads}})
		must(t, err)
		must(t, res[0].Err)
	}
	submit()
	_, err = f.a.Reopen(ctx, cleo, id, 0)
	must(t, err)
	edit(cleo, func(d *crdt.Doc) error { return d.Choose("q1", "email", true) })
	edit(ana, func(d *crdt.Doc) error { return d.Choose("q2", "app", true) })
	edit(ben, func(d *crdt.Doc) error { return d.SetText("q3", "Reconsidered.") })
	submit()
	_, err = f.a.Reopen(ctx, ana, id, 0)
	must(t, err)
	edit(ben, func(d *crdt.Doc) error { return d.SetMark("q1", "sms", "cheap", marks.No) })
	for i := range 100 { // enough to compact the draft: Ben's mark is then in its snapshot's attribution only
		who := []question.Member{ana, cleo}[i%2]
		edit(who, func(d *crdt.Doc) error { return d.SetMark("q1", "email", "easy", marks.All[i%3]) })
	}
	_, err = f.a.Discard(ctx, ana, id)
	must(t, err)
	f.reopen()

	x, err := f.a.Audit(id)
	must(t, err)
	var buf bytes.Buffer
	must(t, x.WriteTo(ctx, &buf))
	types := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	for sc.Scan() {
		var e question.AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.V != question.AuditVersion || e.Decision != id {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		types[e.Type]++
	}
	for _, want := range []string{question.AuditDecision, question.AuditEdit, question.AuditSave, question.AuditReopen, question.AuditDiscard, question.AuditEnd} {
		if types[want] == 0 {
			t.Fatalf("no %s event in the export: %v", want, types)
		}
	}
	if types[question.AuditSave] != 2 || types[question.AuditReopen] != 2 {
		t.Fatalf("events %v, want two saves and two reopens", types)
	}
	// Every edit is there, the ones before the compaction too, and no
	// attribution stands in for them.
	if types[question.AuditEdit] != 108 || types[question.AuditAttribution] != 0 {
		t.Fatalf("events %v, want 108 edits and no attribution", types)
	}

	got, err := question.ReplayAudit(bytes.NewReader(buf.Bytes()))
	must(t, err)
	rec, _ := f.a.Record(id)
	if got.Status != rec.Status || got.Generation != rec.Generation {
		t.Fatalf("replayed %s at %d, the decision is %s at %d", got.Status, got.Generation, rec.Status, rec.Generation)
	}
	want, err := f.a.Provenance(id)
	must(t, err)
	if !sameCells(got.Provenance, want) || len(want) == 0 {
		t.Fatalf("replayed provenance %+v, want %+v", got.Provenance, want)
	}
	if len(got.Answers) != len(rec.History) {
		t.Fatalf("replayed %d answers, the history holds %d", len(got.Answers), len(rec.History))
	}
	for _, h := range rec.History {
		a := got.Answers[h.Generation]
		if a.By != h.By || !a.At.Equal(h.At) || !sameCells(a.Provenance, h.Provenance) || fmt.Sprint(a.Answers) != fmt.Sprint(h.Answers) {
			t.Fatalf("replayed answer of generation %d %+v, want %+v", h.Generation, a, h.Answer)
		}
	}

	// A cut export, or one of another version, is refused.
	lines := strings.SplitAfter(strings.TrimSpace(buf.String()), "\n")
	for name, bad := range map[string]string{
		"cut short":     strings.Join(lines[:len(lines)-1], ""),
		"other version": strings.Replace(buf.String(), `"v":1`, `"v":2`, 1),
		"not json":      "{" + buf.String(),
	} {
		if _, err := question.ReplayAudit(strings.NewReader(bad)); !errors.Is(err, question.ErrAudit) {
			t.Fatalf("%s: replay gave %v", name, err)
		}
	}
}

func sameCells(a, b []question.CellProvenance) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Generation != y.Generation || x.Question != y.Question || x.Kind != y.Kind || x.Cell != y.Cell ||
			x.Value != y.Value || x.By != y.By || !x.At.Equal(y.At) || x.Change != y.Change || x.Was != y.Was || x.WasBy != y.WasBy {
			return false
		}
	}
	return true
}

// auditEvents exports decision id and returns its events.
func auditEvents(t *testing.T, a *question.Authority, id string) ([]question.AuditEvent, []byte) {
	t.Helper()
	x, err := a.Audit(id)
	must(t, err)
	var buf bytes.Buffer
	must(t, x.WriteTo(ctx, &buf))
	var out []question.AuditEvent
	sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e question.AuditEvent
		must(t, json.Unmarshal(sc.Bytes(), &e))
		out = append(out, e)
	}
	return out, buf.Bytes()
}

// TestAuditExportKeepsEveryEdit: edits by several members across
// compactions, a rebase and restarts on a real bbolt file each appear once
// in the export, in order, by their member; the replay rebuilds the
// authority's provenance.
func TestAuditExportKeepsEveryEdit(t *testing.T) {
	f := newBoltFixture(t)
	out, err := f.a.Create(ctx, ana, []question.CreateRequest{{Key: "k", Origin: question.FromPlanner, Definition: provDef()}})
	must(t, err)
	id := out[0].Record.ID
	var want []string // who made each accepted edit, in order
	m := f.member(id)
	send := func(who question.Member) {
		t.Helper()
		ed, err := m.send(who)
		must(t, err)
		if len(ed.Changes) > 0 || ed.Rebased {
			want = append(want, who.Login)
		}
	}
	for i := range 230 { // past two compactions
		who := []question.Member{ana, ben, cleo}[i%3]
		must(t, m.doc.SetMark("q1", "email", "easy", marks.All[i%3]))
		send(who)
		if i == 120 {
			f.reopen()
			m = f.member(id)
		}
	}
	must(t, m.doc.SpliceText("q3", 0, 0, strings.Repeat("x", 5000)))
	must(t, m.doc.SpliceText("q3", 0, 5000, ""))
	must(t, m.doc.SetMark("q1", "sms", "cheap", marks.Partly))
	ed, err := m.send(cleo)
	must(t, err)
	if !ed.Rebased {
		t.Fatal("the churning edit did not rebase the decision")
	}
	want = append(want, "cleo")
	_, err = f.a.AppendOption(ctx, ben, question.AppendRequest{ID: id, Question: "q1", Key: "k-push", Label: "Push"})
	must(t, err)
	want = append(want, "append")
	m.reload()
	must(t, m.doc.Choose("q1", "sms", true))
	send(ana)
	sd, err := f.st.LoadDocument(ctx, "plan-1")
	must(t, err)
	if n := len(sd.Drafts[id].Chunks); n >= len(want) {
		t.Fatalf("%d chunks stored for %d edits: the draft was never compacted", n, len(want))
	}
	f.reopen()

	events, raw := auditEvents(t, f.a, id)
	var got []string
	for _, e := range events {
		switch e.Type {
		case question.AuditAppend:
			if e.By != "ben" || e.At == nil || e.Key != "k-push" || e.Append == nil || e.Append.Kind != "option" {
				t.Fatalf("append event %+v, want Ben's option with its time", e)
			}
			got = append(got, "append")
		case question.AuditEdit:
			got = append(got, e.By)
		case question.AuditAttribution:
			t.Fatalf("an attribution event in the export of a decision with its whole log: %+v", e)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("edit events by %d members %v\nwant %d %v", len(got), got, len(want), want)
	}
	st, err := question.ReplayAudit(bytes.NewReader(raw))
	must(t, err)
	prov, err := f.a.Provenance(id)
	must(t, err)
	if !sameCells(st.Provenance, prov) {
		t.Fatalf("replayed provenance %+v, want %+v", st.Provenance, prov)
	}
}

// auditlessStore drops every audit row, as a store written before the
// audit log existed holds none.
type auditlessStore struct{ persist.Store }

func (s auditlessStore) Commit(ctx context.Context, doc string, w *persist.Write) error {
	c := *w
	c.Audit = nil
	return s.Store.Commit(ctx, doc, &c)
}

// TestAuditExportWithoutTheLog: a decision whose store holds no audit log
// (written before it existed) is exported from its stored draft: the
// attribution its compaction kept, then the edits since, and the replay
// still rebuilds the authority's provenance.
func TestAuditExportWithoutTheLog(t *testing.T) {
	a, err := question.NewAuthority(ctx, question.Options{Store: auditlessStore{memstore.New()}, Doc: "plan-1", CompactAfter: 4})
	must(t, err)
	out, err := a.Create(ctx, ana, []question.CreateRequest{{Key: "k", Origin: question.FromPlanner, Definition: provDef()}})
	must(t, err)
	id := out[0].Record.ID
	saved, err := a.Save(id)
	must(t, err)
	doc, err := crdt.Load(saved, nil, crdt.Options{})
	must(t, err)
	const edits = 60
	for i := range edits {
		before := doc.Heads()
		must(t, doc.SetMark("q1", "email", "easy", marks.All[i%3]))
		ch, err := doc.ChangesSince(before)
		must(t, err)
		_, err = a.Edit(ctx, []question.Member{ana, ben}[i%2], id, ch)
		must(t, err)
	}
	events, raw := auditEvents(t, a, id)
	types := map[string]int{}
	for _, e := range events {
		types[e.Type]++
	}
	if types[question.AuditAttribution] != 1 || types[question.AuditEdit] >= edits {
		t.Fatalf("events %v: want one attribution and the edits since the last compaction", types)
	}
	st, err := question.ReplayAudit(bytes.NewReader(raw))
	must(t, err)
	prov, err := a.Provenance(id)
	must(t, err)
	if !sameCells(st.Provenance, prov) {
		t.Fatalf("replayed provenance %+v, want %+v", st.Provenance, prov)
	}
}

// TestAuditExportTellsWhatWasWritten: every edit of a written answer
// carries, in the export, the text it inserted and deleted and where;
// the provenance of the answer names its last writer alone.
func TestAuditExportTellsWhatWasWritten(t *testing.T) {
	f := newBoltFixture(t)
	out, err := f.a.Create(ctx, ana, []question.CreateRequest{{Key: "k", Origin: question.FromPlanner, Definition: provDef()}})
	must(t, err)
	id := out[0].Record.ID
	m := f.member(id)
	type splice struct {
		pos, del int
		ins      string
		who      question.Member
	}
	edits := []splice{
		{0, 0, "Email is simplest.", ana},
		{9, 8, "cheapest", ben},  // "simplest" → "cheapest"
		{0, 6, "", cleo},         // "Email " deleted
		{11, 0, " — ça va", ana}, // non-ASCII, positions in characters
	}
	for _, e := range edits {
		must(t, m.doc.SpliceText("q3", e.pos, e.del, e.ins))
		if _, err := m.send(e.who); err != nil {
			t.Fatal(err)
		}
	}
	events, _ := auditEvents(t, f.a, id)
	type text struct {
		by, was, value string
		pos            int
	}
	var got []text
	for _, e := range events {
		for _, c := range e.Cells {
			if e.Type == question.AuditEdit && c.Kind == question.CellText {
				got = append(got, text{e.By, c.Was, c.Value, c.Pos})
			}
		}
	}
	want := []text{
		{"ana", "", "Email is simplest.", 0},
		{"ben", "simpl", "cheap", 9}, // the common "est" stays
		{"cleo", "Email ", "", 0},
		{"ana", "", " — ça va", 11},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("written edits in the export:\n got %+v\nwant %+v", got, want)
	}
	prov, err := f.a.Provenance(id)
	must(t, err)
	for _, c := range prov {
		if c.Kind == question.CellText && (c.By != "ana" || c.Value != "" || c.Was != "" || c.Pos != 0) {
			t.Fatalf("the written answer's provenance %+v, want Ana's last edit alone", c)
		}
	}
}
