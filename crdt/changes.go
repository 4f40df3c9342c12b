package crdt

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/automerge/automerge-go"
)

// Chunk types of automerge's binary format.
const (
	chunkDocument   = 0
	chunkChange     = 1
	chunkCompressed = 2
)

var chunkMagic = [4]byte{0x85, 0x6f, 0x4a, 0x83}

// splitChunks splits concatenated chunks (a batch of changes as
// ChangesSince writes, or a save as Load reads) into single chunks, by
// their declared lengths. The checks that follow work on its result.
func splitChunks(batch []byte) ([][]byte, error) {
	var out [][]byte
	for len(batch) > 0 {
		if len(batch) < syncChunkHeaderMin {
			return nil, errorf(ErrMalformed, "chunk %d: truncated chunk header", len(out)+1)
		}
		if !bytes.Equal(batch[:4], chunkMagic[:]) {
			return nil, errorf(ErrMalformed, "chunk %d: not an automerge chunk", len(out)+1)
		}
		n, w := binary.Uvarint(batch[9:])
		if w <= 0 || n > uint64(len(batch)-9-w) {
			return nil, errorf(ErrMalformed, "chunk %d: bad chunk length", len(out)+1)
		}
		end := 9 + w + int(n)
		out = append(out, batch[:end:end])
		batch = batch[end:]
	}
	return out, nil
}

// checkChanges guards automerge 0.5 against a batch from outside: each
// chunk must be a well-formed single change whose actor indices are in
// range (parseSyncChange), every dependency must be in the document or
// in the batch (automerge would otherwise park the change unseen
// and apply it later unchecked), and every change must carry exactly its
// actor's next sequence number (a gap poisons the document: automerge
// panics on the next sync message or incremental save). It returns the
// hashes of the changes new to d, their indices in chunks, and the
// per-actor counts after them.
func (d *Doc) checkChanges(chunks [][]byte) ([]checkedChange, []int, map[string]uint64, error) {
	parsed, err := parseChangeList(chunks)
	if err != nil {
		return nil, nil, nil, err
	}
	// A dependency may come later in the batch: automerge's sync messages
	// put explicitly requested changes first, before changes they depend
	// on, and automerge applies a batch in causal order (replayChanges
	// follows it).
	inBatch := make(map[ChangeHash]bool, len(parsed))
	for _, c := range parsed {
		inBatch[c.hash] = true
	}
	var fresh []checkedChange
	var idx []int
	for i, c := range parsed {
		for _, dep := range c.deps {
			if !inBatch[dep] && !d.Has(Heads{dep}) {
				return nil, nil, nil, errorf(ErrMissingDeps, "change %d (%s) needs %s", i+1, short(c.hash), short(dep))
			}
		}
		if !d.Has(Heads{c.hash}) {
			fresh = append(fresh, c)
			idx = append(idx, i)
		}
	}
	counts, err := d.seqCounts()
	if err != nil {
		return nil, nil, nil, err
	}
	counts = maps.Clone(counts)
	if err := replayChanges(parsed, func(h ChangeHash) bool { return d.Has(Heads{h}) }, counts); err != nil {
		return nil, nil, nil, err
	}
	return fresh, idx, counts, nil
}

// headsAfter returns the heads a document at heads before must have once
// the fresh changes (none of which it held) are applied: before and the
// fresh changes, less every change one of them depends on. automerge
// parks a change whose dependencies it lacks, unapplied and unseen; a
// parked change that no fresh change depends on is one of these heads and
// would be missing from automerge's, and a parked change that one
// depends on parks that one too, so comparing heads proves the whole
// batch applied, without asking automerge for each change (a copy of the
// change per ask, and C memory that only a finalizer frees).
func headsAfter(before []ChangeHash, fresh []checkedChange) Heads {
	dep := make(map[ChangeHash]bool)
	for _, c := range fresh {
		for _, h := range c.deps {
			dep[h] = true
		}
	}
	out := make(Heads, 0, len(before)+1)
	for _, h := range before {
		if !dep[h] {
			out = append(out, h)
		}
	}
	for _, c := range fresh {
		if !dep[c.hash] {
			out = append(out, c.hash)
		}
	}
	return sortHeads(out)
}

