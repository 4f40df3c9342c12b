package crdt

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/accord-crdt/accord/marks"
)

// Size caps for bytes from outside.
const (
	// MaxDocumentBytes caps a saved document or a batch of chunks to load.
	MaxDocumentBytes = 64 << 20
	// MaxChangesBytes caps one batch of encoded changes.
	MaxChangesBytes = 4 << 20
	// MaxTextRunes caps a written answer.
	MaxTextRunes = 100_000
)

// formatVersion is stored at root "v"; a document of a newer format is
// refused rather than misread.
const formatVersion = 1

// ChangeHash identifies one change: the SHA-256 of its encoding.
type ChangeHash [32]byte

// String renders the hash as 64 hex digits.
func (h ChangeHash) String() string { return hex.EncodeToString(h[:]) }

// fromAM converts automerge's hashes (the same 32 bytes) to ours.
func fromAM(hs []automerge.ChangeHash) []ChangeHash {
	out := make([]ChangeHash, len(hs))
	for i, h := range hs {
		out[i] = ChangeHash(h)
	}
	return out
}

// toAM converts hashes to automerge's.
func toAM(hs []ChangeHash) []automerge.ChangeHash {
	out := make([]automerge.ChangeHash, len(hs))
	for i, h := range hs {
		out[i] = automerge.ChangeHash(h)
	}
	return out
}

// amHeads returns automerge's heads of d, unsorted, as it lists them.
func (d *Doc) amHeads() []ChangeHash {
	if c := d.heads; c.am == d.am && c.heads != nil {
		return c.heads
	}
	h := fromAM(d.am.Heads())
	d.heads = headsCache{am: d.am, heads: h}
	return h
}

// headsCache holds the heads automerge last listed for one automerge
// document. Every call that changes its history (commit, LoadIncremental,
// Merge) drops it, and a document replaced (Rollback) no longer matches it.
// Listing heads through cgo costs as much as a small apply, and an edit
// needs them several times. Callers share the slice and never modify it.
type headsCache struct {
	am    *automerge.Doc
	heads []ChangeHash
}

// ActorID names a replica. Every replica, and every process incarnation of
// the authority, writes under its own actor id.
type ActorID string

// NewActorID mints a fresh actor id: 16 random bytes, hex encoded, whose
// first byte is never zero. automerge 0.5 encodes actor ids as raw bytes
// and orders them bytewise; ids of one fixed length and no leading zero
// byte avoid the short and zero-prefixed forms for which its save format
// has been seen not to load again, and round-trip in every test.
func NewActorID() ActorID {
	var b [16]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic(fmt.Sprintf("crdt: crypto/rand failed: %v", err)) // the platform is broken
		}
		if b[0] != 0 {
			return ActorID(hex.EncodeToString(b[:]))
		}
	}
}

// Valid reports whether a is of the form NewActorID mints.
func (a ActorID) Valid() bool {
	b, err := hex.DecodeString(string(a))
	return err == nil && len(b) == 16 && b[0] != 0
}

// Item is one appended option or criterion.
type Item struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// QuestionShape is what the document needs to know of one question to hold
// its draft: its id, whether it is written or choice, and its items.
type QuestionShape struct {
	ID       string
	Written  bool
	Multiple bool
	Options  []Item
	Criteria []Item
}

// Options configures a Doc. The zero value works.
type Options struct {
	// Actor is the replica's actor id; empty mints one.
	Actor ActorID
	// Now stamps commits; nil uses time.Now.
	Now func() time.Time
	// Carry, for Load, is what a document dropped earlier knew of itself
	// beyond its bytes (Doc.Carry); the zero value carries nothing.
	Carry Carried
}

// Doc is one decision's CRDT document: its questions' appended options and
// criteria, the idempotency map of appends, and the shared drafts keyed by
// settle generation.
//
// A Doc is not safe for concurrent use: one goroutine owns it.
type Doc struct {
	am    *automerge.Doc
	actor ActorID
	now   func() time.Time
	// seqs counts the changes of each actor (nil until first needed); the
	// guard against sequence gaps checks changes from outside against it.
	seqs map[string]uint64
	// known is the set of change hashes the document holds (nil until
	// first needed): Has is on every hot path, and automerge answers it
	// only by copying the change out.
	known map[ChangeHash]bool
	// edit is what draft edits check against, read at one revision; see
	// draftQuestion.
	edit *editCache
	// objs is the kind and role of every object, read at one revision;
	// see checkBatchObjects.
	objs *objects
	// memo is the last State read, for ApplyEditState.
	memo *stateMemo
	// budget is what Load would count of the document as stored, kept up
	// to date change by change (budgetKnown false until first counted);
	// marks hold it at recent revisions, for Rollback. See Budget.
	budget      Budget
	budgetKnown bool
	marks       []budgetMark
	// rebased is set when the document's history was started by Rebase.
	rebased bool
	// proven is a save already proven to load back (by Rebase), which
	// Snapshot returns while the document is still at its revision.
	proven *provenSave
	heads  headsCache
}

