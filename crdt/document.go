package crdt

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/automerge/automerge-go"
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