// seqCounts returns how many changes of each actor the document holds,
// reading the history once and keeping the counts up to date after.
func (d *Doc) seqCounts() (map[string]uint64, error) {
	if d.seqs != nil {
		return d.seqs, nil
	}
	chs, err := d.am.Changes()
	if err != nil {
		return nil, amError("read changes", err)
	}
	seqs := make(map[string]uint64)
	for _, c := range chs {
		seqs[c.ActorID()]++
	}
	d.seqs = seqs
	return seqs, nil
}

// rawChange is one change of a batch: its hash and the hashes it depends
// on.
type rawChange struct {
	hash ChangeHash
	deps []ChangeHash
}

// splitChanges reads the hash and dependencies of every change of a batch.
func splitChanges(batch []byte) ([]rawChange, error) {
	chunks, err := splitChunks(batch)
	if err != nil {
		return nil, err
	}
	parsed, err := parseChangeList(chunks)
	if err != nil {
		return nil, err
	}
	out := make([]rawChange, len(parsed))
	for i, p := range parsed {
		out[i] = rawChange{hash: p.hash, deps: p.deps}
	}
	return out, nil
}

// checkDocChunks checks the document chunks of a save (possibly followed
// by changes, as Load reads it) for what automerge 0.5's document
// loader trusts: it turns each operation's action into an operation type
// without checking it, so an unknown action, or an increment without an
// integer, panics in Rust ("entered unreachable code:
// validate_action_and_value returned UnknownAction") and aborts the
// process; and it maps actor indices through the document's actor table by
// plain indexing. A document's checksum is no protection: anyone can
// compute one. (Found by FuzzLoad with checksums recomputed.)
func checkDocChunks(chunks [][]byte) error {
	for n, c := range chunks {
		if c[8] != chunkDocument {
			continue
		}
		body, err := chunkBody(c)
		if err == nil {
			err = checkDocument(body)
		}
		if err != nil {
			return errorf(ErrMalformed, "chunk %d: %v", n+1, err)
		}
	}
	return nil
}

// Column types, flags and ids of automerge's columnar encoding, and the
// operation actions automerge 0.5 knows.
const (
	colActor     = 1
	colDeflate   = 8
	colAction    = 4<<4 | 2 // operation action, integer
	colValueMeta = 5<<4 | 6 // value type and length
	maxAction    = 7        // make map, put, make list, delete, make text, increment, make table, mark
	actionInc    = 5        // increment: needs an integer value
	valueUint    = 3
	valueInt     = 4
	maxColumns   = 64 // automerge writes at most 16
)

// checkDocument checks a document chunk's body: actor indices in its change
// and operation columns, and its operations' actions.
func checkDocument(body []byte) error {
	r := leb{b: body}
	actors := r.count(len(body))
	for i := 0; i < actors && r.err == nil; i++ {
		r.bytes()
	}
	r.take(r.count(len(r.b)/32) * 32) // heads
	changes, ops := r.layout(), r.layout()
	r.fill(changes)
	r.fill(ops)
	if r.err != nil {
		return r.err
	}
	var action, meta []byte
	for i, c := range append(changes, ops...) {
		data := c.data
		if c.spec&colDeflate != 0 {
			var err error
			if data, err = inflate(data); err != nil {
				return err
			}
		}
		switch {
		case c.spec&7 == colActor:
			if err := checkActorRuns(data, uint64(actors)); err != nil {
				return err
			}
		case i >= len(changes) && c.spec&^colDeflate == colAction:
			action = data
		case i >= len(changes) && c.spec&^colDeflate == colValueMeta:
			meta = data
		}
	}
	return checkActions(action, meta)
}

type column struct {
	spec, size uint64
	data       []byte
}

// checkActorRuns checks that every actor index in a column is below n.
func checkActorRuns(col []byte, n uint64) error {
	c := rle{r: leb{b: col}}
	for c.next() {
		if !c.null && c.val >= n {
			return fmt.Errorf("an operation names actor %d of %d", c.val, n)
		}
		c.skip(c.left)
	}
	return c.r.err
}

