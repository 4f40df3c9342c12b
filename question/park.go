package question

import (
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist"
)

// A live automerge document costs tens of kilobytes (its Rust heap, the
// op tree and every change), while a decision nobody is editing needs none
// of it: reads answer from the record, the checked state and the heads.
// So the authority keeps at most Options.LiveDecisions documents live and
// parks the others: a parked decision keeps only its draft as the store
// holds it (stored) plus what reads and the next wake need (heads, the
// document's crdt.Carried budget). A command, transaction or read that
// needs the document wakes it by loading those bytes, exactly as a
// restart would, and carrying the budget across.
//
// The bytes are kept in memory rather than read back from the store at
// each wake: the store reads whole documents only (persist.Store has no
// per-decision read), a read can fail where the bytes in hand cannot, and
// a driver that commits in groups (Options.Durable) holds writes the store
// does not have yet. They are the very slices the authority committed (or
// loaded), so keeping them costs no copy: one compact snapshot and the few
// incremental chunks since (at most Authority.compactEvery).

// DefaultLiveDecisions is the number of decisions whose documents stay
// live when Options.LiveDecisions is zero.
const DefaultLiveDecisions = 64

// parked is what a decision keeps of its document while it is not live.
type parked struct {
	heads crdt.Heads
	carry crdt.Carried
}

// heads returns the decision's revision, live or parked.
func (d *decision) heads() crdt.Heads {
	if d.doc != nil {
		return d.doc.Heads()
	}
	return d.parked.heads
}

// keep records a draft write the store now holds, so the stored form in
// memory stays what a restart would load.
func (d *decision) keep(p persist.DraftPut) {
	if p.Snapshot {
		d.stored = persist.StoredDraft{Snapshot: p.Chunk}
		return
	}
	// Clipped: the slice may share its array with the caller's.
	d.stored.Chunks = append(slices.Clip(d.stored.Chunks), p.Chunk)
}

// use returns a decision with its document live, waking it if it was
// parked: not_found for an unknown id, unavailable if its stored bytes no
// longer load (the decision is then damaged, as a load would have found it).
func (a *Authority) use(id string) (*decision, *Refusal) {
	d, r := a.lookup(id)
	if r != nil {
		return nil, r
	}
	if err := a.wake(d); err != nil {
		return nil, a.missing(id)
	}
	return d, nil
}

// wake makes a decision's document live and the most recently used,
// parking the least recently used others beyond the cap first.
func (a *Authority) wake(d *decision) error {
	a.tick++
	d.used = a.tick
	if d.doc != nil {
		return nil
	}
	a.trim(1)
	doc, err := a.loadStored(d.stored, d.parked.carry)
	if err == nil && !doc.Heads().Equal(d.parked.heads) {
		err = fmt.Errorf("woke at heads %v, parked at %v", doc.Heads(), d.parked.heads)
	}
	if err != nil {
		a.damage(d.rec, &persist.CorruptError{Bucket: "docs/" + a.opts.Doc + "/drafts", Key: d.rec.ID, Err: err})
		return err
	}
	a.churn()
	d.doc, d.parked = doc, parked{}
	a.live[d.rec.ID] = d
	return nil
}

// loadStored loads a draft as stored. crdt.Load refuses damaged bytes with
// an error, but it wraps a C library: a panic below it must cost this
// decision, not the host.
func (a *Authority) loadStored(s persist.StoredDraft, carry crdt.Carried) (doc *crdt.Doc, err error) {
	defer func() {
		if p := recover(); p != nil {
			doc, err = nil, fmt.Errorf("crdt: load panicked: %v", p)
		}
	}()
	snap, chunks, _, err := unwrapStored(s.Snapshot, s.Chunks, false, nil)
	if err != nil {
		return nil, err
	}
	return crdt.Load(snap, chunks, crdt.Options{Actor: a.actor, Now: a.opts.Now, Carry: carry})
}

// park drops a decision's live document, keeping what waking it needs.
func (a *Authority) park(d *decision) {
	if d.doc == nil {
		return
	}
	d.parked = parked{heads: d.doc.Heads(), carry: d.doc.Carry()}
	d.state = compactState(d.state)
	d.prov = d.prov.compact()
	d.doc = nil
	delete(a.live, d.rec.ID)
	a.churn()
}

// churn counts an automerge document made (created or woken) or dropped
// (parked), and runs a garbage collection every collectAfter of them in
// the process, whichever authorities made or dropped them.
//
// A dropped document's automerge memory (tens of KB of Rust heap for a
// small decision, and as much again for the checks of each load) is freed
// by finalizers, which only a collection runs, and Go paces its
// collections by the Go heap alone, which this churn barely moves: left
// alone, the documents of a whole join or restart wait for one, and the C
// allocator keeps that peak resident for good. A collection every 128
// documents bounds it to a few MB, for one collection per 64 wakes. The
// count is the process's, not each authority's: a server parking the
// one or two decisions of each of hundreds of idle documents (Park)
// drops as many documents as one large document's join.
func (a *Authority) churn() {
	if churned.Add(1)%collectAfter == 0 {
		runtime.GC()
	}
}

// churned counts the documents every authority made or dropped (churn).
var churned atomic.Uint64

const collectAfter = 128

// ParkUnused parks every decision that nothing needed since the previous
// ParkUnused and whose document nothing holds live (a sync session, or
// the transaction in progress), whatever Options.LiveDecisions allows. A
// driver calling it every few seconds parks the decisions idle that long
// while the ones in use stay live; a document's members may stay
// connected, since whatever needs a parked document wakes it, as it wakes
// those parked beyond the cap. Two calls in a row park every decision
// nothing holds. It returns how many decisions stay live.
func (a *Authority) ParkUnused() int {
	for id, d := range a.live {
		if d.used > a.parkMark || a.pins[id] > 0 || a.open != nil && a.open.holds(id) {
			continue
		}
		a.park(d)
	}
	a.parkMark = a.tick
	return len(a.live)
}

