package crdt

import "fmt"

// A member's edit may change draft values only: mark registers, choices
// and the characters of a written answer. Every other part of the document
// is the authority's: the format version, the questions and their items,
// the idempotency map, the generation, and the layout of every draft (the
// draft maps, their marks and choices maps and their text objects). A
// change that deletes or replaces one of those would read back as a valid
// document (a draft without marks reads as an empty one, a deleted text as
// an empty answer) while breaking every replica's next edit, so the
// authority refuses it by what it does, operation by operation, whatever
// the values it leaves behind.

// role is an object's place in the document's layout.
type role uint8

const (
	roleOther         role = iota // the definition side, or anything unknown
	roleDrafts                    // drafts: generation → draft
	roleGeneration                // drafts/<g>: question → question draft
	roleQuestionDraft             // drafts/<g>/<q>: marks, chosen, choice, text
	roleMarks                     // drafts/<g>/<q>/marks
	roleChosen                    // drafts/<g>/<q>/chosen
	roleText                      // drafts/<g>/<q>/text
)

// childRole is the role of an object made under key in an object of role
// parent (or in the root map).
func childRole(parent role, root bool, key []byte) role {
	switch {
	case root:
		if string(key) == "drafts" {
			return roleDrafts
		}
	case parent == roleDrafts:
		return roleGeneration
	case parent == roleGeneration:
		return roleQuestionDraft
	case parent == roleQuestionDraft:
		switch string(key) {
		case "marks":
			return roleMarks
		case "chosen":
			return roleChosen
		case "text":
			return roleText
		}
	}
	return roleOther
}

// layoutOf returns the kind and role of every object the operations of a
// document make. An object's parent is made before it, but the operations
// need not be in that order, so roles are resolved through the parents.
func layoutOf(ops []chunkOp) map[opID]objInfo {
	type made struct {
		kind   objKind
		root   bool
		parent opID
		key    []byte
	}
	all := map[opID]made{}
	for _, op := range ops {
		if k := madeKind(op.action); k != objNone {
			all[op.id] = made{kind: k, root: op.root, parent: op.obj, key: op.key}
		}
	}
	infos := make(map[opID]objInfo, len(all))
	var resolve func(id opID, depth int) objInfo
	resolve = func(id opID, depth int) objInfo {
		if i, ok := infos[id]; ok {
			return i
		}
		m, ok := all[id]
		if !ok {
			return objInfo{}
		}
		in := objInfo{kind: m.kind}
		switch {
		case m.root:
			in = childInfo(objInfo{}, true, m.key, m.kind)
		case depth < 4: // draft values sit four levels below the root
			in = childInfo(resolve(m.parent, depth+1), false, m.key, m.kind)
		}
		infos[id] = in
		return in
	}
	for id := range all {
		resolve(id, 0)
	}
	return infos
}

// Operation actions a value edit uses.
const (
	actPut    = 1
	actDelete = 3
)

// checkEditOps refuses, wrapping ErrShape, a batch with any operation that
// is not a draft value edit: a put or delete of a mark register or a
// multiple-choice entry, a put or delete of a single-choice register, or
// an insertion, overwrite or deletion of a written answer's characters.
// Creating an object is never an edit: the authority lays out every
// draft.
func checkEditOps(ops []chunkOp, infos map[opID]objInfo) (map[draftRef]*draftTouch, error) {
	touched := map[draftRef]*draftTouch{}
	for _, op := range ops {
		info := infos[op.obj]
		t := touched[info.draft]
		if t == nil {
			t = &draftTouch{}
			touched[info.draft] = t
		}
		if info.role == roleMarks {
			if t.cells == nil {
				t.cells = map[string]bool{}
			}
			t.cells[string(op.key)] = true
		} else {
			t.whole = true
		}
		if madeKind(op.action) != objNone {
			return nil, errorf(ErrShape, "an edit may not create objects")
		}
		if op.action != actPut && op.action != actDelete {
			return nil, errorf(ErrShape, "operation action %d is not a value edit", op.action)
		}
		if op.root {
			return nil, errorf(ErrShape, "an edit may not change the document's root (%q)", op.key)
		}
		switch r := infos[op.obj].role; r {
		case roleMarks, roleChosen:
			if op.insert {
				return nil, errorf(ErrShape, "an insertion into a map")
			}
		case roleText:
		case roleQuestionDraft:
			if string(op.key) != "choice" {
				return nil, errorf(ErrShape, "an edit may not %s a draft's %q", verb(op.action), op.key)
			}
		case roleGeneration:
			return nil, errorf(ErrShape, "an edit may not %s a question's draft (%q)", verb(op.action), op.key)
		case roleDrafts:
			return nil, errorf(ErrShape, "an edit may not %s a generation's draft (%q)", verb(op.action), op.key)
		default:
			return nil, errorf(ErrShape, "an edit may not change the definition (object %s)", fmt.Sprint(op.obj.ctr))
		}
	}
	return touched, nil
}

func verb(action uint64) string {
	if action == actDelete {
		return "delete"
	}
	return "replace"
}