// checkActions checks that every action is one automerge 0.5 knows, and
// that every increment carries an integer.
func checkActions(action, meta []byte) error {
	a, m := rle{r: leb{b: action}}, rle{r: leb{b: meta}}
	for a.next() {
		if !a.null && a.val > maxAction {
			return fmt.Errorf("unknown operation action %d", a.val)
		}
		if !m.next() {
			return m.r.err // fewer values than operations: automerge refuses it
		}
		if !a.null && a.val == actionInc && (m.null || (m.val&15 != valueUint && m.val&15 != valueInt)) {
			return errors.New("an increment without an integer")
		}
		// Both stay the same for k rows.
		k := min(a.left, m.left)
		if a.lit || m.lit {
			k = 1
		}
		a.skip(k)
		m.skip(k)
	}
	return a.r.err
}

// rle walks a run-length encoded column of unsigned integers. A run opens
// with a signed length: positive, one value repeated; negative, that many
// literal values; zero, followed by a count of nulls. A literal run is
// walked one value at a time.
type rle struct {
	r    leb
	left uint64 // values left in the current run
	lit  bool
	null bool
	val  uint64
}

// next makes the current value available, reading the next run when the
// current one is used up; false at the end, or on an error (in r.err).
func (c *rle) next() bool {
	for c.left == 0 {
		if len(c.r.b) == 0 || c.r.err != nil {
			return false
		}
		switch n := c.r.int(); {
		case n > 0:
			c.left, c.lit, c.null, c.val = uint64(n), false, false, c.r.uint()
		case n < 0:
			c.left, c.lit, c.null, c.val = uint64(-(n+1))+1, true, false, c.r.uint()
		default:
			c.left, c.lit, c.null = c.r.uint(), false, true
		}
	}
	return c.r.err == nil
}

// skip consumes k values of the current run, or of a literal run only the
// current one (reading the next literal).
func (c *rle) skip(k uint64) {
	if c.lit {
		k = 1
	}
	c.left -= min(k, c.left)
	if c.lit && c.left > 0 {
		c.val = c.r.uint()
	}
}

func inflate(b []byte) ([]byte, error) {
	dec, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(b)), MaxDocumentBytes+1))
	if err != nil || len(dec) > MaxDocumentBytes {
		return nil, errors.New("bad compressed column")
	}
	return dec, nil
}

// leb reads LEB128 integers and length-prefixed byte strings, keeping the
// first error.
type leb struct {
	b   []byte
	err error
}

func (r *leb) fail(what string) {
	if r.err == nil {
		r.err = errors.New("truncated or malformed " + what)
	}
	r.b = nil
}

func (r *leb) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("integer")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// int reads a signed LEB128 integer (two's complement, not zigzag).
func (r *leb) int() int64 {
	if r.err != nil {
		return 0
	}
	var v int64
	var shift uint
	for i, c := range r.b {
		if i == 10 {
			break
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			r.b = r.b[i+1:]
			return v
		}
	}
	r.fail("signed integer")
	return 0
}

// count reads a count no larger than max.
func (r *leb) count(max int) int {
	v := r.uint()
	if v > uint64(max) {
		r.fail("count")
		return 0
	}
	return int(v)
}

// take returns the next n bytes.
func (r *leb) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.fail("data")
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *leb) bytes() []byte {
	v := r.uint()
	if v > uint64(len(r.b)) {
		r.fail("length")
		return nil
	}
	return r.take(int(v))
}

// layout reads a column layout: a count, then each column's spec and size.
func (r *leb) layout() []column {
	n := r.count(maxColumns)
	cols := make([]column, 0, n)
	for range n {
		spec, size := r.uint(), r.uint()
		if size > uint64(len(r.b)) {
			r.fail("column size")
		}
		cols = append(cols, column{spec: spec, size: size})
	}
	return cols
}

// fill gives each column its data, which follows in layout order.
func (r *leb) fill(cols []column) {
	for i := range cols {
		if r.err == nil && cols[i].size > uint64(len(r.b)) {
			r.fail("column data")
		}
		if r.err != nil {
			return
		}
		cols[i].data = r.take(int(cols[i].size))
	}
}

