package crdt

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/automerge/automerge-go"
)

// automerge 0.5 applies an operation to whatever object it names without
// checking that its key fits the object: a string key for a map, an
// element id for a list or text. An operation that breaks this applies
// cleanly and then panics in Rust on the next read of that object ("can
// only compare map keys"), aborting the process; the document is poisoned
// for every later reader too (found by FuzzApplyChanges and FuzzLoad). The
// functions below take each operation's object, key and action (as
// decodeOps reads them), know the kind of every object (the document's and
// those the chunks create), and refuse a chunk whose operation names an
// unknown object or a key of the wrong kind.

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
