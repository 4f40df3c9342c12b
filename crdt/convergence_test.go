package crdt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/marks"
)

// defaultChecks is how many cases each rapid property runs unless
// -rapid.checks or RAPID_CHECKS says otherwise (rapid's own default is
// 100; make soak runs many more). Faults planted in the code these
// properties cover are found within about 110 cases, most within 35. The
// rarest they find, a Bloom filter false positive left unanswered, takes
// hundreds, and TestSessionAsksForABloomFalsePositive finds it every run.
const defaultChecks = 200

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if _, env := os.LookupEnv("RAPID_CHECKS"); !set && !env {
		if err := flag.Set("rapid.checks", fmt.Sprint(defaultChecks)); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}

// maxGeneration bounds reopens in the properties; each generation's text
// edits draw from their own alphabet, so text from an older generation
// cannot pass for the current one.
const maxGeneration = 4

var genAlphabet = [maxGeneration + 1][]rune{
	nil,
	[]rune("abé"),
	[]rune("cdü"),
	[]rune("ef😀"),
	[]rune("gh日"),
}

// link is one direction of a connection between two replicas.
type link struct{ from, to int }

func (l link) String() string { return fmt.Sprintf("%d→%d", l.from, l.to) }

// genWrites is what edits against one generation wrote, as far as the
// properties need it: which cells were written and which options chosen.
type genWrites struct {
	cells  map[string]bool // question/option/criterion
	chosen map[string]bool // question/option
}

// world is a set of replicas of one decision (replica 0 is the authority),
// a sync session for every ordered pair, and the network between them: a
// queue of messages in flight per directed link.
type world struct {
	docs    []*Doc
	sess    [][]*Session
	flight  map[link][][]byte
	persist []*persistLog
	// keys maps each idempotency key the authority minted to its item.
	keys map[string]Appended
	// writes holds, per generation, what edits against it wrote.
	writes map[uint64]*genWrites
	// refused counts messages refused for missing dependencies, which
	// reordering and loss make legitimate.
	refused int
}

// persistLog is a replica's durable form as a store keeps it: the save it
// started from, then the changes of every later step as one chunk each.
type persistLog struct {
	base   []byte
	chunks [][]byte
	heads  Heads
}

// drawActors draws n distinct actor ids. They come from the case's draws,
// not crypto/rand, so that a failing case replays exactly: change hashes,
// and with them automerge's Bloom filter false positives, depend on them.
func drawActors(t *rapid.T, n int) []ActorID {
	seed := rapid.Uint64().Draw(t, "actor seed")
	out := make([]ActorID, n)
	for i := range out {
		sum := sha256.Sum256(fmt.Appendf(nil, "%d/%d", seed, i))
		sum[0] |= 1
		out[i] = ActorID(hex.EncodeToString(sum[:16]))
	}
	return out
}

func newWorld(t *rapid.T, n int) *world {
	actors := drawActors(t, n)
	auth, err := New(Options{Actor: actors[0], Now: testNow})
	ok(t, err)
	for _, s := range testShapes() {
		ok(t, auth.AddQuestion(s))
	}
	ok(t, auth.StartGeneration(1))
	w := &world{
		docs:   []*Doc{auth},
		flight: map[link][][]byte{},
		keys:   map[string]Appended{},
		writes: map[uint64]*genWrites{},
	}
	for _, a := range actors[1:] {
		r, err := Load(auth.Save(), nil, Options{Actor: a, Now: testNow})
		ok(t, err)
		w.docs = append(w.docs, r)
	}
	w.sess = make([][]*Session, n)
	for i, d := range w.docs {
		w.sess[i] = make([]*Session, n)
		for j := range w.docs {
			if i != j {
				w.sess[i][j] = d.NewSession()
			}
		}
		w.persist = append(w.persist, &persistLog{base: d.Save(), heads: d.Heads()})
	}
	return w
}

// persisted records replica i's changes since it last persisted.
func (w *world) persisted(t *rapid.T, i int) {
	p := w.persist[i]
	chunk, err := w.docs[i].ChangesSince(p.heads)
	ok(t, err)
	if chunk != nil {
		p.chunks = append(p.chunks, chunk)
		p.heads = w.docs[i].Heads()
	}
}

func (w *world) written(g uint64) *genWrites {
	if w.writes[g] == nil {
		w.writes[g] = &genWrites{cells: map[string]bool{}, chosen: map[string]bool{}}
	}
	return w.writes[g]
}