// automerge 0.5 applies an operation to whatever object it names without
// checking that its key fits the object: a string key for a map, an
// element id for a list or text. An operation that breaks this applies
// cleanly and then panics in Rust on the next read of that object ("can
// only compare map keys"), aborting the process; the document is poisoned
// for every later reader too (found by FuzzApplyChanges and FuzzLoad). The
// functions below decode each operation's object, key and action, know the
// kind of every object (the document's and those the chunks create), and
// refuse a chunk whose operation names an unknown object or a key of the
// wrong kind.

// objKind is the kind of an automerge object, as its keys go.
type objKind uint8

const (
	objNone objKind = iota
	objMap          // map or table: string keys
	objSeq          // list or text: element keys
)

// Operation actions that make objects.
const (
	actMakeMap   = 0
	actMakeList  = 2
	actMakeText  = 4
	actMakeTable = 6
)

func madeKind(action uint64) objKind {
	switch action {
	case actMakeMap, actMakeTable:
		return objMap
	case actMakeList, actMakeText:
		return objSeq
	}
	return objNone
}

// opID names an operation, and the object it made: its actor id (bytes)
// and counter.
type opID struct {
	actor string
	ctr   uint64
}

// chunkOp is what the guard reads of one operation.
type chunkOp struct {
	id     opID
	root   bool // the object is the root map
	obj    opID
	strKey bool   // a string key (else an element id)
	key    []byte // the string key, for operations on a map (aliases the chunk)
	insert bool
	action uint64
}

// maxChunkOps caps the operations decoded from one chunk; a decision holds
// a few thousand.
const maxChunkOps = 1 << 20

// objects is the kind and role of every object of a document, at one
// revision.
type objects struct {
	am    *automerge.Doc
	heads []ChangeHash
	infos map[opID]objInfo
}

// objInfo is what the guards know of one object: the kind of its keys and
// its place in the document's layout (see role).
type objInfo struct {
	kind objKind
	role role
	// draft names the question draft a draft object belongs to (roles
	// roleQuestionDraft and below; gen alone for roleGeneration).
	draft draftRef
}

// draftRef names one question's draft of one generation: the generation's
// key in drafts and the question id.
type draftRef struct{ gen, q string }

// draftTouch is what a draft edit's operations change of one question
// draft: mark cells only (their keys), or more (whole: its text, choice or
// chosen entries), which is then read again whole.
type draftTouch struct {
	whole bool
	cells map[string]bool
}

// childInfo is the kind, role and draft of an object of kind made under
// key in parent (or in the root map).
func childInfo(parent objInfo, root bool, key []byte, kind objKind) objInfo {
	r := childRole(parent.role, root, key)
	in := objInfo{kind: kind, role: r}
	switch r {
	case roleGeneration:
		in.draft = draftRef{gen: string(key)}
	case roleQuestionDraft:
		in.draft = draftRef{gen: parent.draft.gen, q: string(key)}
	case roleMarks, roleChosen, roleText:
		in.draft = parent.draft
	}
	return in
}

// batchCheck is what checkBatchObjects learned of a batch: the objects it
// makes (for advanceObjects) and how many operations it holds (for the
// budget).
type batchCheck struct {
	made map[opID]objInfo
	ops  int
	// touched lists the question drafts a draft edit's operations change,
	// and what of each.
	touched map[draftRef]*draftTouch
	// fresh is the chunks of the batch's changes new to the document,
	// concatenated in the batch's order.
	fresh []byte
}

