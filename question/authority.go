package question

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist"
)

// Member is who sends a command: a login and whether they may write.
// Logins compare case-insensitively.
type Member struct {
	Login string
	Write bool
}

// Options configures an Authority. Store and Doc are required; the rest
// have working defaults.
type Options struct {
	// Store is where every command's effects are committed.
	Store persist.Store
	// Doc is the id of the document whose decisions this authority owns.
	Doc string
	// Now is the clock; nil uses time.Now.
	Now func() time.Time
	// NewID mints record, option and criterion ids; it must return ids
	// matching ^[A-Za-z0-9_-]{1,64}$ and never repeat. nil uses random ids.
	NewID func() string
	// ImplementationActive reports whether an implementation of a decision
	// is running, which freezes its definition. nil means never.
	ImplementationActive func(decision string) bool
	// CompactAfter is how many incremental draft chunks a decision
	// accumulates at least before its CRDT document is compacted into one
	// snapshot; a decision with a long history waits for more (one per
	// two operations of it, at most 1,024). Zero means 64.
	CompactAfter int
	// LiveDecisions is how many decisions keep a live automerge document
	// in memory; the least recently used others are parked, keeping only
	// their stored bytes, and woken transparently by whatever needs the
	// document (see park.go). Documents pinned by sync sessions
	// (NewSession) and those the running command changes are never parked,
	// so more may be live for a while. Zero means DefaultLiveDecisions;
	// negative means no limit.
	LiveDecisions int
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// QuietRebase leaves the rebase of a decision that one member is
	// editing, once its history has outgrown its values
	// (crdt.Budget.Outgrown), to the driver, which calls Rebase when
	// nobody has edited for a moment (RebaseDue lists them): a rebase
	// replaces the history every member holds, so each loads the
	// decision again and the editor's edit in flight is made again, a
	// stall in the middle of their typing. A decision edited without a
	// pause is still rebased with an edit once its history is overdue
	// (crdt.Budget.Overdue). One that several members edit is rebased
	// with the edit that outgrows it, as without QuietRebase: each of
	// them applies every other's changes, at a cost that grows with the
	// history, and a pause of all of them is rare.
	QuietRebase bool
	// Durable is for drivers whose Store only gathers Writes and commits
	// them later as one group (the sync server does): after a Commit to
	// such a Store returned, the authority hands Durable the step that
	// answers blocking asks and ends the "resolving" state of the
	// decisions it saved, and the driver calls it with true once the
	// group is durable, or false if its commit failed (the driver then
	// reloads the authority). nil means a returned Commit is durable.
	Durable func(settle func(durable bool))
}

// Authority owns the decisions of one document: it validates every
// command, commits its effects to the Store and only then applies them in
// memory and returns. It is not safe for concurrent use: the goroutine that
// owns the document calls it.
type Authority struct {
	opts      Options
	actor     crdt.ActorID
	decisions map[string]*decision
	byKey     map[string]string
	order     []string              // decision ids in creation order
	broken    bool                  // a commit failed; reload before the next command
	rows      map[string]*AnswerRow // decision_answers rows, by decision
	waiters   *waiters              // blocking asks; kept across reloads
	// damaged holds the decisions the last load could not read, and
	// damagedKeys their stable keys where known (damaged.go).
	damaged     map[string]*DamagedError
	damagedKeys map[string]string
	// resolving counts, per decision, saves committed to a Store that only
	// collects Writes (Options.Durable) and not yet durable: appends are
	// then refused as resolving rather than resolved.
	resolving map[string]int
	// live holds the decisions whose documents are in memory; tick orders
	// their use, and parkMark is the tick at the last ParkUnused (park.go).
	live     map[string]*decision
	tick     uint64
	parkMark uint64
	// sessions maps each sync session NewSession started to its decision,
	// and pins counts them per decision: a pinned document is never parked.
	sessions map[*crdt.Session]string
	pins     map[string]int
	// open is the transaction in progress (or the last one), whose changed
	// documents are never parked.
	open *txn
}