func ids(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

// edit makes one random draft edit on replica r, against whatever
// generation r currently holds.
func (w *world) edit(t *rapid.T, r int) {
	d := w.docs[r]
	st := stateOf(t, d)
	g := st.Generation
	wr := w.written(g)
	switch edit := rapid.SampledFrom([]string{"mark", "choose", "unchoose", "splice", "settext"}).Draw(t, "edit"); edit {
	case "mark":
		q := rapid.SampledFrom([]string{qPick, qMany}).Draw(t, "question")
		o := rapid.SampledFrom(ids(st.Questions[q].Options)).Draw(t, "option")
		c := rapid.SampledFrom(ids(st.Questions[q].Criteria)).Draw(t, "criterion")
		m := marks.Cleared
		if rapid.Bool().Draw(t, "set (not clear)") {
			m = rapid.SampledFrom(marks.All[:]).Draw(t, "mark")
		}
		ok(t, d.SetMark(q, o, c, m))
		wr.cells[q+"/"+marks.Key(o, c)] = true
	case "choose", "unchoose":
		q := rapid.SampledFrom([]string{qPick, qMany}).Draw(t, "question")
		o := rapid.SampledFrom(ids(st.Questions[q].Options)).Draw(t, "option")
		on := edit == "choose"
		ok(t, d.Choose(q, o, on))
		if on {
			wr.chosen[q+"/"+o] = true
		}
	case "splice":
		text := []rune(st.Drafts[g].Questions[qWhy].Text)
		pos := rapid.IntRange(0, len(text)).Draw(t, "pos")
		del := rapid.IntRange(0, min(3, len(text)-pos)).Draw(t, "del")
		ins := rapid.StringOfN(rapid.SampledFrom(genAlphabet[g]), 0, 4, -1).Draw(t, "insert")
		ok(t, d.SpliceText(qWhy, pos, del, ins))
	case "settext":
		s := rapid.StringOfN(rapid.SampledFrom(genAlphabet[g]), 0, 8, -1).Draw(t, "text")
		ok(t, d.SetText(qWhy, s))
	}
	w.persisted(t, r)
}

// appendItem appends an option or criterion on the authority under a key
// drawn from a small pool, so that keys repeat.
func (w *world) appendItem(t *rapid.T) {
	d := w.docs[0]
	q := rapid.SampledFrom([]string{qPick, qMany}).Draw(t, "question")
	criterion := rapid.Bool().Draw(t, "criterion (not option)")
	key := rapid.SampledFrom([]string{"k1", "k2", "k3", "k4", "k5"}).Draw(t, "key")
	prev, seen := w.keys[key]
	id := fmt.Sprintf("a%d", len(w.keys)+1)
	add := d.AppendOption
	if criterion {
		add = d.AppendCriterion
	}
	before := d.Heads()
	it, repeated, err := add(q, key, Item{ID: id, Label: "label " + id})
	ok(t, err)
	if repeated != seen {
		t.Fatalf("append under key %q: repeated = %v, want %v", key, repeated, seen)
	}
	if seen {
		if it.ID != prev.ID {
			t.Fatalf("repeated key %q returned %q, want %q", key, it.ID, prev.ID)
		}
		if !d.Heads().Equal(before) {
			t.Fatalf("repeated key %q wrote a change", key)
		}
		return
	}
	kind := "option"
	if criterion {
		kind = "criterion"
	}
	w.keys[key] = Appended{Kind: kind, Question: q, ID: id}
	w.persisted(t, 0)
}

// reopen starts the next generation on the authority.
func (w *world) reopen(t *rapid.T) {
	d := w.docs[0]
	g := d.Generation()
	if g >= maxGeneration {
		t.Skip("no more generations")
	}
	ok(t, d.StartGeneration(g+1))
	w.persisted(t, 0)
}

func (w *world) drawLink(t *rapid.T) link {
	n := len(w.docs)
	from := rapid.IntRange(0, n-1).Draw(t, "from")
	to := rapid.IntRange(0, n-2).Draw(t, "to")
	if to >= from {
		to++
	}
	return link{from, to}
}

// busyLink draws a link with messages in flight.
func (w *world) busyLink(t *rapid.T) link {
	var busy []link
	for l, q := range w.flight {
		if len(q) > 0 {
			busy = append(busy, l)
		}
	}
	if len(busy) == 0 {
		t.Skip("nothing in flight")
	}
	slices.SortFunc(busy, func(a, b link) int { return (a.from*16 + a.to) - (b.from*16 + b.to) })
	return rapid.SampledFrom(busy).Draw(t, "link")
}

// receive delivers msg on l. Reordering and loss can make a message carry
// changes whose dependencies never arrived; the session refuses those
// (ErrMissingDeps) and recovers later. Anything else is a failure.
func (w *world) receive(t *rapid.T, l link, msg []byte) {
	err := w.sess[l.to][l.from].Receive(msg)
	switch {
	case errors.Is(err, ErrMissingDeps):
		w.refused++
		if traceSync {
			t.Logf("refused %v: %v", l, err)
		}
	case err != nil:
		t.Fatalf("replica %d refused a message from %d: %v", l.to, l.from, err)
	}
	w.persisted(t, l.to)
}

// network runs one random network step: a replica generates a message, or
// a message in flight is delivered (possibly out of order, possibly
// duplicated) or lost.
func (w *world) network(t *rapid.T) {
	switch rapid.SampledFrom([]string{"generate", "deliver", "duplicate", "drop"}).Draw(t, "network") {
	case "generate":
		l := w.drawLink(t)
		if msg, ok := w.sess[l.from][l.to].Generate(); ok {
			w.flight[l] = append(w.flight[l], msg)
		}
	case "deliver", "duplicate", "drop":
		l := w.busyLink(t)
		q := w.flight[l]
		i := rapid.IntRange(0, len(q)-1).Draw(t, "message")
		msg := q[i]
		how := rapid.SampledFrom([]string{"deliver", "duplicate", "drop"}).Draw(t, "fate")
		if how != "duplicate" {
			w.flight[l] = slices.Delete(q, i, i+1)
		}
		if how != "drop" {
			w.receive(t, l, msg)
		}
	}
}

// maxHealRounds bounds the sync rounds after healing. Each round lets
// every session generate once; a stalled session resets after three idle
// rounds, so a handful of rounds always suffices.
const maxHealRounds = 40

// heal drops what is in flight and runs lossless sync rounds over every
// link until every session is in sync and none has anything to send.
func (w *world) heal(t *rapid.T) {
	clear(w.flight)
	n := len(w.docs)
	for round := range maxHealRounds {
		sent := false
		for i := range n {
			for j := range n {
				if i == j {
					continue
				}
				if msg, ok := w.sess[i][j].Generate(); ok {
					sent = true
					if traceSync {
						w.trace(t, round, link{i, j}, msg)
					}
					w.receive(t, link{i, j}, msg)
				}
			}
		}
		if !sent && w.allInSync() {
			t.Logf("healed after %d rounds (%d messages refused for missing dependencies)", round, w.refused)
			return
		}
	}
	var lines []string
	for i, d := range w.docs {
		lines = append(lines, fmt.Sprintf("replica %d heads %v", i, d.Heads()))
		for j, s := range w.sess[i] {
			if s != nil {
				lines = append(lines, fmt.Sprintf("  session %d→%d in sync %v, resets %d", i, j, s.InSync(), s.Resets()))
			}
		}
	}
	t.Fatalf("replicas did not converge within %d sync rounds:\n%s", maxHealRounds, strings.Join(lines, "\n"))
}

// traceSync, set by CRDT_TRACE_SYNC=1 in the environment, logs every
// message of the healing rounds: rapid shows the log of the failing case,
// which is how a convergence failure is read.
var traceSync = os.Getenv("CRDT_TRACE_SYNC") != ""

func (w *world) trace(t *rapid.T, round int, l link, msg []byte) {
	m, err := ParseSyncMessage(msg)
	if err != nil {
		t.Logf("round %d %v: unparsable: %v", round, l, err)
		return
	}
	hashes := func(hs []ChangeHash) string {
		var out []string
		for _, h := range hs {
			out = append(out, short(h)[:6])
		}
		return strings.Join(out, ",")
	}
	var haves, changes []string
	for _, h := range m.Have {
		haves = append(haves, fmt.Sprintf("%s/%dB", hashes(h.LastSync), len(h.Bloom)))
	}
	for _, c := range m.Changes {
		changes = append(changes, short(sha256.Sum256(c[8:]))[:6])
	}
	t.Logf("round %d %v: heads %s need %s have %v changes %v; receiver heads %s",
		round, l, hashes(m.Heads), hashes(m.Need), haves, changes, hashes(w.docs[l.to].Heads()))
}

func (w *world) allInSync() bool {
	for i, row := range w.sess {
		for j, s := range row {
			if i != j && !s.InSync() {
				return false
			}
		}
	}
	return true
}

// checkConverged asserts that every replica holds the same changes and the
// same state, and that each round-trips through every persisted form.
func (w *world) checkConverged(t *rapid.T) *State {
	want := stateOf(t, w.docs[0])
	heads := w.docs[0].Heads()
	for i, d := range w.docs {
		if !d.Heads().Equal(heads) {
			t.Fatalf("replica %d heads %v, replica 0 heads %v", i, d.Heads(), heads)
		}
		if i > 0 {
			if st := stateOf(t, d); !reflect.DeepEqual(st, want) {
				t.Fatalf("replica %d state differs from replica 0:\n%s\n%s", i, dumpState(st), dumpState(want))
			}
		}
		w.checkRoundTrips(t, i, want)
	}
	return want
}

// checkRoundTrips reloads replica i from Save, from Snapshot, and from its
// persisted snapshot and chunks, and compares heads and state with its own
// (st).
func (w *world) checkRoundTrips(t *rapid.T, i int, st *State) {
	d := w.docs[i]
	heads := d.Heads()
	snap, err := d.Snapshot()
	ok(t, err)
	p := w.persist[i]
	forms := []struct {
		name   string
		base   []byte
		chunks [][]byte
	}{
		{"snapshot", snap, nil},
		{"incremental", p.base, p.chunks},
	}
	// Snapshot returns the save itself when it loads back (nearly always);
	// loading the same bytes twice would test nothing more.
	if save := d.Save(); !bytes.Equal(save, snap) {
		forms = append(forms, struct {
			name   string
			base   []byte
			chunks [][]byte
		}{"save", save, nil})
	}
	for _, form := range forms {
		back, err := Load(form.base, form.chunks, Options{})
		if err != nil {
			t.Fatalf("replica %d: load from %s: %v", i, form.name, err)
		}
		if !back.Heads().Equal(heads) {
			t.Fatalf("replica %d: %s loads to heads %v, want %v", i, form.name, back.Heads(), heads)
		}
		if got := stateOf(t, back); !reflect.DeepEqual(got, st) {
			t.Fatalf("replica %d: %s loads to a different state:\n%s\n%s", i, form.name, dumpState(got), dumpState(st))
		}
	}
}

// checkAppends asserts that every key the authority minted appears once,
// naming its item, and that no list holds an item twice.
func (w *world) checkAppends(t *rapid.T, st *State) {
	if len(st.Appended) != len(w.keys) {
		t.Fatalf("appended map has %d keys, the authority minted %d", len(st.Appended), len(w.keys))
	}
	for key, a := range w.keys {
		if st.Appended[key] != a {
			t.Fatalf("appended[%s] = %+v, want %+v", key, st.Appended[key], a)
		}
	}
	initial := map[string]QuestionShape{}
	for _, s := range testShapes() {
		initial[s.ID] = s
	}
	for id, q := range st.Questions {
		for _, list := range []struct {
			kind  string
			items []Item
			start []Item
		}{{"option", q.Options, initial[id].Options}, {"criterion", q.Criteria, initial[id].Criteria}} {
			seen := map[string]bool{}
			for _, it := range list.items {
				if seen[it.ID] {
					t.Fatalf("question %s lists %s %s twice", id, list.kind, it.ID)
				}
				seen[it.ID] = true
			}
			minted := 0
			for _, a := range w.keys {
				if a.Question == id && a.Kind == list.kind {
					minted++
				}
			}
			if len(list.items) != len(list.start)+minted {
				t.Fatalf("question %s has %d %s items, want %d initial + %d appended", id, len(list.items), list.kind, len(list.start), minted)
			}
		}
	}
}

// checkGenerations asserts that each generation's draft holds only what
// edits against that generation wrote: no edit made against an older
// generation shows in a newer one (or the other way round).
func (w *world) checkGenerations(t *rapid.T, st *State) {
	for g, dr := range st.Drafts {
		wr := w.written(g)
		for q, qd := range dr.Questions {
			for key := range qd.Marks {
				if !wr.cells[q+"/"+key] {
					t.Fatalf("generation %d draft of %s holds cell %s, never written against generation %d", g, q, key, g)
				}
			}
			for _, o := range qd.Choices {
				if !wr.chosen[q+"/"+o] {
					t.Fatalf("generation %d draft of %s chose %s, never chosen against generation %d", g, q, o, g)
				}
			}
			for _, r := range qd.Text {
				if !slices.Contains(genAlphabet[g], r) {
					t.Fatalf("generation %d draft of %s text %q holds %q, typed against another generation", g, q, qd.Text, r)
				}
			}
		}
	}
}

func dumpState(st *State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "generation %d, appended %v\n", st.Generation, st.Appended)
	for _, id := range []string{qPick, qMany, qWhy} {
		if q := st.Questions[id]; q != nil {
			fmt.Fprintf(&b, "  %s options %v criteria %v\n", id, ids(q.Options), ids(q.Criteria))
		}
	}
	gens := make([]uint64, 0, len(st.Drafts))
	for g := range st.Drafts {
		gens = append(gens, g)
	}
	slices.Sort(gens)
	for _, g := range gens {
		for _, id := range []string{qPick, qMany, qWhy} {
			q := st.Drafts[g].Questions[id]
			fmt.Fprintf(&b, "  draft %d %s: marks %v choices %v text %q\n", g, id, q.Marks, q.Choices, q.Text)
		}
	}
	return b.String()
}

