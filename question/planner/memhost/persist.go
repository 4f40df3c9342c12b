package memhost

import (
	"maps"
	"slices"
	"strings"

	"github.com/accord-crdt/accord/question/planner"
)

// A host that keeps its plan documents and Chat across restarts installs a
// Persist function on Documents and Chat: it runs under the lock after
// every change, with the document's (or Chat's) whole new state, and if it
// returns an error the change is undone and the method returns that error.
// So a change a method reported done is durable whenever the function
// was. At start the host Restores what it stored.

// StoredBlock is a block with the revision that last changed it.
type StoredBlock struct {
	planner.Block
	Changed uint64 `json:"changed"`
}

// DocState is everything Documents holds of one document.
type DocState struct {
	Revision uint64              `json:"revision"`
	Minted   uint64              `json:"minted,omitempty"`
	Blocks   []StoredBlock       `json:"blocks"`
	Receipts []planner.Receipt   `json:"receipts,omitempty"`
	Anchors  map[string][]string `json:"anchors,omitempty"`
	Applied  int                 `json:"applied,omitempty"`
}

func (x *document) clone() *document {
	c := &document{rev: x.rev, applied: x.applied, minted: x.minted, receipts: maps.Clone(x.receipts), anchors: map[string][]string{}}
	for k, v := range x.anchors {
		c.anchors[k] = slices.Clone(v)
	}
	for _, b := range x.blocks {
		bc := *b
		c.blocks = append(c.blocks, &bc)
	}
	return c
}

func (x *document) state() DocState {
	st := DocState{Revision: x.rev, Minted: x.minted, Applied: x.applied, Blocks: []StoredBlock{}}
	for _, b := range x.blocks {
		st.Blocks = append(st.Blocks, StoredBlock{Block: b.Block, Changed: b.changed})
	}
	for r := range x.receipts {
		st.Receipts = append(st.Receipts, r)
	}
	slices.SortFunc(st.Receipts, func(a, b planner.Receipt) int {
		if c := strings.Compare(a.Decision, b.Decision); c != 0 {
			return c
		}
		return int(a.Generation) - int(b.Generation)
	})
	if len(x.anchors) > 0 {
		st.Anchors = map[string][]string{}
		for k, v := range x.anchors {
			st.Anchors[k] = slices.Clone(v)
		}
	}
	return st
}

func same(a, b DocState) bool {
	if a.Revision != b.Revision || a.Minted != b.Minted || a.Applied != b.Applied || !slices.Equal(a.Receipts, b.Receipts) ||
		!slices.Equal(a.Blocks, b.Blocks) || len(a.Anchors) != len(b.Anchors) {
		return false
	}
	for k, v := range a.Anchors {
		if !slices.Equal(v, b.Anchors[k]) {
			return false
		}
	}
	return true
}

// commit persists a change of x (before is x as it was); d.mu is held.
func (d *Documents) commit(doc string, x, before *document) error {
	if d.persist == nil {
		return nil
	}
	st := x.state()
	if same(st, before.state()) {
		return nil
	}
	if err := d.persist(doc, st); err != nil {
		*x = *before
		return err
	}
	return nil
}

// Persist sets fn to run after every change of a document (see above).
func (d *Documents) Persist(fn func(doc string, st DocState) error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.persist = fn
}

// State returns a copy of what Documents holds of doc.
func (d *Documents) State(doc string) DocState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.doc(doc).state()
}

// Restore replaces doc by a stored state, without persisting it again.
func (d *Documents) Restore(doc string, st DocState) {
	d.mu.Lock()
	defer d.mu.Unlock()
	x := &document{rev: st.Revision, minted: st.Minted, applied: st.Applied, receipts: map[planner.Receipt]bool{}, anchors: map[string][]string{}}
	for _, b := range st.Blocks {
		x.blocks = append(x.blocks, &block{Block: b.Block, changed: b.Changed})
	}
	for _, r := range st.Receipts {
		x.receipts[r] = true
	}
	for k, v := range st.Anchors {
		x.anchors[k] = slices.Clone(v)
	}
	d.docs[doc] = x
}

// ChatState is everything Chat holds of one document.
type ChatState struct {
	Notices  []planner.Notice `json:"notices"`
	Turns    []planner.Turn   `json:"turns"`
	Accepted []string         `json:"accepted"`
	Running  []string         `json:"running"`
}

func (c *Chat) state(doc string) ChatState {
	st := ChatState{Notices: slices.Clone(c.notices[doc]), Turns: slices.Clone(c.turns[doc]),
		Accepted: slices.Sorted(maps.Keys(c.accepted[doc])), Running: slices.Sorted(maps.Keys(c.running[doc]))}
	if st.Notices == nil {
		st.Notices = []planner.Notice{}
	}
	if st.Turns == nil {
		st.Turns = []planner.Turn{}
	}
	return st
}

// restore puts st into memory for doc; c.mu is held.
func (c *Chat) restore(doc string, st ChatState) {
	c.notices[doc] = slices.Clone(st.Notices)
	c.turns[doc] = slices.Clone(st.Turns)
	c.accepted[doc] = map[string]bool{}
	for _, id := range st.Accepted {
		c.accepted[doc][id] = true
	}
	c.running[doc] = map[string]bool{}
	for _, id := range st.Running {
		c.running[doc][id] = true
	}
}

// save persists doc's Chat after a change, undoing it (back to before) if
// that fails; c.mu is held.
func (c *Chat) save(doc string, before ChatState) error {
	if c.persist == nil {
		return nil
	}
	if err := c.persist(doc, c.state(doc)); err != nil {
		c.restore(doc, before)
		return err
	}
	return nil
}

// Persist sets fn to run after every change of a document's Chat.
func (c *Chat) Persist(fn func(doc string, st ChatState) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.persist = fn
}

// State returns a copy of what Chat holds of doc.
func (c *Chat) State(doc string) ChatState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state(doc)
}

// Restore merges a stored state into doc's Chat, without persisting it:
// notices and turns are kept once per id, stored ones first, so a turn
// accepted again under the same id before Restore stays one turn. Call it
// before a Driver watches doc: until then Accepted cannot see what was
// stored.
func (c *Chat) Restore(doc string, st ChatState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.state(doc)
	merged := ChatState{Accepted: append(slices.Clone(st.Accepted), cur.Accepted...)}
	seen := map[string]bool{}
	for _, n := range append(slices.Clone(st.Notices), cur.Notices...) {
		if !seen[n.ID] {
			seen[n.ID] = true
			merged.Notices = append(merged.Notices, n)
		}
	}
	seen = map[string]bool{}
	for _, t := range append(slices.Clone(st.Turns), cur.Turns...) {
		if !seen[t.ID] {
			seen[t.ID] = true
			merged.Turns = append(merged.Turns, t)
		}
	}
	merged.Running = append(slices.Clone(st.Running), cur.Running...)
	c.restore(doc, merged)
	c.wake(doc)
}
