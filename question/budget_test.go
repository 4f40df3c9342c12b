package question_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
)

// fatalT is what the fixtures below need of a *testing.T or *rapid.T.
type fatalT interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// boltFixture is an authority over a real bbolt file that can be closed
// and opened again.
type boltFixture struct {
	t    fatalT
	path string
	st   *boltstore.Store
	a    *question.Authority
	now  time.Time
	n    int
	// quiet opens the authority with Options.QuietRebase.
	quiet bool
}

func newBoltFixture(t *testing.T) *boltFixture {
	t.Helper()
	f := openBoltFixture(t, t.TempDir())
	t.Cleanup(f.close)
	return f
}

// openBoltFixture opens a fresh store file in dir.
func openBoltFixture(t fatalT, dir string) *boltFixture {
	t.Helper()
	f := &boltFixture{t: t, path: filepath.Join(dir, "accord.db"), now: time.Date(2026, 10, 19, 9, 0, 0, 0, time.UTC)}
	f.reopen()
	return f
}

func (f *boltFixture) close() {
	if f.st != nil {
		f.st.Close()
		f.st = nil
	}
}

// reopen closes the store (if open) and opens the file again with a fresh
// authority, as a restarted server does.
func (f *boltFixture) reopen() {
	f.t.Helper()
	if f.st != nil {
		if err := f.st.Close(); err != nil {
			f.t.Fatal(err)
		}
	}
	// NoSync: the file is closed and opened again in this process, which
	// reads what was written whether or not it reached the disk; an fsync
	// per command would make these tests wait on the disk, not the code.
	st, err := boltstore.Open(f.path, &boltstore.Options{NoSync: true})
	if err != nil {
		f.t.Fatal(err)
	}
	f.st = st
	a, err := question.NewAuthority(context.Background(), question.Options{
		Store: st, Doc: "plan-1",
		Now:         func() time.Time { f.now = f.now.Add(time.Second); return f.now },
		NewID:       func() string { f.n++; return fmt.Sprintf("id%d", f.n) },
		QuietRebase: f.quiet,
	})
	if err != nil {
		f.t.Fatalf("the store does not load again: %v", err)
	}
	f.a = a
}

// member is a replica of one decision that follows the protocol: it sends
// its changes since the accepted heads, and replaces its document with the
// authority's whole document when told the history was rebased.
type member struct {
	f        *boltFixture
	id       string
	doc      *crdt.Doc
	accepted crdt.Heads
	rebases  int
}

func (f *boltFixture) member(id string) *member {
	f.t.Helper()
	m := &member{f: f, id: id}
	m.reload()
	return m
}

func (m *member) reload() {
	m.f.t.Helper()
	saved, err := m.f.a.Save(m.id)
	if err != nil {
		m.f.t.Fatal(err)
	}
	if m.doc, err = crdt.Load(saved, nil, crdt.Options{}); err != nil {
		m.f.t.Fatal(err)
	}
	m.accepted = m.doc.Heads()
}

// send sends the replica's edits; on a refusal with reset it reloads.
func (m *member) send(who question.Member) (question.Edited, error) {
	m.f.t.Helper()
	ch, err := m.doc.ChangesSince(m.accepted)
	if err != nil {
		m.f.t.Fatal(err)
	}
	ed, err := m.f.a.Edit(context.Background(), who, m.id, ch)
	var r *question.Refusal
	switch {
	case errors.As(err, &r):
		if r.Reset {
			m.reload()
		}
		return ed, err
	case err != nil:
		m.f.t.Fatal(err)
	case ed.Rebased:
		m.rebases++
		m.reload()
	default:
		m.accepted = ed.Heads
	}
	if !ed.Heads.Equal(m.doc.Heads()) {
		m.f.t.Fatalf("accepted heads %v, replica at %v", ed.Heads, m.doc.Heads())
	}
	return ed, nil
}

func answer(n int, seed int) string {
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "%d: the onboarding flow should ", seed)
	}
	return b.String()[:n]
}

// TestLongWrittenAnswerKeepsLoading: a written answer replaced six times
// with ~99,000 characters, accepted edit by edit, would grow a history
// that no longer loads (99,000 operations and 198,000 for each
// replacement after, 1,089,000: "more than 1048576 operations"); the
// authority rebases the decision's document as its history grows, so
// every edit is accepted, dozens of small ones follow, the store opens
// again after a restart with the same draft, and replacements after the
// restart are rebased too.
func TestLongWrittenAnswerKeepsLoading(t *testing.T) {
	t.Parallel()
	f := newBoltFixture(t)
	out, err := f.a.Create(context.Background(), ana, []question.CreateRequest{{Key: "w", Origin: question.FromPlanner, Definition: writtenDef()}})
	must(t, err)
	id := out[0].Record.ID
	m := f.member(id)
	for i := range 6 {
		must(t, m.doc.SetText("q1", answer(99_000, i)))
		if _, err := m.send(ana); err != nil {
			t.Fatalf("replacement %d refused: %v", i+1, err)
		}
	}
	if m.rebases < 2 {
		t.Fatalf("6 replacements of 99,000 characters rebased %d times, want at least 2", m.rebases)
	}
	for i := range 50 {
		text := m.doc
		dr, err := text.Draft()
		must(t, err)
		cur := dr.Questions["q1"].Text
		must(t, m.doc.SpliceText("q1", len([]rune(cur))/2, 1, fmt.Sprint(i%10)))
		if _, err := m.send(ben); err != nil {
			t.Fatalf("small edit %d refused: %v", i+1, err)
		}
	}
	want, heads, err := f.a.Draft(id)
	must(t, err)
	f.reopen()
	got, heads2, err := f.a.Draft(id)
	must(t, err)
	if !got.Equal(want) || !heads.Equal(heads2) {
		t.Fatal("the draft after a restart differs from the acknowledged one")
	}
	// And it keeps taking whole replacements after the restart, and
	// rebasing them.
	m.reload()
	before := m.rebases
	for i := range 2 {
		must(t, m.doc.SetText("q1", answer(99_000, 100+i)))
		if _, err := m.send(ana); err != nil {
			t.Fatalf("replacement after restart refused: %v", err)
		}
	}
	if m.rebases == before {
		t.Fatal("2 replacements of 99,000 characters after the restart were not rebased")
	}
	f.reopen()
}