// TestConvergence: replicas edit concurrently while the authority appends
// and reopens, over a network that loses, duplicates and reorders
// messages; once the network heals, every replica holds the same
// document, appended keys are unique, and old-generation edits stay out of
// newer drafts.
func TestConvergence(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld(t, rapid.IntRange(2, 5).Draw(t, "replicas"))
		edit := func(t *rapid.T) { w.edit(t, rapid.IntRange(0, len(w.docs)-1).Draw(t, "replica")) }
		// Actions are drawn uniformly: the network is busier than the
		// people, who edit more often than the authority appends or
		// reopens.
		t.Repeat(map[string]func(*rapid.T){
			"edit":  edit,
			"edit2": edit,
			"authority": func(t *rapid.T) {
				if rapid.IntRange(0, 3).Draw(t, "reopen (else append)") == 0 {
					w.reopen(t)
				} else {
					w.appendItem(t)
				}
			},
			"net":  w.network,
			"net2": w.network,
			"net3": w.network,
		})
		w.heal(t)
		st := w.checkConverged(t)
		w.checkAppends(t, st)
		w.checkGenerations(t, st)
	})
}

// TestCausalWriteWins: a write made after another write to the same cell
// has arrived wins on every replica, whatever happened before.
func TestCausalWriteWins(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld(t, rapid.IntRange(2, 4).Draw(t, "replicas"))
		for range rapid.IntRange(0, 6).Draw(t, "warm-up edits") {
			w.edit(t, rapid.IntRange(0, len(w.docs)-1).Draw(t, "replica"))
		}
		w.heal(t)

		n := len(w.docs)
		a := rapid.IntRange(0, n-1).Draw(t, "first writer")
		b := rapid.IntRange(0, n-2).Draw(t, "second writer")
		if b >= a {
			b++
		}
		q := rapid.SampledFrom([]string{qPick, qMany}).Draw(t, "question")
		st := stateOf(t, w.docs[a])
		o := rapid.SampledFrom(ids(st.Questions[q].Options)).Draw(t, "option")
		c := rapid.SampledFrom(ids(st.Questions[q].Criteria)).Draw(t, "criterion")
		all := append(marks.All[:], marks.Cleared)
		ma := rapid.SampledFrom(all).Draw(t, "first mark")
		mb := rapid.SampledFrom(all).Draw(t, "second mark")
		opts := ids(st.Questions[qPick].Options)
		ca := rapid.SampledFrom(opts).Draw(t, "first choice")
		cb := rapid.SampledFrom(opts).Draw(t, "second choice")

		ok(t, w.docs[a].SetMark(q, o, c, ma))
		ok(t, w.docs[a].Choose(qPick, ca, true))
		w.persisted(t, a)
		w.heal(t)
		ok(t, w.docs[b].SetMark(q, o, c, mb))
		ok(t, w.docs[b].Choose(qPick, cb, true))
		w.persisted(t, b)
		w.heal(t)

		key := marks.Key(o, c)
		for i, d := range w.docs {
			dr := draftOf(t, d)
			if got, present := dr.Questions[q].Marks[key]; !present || got != mb {
				t.Fatalf("replica %d: cell %s of %s = %q (present %v), want the later write %q", i, key, q, got, present, mb)
			}
			if got := dr.Questions[qPick].Choices; !slices.Equal(got, []string{cb}) {
				t.Fatalf("replica %d: choice %v, want the later choice %s", i, got, cb)
			}
		}
		w.checkConverged(t)
	})
}