// checkBatchObjects checks the operations of a batch of single change
// chunks against d's objects and those the batch makes. With edit set, it
// also refuses every operation that is not a draft value edit (see
// checkEditOps).
func (d *Doc) checkBatchObjects(chunks [][]byte, heads []ChangeHash, edit bool) (batchCheck, error) {
	infos, err := d.objectInfos(heads)
	if err != nil {
		return batchCheck{}, err
	}
	var ops []chunkOp
	for i, c := range chunks {
		body, err := chunkBody(c)
		if err != nil {
			return batchCheck{}, errorf(ErrMalformed, "change %d: %v", i+1, err)
		}
		got, err := decodeChangeOps(skipDeps(body))
		if errors.Is(err, ErrTooLarge) {
			return batchCheck{}, err
		}
		if err != nil {
			return batchCheck{}, errorf(ErrMalformed, "change %d: %v", i+1, err)
		}
		if len(ops)+len(got) > maxChunkOps {
			return batchCheck{}, errorf(ErrBudget, "a batch of more than %d operations", maxChunkOps)
		}
		ops = append(ops, got...)
	}
	made := map[opID]objInfo{}
	for _, op := range ops {
		if k := madeKind(op.action); k != objNone {
			var parent objInfo
			if !op.root {
				parent = infos[op.obj]
				if p, ok := made[op.obj]; ok {
					parent = p
				}
			}
			made[op.id] = childInfo(parent, op.root, op.key, k)
		}
	}
	err = checkOpKeys(ops, func(id opID) objKind {
		if i, ok := made[id]; ok {
			return i.kind
		}
		return infos[id].kind
	})
	if err != nil {
		return batchCheck{}, errorf(ErrMalformed, "%v", err)
	}
	var touched map[draftRef]*draftTouch
	if edit {
		if touched, err = checkEditOps(ops, infos); err != nil {
			return batchCheck{}, err
		}
	}
	return batchCheck{made: made, ops: len(ops), touched: touched}, nil
}

// advanceObjects moves the objects read at the revision before a change
// to the revision after it, adding the objects it made: after an applied
// batch, or (made nil) a draft edit, which makes none.
func (d *Doc) advanceObjects(before []ChangeHash, made map[opID]objInfo) {
	o := d.objs
	if o == nil || o.am != d.am || !slices.Equal(o.heads, before) {
		return
	}
	maps.Copy(o.infos, made)
	o.heads = d.amHeads()
}

// objectInfos returns the kind and role of every object of d, at heads
// (its current heads, as automerge lists them), reading the document again
// only when it changed since last time.
func (d *Doc) objectInfos(heads []ChangeHash) (map[opID]objInfo, error) {
	if o := d.objs; o != nil && o.am == d.am && slices.Equal(o.heads, heads) {
		return o.infos, nil
	}
	infos := map[opID]objInfo{}
	if len(heads) > 0 {
		saved := d.am.Save()
		body, err := chunkBody(saved)
		if err != nil || saved[8] != chunkDocument {
			return nil, errorf(ErrMalformed, "own save: %v", err)
		}
		ops, err := decodeDocOps(body)
		if err != nil {
			return nil, errorf(ErrMalformed, "own save: %v", err)
		}
		infos = layoutOf(ops)
	}
	d.objs = &objects{am: d.am, heads: heads, infos: infos}
	return infos, nil
}

// checkLoadObjects checks the operations of every chunk (of a save,
// changes, or both, as Load reads them) against the objects they make, and
// returns how many there are.
func checkLoadObjects(chunks [][]byte) (int, error) {
	var ops []chunkOp
	for i, c := range chunks {
		n := i + 1
		typ := c[8]
		body, err := chunkBody(c)
		if err != nil {
			return 0, errorf(ErrMalformed, "chunk %d: %v", n, err)
		}
		var got []chunkOp
		switch typ {
		case chunkDocument:
			got, err = decodeDocOps(body)
		case chunkChange:
			got, err = decodeChangeOps(skipDeps(body))
		case chunkCompressed:
			if body, err = inflate(body); err == nil {
				got, err = decodeChangeOps(skipDeps(body))
			}
		default:
			continue
		}
		if errors.Is(err, ErrTooLarge) {
			return 0, err
		}
		if err != nil {
			return 0, errorf(ErrMalformed, "chunk %d: %v", n, err)
		}
		if len(ops)+len(got) > maxChunkOps {
			return 0, errorf(ErrBudget, "more than %d operations", maxChunkOps)
		}
		ops = append(ops, got...)
	}
	made := map[opID]objKind{}
	for _, op := range ops {
		if k := madeKind(op.action); k != objNone {
			made[op.id] = k
		}
	}
	if err := checkOpKeys(ops, func(id opID) objKind { return made[id] }); err != nil {
		return 0, errorf(ErrMalformed, "%v", err)
	}
	return len(ops), nil
}

