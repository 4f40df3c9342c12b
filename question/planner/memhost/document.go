package memhost

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/accord-crdt/accord/question/planner"
)

// ErrNoBlock is returned by the Documents editing methods for a block id
// the document does not hold.
var ErrNoBlock = errors.New("memhost: no such block")

// Documents holds plan documents in memory. Revisions read "r<n>" and grow
// by one with every change; each block remembers the revision that last
// changed it. It is safe for concurrent use.
type Documents struct {
	mu      sync.Mutex
	docs    map[string]*document
	persist func(doc string, st DocState) error
}

type document struct {
	rev      uint64
	blocks   []*block
	receipts map[planner.Receipt]bool
	anchors  map[string][]string
	applied  int
	minted   uint64 // ids minted for new blocks ("n<k>")
}

type block struct {
	planner.Block
	changed uint64
}

// NewDocuments returns an empty set of documents.
func NewDocuments() *Documents { return &Documents{docs: map[string]*document{}} }

func (d *Documents) doc(id string) *document {
	x := d.docs[id]
	if x == nil {
		x = &document{receipts: map[planner.Receipt]bool{}, anchors: map[string][]string{}}
		d.docs[id] = x
	}
	return x
}

func (x *document) find(id string) int {
	return slices.IndexFunc(x.blocks, func(b *block) bool { return b.ID == id })
}

func (x *document) count(id string) int {
	n := 0
	for _, b := range x.blocks {
		if b.ID == id {
			n++
		}
	}
	return n
}

func revision(n uint64) string { return "r" + strconv.FormatUint(n, 10) }

// Set replaces the document's blocks (as one change). It is for setting a
// document up: if persisting it fails the document stays as it was.
func (d *Documents) Set(doc string, blocks ...planner.Block) {
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.doc(doc)
	before := x.clone()
	x.rev++
	x.blocks = nil
	for _, b := range blocks {
		x.blocks = append(x.blocks, &block{Block: b, changed: x.rev})
	}
	_ = d.commit(doc, x, before) // setting up; a failed persist leaves it as it was
}

// Edit changes a block's text.
func (d *Documents) Edit(doc, id, text string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.doc(doc)
	before := x.clone()
	i := x.find(id)
	if i < 0 {
		return fmt.Errorf("%w: %s", ErrNoBlock, id)
	}
	x.rev++
	x.blocks[i].Text, x.blocks[i].changed = text, x.rev
	return d.commit(doc, x, before)
}

// Update changes a block's text to fn of its current text, under the
// document's lock, so that no other change falls between the read and
// the write; fn returning the same text changes nothing.
func (d *Documents) Update(doc, id string, fn func(text string) string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.doc(doc)
	i := x.find(id)
	if i < 0 {
		return fmt.Errorf("%w: %s", ErrNoBlock, id)
	}
	text := fn(x.blocks[i].Text)
	if text == x.blocks[i].Text {
		return nil
	}
	before := x.clone()
	x.rev++
	x.blocks[i].Text, x.blocks[i].changed = text, x.rev
	return d.commit(doc, x, before)
}

// Insert puts b after block after ("" puts it first). The id may repeat
// one already there, as a paste can.
func (d *Documents) Insert(doc, after string, b planner.Block) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.doc(doc)
	before := x.clone()
	at := 0
	if after != "" {
		i := x.find(after)
		if i < 0 {
			return fmt.Errorf("%w: %s", ErrNoBlock, after)
		}
		at = i + 1
	}
	x.rev++
	x.blocks = slices.Insert(x.blocks, at, &block{Block: b, changed: x.rev})
	return d.commit(doc, x, before)
}

// Delete removes a block.
func (d *Documents) Delete(doc, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.doc(doc)
	before := x.clone()
	i := x.find(id)
	if i < 0 {
		return fmt.Errorf("%w: %s", ErrNoBlock, id)
	}
	x.rev++
	x.blocks = slices.Delete(x.blocks, i, i+1)
	return d.commit(doc, x, before)
}

// Blocks returns the document's blocks in order.
func (d *Documents) Blocks(doc string) []planner.Block {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.doc(doc).snapshot()
}

func (x *document) snapshot() []planner.Block {
	out := make([]planner.Block, len(x.blocks))
	for i, b := range x.blocks {
		out[i] = b.Block
	}
	return out
}