type provenSave struct {
	am    *automerge.Doc
	heads []ChangeHash
	saved []byte
}

// editCache holds what a draft edit needs to know of the document, read
// once at one revision (automerge document and heads) instead of the whole
// State on every edit: the current generation, each question's shape, and
// the draft maps found so far. It is used only while the document is at
// that revision. A draft edit changes neither the shapes nor the draft
// maps, so after committing one the cache moves on to the new heads.
type editCache struct {
	am         *automerge.Doc
	heads      []ChangeHash
	generation uint64
	questions  map[string]*QuestionState
	drafts     map[string]*automerge.Map
}

func newDoc(am *automerge.Doc, opts Options) (*Doc, error) {
	if opts.Actor == "" {
		opts.Actor = NewActorID()
	}
	if !opts.Actor.Valid() {
		return nil, errorf(ErrInvalid, "actor id %q: want 32 hex digits not starting with 00", opts.Actor)
	}
	if err := am.SetActorID(string(opts.Actor)); err != nil {
		return nil, amError("set actor", err)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Doc{am: am, actor: opts.Actor, now: opts.Now}, nil
}

// New returns an empty document. The authority adds questions with
// AddQuestion and starts the first draft with StartGeneration.
func New(opts Options) (*Doc, error) {
	d, err := newDoc(automerge.New(), opts)
	if err != nil {
		return nil, err
	}
	d.budgetKnown = true
	if err := d.am.RootMap().Set("v", int64(formatVersion)); err != nil {
		return nil, amError("init", err)
	}
	if err := d.commit("init"); err != nil {
		return nil, err
	}
	return d, nil
}

// Load reads a document from a saved snapshot followed by incremental
// chunks (either may be empty). Everything is loaded in one call: automerge
// 0.5 loads many separate incremental chunks in quadratic time.
func Load(snapshot []byte, chunks [][]byte, opts Options) (*Doc, error) {
	n := len(snapshot)
	for _, c := range chunks {
		n += len(c)
	}
	if n > MaxDocumentBytes {
		return nil, errorf(ErrTooLarge, "document of %d bytes exceeds %d", n, MaxDocumentBytes)
	}
	buf := make([]byte, 0, n)
	buf = append(buf, snapshot...)
	for _, c := range chunks {
		buf = append(buf, c...)
	}
	var am *automerge.Doc
	ops := 0
	if len(buf) == 0 {
		am = automerge.New()
	} else {
		// Parts of the format automerge trusts are checked first: a chunk
		// that breaks them would abort the process (see checkChunks).
		chunks, err := splitChunks(buf)
		if err != nil {
			return nil, err
		}
		if err := checkChunks(chunks); err != nil {
			return nil, err
		}
		if err := checkDocChunks(chunks); err != nil {
			return nil, err
		}
		if ops, err = checkLoadObjects(chunks); err != nil {
			return nil, err
		}
		if am, err = automerge.Load(buf); err != nil {
			return nil, amError("load", err)
		}
	}
	d, err := newDoc(am, opts)
	if err != nil {
		return nil, err
	}
	if err := d.checkVersion(); err != nil {
		return nil, err
	}
	if err := d.checkSeqs(); err != nil {
		return nil, err
	}
	d.budget.Ops, d.budget.Bytes = ops, n
	d.budgetKnown = true
	if c := opts.Carry; c.set {
		d.budget, d.budgetKnown = c.budget, c.budgetKnown
		d.rebased = d.rebased || c.rebased
	}
	return d, nil
}

func (d *Doc) checkVersion() error {
	v, err := d.am.RootMap().Get("v")
	if err != nil {
		return amError("read version", err)
	}
	switch v.Kind() {
	case automerge.KindVoid:
		return nil // an empty document, or one synced before its init arrived
	case automerge.KindInt64:
		if v.Int64() > formatVersion {
			return errorf(ErrMalformed, "document format %d is newer than %d", v.Int64(), formatVersion)
		}
		return nil
	}
	return errorf(ErrMalformed, "document format marker has kind %v", v.Kind())
}

// Actor returns the document's actor id.
func (d *Doc) Actor() ActorID { return d.actor }

// Save returns the whole document in automerge's compact format.
func (d *Doc) Save() []byte { return d.am.Save() }

// Snapshot returns a compact encoding of the whole document that is proven
// to load back to the same heads. automerge 0.5 can write a compact save
// that does not load again (an actor table bug fixed in later releases); in
// that case Snapshot falls back to the document's changes, concatenated,
// which Load reads just the same.
func (d *Doc) Snapshot() ([]byte, error) {
	if d.proven != nil && d.proven.am == d.am && sameHeads(d.proven.heads, d.amHeads()) {
		return d.proven.saved, nil
	}
	saved := d.am.Save()
	if back, err := automerge.Load(saved); err == nil && sameHeads(fromAM(back.Heads()), d.amHeads()) {
		return saved, nil
	}
	changes, err := d.am.Changes()
	if err != nil {
		return nil, amError("changes", err)
	}
	// The changes count their delete operations, which a compact save
	// drops: the fallback may be past a limit the compact save was not.
	ops := 0
	for _, c := range changes {
		n, err := changeOps(c.Save())
		if err != nil {
			return nil, errorf(ErrMalformed, "own change: %v", err)
		}
		ops += n
	}
	if ops > MaxDocumentOps {
		return nil, errorf(ErrBudget, "the changes hold %d operations, more than %d; rebase the document", ops, MaxDocumentOps)
	}
	return automerge.SaveChanges(changes), nil
}

// Heads returns the hashes of the document's latest changes, sorted: the
// revision a replica displays.
func (d *Doc) Heads() Heads { return sortHeads(d.amHeads()) }

// Fork returns an independent copy of d writing as actor (empty mints one).
func (d *Doc) Fork(actor ActorID) (*Doc, error) {
	am, err := d.am.Fork()
	if err != nil {
		return nil, amError("fork", err)
	}
	return newDoc(am, Options{Actor: actor, Now: d.now})
}

// ForkAt returns an independent copy of d as it was at heads.
func (d *Doc) ForkAt(heads Heads, actor ActorID) (*Doc, error) {
	if !d.Has(heads) {
		return nil, errorf(ErrMissingDeps, "heads %v are not all in the document", heads)
	}
	am, err := d.am.Fork(toAM(heads)...)
	if err != nil {
		return nil, amError("fork", err)
	}
	return newDoc(am, Options{Actor: actor, Now: d.now})
}

// Merge applies every change of o that d lacks.
func (d *Doc) Merge(o *Doc) error {
	_, err := d.am.Merge(o.am)
	d.heads = headsCache{}
	d.seqs, d.known = nil, nil
	d.budgetKnown, d.marks = false, nil
	return amError("merge", err)
}

// Has reports whether every change in heads is in d.
func (d *Doc) Has(heads Heads) bool {
	if d.known == nil {
		chs, err := d.am.Changes()
		if err != nil {
			return false
		}
		d.known = make(map[ChangeHash]bool, len(chs))
		for _, c := range chs {
			d.known[ChangeHash(c.Hash())] = true
		}
	}
	for _, h := range heads {
		if !d.known[h] {
			return false
		}
	}
	return true
}

// Holds reports whether d already holds every change of a batch (as
// ChangesSince encodes it): a batch resent after its reply was lost. It
// applies nothing; an empty batch, or one that does not parse, is not
// held.
func (d *Doc) Holds(batch []byte) bool {
	if len(batch) == 0 || len(batch) > MaxChangesBytes {
		return false
	}
	chunks, err := splitChunks(batch)
	if err != nil {
		return false
	}
	parsed, err := parseChangeList(chunks)
	if err != nil {
		return false
	}
	for _, c := range parsed {
		if !d.Has(Heads{c.hash}) {
			return false
		}
	}
	return true
}

// ChangesSince returns the changes made after heads, encoded as one batch
// (each change in automerge's binary form, concatenated). Empty heads
// return every change.
func (d *Doc) ChangesSince(heads Heads) ([]byte, error) {
	if !d.Has(heads) {
		return nil, errorf(ErrMissingDeps, "heads %v are not all in the document", heads)
	}
	chs, err := d.am.Changes(toAM(heads)...)
	if err != nil {
		return nil, amError("changes", err)
	}
	if len(chs) == 0 {
		return nil, nil
	}
	return automerge.SaveChanges(chs), nil
}

// ApplyChanges applies a batch of encoded changes (as ChangesSince returns)
// and returns the hashes of those that were new to d. Every change must
// depend only on changes already in d or in the batch; otherwise
// nothing is applied and the error wraps ErrMissingDeps.
func (d *Doc) ApplyChanges(batch []byte) ([]ChangeHash, error) {
	fresh, _, err := d.applyChecked(batch, false)
	return fresh, err
}

// ApplyEdit applies a member's draft edit like ApplyChanges, and refuses
// (wrapping ErrShape, nothing applied) a batch with any operation that is
// not a draft value edit: it may set or clear mark registers and choices
// and splice written answers, of any generation, and nothing else. The
// authority applies every change from a member through it.
func (d *Doc) ApplyEdit(batch []byte) ([]ChangeHash, error) {
	fresh, _, err := d.applyChecked(batch, true)
	return fresh, err
}

// applyChecked applies a batch within MaxChangesBytes (applyBatch) and
// returns what the checks learned of it.
func (d *Doc) applyChecked(batch []byte, edit bool) ([]ChangeHash, batchCheck, error) {
	if len(batch) == 0 {
		return nil, batchCheck{}, nil
	}
	if len(batch) > MaxChangesBytes {
		return nil, batchCheck{}, errorf(ErrTooLarge, "change batch of %d bytes exceeds %d", len(batch), MaxChangesBytes)
	}
	return d.applyBatch(batch, edit)
}

// AppliedEdit is what ApplyEditState applied.
type AppliedEdit struct {
	// Fresh are the hashes of the batch's changes new to the document.
	Fresh []ChangeHash
	// Changes holds those changes' chunks, concatenated in the batch's
	// order: the same changes as ChangesSince of the heads before the
	// edit, without reading the history for them.
	Changes []byte
	// State is the document's State after the edit.
	State *State
}

// ApplyEditState is ApplyEdit that also returns the changes it applied and
// the document's State after the edit. When the last State the document
// read (State, or ApplyEditState) is of its current revision, it reads
// again only the question drafts the edit's operations change, so an edit
// costs what it changes rather than what the document holds; otherwise it
// reads the whole State. The State returned shares unchanged parts with
// the one it was built on: neither may be modified. An error after the
// changes were applied (the State could not be read) comes with Fresh
// set.
func (d *Doc) ApplyEditState(batch []byte) (AppliedEdit, error) {
	var prev *State
	if m := d.memo; m != nil && m.am == d.am && slices.Equal(m.at, d.amHeads()) {
		prev = m.st
	}
	current := prev != nil
	fresh, bc, err := d.applyChecked(batch, true)
	if err != nil {
		return AppliedEdit{}, err
	}
	if len(fresh) == 0 && current {
		return AppliedEdit{State: prev}, nil
	}
	var st *State
	if current {
		st, err = d.stateAfter(prev, bc.touched)
	} else {
		st, err = d.State()
	}
	if err != nil {
		return AppliedEdit{Fresh: fresh}, err
	}
	return AppliedEdit{Fresh: fresh, Changes: bc.fresh, State: st}, nil
}

// applyRaw applies a batch of concatenated change chunks after checking
// that every dependency is present, and that automerge then really holds
// every change (none parked for lack of dependencies).
func (d *Doc) applyRaw(batch []byte, edit bool) ([]ChangeHash, error) {
	fresh, _, err := d.applyBatch(batch, edit)
	return fresh, err
}

func (d *Doc) applyBatch(batch []byte, edit bool) ([]ChangeHash, batchCheck, error) {
	chunks, err := splitChunks(batch)
	if err != nil {
		return nil, batchCheck{}, err
	}
	fresh, freshIdx, counts, err := d.checkChanges(chunks)
	if err != nil {
		if errors.Is(err, ErrMissingDeps) {
			return nil, batchCheck{}, err
		}
		return nil, batchCheck{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if len(fresh) == 0 {
		return nil, batchCheck{}, nil
	}
	// Changes the document already holds are neither checked, applied nor
	// counted again: a replica that resends what the server already
	// relayed must not make its budget (and so its rebases) grow.
	if len(freshIdx) < len(chunks) {
		kept := make([][]byte, 0, len(freshIdx))
		var b []byte
		for _, i := range freshIdx {
			kept = append(kept, chunks[i])
			b = append(b, chunks[i]...)
		}
		chunks, batch = kept, b
	}
	raw := d.amHeads()
	bc, err := d.checkBatchObjects(chunks, raw, edit)
	if err != nil {
		return nil, batchCheck{}, err
	}
	before := sortHeads(raw)
	d.markBudget(before)
	err = d.am.LoadIncremental(batch)
	d.heads = headsCache{}
	if err != nil {
		if rerr := d.Rollback(before); rerr != nil {
			return nil, batchCheck{}, rerr
		}
		return nil, batchCheck{}, amError("apply changes", err)
	}
	if !d.Heads().Equal(headsAfter(raw, fresh)) {
		if err := d.Rollback(before); err != nil {
			return nil, batchCheck{}, err
		}
		return nil, batchCheck{}, errorf(ErrMalformed, "changes were not applied")
	}
	hashes := make([]ChangeHash, len(fresh))
	for i, c := range fresh {
		hashes[i] = c.hash
	}
	d.seqs = counts
	if d.known != nil {
		for _, h := range hashes {
			d.known[h] = true
		}
	}
	d.advanceObjects(raw, bc.made)
	d.addBudget(bc.ops, len(batch), len(fresh))
	bc.fresh = batch
	return hashes, bc, nil
}

// Rollback drops every change made after heads, by rebuilding d from its
// own history as of heads. It is the undo of a refused ApplyChanges.
func (d *Doc) Rollback(heads Heads) error {
	am, err := d.am.Fork(toAM(heads)...)
	if err != nil {
		return amError("rollback", err)
	}
	if err := am.SetActorID(string(d.actor)); err != nil {
		return amError("rollback", err)
	}
	d.am = am
	d.seqs, d.known = nil, nil
	d.rollbackBudget(heads)
	return nil
}

// commit closes the pending automerge transaction as one change. An edit
// that changed nothing (automerge skips writing a register the value it
// already holds, and a splice that neither deletes nor inserts) leaves no
// pending operation; that is success with no change, not an error.
func (d *Doc) commit(msg string) error {
	t := d.now()
	d.heads = headsCache{}
	h, err := d.am.Commit(msg, automerge.CommitOptions{Time: &t})
	if err != nil {
		if err.Error() == errEmptyCommit {
			return nil
		}
		return amError("commit", err)
	}
	if d.budgetKnown {
		d.countLocal(h)
	}
	if d.known != nil {
		d.known[ChangeHash(h)] = true
	}
	if d.seqs != nil {
		d.seqs[string(d.actor)]++
	}
	return nil
}

// countLocal adds a committed local change to the budget. If the change
// cannot be read back, the budget is counted again when next asked for.
func (d *Doc) countLocal(h automerge.ChangeHash) {
	c, err := d.am.Change(h)
	if err != nil {
		d.budgetKnown, d.marks = false, nil
		return
	}
	raw := c.Save()
	n, err := changeOps(raw)
	if err != nil {
		d.budgetKnown, d.marks = false, nil
		return
	}
	// A local change depends on exactly the heads before it (asking
	// automerge for heads before committing would close the pending
	// transaction).
	d.markBudget(sortHeads(fromAM(c.Dependencies())))
	d.addBudget(n, len(raw), 1)
}

// errEmptyCommit is the text of the error automerge-go's Commit returns
// when there were no pending operations; it has no sentinel to test for.
const errEmptyCommit = "Commit is empty"

func genKey(g uint64) string { return strconv.FormatUint(g, 10) }

// AddQuestion records a question's shape: whether it is written, whether
// it takes several choices, and its initial options and criteria. Only the
// authority calls it, at creation.
func (d *Doc) AddQuestion(q QuestionShape) error {
	if err := marks.CheckID(q.ID); err != nil {
		return errorf(ErrInvalid, "question id: %v", err)
	}
	if _, err := d.question(q.ID); err == nil {
		return errorf(ErrInvalid, "question %q already exists", q.ID)
	}
	for _, it := range append(slices.Clone(q.Options), q.Criteria...) {
		if err := marks.CheckID(it.ID); err != nil {
			return errorf(ErrInvalid, "item id: %v", err)
		}
	}
	if err := writeShape(d.am.Path("questions").Map(), q, "add question"); err != nil {
		return err
	}
	return d.commit("question " + q.ID)
}

// writeShape writes a question's shape (kind and items) under its id in
// the questions map; op names the step in errors.
func writeShape(questions *automerge.Map, q QuestionShape, op string) error {
	m := automerge.NewMap()
	if err := questions.Set(q.ID, m); err != nil {
		return amError(op, err)
	}
	if err := m.Set("written", q.Written); err != nil {
		return amError(op, err)
	}
	if err := m.Set("multiple", q.Multiple); err != nil {
		return amError(op, err)
	}
	for _, list := range []struct {
		key   string
		items []Item
	}{{"options", q.Options}, {"criteria", q.Criteria}} {
		l := automerge.NewList()
		if err := m.Set(list.key, l); err != nil {
			return amError(op, err)
		}
		for _, it := range list.items {
			if err := appendItem(l, it); err != nil {
				return err
			}
		}
	}
	return nil
}

func appendItem(l *automerge.List, it Item) error {
	m := automerge.NewMap()
	if err := l.Append(m); err != nil {
		return amError("append item", err)
	}
	if err := m.Set("id", it.ID); err != nil {
		return amError("append item", err)
	}
	return amError("append item", m.Set("label", it.Label))
}

func (d *Doc) question(id string) (*automerge.Map, error) {
	v, err := d.am.Path("questions", id).Get()
	if err != nil {
		return nil, amError("read question", err)
	}
	if v.Kind() != automerge.KindMap {
		return nil, errorf(ErrNoQuestion, "%q", id)
	}
	return v.Map(), nil
}

// AppendOption appends an option to a question under an idempotency key.
// A key seen before returns what it minted then, with repeated true, and
// writes nothing. Only the authority calls it.
func (d *Doc) AppendOption(question, key string, it Item) (Item, bool, error) {
	return d.appendItem("options", question, key, it)
}

// AppendCriterion appends a criterion, like AppendOption. Options and
// criteria share one idempotency map.
func (d *Doc) AppendCriterion(question, key string, it Item) (Item, bool, error) {
	return d.appendItem("criteria", question, key, it)
}

func (d *Doc) appendItem(list, question, key string, it Item) (Item, bool, error) {
	if key == "" {
		return Item{}, false, errorf(ErrInvalid, "empty idempotency key")
	}
	st, err := d.State()
	if err != nil {
		return Item{}, false, err
	}
	if prev, ok := st.Appended[key]; ok {
		qs := st.Questions[prev.Question]
		if qs != nil {
			for _, x := range qs.items(prev.Kind) {
				if x.ID == prev.ID {
					return x, true, nil
				}
			}
		}
		return Item{}, false, errorf(ErrMalformed, "appended key %q names a missing item", key)
	}
	if st.Questions[question] == nil {
		return Item{}, false, errorf(ErrNoQuestion, "%q", question)
	}
	if err := marks.CheckID(it.ID); err != nil {
		return Item{}, false, errorf(ErrInvalid, "item id: %v", err)
	}
	if hasItem(st.Questions[question].items(kindOf(list)), it.ID) {
		// A second item with the same id would make the document unreadable.
		return Item{}, false, errorf(ErrInvalid, "question %q already has %s %q", question, kindOf(list), it.ID)
	}
	q, _ := d.question(question)
	v, err := q.Get(list)
	if err != nil || v.Kind() != automerge.KindList {
		return Item{}, false, errorf(ErrMalformed, "question %q has no %s list", question, list)
	}
	if err := appendItem(v.List(), it); err != nil {
		return Item{}, false, err
	}
	kind := kindOf(list)
	entry := automerge.NewMap()
	if err := d.am.Path("appended").Map().Set(key, entry); err != nil {
		return Item{}, false, amError("append", err)
	}
	// In a fixed order, so that the same append always makes the same
	// change (a map's order would vary its operations, and so its hash).
	for _, kv := range [][2]string{{"kind", kind}, {"question", question}, {"id", it.ID}} {
		if err := entry.Set(kv[0], kv[1]); err != nil {
			return Item{}, false, amError("append", err)
		}
	}
	return it, false, d.commit(kind + " " + it.ID)
}

// kindOf names the items of an item list: "option" or "criterion".
func kindOf(list string) string {
	if list == "criteria" {
		return "criterion"
	}
	return "option"
}

// StartGeneration makes generation g current and lays out its empty draft
// for every question: a marks map and a choices map for choice questions,
// an empty text for written ones. A fresh generation starts from nothing,
// so edits made against an older one never show in it. Only the authority
// calls it, at creation (g = 1) and on every reopen.
func (d *Doc) StartGeneration(g uint64) error {
	st, err := d.State()
	if err != nil {
		return err
	}
	if g <= st.Generation {
		return errorf(ErrInvalid, "generation %d is not after %d", g, st.Generation)
	}
	draft := automerge.NewMap()
	if err := d.am.Path("drafts").Map().Set(genKey(g), draft); err != nil {
		return amError("start generation", err)
	}
	ids := make([]string, 0, len(st.Questions))
	for id := range st.Questions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		qd := automerge.NewMap()
		if err := draft.Set(id, qd); err != nil {
			return amError("start generation", err)
		}
		if st.Questions[id].Written {
			err = qd.Set("text", automerge.NewText(""))
		} else {
			if err = qd.Set("marks", automerge.NewMap()); err == nil {
				err = qd.Set("chosen", automerge.NewMap())
			}
		}
		if err != nil {
			return amError("start generation", err)
		}
	}
	if err := d.am.RootMap().Set("generation", g); err != nil {
		return amError("start generation", err)
	}
	return d.commit("generation " + genKey(g))
}

// Generation returns the current settle generation (0 before the first
// StartGeneration).
func (d *Doc) Generation() uint64 {
	v, err := d.am.RootMap().Get("generation")
	if err != nil || v.Kind() != automerge.KindUint64 {
		return 0
	}
	return v.Uint64()
}

// draftQuestion returns the current generation's draft map of a question,
// and its shape.
func (d *Doc) draftQuestion(question string) (*automerge.Map, *QuestionState, error) {
	heads := d.amHeads()
	c := d.edit
	if c == nil || c.am != d.am || !slices.Equal(c.heads, heads) {
		st, err := d.State()
		if err != nil {
			return nil, nil, err
		}
		c = &editCache{am: d.am, heads: heads, generation: st.Generation, questions: st.Questions, drafts: map[string]*automerge.Map{}}
		d.edit = c
	}
	qs := c.questions[question]
	if qs == nil {
		return nil, nil, errorf(ErrNoQuestion, "%q", question)
	}
	if qd := c.drafts[question]; qd != nil {
		return qd, qs, nil
	}
	v, err := d.am.Path("drafts", genKey(c.generation), question).Get()
	if err != nil || v.Kind() != automerge.KindMap {
		return nil, nil, errorf(ErrNoQuestion, "%q has no draft in generation %d", question, c.generation)
	}
	c.drafts[question] = v.Map()
	return v.Map(), qs, nil
}

// commitDraft commits a draft edit made after draftQuestion, and carries
// the edit cache over to the new heads.
func (d *Doc) commitDraft(msg string) error {
	c := d.edit
	if err := d.commit(msg); err != nil {
		d.edit = nil
		return err
	}
	if c != nil && c.am == d.am {
		before := c.heads
		c.heads = d.amHeads()
		d.advanceObjects(before, nil)
	}
	return nil
}

// SetMark sets one cell of a choice question's matrix in the current
// draft; marks.Cleared clears it (the register holds null). The cell must
// be one the question describes.
func (d *Doc) SetMark(question, option, criterion string, m marks.Mark) error {
	if m != marks.Cleared && !m.Valid() {
		return errorf(ErrInvalid, "mark %q", m)
	}
	qd, qs, err := d.draftQuestion(question)
	if err != nil {
		return err
	}
	if qs.Written {
		return errorf(ErrWrongKind, "question %q is written; it has no marks", question)
	}
	if !hasItem(qs.Options, option) || !hasItem(qs.Criteria, criterion) {
		return errorf(ErrInvalid, "question %q has no cell %s", question, marks.Key(option, criterion))
	}
	v, err := qd.Get("marks")
	if err != nil || v.Kind() != automerge.KindMap {
		return errorf(ErrMalformed, "question %q draft has no marks map", question)
	}
	var val any
	if m != marks.Cleared {
		val = string(m)
	}
	if err := v.Map().Set(marks.Key(option, criterion), val); err != nil {
		return amError("set mark", err)
	}
	return d.commitDraft("mark")
}

// Choose selects (on) or deselects an option of a choice question in the
// current draft. A single-choice question holds one register, so selecting
// an option replaces the previous choice.
func (d *Doc) Choose(question, option string, on bool) error {
	qd, qs, err := d.draftQuestion(question)
	if err != nil {
		return err
	}
	if qs.Written {
		return errorf(ErrWrongKind, "question %q is written; it has no options", question)
	}
	if !hasItem(qs.Options, option) {
		return errorf(ErrInvalid, "question %q has no option %q", question, option)
	}
	if !qs.Multiple {
		// One LWW register: concurrent choices on a single-choice question
		// resolve to one winner instead of merging into two.
		var val any
		if on {
			val = option
		} else if cur, err := qd.Get("choice"); err != nil || cur.Kind() != automerge.KindStr || cur.Str() != option {
			return nil // deselecting what is not selected changes nothing
		}
		if err := qd.Set("choice", val); err != nil {
			return amError("choose", err)
		}
		return d.commitDraft("choose")
	}
	v, err := qd.Get("chosen")
	if err != nil || v.Kind() != automerge.KindMap {
		return errorf(ErrMalformed, "question %q draft has no choices map", question)
	}
	if err := v.Map().Set(option, on); err != nil {
		return amError("choose", err)
	}
	return d.commitDraft("choose")
}

// SpliceText edits a written question's answer in the current draft:
// delete del characters (Unicode code points) at pos, then insert ins.
// Concurrent splices merge character by character.
func (d *Doc) SpliceText(question string, pos, del int, ins string) error {
	qd, qs, err := d.draftQuestion(question)
	if err != nil {
		return err
	}
	if !qs.Written {
		return errorf(ErrWrongKind, "question %q is a choice; it has no text", question)
	}
	v, err := qd.Get("text")
	if err != nil || v.Kind() != automerge.KindText {
		return errorf(ErrMalformed, "question %q draft has no text", question)
	}
	t := v.Text()
	n := t.Len()
	if pos < 0 || del < 0 || pos > n || del > n-pos {
		return errorf(ErrInvalid, "splice at %d deleting %d outside text of %d characters", pos, del, n)
	}
	if n-del+len([]rune(ins)) > MaxTextRunes {
		return errorf(ErrTooLarge, "written answer longer than %d characters", MaxTextRunes)
	}
	if err := t.Splice(pos, del, ins); err != nil {
		return amError("splice", err)
	}
	return d.commitDraft("text")
}

// SetText replaces a written answer with s by the smallest single splice
// (common prefix and suffix kept), so concurrent typing elsewhere in the
// text survives.
func (d *Doc) SetText(question, s string) error {
	dr, err := d.Draft()
	if err != nil {
		return err
	}
	old := []rune(dr.Questions[question].Text)
	nu := []rune(s)
	p := 0
	for p < len(old) && p < len(nu) && old[p] == nu[p] {
		p++
	}
	sfx := 0
	for sfx < len(old)-p && sfx < len(nu)-p && old[len(old)-1-sfx] == nu[len(nu)-1-sfx] {
		sfx++
	}
	if p == len(old) && p == len(nu) {
		return nil
	}
	return d.SpliceText(question, p, len(old)-p-sfx, string(nu[p:len(nu)-sfx]))
}

func hasItem(items []Item, id string) bool {
	for _, it := range items {
		if it.ID == id {
			return true
		}
	}
	return false
}

func sameHeads(a, b []ChangeHash) bool {
	return slices.Equal(sortHeads(a), sortHeads(b))
}

func sortHeads(h []ChangeHash) Heads {
	out := Heads(slices.Clone(h))
	slices.SortFunc(out, func(a, b ChangeHash) int { return bytes.Compare(a[:], b[:]) })
	return out
}

func short(h ChangeHash) string { return h.String()[:12] }

// EnsureMarks gives every choice question of the current draft an empty
// marks map where it has none, as drafts stored before criteria existed
// lack one, so members can mark cells once criteria are appended. It
// reports whether it changed the document (one change).
func (d *Doc) EnsureMarks() (bool, error) {
	st, err := d.State()
	if err != nil || st.Generation == 0 {
		return false, err
	}
	changed := false
	for id, q := range st.Questions {
		if q.Written {
			continue
		}
		v, err := d.am.Path("drafts", genKey(st.Generation), id, "marks").Get()
		if err != nil {
			return false, amError("read marks", err)
		}
		if v.Kind() == automerge.KindMap {
			continue
		}
		qd, err := d.am.Path("drafts", genKey(st.Generation), id).Get()
		if err != nil || qd.Kind() != automerge.KindMap {
			continue
		}
		if err := qd.Map().Set("marks", automerge.NewMap()); err != nil {
			return false, amError("add marks", err)
		}
		changed = true
	}
	if !changed {
		return false, nil
	}
	return true, d.commit("marks")
}
