package question

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/memstore"
)

var (
	parkCtx = context.Background()
	parkAna = Member{Login: "ana", Write: true}
)

// twin is one authority of a pair driven with the same commands: the
// oracle never parks, the subject parks at its cap and whenever the test
// says. Both write as the same actor, with the same clock and ids, so
// their documents hold the very same changes.
type twin struct {
	store *memstore.Store
	a     *Authority
	n     int
	live  int // LiveDecisions
}

func (w *twin) open(t parkT, clock *time.Time, restarts int) {
	t.Helper()
	a, err := NewAuthority(parkCtx, Options{
		Store: w.store, Doc: "plan", LiveDecisions: w.live, CompactAfter: 4,
		Now:   func() time.Time { return *clock },
		NewID: func() string { w.n++; return fmt.Sprintf("id%d", w.n) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Every decision is parked after a load, so none has been written by
	// the random actor; writing as a fixed one keeps the twins' hashes equal.
	a.actor = crdt.ActorID(fmt.Sprintf("ac%030x", restarts))
	for _, d := range a.decisions {
		switch {
		case w.live >= 0 && d.doc != nil:
			t.Fatalf("decision %s is live right after the load", d.rec.ID)
		case d.doc != nil:
			// The oracle keeps its documents live: load them again as
			// the fixed actor.
			doc, err := a.loadStored(d.stored, d.doc.Carry())
			if err != nil {
				t.Fatal(err)
			}
			d.doc = doc
		}
	}
	w.a = a
}

// parkT is what both *testing.T and *rapid.T offer.
type parkT interface {
	Helper()
	Fatal(...any)
	Fatalf(string, ...any)
}

// parkProp drives the twins.
type parkProp struct {
	clock    time.Time
	oracle   *twin
	subject  *twin
	ids      []string
	replicas map[string]*crdt.Doc // a member's replica, loaded from the oracle
	accepted map[string]crdt.Heads
	older    map[string][]crdt.Heads // heads each decision has been at
	sessions []parkSession
	restarts int
}

type parkSession struct {
	id              string
	oracle, subject *crdt.Session
	peer            *crdt.Doc
	peerSess        *crdt.Session
}

// TestParkingNeverChangesResultsProperty: random commands (creates,
// draft edits, appends, saves of current and older revisions, reopens,
// discards, sync sessions and their releases, catch-ups, whole saves,
// restarts) against two authorities, one that never parks and one with a
// cap of 1 to 3 live documents that also parks a random decision between
// commands. Every reply, record, heads, draft, budget, catch-up batch and
// sync message is the same, and the whole saves load to equal states.
func TestParkingNeverChangesResultsProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := &parkProp{
			clock:    time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC),
			oracle:   &twin{store: memstore.New(), live: -1},
			subject:  &twin{store: memstore.New(), live: rapid.IntRange(1, 3).Draw(rt, "cap")},
			replicas: map[string]*crdt.Doc{}, accepted: map[string]crdt.Heads{}, older: map[string][]crdt.Heads{},
		}
		p.oracle.open(rt, &p.clock, 0)
		p.subject.open(rt, &p.clock, 0)
		for range rapid.IntRange(1, 40).Draw(rt, "steps") {
			p.clock = p.clock.Add(time.Second)
			p.step(rt)
			p.compare(rt)
			if rapid.Bool().Draw(rt, "park") && len(p.ids) > 0 {
				p.parkOne(rt, rapid.SampledFrom(p.ids).Draw(rt, "parked"))
			}
			if n, limit := p.unpinnedLive(), p.subject.live; n > limit {
				rt.Fatalf("%d unpinned documents live, cap %d", n, limit)
			}
		}
	})
}

// parkOne parks a decision of the subject unless a session pins it.
func (p *parkProp) parkOne(t *rapid.T, id string) {
	a := p.subject.a
	if d, ok := a.decisions[id]; ok && a.pins[id] == 0 {
		a.park(d)
	}
}