// trim parks least recently used documents until room more fit under the
// cap. Documents pinned by a sync session, or changed by the transaction
// in progress (whose changes are not committed yet), are never parked.
func (a *Authority) trim(room int) {
	limit := a.opts.LiveDecisions
	if limit < 0 {
		return
	}
	for len(a.live)+room > limit {
		var victim *decision
		for id, d := range a.live {
			if a.pins[id] > 0 || a.open != nil && a.open.holds(id) {
				continue
			}
			if victim == nil || d.used < victim.used {
				victim = d
			}
		}
		if victim == nil {
			return
		}
		a.park(victim)
	}
}

// holds reports whether a transaction has changed a decision's document.
func (t *txn) holds(id string) bool {
	_, touched := t.touched[id]
	_, rebased := t.rebased[id]
	return touched || rebased
}

// damage turns a decision whose stored draft no longer loads into a
// damaged one, as a load would have found it: left out of Records, refused
// as unavailable, its stored bytes never written over.
func (a *Authority) damage(rec *Record, err error) {
	id := rec.ID
	a.markDamaged(id, rec.Key, err)
	delete(a.decisions, id)
	delete(a.live, id)
	delete(a.pins, id)
	if a.byKey[rec.Key] == id {
		delete(a.byKey, rec.Key)
	}
	a.order = slices.DeleteFunc(a.order, func(x string) bool { return x == id })
	for s, sid := range a.sessions {
		if sid == id {
			delete(a.sessions, s)
		}
	}
	if t := a.open; t != nil {
		// Only the unchanged copy of its record can be staged: every path
		// wakes a decision before it changes anything of it.
		delete(t.records, id)
	}
}

// Live reports how many decisions have a live document, and how many of
// them sync sessions pin.
func (a *Authority) Live() (live, pinned int) {
	return len(a.live), len(a.pins)
}

// pin keeps a decision's document live for a sync session.
func (a *Authority) pin(id string, s *crdt.Session) {
	a.sessions[s] = id
	a.pins[id]++
}

// ReleaseSession ends a sync session NewSession started, unpinning its
// decision's document so it may be parked again. Releasing a session
// twice, or one a Reload already ended, does nothing.
func (a *Authority) ReleaseSession(s *crdt.Session) {
	id, ok := a.sessions[s]
	if !ok {
		return
	}
	delete(a.sessions, s)
	if a.pins[id]--; a.pins[id] <= 0 {
		delete(a.pins, id)
	}
	a.trim(0)
}

// A dropped document's automerge memory is freed by the finalizer of one
// small Go object that automerge-go allocates with it. That object holds
// no Go pointer, so Go's allocator packs it into a 16-byte block shared
// with other small pointer-free objects, and a finalizer does not run
// while anything else in its block is reachable. A parked decision keeps
// short strings read out of its document (ids, marks, choices) that were
// allocated amid those objects: one in the same block would keep a whole
// dropped document alive for as long as the decision. So park copies the
// state it keeps into one buffer of its own (arena), which shares no
// block with anything.

// arena holds copies of strings in buffers of at least arenaChunk bytes,
// which Go never packs with other objects.
type arena struct{ buf []byte }

const arenaChunk = 512

func (r *arena) str(s string) string {
	if s == "" {
		return ""
	}
	if cap(r.buf)-len(r.buf) < len(s) {
		r.buf = make([]byte, 0, max(arenaChunk, len(s)))
	}
	start := len(r.buf)
	r.buf = append(r.buf, s...)
	// The bytes are never written again: append only writes past them.
	return unsafe.String(&r.buf[start], len(s))
}

func (r *arena) items(in []crdt.Item) []crdt.Item {
	if in == nil {
		return nil
	}
	out := make([]crdt.Item, len(in))
	for i, it := range in {
		out[i] = crdt.Item{ID: r.str(it.ID), Label: r.str(it.Label)}
	}
	return out
}

// compactState returns a deep copy of st whose strings live in one arena.
func compactState(st *crdt.State) *crdt.State {
	var r arena
	out := &crdt.State{Generation: st.Generation,
		Questions: make(map[string]*crdt.QuestionState, len(st.Questions)),
		Appended:  make(map[string]crdt.Appended, len(st.Appended)),
		Drafts:    make(map[uint64]crdt.Draft, len(st.Drafts)),
	}
	for id, q := range st.Questions {
		out.Questions[r.str(id)] = &crdt.QuestionState{Written: q.Written, Multiple: q.Multiple,
			Options: r.items(q.Options), Criteria: r.items(q.Criteria)}
	}
	for k, ap := range st.Appended {
		out.Appended[r.str(k)] = crdt.Appended{Kind: r.str(ap.Kind), Question: r.str(ap.Question), ID: r.str(ap.ID)}
	}
	for g, dr := range st.Drafts {
		nd := crdt.Draft{Generation: dr.Generation, Questions: make(map[string]crdt.QuestionDraft, len(dr.Questions))}
		for id, qd := range dr.Questions {
			c := crdt.QuestionDraft{Text: r.str(qd.Text)}
			if qd.Choices != nil {
				c.Choices = make([]string, len(qd.Choices))
				for i, ch := range qd.Choices {
					c.Choices[i] = r.str(ch)
				}
			}
			if qd.Marks != nil {
				c.Marks = make(map[string]marks.Mark, len(qd.Marks))
				for k, m := range qd.Marks {
					c.Marks[r.str(k)] = marks.Mark(r.str(string(m)))
				}
			}
			nd.Questions[r.str(id)] = c
		}
		out.Drafts[g] = nd
	}
	return out
}