type decision struct {
	rec *Record
	// doc is the live document, nil while parked; parked then holds its
	// heads and carried budget.
	doc    *crdt.Doc
	parked parked
	state  *crdt.State // materialised doc, refreshed after each change
	// stored is the draft as the store holds it: the snapshot and the
	// incremental chunks since, which a wake loads.
	stored persist.StoredDraft
	used   uint64 // the authority's tick when last used
	// prov is who last set each value of the drafts (provenance.go).
	prov provIndex
	// editors are the members whose edits of the draft reached the
	// authority since the document's history was last rebased (or
	// loaded): with Options.QuietRebase, the rebase of a decision one
	// member edits waits for their pause.
	editors map[string]bool
}

// NewAuthority loads a document's decisions from the store.
func NewAuthority(ctx context.Context, opts Options) (*Authority, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("question: Options.Store is required")
	}
	if opts.Doc == "" {
		return nil, fmt.Errorf("question: Options.Doc is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewID == nil {
		opts.NewID = randomID
	}
	if opts.ImplementationActive == nil {
		opts.ImplementationActive = func(string) bool { return false }
	}
	if opts.CompactAfter <= 0 {
		opts.CompactAfter = 64
	}
	if opts.LiveDecisions == 0 {
		opts.LiveDecisions = DefaultLiveDecisions
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Authority{opts: opts, waiters: &waiters{m: map[string]*AnswerWait{}}, resolving: map[string]int{}}
	if err := a.load(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// load (re)reads everything from the store. A fresh actor id per load keeps
// the authority's automerge sequence numbers unique across restarts.
//
// A decision whose record, draft or answer row cannot be read does not
// fail the load: it is logged, kept in Damaged and refused as unavailable,
// and the others load. Only a store that cannot be read at all (or cannot
// take the marks map an old draft gains) fails it.
func (a *Authority) load(ctx context.Context) error {
	sd, err := a.opts.Store.LoadDocument(ctx, a.opts.Doc)
	if err != nil {
		return fmt.Errorf("question: load document %q: %w", a.opts.Doc, err)
	}
	a.actor = crdt.NewActorID()
	a.decisions = map[string]*decision{}
	a.byKey = map[string]string{}
	a.order = nil
	a.damaged = map[string]*DamagedError{}
	a.damagedKeys = map[string]string{}
	// Every session pointed into the documents dropped here.
	a.live, a.sessions, a.pins, a.open = map[string]*decision{}, map[*crdt.Session]string{}, map[string]int{}, nil
	answers, badRows := a.readableAnswers(sd.Answers)
	for id, raw := range sd.Records {
		d, key, needsMarks, err := a.loadDecision(id, raw, sd)
		if err == nil {
			err = badRows[id]
		}
		if err != nil {
			a.markDamaged(id, key, err)
			continue
		}
		if needsMarks != nil {
			// Drafts stored before criteria existed gain an empty marks map.
			chunk, err := d.doc.ChangesSince(needsMarks)
			put := persist.DraftPut{Decision: id, Chunk: chunk}
			if err == nil {
				err = a.opts.Store.Commit(ctx, a.opts.Doc, &persist.Write{Drafts: []persist.DraftPut{put}})
			}
			if err != nil {
				return fmt.Errorf("question: restore marks of %q: %w", id, err)
			}
			d.keep(put)
		}
		// Loaded, checked and read: nobody is editing it yet.
		a.live[id] = d
		if a.opts.LiveDecisions >= 0 {
			a.park(d)
		}
		a.decisions[id] = d
		a.byKey[d.rec.Key] = id
		a.order = append(a.order, id)
	}
	for id, err := range badRows {
		if _, ok := sd.Records[id]; !ok {
			// A row of a decision with no record: nothing else to refuse.
			a.opts.Logger.Error("question: answer row cannot be read; left out", "doc", a.opts.Doc, "decision", id, "err", err)
		}
	}
	slices.SortFunc(a.order, func(x, y string) int { return byCreation(a.decisions[x], a.decisions[y]) })
	if err := a.loadAnswers(answers); err != nil {
		return err
	}
	a.broken = false
	return nil
}

// byCreation orders decisions by creation time, then id.
func byCreation(x, y *decision) int {
	if c := x.rec.CreatedAt.Compare(y.rec.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(x.rec.ID, y.rec.ID)
}

// Reload drops the in-memory state and reads the document again from the
// store. A driver that pipelines commits calls it when a commit it deferred
// fails, so memory never holds what the store lacks.
func (a *Authority) Reload(ctx context.Context) error { return a.load(ctx) }

// Doc returns the id of the document this authority owns.
func (a *Authority) Doc() string { return a.opts.Doc }

// Record returns a copy of one decision's record.
func (a *Authority) Record(id string) (Record, bool) {
	d, ok := a.decisions[id]
	if !ok {
		return Record{}, false
	}
	return d.rec.Clone(), true
}

// Records returns copies of every record, in creation order.
func (a *Authority) Records() []Record {
	out := make([]Record, 0, len(a.order))
	for _, id := range a.order {
		out = append(out, a.decisions[id].rec.Clone())
	}
	return out
}

// Lookup returns the id of the decision created with a stable key.
func (a *Authority) Lookup(key string) (string, bool) {
	id, ok := a.byKey[key]
	return id, ok
}

// Draft returns the accepted shared draft of a decision's current
// generation, and the revision (heads) it is at.
func (a *Authority) Draft(id string) (crdt.Draft, crdt.Heads, error) {
	d, ok := a.decisions[id]
	if !ok {
		return crdt.Draft{}, nil, a.missing(id)
	}
	return d.state.Drafts[d.state.Generation], d.heads(), nil
}

// Save returns a decision's whole accepted CRDT document, for a replica to
// load.
func (a *Authority) Save(id string) ([]byte, error) {
	d, r := a.use(id)
	if r != nil {
		return nil, r
	}
	return d.doc.Save(), nil
}

// ChangesSince returns the accepted changes of a decision after heads, for
// a replica that holds heads to catch up.
func (a *Authority) ChangesSince(id string, heads crdt.Heads) ([]byte, error) {
	d, r := a.use(id)
	if r != nil {
		return nil, r
	}
	if !d.doc.Has(heads) && d.doc.Rebased() {
		return nil, &Refusal{Reason: Stale, Reset: true, Err: crdt.ErrMissingDeps,
			Message: "the decision's history was rebased; load the whole document (Save)"}
	}
	return d.doc.ChangesSince(heads)
}

// NewSession starts a sync session with one peer over a decision's
// document. Changes the peer sends must go through Edit, never straight to
// the session; an edit session refuses any that would change the
// document's shape all the same.
//
// The session points into the decision's live document, so it pins the
// document in memory (it is never parked) until ReleaseSession; the
// caller releases every session it no longer uses. Reload ends every
// session: their documents are dropped.
func (a *Authority) NewSession(id string) (*crdt.Session, error) {
	d, r := a.use(id)
	if r != nil {
		return nil, r
	}
	s := d.doc.NewEditSession()
	a.pin(id, s)
	return s, nil
}

// txn gathers one command's effects: the records it changes (as copies),
// the CRDT documents it touched (with their heads before, for rollback),
// and the Write to commit.
type txn struct {
	a       *Authority
	write   persist.Write
	records map[string]*Record
	created map[string]*decision
	touched map[string]crdt.Heads
	chunks  map[string]int
	// states holds documents' checked states computed while staging, so
	// commit need not read them again.
	states map[string]*crdt.State
	// rebased holds the documents persistDraft rebased (see rebase); they
	// replace the decisions' documents when the transaction commits.
	rebased map[string]*crdt.Doc
	// ans holds decision_answers rows and waiter hand-offs (answers.go).
	ans answerTxn
	// settled lists the decisions this transaction saves.
	settled []string
	// edits holds the provenance of the draft edits this transaction
	// accepts, by decision (provenance.go).
	edits map[string]*provRecord
}

func (a *Authority) begin(ctx context.Context) (*txn, error) {
	if a.broken {
		if err := a.load(ctx); err != nil {
			return nil, &Refusal{Reason: Unavailable, Message: "storage is unavailable", Err: err}
		}
	}
	a.open = &txn{a: a, records: map[string]*Record{}, created: map[string]*decision{},
		touched: map[string]crdt.Heads{}, chunks: map[string]int{}, states: map[string]*crdt.State{},
		rebased: map[string]*crdt.Doc{}}
	return a.open, nil
}

// record returns the copy of a record this transaction changes.
func (t *txn) record(id string) *Record {
	if r, ok := t.records[id]; ok {
		return r
	}
	if d, ok := t.created[id]; ok {
		t.records[id] = d.rec
		return d.rec
	}
	r := t.a.decisions[id].rec.Clone()
	t.records[id] = &r
	return &r
}

func (t *txn) decision(id string) *decision {
	if d, ok := t.created[id]; ok {
		return d
	}
	return t.a.decisions[id]
}

// touch remembers a document's heads before this transaction changes it.
// The document is live (the command woke it) and stays so until the
// transaction ends.
func (t *txn) touch(id string) {
	if _, ok := t.touched[id]; ok {
		return
	}
	if _, ok := t.created[id]; ok {
		return
	}
	t.touched[id] = t.a.decisions[id].doc.Heads()
}

// persistDraft adds the document's new changes since before to the Write,
// or a verified snapshot when the chunk count reaches the threshold, or,
// once the document's history has grown past a rebase threshold (see
// crdt.Budget), a rebased document. Whatever it stages loads again within
// crdt.Load's limits; a document whose values alone would not is refused
// with too_large (an error wrapping crdt.ErrBudget).
func (t *txn) persistDraft(id string, before crdt.Heads) error {
	return t.persistChanges(id, before, nil)
}

// persistChanges is persistDraft for a caller that holds the changes made
// since before (a draft edit's, crdt.AppliedEdit.Changes), which it stores
// as they are instead of asking the document for them: automerge 0.5
// finds the changes since a revision by walking the whole history.
func (t *txn) persistChanges(id string, before crdt.Heads, since []byte) error {
	d := t.decision(id)
	if b := d.doc.Budget(); b.NeedsRebase() || t.a.rebaseNow(d, b) {
		return t.rebase(id)
	}
	n, ok := t.chunks[id]
	if !ok {
		n = len(d.stored.Chunks)
	}
	if _, fresh := t.created[id]; fresh || n+1 >= t.a.compactEvery(d.doc.Budget()) {
		snap, err := d.doc.Snapshot()
		if errors.Is(err, crdt.ErrBudget) {
			return t.rebase(id)
		}
		if err == nil {
			snap, err = wrapDraft(t.wholeRecord(id), snap)
		}
		if err != nil {
			return err
		}
		t.write.Drafts = append(t.write.Drafts, persist.DraftPut{Decision: id, Chunk: snap, Snapshot: true})
		t.chunks[id] = 0
		return nil
	}
	chunk := since
	if chunk == nil {
		var err error
		if chunk, err = d.doc.ChangesSince(before); err != nil {
			return err
		}
	}
	if len(chunk) == 0 {
		return nil
	}
	chunk, err := wrapDraft(t.edits[id], chunk)
	if err != nil {
		return err
	}
	t.write.Drafts = append(t.write.Drafts, persist.DraftPut{Decision: id, Chunk: chunk})
	t.chunks[id] = n + 1
	return nil
}

// rebaseNow reports whether a command that changes decision d, whose
// history has budget b, rebases it too (see Options.QuietRebase).
func (a *Authority) rebaseNow(d *decision, b crdt.Budget) bool {
	if a.opts.QuietRebase && len(d.editors) <= 1 {
		return b.Overdue(d.state.LiveOps())
	}
	return b.Outgrown(d.state.LiveOps())
}

// RebaseDue returns the live decisions whose history has outgrown their
// values and waits for Rebase (Options.QuietRebase), in creation order. A
// parked decision is checked when a command wakes it.
func (a *Authority) RebaseDue() []string {
	var due []string
	for _, id := range a.order {
		if d := a.decisions[id]; d.doc != nil && d.doc.Budget().Outgrown(d.state.LiveOps()) {
			due = append(due, id)
		}
	}
	return due
}

// Rebase replaces the history of decision id with a fresh one holding the
// same values (crdt.Doc.Rebase), and commits it, if the history has
// outgrown them; it reports whether it did. Every member then needs the
// decision's whole document again (Save), as after an edit whose result
// says Rebased. Reasons: not_found; unavailable; too_large.
func (a *Authority) Rebase(ctx context.Context, id string) (bool, error) {
	if _, r := a.lookup(id); r != nil {
		return false, r
	}
	t, err := a.begin(ctx)
	if err != nil {
		return false, err
	}
	d, r := a.use(id)
	if r != nil {
		return false, t.fail(r)
	}
	if !d.doc.Budget().Outgrown(d.state.LiveOps()) {
		t.end()
		return false, nil
	}
	if err := t.rebase(id); err != nil {
		return false, t.fail(draftRefusal(err))
	}
	if err := t.commit(ctx); err != nil {
		return false, err
	}
	return true, nil
}

// maxCompactEvery caps how many chunks a decision's stored form holds
// between compactions, however large its history.
const maxCompactEvery = 1024

// compactEvery is how many incremental chunks a decision with budget b
// accumulates before it is compacted: Options.CompactAfter, or one per
// two operations of its history when that is more (at most
// maxCompactEvery). A compaction saves the whole document and proves the
// save loads back, both work that grows with the history; spacing them in
// proportion to it keeps their share of each edit constant, where a fixed
// interval made them a third of the server's CPU on a busy decision.
func (a *Authority) compactEvery(b crdt.Budget) int {
	return max(a.opts.CompactAfter, min(b.Ops/2, maxCompactEvery))
}

// rebase stages a decision's document with a fresh history holding the
// same values (crdt.Doc.Rebase, which proves it loads back and reads the
// same) as the decision's new snapshot, replacing snapshot and chunks in
// the same commit as the command. The document in memory is swapped only
// when the commit succeeds.
func (t *txn) rebase(id string) error {
	d := t.decision(id)
	start := time.Now()
	old := d.doc.Budget()
	nd, err := d.doc.Rebase()
	if err != nil {
		return err
	}
	snap, err := nd.Snapshot()
	if err == nil {
		// The rebased history is one change of the authority's actor: the
		// attribution travels in the snapshot's provenance record.
		snap, err = wrapDraft(t.wholeRecord(id), snap)
	}
	if err != nil {
		return err
	}
	t.write.Drafts = slices.DeleteFunc(t.write.Drafts, func(p persist.DraftPut) bool { return p.Decision == id })
	t.write.Drafts = append(t.write.Drafts, persist.DraftPut{Decision: id, Chunk: snap, Snapshot: true})
	t.chunks[id] = 0
	t.rebased[id] = nd
	nb := nd.Budget()
	t.a.opts.Logger.Info("rebased a decision's document", "doc", t.a.opts.Doc, "decision", id,
		"ops", old.Ops, "bytes", old.Bytes, "changes", old.Changes,
		"ops_after", nb.Ops, "bytes_after", len(snap), "took", time.Since(start))
	return nil
}

// draftRefusal is the refusal for a draft that could not be staged.
func draftRefusal(err error) *Refusal {
	if errors.Is(err, crdt.ErrBudget) {
		return &Refusal{Reason: TooLarge, Reset: true, Err: err,
			Message: "the decision's document would grow past the size it must load within; nothing was changed"}
	}
	return &Refusal{Reason: Unavailable, Message: "cannot save the draft", Err: err}
}

// abort undoes in-memory document changes of a refused command.
func (t *txn) abort() {
	defer t.end()
	t.abortAnswers()
	for id, heads := range t.touched {
		d := t.a.decisions[id]
		if err := d.doc.Rollback(heads); err != nil {
			// The document can no longer be trusted in memory; reload it.
			t.a.broken = true
			t.a.opts.Logger.Error("rollback failed; reloading", "doc", t.a.opts.Doc, "decision", id, "err", err)
		}
	}
}

// commit hands the transaction's Write to Options.Store in one Commit,
// then applies it in memory. If Commit fails, nothing is applied and the
// authority reloads from the store before its next command.
//
// What a returned Commit means is the Store's: with a store that commits
// (boltstore, jetstream, memstore) the Write is durable when commit
// returns. Under the sync server the Store only gathers the Writes of a
// group of commands (sync/server's pipeStore); the server commits the
// group to the real store afterwards and holds every reply until then, so
// nothing is acknowledged before it is durable. The authority's own
// replies that cannot wait for the server — blocking asks a save answers —
// are handed to Options.Durable, which the server runs once the group's
// commit ended. If that commit fails, the server reloads the authority
// (Reload), which forgets what this commit applied in memory.
func (t *txn) commit(ctx context.Context) error {
	for id, r := range t.records {
		raw, err := json.Marshal(r)
		if err != nil {
			t.abort()
			return &Refusal{Reason: Unavailable, Message: "cannot encode record", Err: err}
		}
		t.write.Records = append(t.write.Records, persist.Put{Key: id, Value: raw})
		t.write.Projections = append(t.write.Projections, persist.Put{Key: id, Value: RenderProjection(projectionOf(r))})
	}
	slices.SortFunc(t.write.Records, func(x, y persist.Put) int { return strings.Compare(x.Key, y.Key) })
	slices.SortFunc(t.write.Projections, func(x, y persist.Put) int { return strings.Compare(x.Key, y.Key) })
	if err := t.stageAnswers(); err != nil {
		t.abort()
		return &Refusal{Reason: Unavailable, Message: "cannot encode an answer row", Err: err}
	}
	if !t.write.Empty() {
		if err := t.a.opts.Store.Commit(ctx, t.a.opts.Doc, &t.write); err != nil {
			t.abort()
			t.a.broken = true // memory may hold effects the store lacks
			t.a.opts.Logger.Error("commit failed", "doc", t.a.opts.Doc, "err", err)
			return &Refusal{Reason: Unavailable, Message: "the change could not be saved; nothing was applied", Err: err}
		}
	}
	for id, nd := range t.rebased {
		d := t.decision(id)
		d.doc, d.editors = nd, nil
	}
	// A batch's decisions share their creation time: they take the order
	// a load gives them (byCreation), not the map's.
	created := slices.SortedFunc(maps.Keys(t.created), func(x, y string) int { return byCreation(t.created[x], t.created[y]) })
	for _, id := range created {
		d := t.created[id]
		t.a.decisions[id] = d
		t.a.byKey[d.rec.Key] = id
		t.a.order = append(t.a.order, id)
	}
	for id, r := range t.records {
		t.a.decisions[id].rec = r
	}
	for id := range t.touched {
		d := t.a.decisions[id]
		if st, ok := t.states[id]; ok {
			d.state = st
			continue
		}
		st, err := d.doc.State()
		if err != nil { // cannot happen: every change was checked
			t.a.broken = true
			continue
		}
		d.state = st
	}
	for _, p := range t.write.Drafts {
		t.a.decisions[p.Decision].keep(p)
	}
	t.applyEdits()
	for _, id := range created {
		t.a.churn()
		t.a.live[id] = t.created[id]
		t.a.tick++
		t.created[id].used = t.a.tick
	}
	if t.a.opts.Durable != nil && len(t.settled) > 0 {
		settled := t.settled
		for _, id := range settled {
			t.a.resolving[id]++
		}
		t.a.opts.Durable(func(bool) {
			for _, id := range settled {
				if t.a.resolving[id]--; t.a.resolving[id] <= 0 {
					delete(t.a.resolving, id)
				}
			}
		})
	}
	t.applyAnswers()
	t.end()
	return nil
}

// end closes the transaction: its documents may be parked again, down to
// the cap.
func (t *txn) end() {
	if t.a.open == t {
		t.a.open = nil
	}
	t.a.trim(0)
}

func (t *txn) fail(r *Refusal) error {
	t.abort()
	return r
}

// target checks that who may write and returns the decision they act on.
func (a *Authority) target(who Member, id string) (*decision, *Refusal) {
	if r := canWrite(who); r != nil {
		return nil, r
	}
	return a.lookup(id)
}

// lookup returns an existing decision or a not_found refusal.
func (a *Authority) lookup(id string) (*decision, *Refusal) {
	d, ok := a.decisions[id]
	if !ok {
		return nil, a.missing(id)
	}
	return d, nil
}

func canWrite(who Member) *Refusal {
	if !who.Write {
		return refuse(Forbidden, "%s can read this document but not change it", nonEmpty(who.Login))
	}
	return nil
}

func nonEmpty(s string) string {
	if s == "" {
		return "this member"
	}
	return s
}

func randomID() string {
	var b [9]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("question: crypto/rand failed: %v", err))
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = alphabet[int(c)%len(alphabet)]
	}
	return string(out)
}

// question returns a definition's question by id.
func (d *Definition) question(id string) *Question {
	for i := range d.Questions {
		if d.Questions[i].ID == id {
			return &d.Questions[i]
		}
	}
	return nil
}

// shapes converts a definition into what the CRDT document holds of it.
func shapeOf(q Question) crdt.QuestionShape {
	s := crdt.QuestionShape{ID: q.ID, Written: q.Written(), Multiple: q.Multiple}
	for _, o := range q.Options {
		s.Options = append(s.Options, crdt.Item{ID: o.ID, Label: o.Label})
	}
	for _, c := range q.Criteria {
		s.Criteria = append(s.Criteria, crdt.Item{ID: c.ID, Label: c.Label})
	}
	return s
}

var _ = marks.Key
