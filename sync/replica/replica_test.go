package replica_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/wire"
)

const (
	minBackoff = 4 * time.Millisecond
	maxBackoff = 40 * time.Millisecond
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// connect dials the fake over loopback as login.
func connect(t testing.TB, s *fakeServer, login string, opts replica.Options) *replica.Client {
	t.Helper()
	if opts.Header == nil {
		opts.Header = http.Header{}
	}
	opts.Header.Set("X-Login", login)
	opts.Dialer = s.dial
	if opts.MinBackoff == 0 {
		opts.MinBackoff, opts.MaxBackoff = minBackoff, maxBackoff
	}
	c, err := replica.Dial(ctxT(t), "loopback:///decisions?doc="+docID, opts)
	if err != nil {
		t.Fatalf("dial as %s: %v", login, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ready waits until the client holds the decision's document.
func ready(t *testing.T, c *replica.Client, id string) {
	t.Helper()
	testutil.Eventually(t, "the decision's document", func() bool {
		_, _, err := c.Draft(id)
		return err == nil
	})
}

func draftOf(t *testing.T, c *replica.Client, id string) crdt.Draft {
	t.Helper()
	d, _, err := c.Draft(id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func flush(t *testing.T, c *replica.Client, ids ...string) {
	t.Helper()
	if err := c.Flush(ctxT(t), ids...); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

// events collects a client's events in the background.
type events struct {
	mu  sync.Mutex
	got []replica.Event
}

func collect(t *testing.T, c *replica.Client) *events {
	e := &events{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range c.Events() {
			e.mu.Lock()
			e.got = append(e.got, ev)
			e.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		c.Close()
		<-done
	})
	return e
}

func (e *events) find(match func(replica.Event) bool) (replica.Event, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.got {
		if match(ev) {
			return ev, true
		}
	}
	return replica.Event{}, false
}

func (e *events) kinds() []wire.Kind {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []wire.Kind
	for _, ev := range e.got {
		out = append(out, ev.Kind)
	}
	return out
}

func (e *events) wait(t *testing.T, what string, match func(replica.Event) bool) replica.Event {
	t.Helper()
	var ev replica.Event
	testutil.Eventually(t, what, func() bool {
		var ok bool
		ev, ok = e.find(match)
		return ok
	})
	return ev
}

func kind(k wire.Kind) func(replica.Event) bool {
	return func(e replica.Event) bool { return e.Kind == k }
}

func TestEditReachesServerAndPeers(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	ana := connect(t, s, "ana", replica.Options{})
	ben := connect(t, s, "ben", replica.Options{})
	benEvents := collect(t, ben)
	ready(t, ana, id)
	ready(t, ben, id)

	if err := ana.SetMark(id, "pick", "bolt", "cost", marks.Yes); err != nil {
		t.Fatal(err)
	}
	if err := ana.Choose(id, "pick", "bolt", true); err != nil {
		t.Fatal(err)
	}
	// Local at once.
	if d := draftOf(t, ana, id); d.Questions["pick"].Marks["bolt/cost"] != marks.Yes {
		t.Fatalf("local draft %+v lacks the mark", d.Questions["pick"])
	}
	flush(t, ana, id)
	if got := s.draft(id).Questions["pick"]; got.Marks["bolt/cost"] != marks.Yes || !slices.Equal(got.Choices, []string{"bolt"}) {
		t.Fatalf("server draft %+v", got)
	}
	heads, unsent, err := ana.Accepted(id)
	if err != nil || unsent || !heads.Equal(s.heads(id)) {
		t.Fatalf("accepted %v unsent %v err %v; server at %v", heads, unsent, err, s.heads(id))
	}
	testutil.Eventually(t, "ben to see ana's mark", func() bool {
		return draftOf(t, ben, id).Questions["pick"].Marks["bolt/cost"] == marks.Yes
	})
	ev := benEvents.wait(t, "ben's changes event", kind(wire.KindChanges))
	if ev.ID != id || ev.By != "ana" {
		t.Fatalf("changes event %+v", ev)
	}
	if login, write := ana.Member(); login != "ana" || !write {
		t.Fatalf("member %q write %v", login, write)
	}
}

// TestEditCoalescing: while an edit is in flight, later local changes wait
// and all go in the next edit.
func TestEditCoalescing(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	s.mu.Unlock()
	ana := connect(t, s, "ana", replica.Options{})
	ready(t, ana, id)

	if err := ana.SetText(id, "note", "a"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the first edit", func() bool { return s.countFrames(wire.KindEdit) == 1 })
	for _, txt := range []string{"ab", "abc", "abcd"} {
		if err := ana.SetText(id, "note", txt); err != nil {
			t.Fatal(err)
		}
	}
	if err := ana.SetMark(id, "pick", "pg", "ops", marks.Partly); err != nil {
		t.Fatal(err)
	}
	if err := ana.SpliceText(id, "note", 4, 0, "!"); err != nil {
		t.Fatal(err)
	}
	gate <- struct{}{} // the first edit's reply
	testutil.Eventually(t, "the second edit", func() bool { return s.countFrames(wire.KindEdit) == 2 })
	gate <- struct{}{}
	flush(t, ana, id)
	if n := s.countFrames(wire.KindEdit); n != 2 {
		t.Fatalf("%d edits sent, want 2 (one in flight, then the rest coalesced)", n)
	}
	got := s.draft(id)
	if got.Questions["note"].Text != "abcd!" || got.Questions["pick"].Marks["pg/ops"] != marks.Partly {
		t.Fatalf("server draft %+v", got.Questions)
	}
}

// TestRefusedEditResets (M2): a refused edit returns the replica to the
// accepted draft, keeping the accepted edits.
func TestRefusedEditResets(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	ana := connect(t, s, "ana", replica.Options{})
	anaEvents := collect(t, ana)
	ready(t, ana, id)

	if err := ana.SetText(id, "note", "kept"); err != nil {
		t.Fatal(err)
	}
	flush(t, ana, id)

	s.mu.Lock()
	s.refuseEdits = true
	s.mu.Unlock()
	if err := ana.SetMark(id, "pick", "bolt", "ops", marks.No); err != nil {
		t.Fatal(err)
	}
	err := ana.Flush(ctxT(t), id)
	var ref *question.Refusal
	if !errors.Is(err, question.ErrInvalid) || !errors.As(err, &ref) || !ref.Reset {
		t.Fatalf("flush after a refused edit: %v, want an invalid refusal with reset", err)
	}
	d := draftOf(t, ana, id)
	if d.Questions["note"].Text != "kept" || len(d.Questions["pick"].Marks) != 0 {
		t.Fatalf("after the reset the draft is %+v, want the accepted one", d.Questions)
	}
	if _, unsent, _ := ana.Accepted(id); unsent {
		t.Fatal("the reset replica still has unsent changes")
	}
	flush(t, ana, id) // a refusal is reported once
	ev := anaEvents.wait(t, "the refusal event", kind(replica.KindEditRefused))
	if ev.ID != id || !errors.Is(ev.Err, question.ErrInvalid) {
		t.Fatalf("refusal event %+v", ev)
	}

	// The replica goes on working after the reset.
	s.mu.Lock()
	s.refuseEdits = false
	s.mu.Unlock()
	if err := ana.SetMark(id, "pick", "bolt", "ops", marks.Yes); err != nil {
		t.Fatal(err)
	}
	flush(t, ana, id)
	if got := s.draft(id).Questions; got["pick"].Marks["bolt/ops"] != marks.Yes || got["note"].Text != "kept" {
		t.Fatalf("server draft %+v", got)
	}
}

// TestAuthorityRefusalResets: an edit of a decision settled meanwhile is
// refused by the authority itself, and the replica returns to its draft.
func TestAuthorityRefusalResets(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	ana := connect(t, s, "ana", replica.Options{})
	ready(t, ana, id)
	if err := ana.SetText(id, "note", "text"); err != nil {
		t.Fatal(err)
	}
	if err := ana.Choose(id, "pick", "pg", true); err != nil {
		t.Fatal(err)
	}
	flush(t, ana, id)

	// Settle behind the client's back, so that its record still says open.
	edits := s.countFrames(wire.KindEdit)
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	_, heads, _ := s.auth.Draft(id)
	if _, err := s.auth.Submit(context.Background(), question.Member{Login: "ben", Write: true},
		[]question.SubmitRequest{{ID: id, Heads: heads}}); err != nil {
		s.mu.Unlock()
		t.Fatal(err)
	}
	s.mu.Unlock()
	if err := ana.SetText(id, "note", "too late"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the late edit", func() bool { return s.countFrames(wire.KindEdit) == edits+1 })
	gate <- struct{}{}
	err := ana.Flush(ctxT(t), id)
	if !errors.Is(err, question.ErrResolved) {
		t.Fatalf("flush: %v, want a resolved refusal", err)
	}
	if got := draftOf(t, ana, id).Questions["note"].Text; got != "text" {
		t.Fatalf("after the reset the text is %q, want the accepted %q", got, "text")
	}
}

func TestReaderCannotEdit(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	rita := connect(t, s, "rita", replica.Options{Header: http.Header{"X-Read-Only": {"1"}}})
	ready(t, rita, id)
	if err := rita.SetText(id, "note", "x"); !errors.Is(err, question.ErrForbidden) {
		t.Fatalf("reader's edit: %v, want forbidden", err)
	}
	if _, write := rita.Member(); write {
		t.Fatal("a reader reported as a writer")
	}
}

// TestReconnect (L11): a client that loses its connection backs off and
// redials; its hello lists the last accepted heads; it gets the edits
// others made meanwhile and pushes its own offline edits.
func TestReconnect(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	ana := connect(t, s, "ana", replica.Options{})
	anaEvents := collect(t, ana)
	ben := connect(t, s, "ben", replica.Options{})
	ready(t, ana, id)
	ready(t, ben, id)
	if err := ana.SetMark(id, "pick", "bolt", "cost", marks.Yes); err != nil {
		t.Fatal(err)
	}
	flush(t, ana, id)

	s.setDown("ana", true)
	s.drop("ana")
	testutil.Eventually(t, "ana to notice", func() bool { return !ana.Connected() })
	anaEvents.wait(t, "the reconnecting event", kind(replica.KindReconnecting))

	// Offline: ana edits locally, ben edits through the server.
	if err := ana.SetMark(id, "pick", "pg", "ops", marks.No); err != nil {
		t.Fatal(err)
	}
	if err := ana.Choose(id, "pick", "pg", true); err != nil {
		t.Fatal(err)
	}
	if err := ben.SetText(id, "note", "from ben"); err != nil {
		t.Fatal(err)
	}
	flush(t, ben, id)
	accepted, unsent, err := ana.Accepted(id)
	if err != nil || !unsent {
		t.Fatalf("offline: accepted %v unsent %v err %v", accepted, unsent, err)
	}
	_, displayed, _ := ana.Draft(id)

	before := len(s.dialTimes("ana"))
	testutil.Eventually(t, "several redials", func() bool { return len(s.dialTimes("ana")) >= before+5 })
	s.setDown("ana", false)
	testutil.Eventually(t, "ana to reconnect", ana.Connected)
	flush(t, ana, id)

	hellos := s.hellosOf("ana")
	have := hellos[len(hellos)-1].Have[id]
	if !slices.Equal(have, wireHeads(accepted)) {
		t.Fatalf("hello has %v, want the accepted heads %v (not the displayed %v)", have, wireHeads(accepted), wireHeads(displayed))
	}
	want := func(d crdt.Draft) bool {
		p := d.Questions["pick"]
		return p.Marks["bolt/cost"] == marks.Yes && p.Marks["pg/ops"] == marks.No &&
			slices.Equal(p.Choices, []string{"pg"}) && d.Questions["note"].Text == "from ben"
	}
	if d := s.draft(id); !want(d) {
		t.Fatalf("server draft %+v lacks an edit", d.Questions)
	}
	if d := draftOf(t, ana, id); !want(d) {
		t.Fatalf("ana's draft %+v lacks an edit", d.Questions)
	}
	testutil.Eventually(t, "ben to get ana's offline edits", func() bool { return want(draftOf(t, ben, id)) })
	testutil.Eventually(t, "the connected event after the reconnect", func() bool {
		ks := anaEvents.kinds()
		i := slices.Index(ks, replica.KindReconnecting)
		return i >= 0 && slices.Contains(ks[i:], replica.KindConnected)
	})

	// Backoff: every wait is at least half the doubled, capped delay.
	times := s.dialTimes("ana")
	for i := 1; i < len(times)-1; i++ {
		gap := times[i+1].Sub(times[i])
		floor := min(maxBackoff, minBackoff<<i) / 2
		if gap < floor {
			t.Errorf("redial %d came %v after the previous one, want at least %v", i+1, gap, floor)
		}
	}
}

// TestForwardOnlyDefinition (C5): a definition with fewer options or
// criteria than the held one never replaces it.
func TestForwardOnlyDefinition(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	ana := connect(t, s, "ana", replica.Options{})
	anaEvents := collect(t, ana)
	ready(t, ana, id)
	stale, _ := ana.Record(id)

	opt, def, repeated, err := ana.AppendOption(ctxT(t), id, "pick", "add-sqlite", "SQLite")
	if err != nil || repeated || opt.Label != "SQLite" {
		t.Fatalf("append: %+v %v %v", opt, repeated, err)
	}
	if n := len(def.Questions[0].Options); n != 3 {
		t.Fatalf("definition after the append has %d options", n)
	}
	again, _, repeated, err := ana.AppendOption(ctxT(t), id, "pick", "add-sqlite", "SQLite")
	if err != nil || !repeated || again.ID != opt.ID {
		t.Fatalf("repeated append: %+v %v %v", again, repeated, err)
	}
	crit, _, _, err := ana.AppendCriterion(ctxT(t), id, "pick", "add-speed", "Speed")
	if err != nil || crit.Label != "Speed" {
		t.Fatalf("append criterion: %+v %v", crit, err)
	}
	testutil.Eventually(t, "the appended option in the replica's draft", func() bool {
		return ana.SetMark(id, "pick", opt.ID, crit.ID, marks.Yes) == nil
	})
	optionsOf := func() (int, int) {
		rec, _ := ana.Record(id)
		return len(rec.Definition.Questions[0].Options), len(rec.Definition.Questions[0].Criteria)
	}
	if o, c := optionsOf(); o != 3 || c != 3 {
		t.Fatalf("held definition has %d options, %d criteria; want 3, 3", o, c)
	}

	// An older record and an older definition arrive: both are ignored.
	stale.Status = question.Open
	s.inject(&wire.Event{Header: wire.Header{Kind: wire.KindMeta}, ID: id, Record: &stale})
	s.inject(&wire.Event{Header: wire.Header{Kind: wire.KindOptionAdded}, ID: id, Definition: &stale.Definition})
	anaEvents.wait(t, "the injected option-added", func(e replica.Event) bool {
		return e.Kind == wire.KindOptionAdded && e.By == ""
	})
	if o, c := optionsOf(); o != 3 || c != 3 {
		t.Fatalf("an older definition replaced the held one: %d options, %d criteria", o, c)
	}
	// More options but fewer criteria is still older for that question.
	mixed := def
	mixed.Questions = slices.Clone(def.Questions)
	mixed.Questions[0].Options = append(slices.Clone(def.Questions[0].Options), question.Option{ID: "more", Label: "More"}, question.Option{ID: "most", Label: "Most"})
	mixed.Questions[0].Criteria = def.Questions[0].Criteria[:1]
	s.inject(&wire.Event{Header: wire.Header{Kind: wire.KindOptionAdded}, ID: id, Definition: &mixed, By: "mixed"})
	anaEvents.wait(t, "the mixed definition", func(e replica.Event) bool { return e.By == "mixed" })
	if o, c := optionsOf(); o != 3 || c != 3 {
		t.Fatalf("a definition with fewer criteria was adopted: %d options, %d criteria", o, c)
	}
	// A newer one is adopted.
	rec, _ := ana.Record(id)
	newer := rec
	newer.Definition.Questions = slices.Clone(rec.Definition.Questions)
	newer.Definition.Questions[0].Options = append(slices.Clone(rec.Definition.Questions[0].Options), question.Option{ID: "newer", Label: "Newer"})
	newer.Why = "newer"
	s.inject(&wire.Event{Header: wire.Header{Kind: wire.KindMeta}, ID: id, Record: &newer, By: "newer"})
	anaEvents.wait(t, "the newer record", func(e replica.Event) bool { return e.By == "newer" })
	if o, c := optionsOf(); o != 4 || c != 3 {
		t.Fatalf("a newer definition was not adopted: %d options, %d criteria", o, c)
	}
}

// TestDirPersistence: a restarted client restores drafts and unsent edits
// from Dir, offline, and pushes them on connecting.
func TestDirPersistence(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	dir := t.TempDir()
	first := connect(t, s, "ana", replica.Options{Dir: dir})
	ready(t, first, id)
	if err := first.SetMark(id, "pick", "bolt", "cost", marks.Partly); err != nil {
		t.Fatal(err)
	}
	flush(t, first, id)
	s.setDown("ana", true)
	s.drop("ana")
	testutil.Eventually(t, "the client to notice", func() bool { return !first.Connected() })
	if err := first.SetText(id, "note", "written offline"); err != nil {
		t.Fatal(err)
	}
	accepted, unsent, _ := first.Accepted(id)
	if !unsent {
		t.Fatal("the offline edit is not unsent")
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := first.SetText(id, "note", "after close"); !errors.Is(err, replica.ErrClosed) {
		t.Fatalf("edit after close: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 2 || !strings.HasSuffix(files[0], ".1.log") || !strings.HasSuffix(files[1], ".json") {
		t.Fatalf("dir holds %v, want one replica's snapshot and log", files)
	}

	// Without Background, Dial fails while the server is down.
	if _, err := replica.Dial(ctxT(t), "loopback:///?doc=plan", replica.Options{
		Dir: dir, Dialer: s.dial, Header: http.Header{"X-Login": {"ana"}},
	}); err == nil {
		t.Fatal("Dial succeeded with the server down")
	}

	second := connect(t, s, "ana", replica.Options{Dir: dir, Background: true})
	d := draftOf(t, second, id)
	if d.Questions["note"].Text != "written offline" || d.Questions["pick"].Marks["bolt/cost"] != marks.Partly {
		t.Fatalf("restored draft %+v", d.Questions)
	}
	if rec, ok := second.Record(id); !ok || rec.Key != "k1" {
		t.Fatalf("restored record %+v %v", rec, ok)
	}
	// Offline edits keep working and are saved.
	if err := second.SpliceText(id, "note", 0, 0, "Text "); err != nil {
		t.Fatal(err)
	}
	if got, still, _ := second.Accepted(id); !got.Equal(accepted) || !still {
		t.Fatalf("restored accepted heads %v unsent %v, want %v and true", got, still, accepted)
	}

	s.setDown("ana", false)
	flush(t, second, id)
	hellos := s.hellosOf("ana")
	if have := hellos[len(hellos)-1].Have[id]; !slices.Equal(have, wireHeads(accepted)) {
		t.Fatalf("the restarted client's hello has %v, want %v", have, wireHeads(accepted))
	}
	if got := s.draft(id).Questions["note"].Text; got != "Text written offline" {
		t.Fatalf("server text %q", got)
	}

	// Nothing but replica files: the temporary files were renamed.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
}

func TestSubmitFlushesFirst(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	ana := connect(t, s, "ana", replica.Options{})
	ben := connect(t, s, "ben", replica.Options{})
	benEvents := collect(t, ben)
	ready(t, ana, id)
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	s.mu.Unlock()
	if err := ana.SetText(id, "note", "because"); err != nil {
		t.Fatal(err)
	}
	if err := ana.Choose(id, "pick", "bolt", true); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "an edit in flight", func() bool { return s.countFrames(wire.KindEdit) >= 1 })

	type outcome struct {
		res []wire.SubmitResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := ana.Submit(ctxT(t), id)
		done <- outcome{res, err}
	}()
	var out outcome
	for waiting := true; waiting; {
		select {
		case gate <- struct{}{}:
		case out = <-done:
			waiting = false
		}
	}
	if out.err != nil || len(out.res) != 1 || !out.res[0].OK {
		t.Fatalf("submit: %+v %v", out.res, out.err)
	}
	s.mu.Lock()
	s.gate = nil
	s.mu.Unlock()
	log := s.frameLog()
	lastEdit := slices.Index(log, wire.KindSubmit) - 1
	for i := lastEdit + 1; i < len(log); i++ {
		if log[i] == wire.KindEdit {
			t.Fatalf("an edit was sent after the submit: %v", log)
		}
	}
	if rec, _ := ana.Record(id); rec.Status != question.Settled || rec.Answer == nil || rec.Answer.Answers[1].Text != "because" {
		t.Fatalf("record after submit: %+v", rec)
	}
	ev := benEvents.wait(t, "the resolved event", kind(wire.KindResolved))
	if ev.By != "ana" || ev.Answer == nil || ev.Record == nil || ev.Record.Status != question.Settled {
		t.Fatalf("resolved event %+v", ev)
	}
	// A settled decision refuses edits locally; reopening starts a fresh draft.
	if err := ana.SetText(id, "note", "x"); !errors.Is(err, question.ErrResolved) {
		t.Fatalf("edit of a settled decision: %v", err)
	}
	if _, err := ben.Reopen(ctxT(t), id); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the fresh draft", func() bool { return draftOf(t, ana, id).Generation == 2 })
	if _, err := ana.Reopen(ctxT(t), id); !errors.Is(err, question.ErrNotSettled) {
		t.Fatalf("reopening an open decision: %v", err)
	}
	if err := ana.SetText(id, "note", "second thoughts"); err != nil {
		t.Fatal(err)
	}
	flush(t, ana, id)
}

func TestCreateAndRequestsWaitForConnection(t *testing.T) {
	s := newFakeServer(t)
	s.setDown("*", true)
	ana := connect(t, s, "ana", replica.Options{Background: true})
	type outcome struct {
		recs []question.Record
		err  error
	}
	done := make(chan outcome, 1)
	go func() {
		recs, err := ana.Create(ctxT(t), wire.Card{Key: "card-1", Definition: definition()})
		done <- outcome{recs, err}
	}()
	testutil.Eventually(t, "a few failed dials", func() bool { return len(s.dialTimes("ana")) >= 2 })
	s.setDown("*", false)
	out := <-done
	if out.err != nil || len(out.recs) != 1 {
		t.Fatalf("create: %v %v", out.recs, out.err)
	}
	id := out.recs[0].ID
	ready(t, ana, id)
	if err := ana.SetText(id, "note", "new card"); err != nil {
		t.Fatal(err)
	}
	flush(t, ana)
	if got := s.draft(id).Questions["note"].Text; got != "new card" {
		t.Fatalf("server text %q", got)
	}
	if recs := ana.Records(); len(recs) != 1 || recs[0].ID != id {
		t.Fatalf("records %+v", recs)
	}

	// A request whose context ends while disconnected returns its error.
	s.setDown("*", true)
	s.drop("*")
	testutil.Eventually(t, "the loss", func() bool { return !ana.Connected() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := ana.Discard(ctx, id); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("request while down: %v", err)
	}
	if err := ana.Flush(ctx, id); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("flush while down: %v", err)
	}
}

func TestUnknownDecision(t *testing.T) {
	s := newFakeServer(t)
	ana := connect(t, s, "ana", replica.Options{})
	if err := ana.SetText("nope", "note", "x"); !errors.Is(err, question.ErrNotFound) {
		t.Fatalf("edit of an unknown decision: %v", err)
	}
	if _, _, err := ana.Draft("nope"); !errors.Is(err, question.ErrNotFound) {
		t.Fatalf("draft of an unknown decision: %v", err)
	}
	if err := ana.Flush(ctxT(t), "nope"); !errors.Is(err, question.ErrNotFound) {
		t.Fatalf("flush of an unknown decision: %v", err)
	}
	if _, err := ana.Submit(ctxT(t)); !errors.Is(err, question.ErrInvalid) {
		t.Fatalf("empty submit: %v", err)
	}
}

// TestSlowEventReader: a consumer that never reads Events costs only the
// oldest events; the read loop goes on applying frames.
func TestSlowEventReader(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	ana := connect(t, s, "ana", replica.Options{EventBuffer: 2})
	ben := connect(t, s, "ben", replica.Options{})
	ready(t, ana, id)
	ready(t, ben, id)
	text := ""
	for i := range 20 {
		text += string(rune('a' + i))
		if err := ben.SetText(id, "note", text); err != nil {
			t.Fatal(err)
		}
		flush(t, ben, id)
	}
	testutil.Eventually(t, "ana to apply every change", func() bool { return draftOf(t, ana, id).Questions["note"].Text == text })
	if ana.Dropped() == 0 {
		t.Fatal("no event was dropped with a full buffer")
	}
	if n := len(ana.Events()); n != 2 {
		t.Fatalf("%d events buffered, want the 2 newest", n)
	}
}

// TestWebSocket runs the client over real WebSockets with JSON frames.
func TestWebSocket(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	hs := s.httpServer()
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/?doc=" + docID
	ctx := ctxT(t)
	ana, err := replica.Dial(ctx, url, replica.Options{
		Format: wire.Text, Header: http.Header{"X-Login": {"ana"}},
		MinBackoff: minBackoff, MaxBackoff: maxBackoff, PingInterval: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ana.Close()
	ready(t, ana, id)
	if err := ana.SetText(id, "note", "over the wire"); err != nil {
		t.Fatal(err)
	}
	if err := ana.Choose(id, "pick", "pg", true); err != nil {
		t.Fatal(err)
	}
	res, err := ana.Submit(ctx, id)
	if err != nil || !res[0].OK {
		t.Fatalf("submit: %+v %v", res, err)
	}
	// The server drops the socket; the client redials and resyncs.
	s.drop("*")
	testutil.Eventually(t, "the reconnect", func() bool { return len(s.hellosOf("ana")) == 2 && ana.Connected() })
	rec, err := ana.Reopen(ctx, id)
	if err != nil || rec.Status != question.Open || rec.Generation != 2 {
		t.Fatalf("reopen: %+v %v", rec, err)
	}
	testutil.Eventually(t, "the fresh draft", func() bool { return draftOf(t, ana, id).Generation == 2 })

	if _, err := replica.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/?doc=other", replica.Options{}); err == nil {
		t.Fatal("dial of an unknown document succeeded")
	}
}

// TestCloseStopsGoroutines: Close waits for every goroutine the client
// started, connected or backing off.
func TestCloseStopsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		s := newFakeServer(t)
		id := s.create("k1")
		ana := connect(t, s, "ana", replica.Options{})
		ben := connect(t, s, "ben", replica.Options{})
		ready(t, ana, id)
		if err := ana.SetText(id, "note", "x"); err != nil {
			t.Fatal(err)
		}
		flush(t, ana, id)
		s.setDown("ben", true)
		s.drop("ben")
		testutil.Eventually(t, "ben backing off", func() bool { return !ben.Connected() })
		// A request waiting for the connection ends with Close.
		errc := make(chan error, 1)
		go func() {
			_, err := ben.Discard(context.Background(), id)
			errc <- err
		}()
		if err := ben.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; !errors.Is(err, replica.ErrClosed) {
			t.Fatalf("waiting request after close: %v", err)
		}
		if _, ok := <-ben.Events(); ok {
			// drain what was buffered
			for range ben.Events() {
			}
		}
		if err := ana.Close(); err != nil {
			t.Fatal(err)
		}
		if err := ana.Close(); err != nil {
			t.Fatalf("second close: %v", err)
		}
		s.close()
	}()
	testutil.Eventually(t, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

// TestDirSkipsUnreadableFiles: a damaged file costs only its decision; the
// server then sends that decision whole.
func TestDirSkipsUnreadableFiles(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	dir := t.TempDir()
	first := connect(t, s, "ana", replica.Options{Dir: dir})
	ready(t, first, id)
	if err := first.SetText(id, "note", "saved"); err != nil {
		t.Fatal(err)
	}
	flush(t, first, id)
	first.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "d-*.json"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	if err := os.WriteFile(files[0], []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".d-00.json-1.tmp"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	second := connect(t, s, "ana", replica.Options{Dir: dir})
	ready(t, second, id)
	if got := draftOf(t, second, id).Questions["note"].Text; got != "saved" {
		t.Fatalf("text %q, want the server's", got)
	}
	hellos := s.hellosOf("ana")
	if have := hellos[len(hellos)-1].Have; len(have) != 0 {
		t.Fatalf("hello lists %v from a damaged file", have)
	}
	if _, err := os.Stat(filepath.Join(dir, ".d-00.json-1.tmp")); !os.IsNotExist(err) {
		t.Fatalf("a leftover temporary file was kept: %v", err)
	}
}

// TestDialReturnsReadyDecisions: the decisions the welcome names are ready
// to edit as soon as Dial returns, and a created decision as soon as
// Create returns: no wait for their documents in between.
func TestDialReturnsReadyDecisions(t *testing.T) {
	s := newFakeServer(t)
	ids := []string{s.create("k1"), s.create("k2"), s.create("k3")}
	for range 5 { // the documents follow the welcome; Dial must wait for them every time
		ana := connect(t, s, "ana", replica.Options{})
		for _, id := range ids {
			if err := ana.SetMark(id, "pick", "bolt", "cost", marks.Yes); err != nil {
				t.Fatalf("SetMark right after Dial: %v", err)
			}
		}
		recs, err := ana.Create(ctxT(t), wire.Card{Key: "fresh-" + strconv.Itoa(len(ids)), Definition: definition()})
		if err != nil {
			t.Fatal(err)
		}
		if err := ana.SetText(recs[0].ID, "note", "at once"); err != nil {
			t.Fatalf("SetText right after Create: %v", err)
		}
		flush(t, ana)
		ids = append(ids, recs[0].ID)
		ana.Close()
	}
	for _, id := range ids[3:] {
		if got := s.draft(id).Questions["note"].Text; got != "at once" {
			t.Fatalf("%s: server text %q", id, got)
		}
	}
}

// TestDialWaitsForDocumentsWithinContext: a server that welcomes but never
// sends the documents makes Dial fail when its context ends, closing the
// client; Background returns at once and Flush is the wait.
func TestDialWaitsForDocumentsWithinContext(t *testing.T) {
	s := newFakeServer(t)
	s.create("k1")
	s.mu.Lock()
	s.withholdJoin = true
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	c, err := replica.Dial(ctx, "loopback:///decisions?doc="+docID, replica.Options{Dialer: s.dial, MinBackoff: minBackoff, MaxBackoff: maxBackoff})
	if !errors.Is(err, context.DeadlineExceeded) || c != nil {
		t.Fatalf("Dial without documents: %v %v", c, err)
	}
	bg := connect(t, s, "ana", replica.Options{Background: true})
	fctx, fcancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer fcancel()
	if err := bg.Flush(fctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush without documents: %v", err)
	}
	s.mu.Lock()
	s.withholdJoin = false
	s.mu.Unlock()
	s.drop("*")
	flush(t, bg)
	if len(bg.Records()) != 1 {
		t.Fatalf("records %+v", bg.Records())
	}
}

// TestFlushWaitsForTheStore: a local change the server echoes back only as
// early changes (accepted heads, no reply to the replica's own edit) is
// not flushed, across a reconnect after which nothing is left to send:
// Flush sends the change again and returns once the reply, which the
// server sends after its commit, says it is stored.
func TestFlushWaitsForTheStore(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k")
	ana := connect(t, s, "ana", replica.Options{})
	ready(t, ana, id)
	s.mu.Lock()
	s.echoEdits = true
	s.mu.Unlock()
	if err := ana.SetText(id, "note", "cheaper"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the change to come back as accepted", func() bool {
		_, unsent, err := ana.Accepted(id)
		return err == nil && !unsent
	})
	// The edit's reply never comes: the connection drops, and the
	// reconnect finds the server holding the change already.
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	s.mu.Unlock()
	s.drop("ana")
	testutil.Eventually(t, "a second connection", func() bool { return len(s.hellosOf("ana")) == 2 && ana.Connected() })
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := ana.Flush(short, id); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush before the server confirmed the change: %v, want the deadline", err)
	}
	s.mu.Lock()
	s.echoEdits = false
	s.mu.Unlock()
	gate <- struct{}{} // the confirming edit is decided and answered
	if err := ana.Flush(ctxT(t), id); err != nil {
		t.Fatal(err)
	}
	if got := s.draft(id).Questions["note"].Text; got != "cheaper" {
		t.Fatalf("the server holds %q", got)
	}
}