// TestEditAgainstRebasedHistoryIsStale: a member who edited the old
// history while another member's edit rebased the document is refused
// with stale and reset; after loading the rebased document and redoing
// the edit it is accepted. Changes since old heads are refused as stale
// too, so a server knows to send the whole document.
func TestEditAgainstRebasedHistoryIsStale(t *testing.T) {
	t.Parallel()
	f := newBoltFixture(t)
	out, err := f.a.Create(context.Background(), ana, []question.CreateRequest{{Key: "w", Origin: question.FromPlanner, Definition: writtenDef()}})
	must(t, err)
	id := out[0].Record.ID
	a, b := f.member(id), f.member(id)
	oldHeads := b.accepted
	for i := 0; a.rebases == 0; i++ {
		must(t, a.doc.SetText("q1", answer(99_000, i)))
		_, err := a.send(ana)
		must(t, err)
		if i > 10 {
			t.Fatal("no rebase after 10 replacements")
		}
	}
	must(t, b.doc.SetText("q1", "ben's words"))
	_, err = b.send(ben)
	mustReason(t, err, question.Stale)
	if _, err := f.a.ChangesSince(id, oldHeads); question.ReasonOf(err) != question.Stale {
		t.Fatalf("ChangesSince old heads = %v, want stale", err)
	}
	must(t, b.doc.SetText("q1", "ben's words"))
	ed, err := b.send(ben)
	must(t, err)
	if ed.Draft.Questions["q1"].Text != "ben's words" {
		t.Fatalf("draft %q", ed.Draft.Questions["q1"].Text)
	}
}

// TestEditPastTheLoadBudgetIsTooLarge: a batch holding more operations
// than a decision's document may is refused with too_large and reset, and
// nothing is stored.
func TestEditPastTheLoadBudgetIsTooLarge(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	rec := f.create("w", writtenDef())
	r := f.replica(rec.ID)
	h := r.Heads()
	for i := range 6 {
		must(t, r.SetText("q1", answer(99_000, i)))
	}
	before, _ := f.store.LoadDocument(ctx, "plan-1")
	_, err := f.edit(ana, rec.ID, r, h)
	mustReason(t, err, question.TooLarge)
	if !errors.Is(err, question.ErrTooLarge) || !errors.Is(err, crdt.ErrTooLarge) {
		t.Fatalf("refusal %v does not match its sentinels", err)
	}
	var rf *question.Refusal
	if errors.As(err, &rf); !rf.Reset {
		t.Fatal("a too_large edit must reset the replica")
	}
	after, _ := f.store.LoadDocument(ctx, "plan-1")
	if len(after.Drafts[rec.ID].Chunks) != len(before.Drafts[rec.ID].Chunks) {
		t.Fatal("a refused edit was stored")
	}
	var _ persist.Store = f.store
}

// TestValuesPastTheLimitsAreTooLarge: when a decision's values alone would
// pass what crdt.Load takes (here eleven written answers of 96,000
// characters, 1,056,000 operations even after a rebase), the edit that
// would take it there is refused with too_large and reset, nothing is
// stored, and the document still loads after a restart.
func TestValuesPastTheLimitsAreTooLarge(t *testing.T) {
	t.Parallel()
	f := newBoltFixture(t)
	var def question.Definition
	for i := range 11 {
		def.Questions = append(def.Questions, question.Question{Text: fmt.Sprint("Part ", i+1, "?"), Response: question.Text, Options: []question.Option{}})
	}
	out, err := f.a.Create(context.Background(), ana, []question.CreateRequest{{Key: "big", Origin: question.FromPlanner, Definition: def}})
	must(t, err)
	rec := out[0].Record
	m := f.member(rec.ID)
	qs := rec.Definition.Questions
	for i, q := range qs[:10] {
		must(t, m.doc.SetText(q.ID, answer(96_000, i)))
		if _, err := m.send(ana); err != nil {
			t.Fatalf("answer %d refused: %v", i+1, err)
		}
	}
	// The eleventh, sent as m.send would but without the reload that
	// follows a reset, which this test has no use for.
	must(t, m.doc.SetText(qs[10].ID, answer(96_000, 10)))
	ch, err := m.doc.ChangesSince(m.accepted)
	must(t, err)
	_, err = f.a.Edit(context.Background(), ana, rec.ID, ch)
	mustReason(t, err, question.TooLarge)
	var r *question.Refusal
	if !errors.As(err, &r) || !r.Reset {
		t.Fatalf("the edit past the limits is refused without a reset: %v", err)
	}
	want, heads, err := f.a.Draft(rec.ID)
	must(t, err)
	if want.Questions[qs[10].ID].Text != "" {
		t.Fatal("the refused answer was kept")
	}
	f.reopen()
	got, heads2, err := f.a.Draft(rec.ID)
	must(t, err)
	if !got.Equal(want) || !heads.Equal(heads2) {
		t.Fatal("the draft after a restart differs from the acknowledged one")
	}
}