// checkOpKeys checks that every operation names a known object with a key
// of the object's kind.
func checkOpKeys(ops []chunkOp, kind func(opID) objKind) error {
	for _, op := range ops {
		k := objMap
		if !op.root {
			k = kind(op.obj)
		}
		switch {
		case k == objNone:
			return fmt.Errorf("an operation names unknown object %d@%x", op.obj.ctr, op.obj.actor)
		case k == objMap && (!op.strKey || op.insert):
			return fmt.Errorf("an operation on map %d@%x has no string key", op.obj.ctr, op.obj.actor)
		case k == objSeq && op.strKey:
			return fmt.Errorf("an operation on list %d@%x has a string key", op.obj.ctr, op.obj.actor)
		}
	}
	return nil
}

// chunkBody returns the body of a single chunk.
func chunkBody(c []byte) ([]byte, error) {
	if len(c) < 9 || !bytes.Equal(c[:4], chunkMagic[:]) {
		return nil, errors.New("not a chunk")
	}
	size, w := binary.Uvarint(c[9:])
	if w <= 0 || size != uint64(len(c)-9-w) {
		return nil, errors.New("bad chunk length")
	}
	return c[9+w:], nil
}

// skipDeps returns a change body after its dependencies.
func skipDeps(body []byte) []byte {
	r := leb{b: body}
	r.take(r.count(len(body)/32) * 32)
	return r.b
}

// Operation column specs (id << 4 | type) the guard reads.
const (
	specObjActor = 0<<4 | 1
	specObjCtr   = 0<<4 | 2
	specKeyStr   = 1<<4 | 5
	specIDActor  = 2<<4 | 1
	specIDCtr    = 2<<4 | 3
	specInsert   = 3<<4 | 4
)

// decodeChangeOps decodes a change body, after its dependencies. An
// operation's id is the change's start op plus its index, by the author.
func decodeChangeOps(body []byte) ([]chunkOp, error) {
	r := leb{b: body}
	author := r.bytes()
	r.uint() // seq
	start := r.uint()
	r.int()   // time
	r.bytes() // message
	actors := []string{string(author)}
	for n := r.count(len(r.b)); n > 0 && r.err == nil; n-- {
		actors = append(actors, string(r.bytes()))
	}
	cols := r.layout()
	r.fill(cols)
	if r.err != nil {
		return nil, r.err
	}
	return decodeOps(cols, actors, func(i uint64, _ *opColumns) opID {
		return opID{actors[0], start + i}
	})
}

// decodeDocOps decodes the operations of a document body.
func decodeDocOps(body []byte) ([]chunkOp, error) {
	r := leb{b: body}
	var actors []string
	for n := r.count(len(body)); n > 0 && r.err == nil; n-- {
		actors = append(actors, string(r.bytes()))
	}
	r.take(r.count(len(r.b)/32) * 32) // heads
	changes, ops := r.layout(), r.layout()
	r.fill(changes)
	r.fill(ops)
	if r.err != nil {
		return nil, r.err
	}
	return decodeOps(ops, actors, func(_ uint64, c *opColumns) opID {
		a, _ := c.idActor.row()
		return opID{actorAt(actors, a), uint64(c.idCtr.row())}
	})
}

func actorAt(actors []string, i int64) string {
	if i < 0 || i >= int64(len(actors)) {
		return "" // refused by checkActorRuns or parseSyncChange
	}
	return actors[i]
}

// opColumns reads the columns of an operation chunk row by row.
type opColumns struct {
	objActor, objCtr, keyStr, action, idActor runs
	idCtr                                     deltas
	insert                                    bools
}