// Text returns one block's text ("" if it is not there).
func (d *Documents) Text(doc, id string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.doc(doc)
	if i := x.find(id); i >= 0 {
		return x.blocks[i].Text
	}
	return ""
}

// Revision returns the document's current revision.
func (d *Documents) Revision(doc string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return revision(d.doc(doc).rev)
}

// Has reports whether doc has a revision: it was set, changed, or
// restored from a state that had one. Reading a document never made one,
// so a host can tell a mistyped document id from an empty plan.
func (d *Documents) Has(doc string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.docs[doc]
	return x != nil && x.rev > 0
}

// Applied returns how many write-ups changed the document.
func (d *Documents) Applied(doc string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.doc(doc).applied
}

// Anchors returns the decisions' passages as the last write-up left them.
func (d *Documents) Anchors(doc string) map[string][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string][]string{}
	for k, v := range d.doc(doc).anchors {
		out[k] = slices.Clone(v)
	}
	return out
}

// Read implements planner.Document.
func (d *Documents) Read(ctx context.Context, doc string) (planner.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return planner.Snapshot{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.doc(doc)
	s := planner.Snapshot{Revision: revision(x.rev), Blocks: x.snapshot()}
	for r := range x.receipts {
		s.Receipts = append(s.Receipts, r)
	}
	slices.SortFunc(s.Receipts, func(a, b planner.Receipt) int {
		if c := strings.Compare(a.Decision, b.Decision); c != 0 {
			return c
		}
		return int(a.Generation) - int(b.Generation)
	})
	return s, nil
}

// Unchanged implements planner.Document.
func (d *Documents) Unchanged(ctx context.Context, doc, id, rev string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(rev, "r"), 10, 64)
	if err != nil || !strings.HasPrefix(rev, "r") {
		return false, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.doc(doc)
	i := x.find(id)
	return i >= 0 && n <= x.rev && x.blocks[i].changed <= n && x.count(id) == 1, nil
}

// Place implements planner.Document: a card block per decision, after
// its block, once.
func (d *Documents) Place(ctx context.Context, doc string, cards []planner.Placement) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.doc(doc)
	before := x.clone()
	for _, p := range cards {
		if slices.ContainsFunc(x.blocks, func(b *block) bool { return b.Kind == planner.Card && b.Decision == p.Decision }) {
			continue
		}
		at := len(x.blocks)
		if i := x.find(p.After); p.After != "" && i >= 0 {
			at = i + 1
			for at < len(x.blocks) && x.blocks[at].Kind == planner.Card { // after earlier cards of that block
				at++
			}
		}
		x.rev++
		card := planner.Block{ID: "card-" + p.Decision, Kind: planner.Card, Decision: p.Decision, Link: p.Link}
		x.blocks = slices.Insert(x.blocks, at, &block{Block: card, changed: x.rev})
	}
	return d.commit(doc, x, before)
}

// ApplyWriteUp implements planner.Document: source, anchors and receipts
// change together under one lock, and not at all when every receipt is
// already there.
func (d *Documents) ApplyWriteUp(ctx context.Context, doc string, w planner.WriteUp) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.doc(doc)
	before := x.clone()
	if len(w.Receipts) > 0 && !slices.ContainsFunc(w.Receipts, func(r planner.Receipt) bool { return !x.receipts[r] }) {
		return nil
	}
	if w.Base != revision(x.rev) {
		return planner.ErrConflict
	}
	for _, id := range w.Scope {
		switch x.count(id) {
		case 0:
			return fmt.Errorf("%w: block %s", planner.ErrTargetLost, id)
		case 1:
		default:
			return fmt.Errorf("%w: block %s", planner.ErrTargetAmbiguous, id)
		}
	}
	for id := range w.Source {
		if !slices.Contains(w.Scope, id) {
			return fmt.Errorf("memhost: write-up source for block %s outside its scope", id)
		}
	}
	x.rev++
	for id, text := range w.Source {
		b := x.blocks[x.find(id)]
		if b.Text != text {
			b.Text, b.changed = text, x.rev
		}
	}
	for _, a := range w.Anchors {
		x.anchors[a.Decision] = slices.Clone(a.Blocks)
	}
	for _, r := range w.Receipts {
		x.receipts[r] = true
	}
	x.applied++
	return d.commit(doc, x, before)
}