func (p *parkProp) unpinnedLive() int {
	n := 0
	for id := range p.subject.a.live {
		if p.subject.a.pins[id] == 0 {
			n++
		}
	}
	return n
}

// both runs a command on each twin and checks that they answer the same.
func both[R any](t *rapid.T, p *parkProp, what string, f func(a *Authority) (R, error)) (R, error) {
	t.Helper()
	r1, err1 := f(p.oracle.a)
	r2, err2 := f(p.subject.a)
	if e1, e2 := fmt.Sprint(err1), fmt.Sprint(err2); e1 != e2 {
		t.Fatalf("%s: oracle says %s, parking subject %s", what, e1, e2)
	}
	j1, _ := json.Marshal(r1)
	j2, _ := json.Marshal(r2)
	if !bytes.Equal(j1, j2) {
		t.Fatalf("%s: oracle returned\n%s\nparking subject\n%s", what, j1, j2)
	}
	var r *Refusal
	if err1 != nil && (!errors.As(err1, &r) || r.Reason == Unavailable) {
		t.Fatalf("%s failed: %v", what, err1)
	}
	return r1, err1
}

func (p *parkProp) reload(t *rapid.T, id string) {
	saved, err := p.oracle.a.Save(id)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := crdt.Load(saved, nil, crdt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.replicas[id], p.accepted[id] = doc, doc.Heads()
}

func (p *parkProp) step(t *rapid.T) {
	actions := []string{"create"}
	if len(p.ids) > 0 {
		actions = append(actions, "edit", "edit", "edit", "submit", "submit", "append", "reopen", "discard",
			"save", "since", "session", "restart")
	}
	if len(p.sessions) > 0 {
		actions = append(actions, "sync", "sync", "release")
	}
	switch act := rapid.SampledFrom(actions).Draw(t, "action"); act {
	case "create":
		var reqs []CreateRequest
		for range rapid.IntRange(1, 3).Draw(t, "cards") {
			def := Definition{Questions: []Question{{Text: "Which?", Options: []Option{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}},
				Criteria: []Criterion{{ID: "c", Label: "Cheap"}}}}}
			if rapid.Bool().Draw(t, "written") {
				def = Definition{Questions: []Question{{Text: "Why?", Response: Text, Options: []Option{}}}}
			}
			reqs = append(reqs, CreateRequest{Key: fmt.Sprint("k", len(p.ids)+len(reqs)), Origin: FromPlanner, Definition: def})
		}
		out, err := both(t, p, act, func(a *Authority) ([]Created, error) { return a.Create(parkCtx, parkAna, reqs) })
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range out {
			p.ids = append(p.ids, c.Record.ID)
			p.reload(t, c.Record.ID)
		}
	case "edit":
		id := rapid.SampledFrom(p.ids).Draw(t, "decision")
		m := p.replicas[id]
		rec, _ := p.oracle.a.Record(id)
		q := rec.Definition.Questions[0]
		if q.Written() {
			dr, _ := m.Draft()
			cur := []rune(dr.Questions[q.ID].Text)
			pos := rapid.IntRange(0, len(cur)).Draw(t, "pos")
			del := rapid.IntRange(0, min(3, len(cur)-pos)).Draw(t, "del")
			_ = m.SpliceText(q.ID, pos, del, rapid.SampledFrom([]string{"", "x", "word ", "é"}).Draw(t, "ins"))
		} else {
			o := rapid.SampledFrom(q.Options).Draw(t, "option")
			if rapid.Bool().Draw(t, "mark") {
				_ = m.SetMark(q.ID, o.ID, q.Criteria[0].ID, rapid.SampledFrom([]marks.Mark{marks.Yes, marks.No, marks.Cleared}).Draw(t, "value"))
			} else {
				_ = m.Choose(q.ID, o.ID, rapid.Bool().Draw(t, "on"))
			}
		}
		ch, err := m.ChangesSince(p.accepted[id])
		if err != nil {
			t.Fatal(err)
		}
		ed, err := both(t, p, act, func(a *Authority) (Edited, error) { return a.Edit(parkCtx, parkAna, id, ch) })
		var r *Refusal
		switch {
		case err == nil:
			p.accepted[id] = m.Heads()
			if !ed.Heads.Equal(m.Heads()) {
				p.reload(t, id)
			}
		case errors.As(err, &r) && r.Reset:
			p.reload(t, id)
		}
	case "submit":
		var reqs []SubmitRequest
		for range rapid.IntRange(1, 2).Draw(t, "saves") {
			id := rapid.SampledFrom(p.ids).Draw(t, "decision")
			heads := p.accepted[id]
			if old := p.older[id]; len(old) > 0 && rapid.Bool().Draw(t, "older") {
				heads = rapid.SampledFrom(old).Draw(t, "heads") // the stale-check fork
			}
			reqs = append(reqs, SubmitRequest{ID: id, Heads: heads})
		}
		both(t, p, act, func(a *Authority) ([]Submitted, error) { return a.Submit(parkCtx, parkAna, reqs) })
	case "append":
		id := rapid.SampledFrom(p.ids).Draw(t, "decision")
		req := AppendRequest{ID: id, Question: "q1", Key: fmt.Sprint("ap", rapid.IntRange(0, 4).Draw(t, "key")),
			Label: fmt.Sprint("item ", rapid.IntRange(0, 6).Draw(t, "label"))}
		crit := rapid.Bool().Draw(t, "criterion")
		both(t, p, act, func(a *Authority) (AppendResult, error) {
			if crit {
				return a.AppendCriterion(parkCtx, parkAna, req)
			}
			return a.AppendOption(parkCtx, parkAna, req)
		})
		p.reload(t, id)
	case "reopen":
		id := rapid.SampledFrom(p.ids).Draw(t, "decision")
		both(t, p, act, func(a *Authority) (Record, error) { o, err := a.Reopen(parkCtx, parkAna, id, 0); return o.Record, err })
		p.reload(t, id)
	case "discard":
		id := rapid.SampledFrom(p.ids).Draw(t, "decision")
		if rapid.IntRange(0, 3).Draw(t, "really") == 0 {
			both(t, p, act, func(a *Authority) (Record, error) { o, err := a.Discard(parkCtx, parkAna, id); return o.Record, err })
		}
	case "save":
		id := rapid.SampledFrom(p.ids).Draw(t, "decision")
		s1, err1 := p.oracle.a.Save(id)
		s2, err2 := p.subject.a.Save(id)
		if err1 != nil || err2 != nil {
			t.Fatalf("save: %v / %v", err1, err2)
		}
		sameLoad(t, id, s1, s2)
	case "since":
		id := rapid.SampledFrom(p.ids).Draw(t, "decision")
		var heads crdt.Heads
		if old := p.older[id]; len(old) > 0 && rapid.Bool().Draw(t, "known") {
			heads = rapid.SampledFrom(old).Draw(t, "heads")
		}
		both(t, p, act, func(a *Authority) ([]byte, error) { return a.ChangesSince(id, heads) })
	case "session":
		id := rapid.SampledFrom(p.ids).Draw(t, "decision")
		s1, err1 := p.oracle.a.NewSession(id)
		s2, err2 := p.subject.a.NewSession(id)
		if err1 != nil || err2 != nil {
			t.Fatalf("session: %v / %v", err1, err2)
		}
		saved, _ := p.oracle.a.Save(id)
		// A peer a little behind or even: it catches up through the session.
		peer, err := crdt.Load(saved, nil, crdt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if old := p.older[id]; len(old) > 0 && rapid.Bool().Draw(t, "behind") {
			if peer, err = peer.ForkAt(rapid.SampledFrom(old).Draw(t, "at"), ""); err != nil {
				t.Fatal(err)
			}
		}
		p.sessions = append(p.sessions, parkSession{id: id, oracle: s1, subject: s2, peer: peer, peerSess: peer.NewSession()})
	case "sync":
		i := rapid.IntRange(0, len(p.sessions)-1).Draw(t, "session")
		s := p.sessions[i]
		if msg, ok := s.peerSess.Generate(); ok {
			if err1, err2 := s.oracle.Receive(msg), s.subject.Receive(msg); fmt.Sprint(err1) != fmt.Sprint(err2) {
				t.Fatalf("sync receive: %v / %v", err1, err2)
			}
		}
		o1, ok1 := s.oracle.Generate()
		o2, ok2 := s.subject.Generate()
		if ok1 != ok2 || !bytes.Equal(o1, o2) {
			t.Fatalf("sync of %s: the sessions answer differently (%v %d bytes / %v %d bytes)", s.id, ok1, len(o1), ok2, len(o2))
		}
		if ok1 {
			// Changes whose dependency a Bloom filter's false positive held
			// back are refused, and the session asks for that dependency in
			// its next message (crdt.Session.withNeed): the protocol's own
			// recovery, not a difference between the two authorities.
			if err := s.peerSess.Receive(o1); err != nil && !errors.Is(err, crdt.ErrMissingDeps) {
				t.Fatal(err)
			}
		}
	case "release":
		i := rapid.IntRange(0, len(p.sessions)-1).Draw(t, "session")
		s := p.sessions[i]
		p.oracle.a.ReleaseSession(s.oracle)
		p.subject.a.ReleaseSession(s.subject)
		if rapid.Bool().Draw(t, "twice") {
			p.subject.a.ReleaseSession(s.subject)
		}
		p.sessions = slices.Delete(p.sessions, i, i+1)
	case "restart":
		p.restarts++
		for _, w := range []*twin{p.oracle, p.subject} {
			w.open(t, &p.clock, p.restarts)
		}
		p.sessions = nil // a restart ends every session
	}
}

// compare checks what both twins hold after a step: every record, each
// decision's draft and heads; and, for one decision, its budget.
func (p *parkProp) compare(t *rapid.T) {
	r1, r2 := p.oracle.a.Records(), p.subject.a.Records()
	j1, _ := json.Marshal(r1)
	j2, _ := json.Marshal(r2)
	if !bytes.Equal(j1, j2) {
		t.Fatalf("records differ:\n%s\n%s", j1, j2)
	}
	if len(p.subject.a.Damaged()) > 0 {
		t.Fatalf("damaged: %v", p.subject.a.Damaged())
	}
	for _, id := range p.ids {
		d1, h1, err1 := p.oracle.a.Draft(id)
		d2, h2, err2 := p.subject.a.Draft(id)
		if err1 != nil || err2 != nil || !h1.Equal(h2) || !d1.Equal(d2) {
			t.Fatalf("decision %s: drafts or heads differ (%v, %v)", id, err1, err2)
		}
		if old := p.older[id]; len(old) == 0 || !old[len(old)-1].Equal(h1) {
			p.older[id] = append(p.older[id], h1)
		}
	}
	if len(p.ids) == 0 {
		return
	}
	id := rapid.SampledFrom(p.ids).Draw(t, "budget of")
	b1 := p.oracle.a.decisions[id].doc.Budget()
	d, r := p.subject.a.use(id)
	if r != nil {
		t.Fatal(r)
	}
	if b2 := d.doc.Budget(); b1 != b2 {
		t.Fatalf("decision %s: budget %+v, after parking %+v", id, b1, b2)
	}
}

// sameLoad checks that two saves of a decision load to the same heads and
// state.
func sameLoad(t parkT, id string, s1, s2 []byte) {
	t.Helper()
	x, err := crdt.Load(s1, nil, crdt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	y, err := crdt.Load(s2, nil, crdt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sx, err1 := x.State()
	sy, err2 := y.State()
	if err1 != nil || err2 != nil || !x.Heads().Equal(y.Heads()) || !sx.Equal(sy) {
		t.Fatalf("decision %s: the saves load differently (%v, %v)", id, err1, err2)
	}
}

// parkFixture is an authority over a memstore with a small cap.
func parkFixture(t *testing.T, live int) (*Authority, *memstore.Store) {
	t.Helper()
	store := memstore.New()
	a, err := NewAuthority(parkCtx, Options{Store: store, Doc: "plan", LiveDecisions: live})
	if err != nil {
		t.Fatal(err)
	}
	return a, store
}

func createN(t *testing.T, a *Authority, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		out, err := a.Create(parkCtx, parkAna, []CreateRequest{{Key: fmt.Sprint("k", i), Definition: Definition{Questions: []Question{{
			Text: "Which?", Options: []Option{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}, Criteria: []Criterion{{ID: "c", Label: "C"}},
		}}}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, out[0].Record.ID)
	}
	return ids
}

// edit chooses an option of a decision through a member's replica.
func editChoice(t *testing.T, a *Authority, id, option string) Edited {
	t.Helper()
	saved, err := a.Save(id)
	if err != nil {
		t.Fatal(err)
	}
	m, err := crdt.Load(saved, nil, crdt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := m.Heads()
	if err := m.Choose("q1", option, true); err != nil {
		t.Fatal(err)
	}
	ch, _ := m.ChangesSince(before)
	ed, err := a.Edit(parkCtx, parkAna, id, ch)
	if err != nil {
		t.Fatal(err)
	}
	return ed
}

func TestParkCapBoundsLiveDocuments(t *testing.T) {
	a, _ := parkFixture(t, 2)
	ids := createN(t, a, 6)
	if len(a.live) != 2 {
		t.Fatalf("%d documents live after creating 6 with a cap of 2", len(a.live))
	}
	for _, id := range ids {
		editChoice(t, a, id, "a")
		if len(a.live) > 2 {
			t.Fatalf("%d documents live, cap 2", len(a.live))
		}
		if a.decisions[id].doc == nil {
			t.Fatalf("decision %s was parked right after its edit", id)
		}
	}
	// Least recently used goes first: edit ids[0] again, then wake ids[5]
	// (live) and ids[1] (parked): ids[0] and ids[1] stay, ids[5] goes.
	editChoice(t, a, ids[0], "b")
	if _, err := a.Save(ids[1]); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{ids[0]: true, ids[1]: true, ids[5]: false} {
		if got := a.decisions[id].doc != nil; got != want {
			t.Fatalf("decision %s live = %v, want %v", id, got, want)
		}
	}
	// Reads answer parked decisions without waking them.
	for _, id := range ids[2:5] {
		if _, h, err := a.Draft(id); err != nil || len(h) == 0 {
			t.Fatal(err)
		}
		if a.decisions[id].doc != nil {
			t.Fatalf("Draft woke decision %s", id)
		}
	}
}

func TestParkDefaultCap(t *testing.T) {
	a, _ := parkFixture(t, 0)
	if a.opts.LiveDecisions != DefaultLiveDecisions {
		t.Fatalf("default cap %d", a.opts.LiveDecisions)
	}
	b, _ := parkFixture(t, -1)
	createN(t, b, 5)
	if len(b.live) != 5 {
		t.Fatalf("no limit: %d of 5 live", len(b.live))
	}
}

// TestParkSessionPins: a sync session pins its decision's document,
// whatever else wakes, until it is released; releasing twice is harmless.
func TestParkSessionPins(t *testing.T) {
	a, _ := parkFixture(t, 1)
	ids := createN(t, a, 3)
	s1, err := a.NewSession(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	s2, err := a.NewSession(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	doc := a.decisions[ids[0]].doc
	for _, id := range ids[1:] {
		editChoice(t, a, id, "a")
		if a.decisions[ids[0]].doc != doc {
			t.Fatal("a pinned document was parked")
		}
	}
	// The session sees edits committed while the others woke and parked.
	ed := editChoice(t, a, ids[0], "b")
	peer, _ := crdt.Load(nil, nil, crdt.Options{})
	ps := peer.NewSession()
	for range 10 {
		if m, ok := ps.Generate(); ok {
			if err := s1.Receive(m); err != nil {
				t.Fatal(err)
			}
		}
		m, ok := s1.Generate()
		if !ok {
			break
		}
		if err := ps.Receive(m); err != nil {
			t.Fatal(err)
		}
	}
	if !peer.Heads().Equal(ed.Heads) {
		t.Fatalf("the session synced the peer to %v, want %v", peer.Heads(), ed.Heads)
	}
	a.ReleaseSession(s1)
	if a.decisions[ids[0]].doc == nil {
		t.Fatal("parked while a second session still pins it")
	}
	a.ReleaseSession(s2)
	a.ReleaseSession(s2)
	a.ReleaseSession(s1)
	if a.pins[ids[0]] != 0 || len(a.sessions) != 0 {
		t.Fatalf("pins left: %v, %d sessions", a.pins, len(a.sessions))
	}
	if len(a.live) > 1 {
		t.Fatalf("%d live after every session was released, cap 1", len(a.live))
	}
	// A reload ends every session.
	if _, err := a.NewSession(ids[1]); err != nil {
		t.Fatal(err)
	}
	if err := a.Reload(parkCtx); err != nil {
		t.Fatal(err)
	}
	if len(a.pins) != 0 || len(a.sessions) != 0 || len(a.live) != 0 {
		t.Fatalf("after a reload: %d pins, %d sessions, %d live", len(a.pins), len(a.sessions), len(a.live))
	}
}

// TestParkDamagedBytes: a parked decision whose bytes no longer load is
// damaged as a load would have found it, whichever call wakes it: refused
// as unavailable with a DamagedError naming the drafts bucket (so
// persist.ErrCorrupt), left out of Records, its key refused for a new
// card; nothing panics and the other decisions work.
func TestParkDamagedBytes(t *testing.T) {
	damages := []struct {
		name string
		f    func(*persist.StoredDraft)
	}{
		{"truncated", func(s *persist.StoredDraft) { s.Snapshot = s.Snapshot[:len(s.Snapshot)/2] }},
		{"flipped", func(s *persist.StoredDraft) {
			s.Snapshot = slices.Clone(s.Snapshot)
			s.Snapshot[len(s.Snapshot)-3] ^= 0xff
		}},
		{"garbage", func(s *persist.StoredDraft) { s.Snapshot = []byte("not automerge") }},
		{"chunk", func(s *persist.StoredDraft) {
			s.Chunks = append(slices.Clip(s.Chunks), []byte{0x85, 0x6f, 0x4a, 0x83, 1, 2})
		}},
		{"other heads", func(s *persist.StoredDraft) { s.Snapshot, s.Chunks = nil, nil }},
	}
	wakers := []struct {
		name string
		f    func(a *Authority, id string, old crdt.Heads) error
	}{
		{"save", func(a *Authority, id string, _ crdt.Heads) error { _, err := a.Save(id); return err }},
		{"since", func(a *Authority, id string, old crdt.Heads) error { _, err := a.ChangesSince(id, old); return err }},
		{"session", func(a *Authority, id string, _ crdt.Heads) error { _, err := a.NewSession(id); return err }},
		{"edit", func(a *Authority, id string, _ crdt.Heads) error {
			_, err := a.Edit(parkCtx, parkAna, id, nil)
			return err
		}},
		{"append", func(a *Authority, id string, _ crdt.Heads) error {
			_, err := a.AppendOption(parkCtx, parkAna, AppendRequest{ID: id, Question: "q1", Key: "x", Label: "X"})
			return err
		}},
		{"submit older", func(a *Authority, id string, old crdt.Heads) error {
			out, err := a.Submit(parkCtx, parkAna, []SubmitRequest{{ID: id, Heads: old}})
			if err != nil {
				return err
			}
			return out[0].Err
		}},
	}
	for _, dm := range damages {
		for _, w := range wakers {
			t.Run(dm.name+"/"+w.name, func(t *testing.T) {
				a, _ := parkFixture(t, 1)
				ids := createN(t, a, 3)
				_, old, _ := a.Draft(ids[0])
				editChoice(t, a, ids[0], "a")
				a.park(a.decisions[ids[0]])
				dm.f(&a.decisions[ids[0]].stored)
				checkDamaged(t, a, ids[0], w.f(a, ids[0], old))
				// Every later call is refused the same way.
				_, _, err := a.Draft(ids[0])
				checkDamaged(t, a, ids[0], err)
				_, err = a.Discard(parkCtx, parkAna, ids[0])
				checkDamaged(t, a, ids[0], err)
				if _, ok := a.Record(ids[0]); ok || len(a.Records()) != 2 {
					t.Fatal("a damaged decision is still among the records")
				}
				if _, ok := a.Damaged()[ids[0]]; !ok {
					t.Fatal("not listed in Damaged")
				}
				if _, err := a.Create(parkCtx, parkAna, []CreateRequest{{Key: "k0", Definition: Definition{Questions: []Question{{Text: "Why?", Response: Text, Options: []Option{}}}}}}); err == nil {
					t.Fatal("a damaged decision's key was taken by a new card")
				}
				editChoice(t, a, ids[1], "b")
				if _, err := a.Save(ids[2]); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func checkDamaged(t *testing.T, a *Authority, id string, err error) {
	t.Helper()
	var r *Refusal
	var de *DamagedError
	if !errors.As(err, &r) || r.Reason != Unavailable || !errors.As(err, &de) || !errors.Is(err, persist.ErrCorrupt) {
		t.Fatalf("a damaged parked decision: %v", err)
	}
	var ce *persist.CorruptError
	if de.Decision != id || !errors.As(err, &ce) || ce.Bucket != "docs/plan/drafts" || ce.Key != id {
		t.Fatalf("the error names %q, %+v", de.Decision, ce)
	}
}

// TestParkDamagedDuringSubmit: a save of an older revision wakes the
// decision; if it no longer loads, that save alone is refused, the others
// commit, and the damaged record is not written.
func TestParkDamagedDuringSubmit(t *testing.T) {
	a, store := parkFixture(t, 1)
	ids := createN(t, a, 2)
	_, old, _ := a.Draft(ids[0])
	editChoice(t, a, ids[0], "a")
	ed := editChoice(t, a, ids[1], "a")
	d := a.decisions[ids[0]]
	if d.doc != nil {
		t.Fatal("expected the first decision parked")
	}
	before, _ := store.LoadDocument(parkCtx, "plan")
	d.stored.Snapshot = []byte("damaged")
	out, err := a.Submit(parkCtx, parkAna, []SubmitRequest{{ID: ids[0], Heads: old}, {ID: ids[1], Heads: ed.Heads}})
	if err != nil {
		t.Fatal(err)
	}
	var de *DamagedError
	if !errors.As(out[0].Err, &de) || out[1].Err != nil || out[1].Record.Status != Settled {
		t.Fatalf("submit: %v / %v", out[0].Err, out[1].Err)
	}
	after, _ := store.LoadDocument(parkCtx, "plan")
	if !bytes.Equal(before.Records[ids[0]], after.Records[ids[0]]) {
		t.Fatal("the damaged decision's record was written over")
	}
}

// TestParkRestart: a document reopened from the store keeps no decision
// live, reads every one without waking it, and wakes each to exactly what
// was acknowledged.
func TestParkRestart(t *testing.T) {
	a, store := parkFixture(t, 2)
	ids := createN(t, a, 5)
	want := map[string][]byte{}
	heads := map[string]crdt.Heads{}
	for i, id := range ids {
		for j := range i + 1 { // some incremental chunks, some compactions
			editChoice(t, a, id, []string{"a", "b"}[j%2])
		}
		want[id], _ = a.Save(id)
		_, heads[id], _ = a.Draft(id)
	}
	b, err := NewAuthority(parkCtx, Options{Store: store, Doc: "plan", LiveDecisions: 2, CompactAfter: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.live) != 0 {
		t.Fatalf("%d decisions live right after the load", len(b.live))
	}
	for _, id := range ids {
		if _, h, err := b.Draft(id); err != nil || !h.Equal(heads[id]) {
			t.Fatalf("decision %s: heads after restart %v, want %v (%v)", id, h, heads[id], err)
		}
	}
	if len(b.live) != 0 {
		t.Fatal("reads woke decisions")
	}
	for _, id := range ids {
		got, err := b.Save(id)
		if err != nil {
			t.Fatal(err)
		}
		sameLoad(t, id, want[id], got)
		editChoice(t, b, id, "b") // and they take edits
		if len(b.live) > 2 {
			t.Fatalf("%d live, cap 2", len(b.live))
		}
	}
}

// TestCompactStateIsEqual: the copy of a state a parked decision keeps
// reads the same as the state it copies.
func TestCompactStateIsEqual(t *testing.T) {
	a, _ := parkFixture(t, -1)
	ids := createN(t, a, 1)
	editChoice(t, a, ids[0], "b")
	if _, err := a.AppendCriterion(parkCtx, parkAna, AppendRequest{ID: ids[0], Question: "q1", Key: "k", Label: "Fast"}); err != nil {
		t.Fatal(err)
	}
	out, err := a.Create(parkCtx, parkAna, []CreateRequest{{Key: "w", Definition: Definition{Questions: []Question{{Text: "Why?", Response: Text, Options: []Option{}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range append(ids, out[0].Record.ID) {
		st := a.decisions[id].state
		if c := compactState(st); !c.Equal(st) {
			t.Fatalf("decision %s: compacted state differs", id)
		}
	}
}

// TestParkRebasedDecision: a decision whose document was rebased wakes
// with its rebase mark and its running budget (BaseOps included, which a
// load alone forgets), so catch-ups from old heads are still refused as
// stale and the next rebase comes when it would have.
func TestParkRebasedDecision(t *testing.T) {
	a, _ := parkFixture(t, 1)
	out, err := a.Create(parkCtx, parkAna, []CreateRequest{
		{Key: "w", Definition: Definition{Questions: []Question{{Text: "Why?", Response: Text, Options: []Option{}}}}},
		{Key: "other", Definition: Definition{Questions: []Question{{Text: "Why not?", Response: Text, Options: []Option{}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	id, other := out[0].Record.ID, out[1].Record.ID
	_, old, _ := a.Draft(id)
	for i := 0; ; i++ {
		saved, _ := a.Save(id)
		m, err := crdt.Load(saved, nil, crdt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		h := m.Heads()
		if err := m.SetText("q1", string(rune('a'+i))+fmt.Sprintf("%099000d", i)); err != nil {
			t.Fatal(err)
		}
		ch, _ := m.ChangesSince(h)
		ed, err := a.Edit(parkCtx, parkAna, id, ch)
		if err != nil {
			t.Fatal(err)
		}
		if ed.Rebased {
			break
		}
		if i > 12 {
			t.Fatal("no rebase after 12 replacements")
		}
	}
	live := a.decisions[id].doc
	want, wantHeads := live.Budget(), live.Heads()
	if !live.Rebased() || want.BaseOps == 0 {
		t.Fatalf("rebased %v, budget %+v", live.Rebased(), want)
	}
	if _, err := a.Save(other); err != nil { // parks the rebased one
		t.Fatal(err)
	}
	if a.decisions[id].doc != nil {
		t.Fatal("the rebased decision is still live")
	}
	if _, err := a.ChangesSince(id, old); ReasonOf(err) != Stale {
		t.Fatalf("changes since the old history after a wake = %v, want stale", err)
	}
	d := a.decisions[id]
	if got := d.doc.Budget(); got != want || !d.doc.Rebased() || !d.doc.Heads().Equal(wantHeads) {
		t.Fatalf("woke with budget %+v (rebased %v), want %+v", got, d.doc.Rebased(), want)
	}
}