func decodeOps(cols []column, actors []string, id func(uint64, *opColumns) opID) ([]chunkOp, error) {
	var c opColumns
	readers := map[uint64]*runs{
		specObjActor: &c.objActor, specObjCtr: &c.objCtr, specKeyStr: &c.keyStr,
		colAction: &c.action, specIDActor: &c.idActor,
	}
	for _, col := range cols {
		data := col.data
		if col.spec&colDeflate != 0 {
			var err error
			if data, err = inflate(data); err != nil {
				return nil, err
			}
		}
		switch spec := col.spec &^ colDeflate; {
		case readers[spec] != nil:
			readers[spec].r = leb{b: data}
		case spec == specIDCtr:
			c.idCtr.r = leb{b: data}
		case spec == specInsert:
			c.insert.r = leb{b: data}
		}
	}
	c.keyStr.str = true
	var out []chunkOp
	for i := uint64(0); !c.action.done(); i++ {
		if i == maxChunkOps {
			return nil, errorf(ErrBudget, "more than %d operations", maxChunkOps)
		}
		var op chunkOp
		op.id = id(i, &c)
		oa, oaNull := c.objActor.row()
		oc, ocNull := c.objCtr.row()
		op.root = oaNull && ocNull
		op.obj = opID{actorAt(actors, oa), uint64(oc)}
		_, noStr := c.keyStr.row()
		op.strKey = !noStr
		if op.strKey {
			op.key = c.keyStr.sv
		}
		op.insert = c.insert.row()
		a, _ := c.action.row()
		op.action = uint64(a)
		out = append(out, op)
	}
	for _, r := range []*leb{&c.objActor.r, &c.objCtr.r, &c.keyStr.r, &c.action.r, &c.idActor.r, &c.idCtr.r, &c.insert.r} {
		if r.err != nil {
			return nil, r.err
		}
	}
	return out, nil
}

// runs reads a run-length encoded column row by row: integers, or (str)
// length-prefixed strings, the current one in sv. A column that
// runs out reads as nulls.
type runs struct {
	r    leb
	str  bool
	sv   []byte // the current string, for a string column
	left uint64
	lit  bool
	null bool
	val  int64
}

func (c *runs) done() bool { return c.left == 0 && (len(c.r.b) == 0 || c.r.err != nil) }

func (c *runs) value() int64 {
	if c.str {
		c.sv = c.r.bytes()
		return 0
	}
	return int64(c.r.uint())
}

func (c *runs) row() (int64, bool) {
	for c.left == 0 {
		if len(c.r.b) == 0 || c.r.err != nil {
			return 0, true
		}
		switch n := c.r.int(); {
		case n > 0:
			c.left, c.lit, c.null, c.val = uint64(n), false, false, c.value()
		case n < 0:
			c.left, c.lit, c.null = uint64(-(n+1))+1, true, false
		default:
			c.left, c.lit, c.null = c.r.uint(), false, true
		}
	}
	if c.lit {
		c.val = c.value()
	}
	c.left--
	return c.val, c.null
}

// deltas reads a delta-encoded column: run-length encoded signed
// differences, summed.
type deltas struct {
	r    leb
	left uint64
	lit  bool
	null bool
	d    int64
	sum  int64
}

func (c *deltas) row() int64 {
	for c.left == 0 {
		if len(c.r.b) == 0 || c.r.err != nil {
			return c.sum
		}
		switch n := c.r.int(); {
		case n > 0:
			c.left, c.lit, c.null, c.d = uint64(n), false, false, c.r.int()
		case n < 0:
			c.left, c.lit, c.null = uint64(-(n+1))+1, true, false
		default:
			c.left, c.lit, c.null = c.r.uint(), false, true
		}
	}
	if c.lit {
		c.d = c.r.int()
	}
	c.left--
	if !c.null {
		c.sum += c.d
	}
	return c.sum
}

// bools reads a boolean column: run lengths of alternating values,
// starting with false.
type bools struct {
	r       leb
	left    uint64
	val     bool
	started bool
}

func (c *bools) row() bool {
	for c.left == 0 {
		if len(c.r.b) == 0 || c.r.err != nil {
			return false
		}
		if c.started {
			c.val = !c.val
		}
		c.started = true
		c.left = c.r.uint()
	}
	c.left--
	return c.val
}
