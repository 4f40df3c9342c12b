package crdt

import (
	"errors"
	"fmt"
)

// checkChunks checks every change chunk of a saved document or
// incremental save before automerge loads it, as parseSyncChange does
// (actor indices automerge 0.5 uses unchecked). Document chunks are
// checked by checkDocChunks and checkLoadObjects.
func checkChunks(chunks [][]byte) error {
	for i, c := range chunks {
		if c[8] == syncChunkTypeChange {
			if _, err := parseSyncChange(fmt.Sprintf("chunk %d", i+1), c); err != nil {
				return errorf(ErrMalformed, "%v", err)
			}
		}
	}
	return nil
}

// checkSeqs verifies, after a load, that every actor's changes are
// numbered 1..n without gaps: a gap loads silently in automerge 0.5 and
// panics the process at the next sync message or incremental save. It also
// primes the document's sequence counts.
func (d *Doc) checkSeqs() error {
	chs, err := d.am.Changes()
	if err != nil {
		return amError("read changes", err)
	}
	seen := map[string]map[uint64]bool{}
	for _, c := range chs {
		a := c.ActorID()
		if seen[a] == nil {
			seen[a] = map[uint64]bool{}
		}
		seq := c.ActorSeq()
		seen[a][seq] = true
		if seq == 1 && !d.rebased && isRebaseMessage(c.Message()) && len(c.Dependencies()) == 0 {
			d.rebased = true
		}
	}
	counts := make(map[string]uint64, len(seen))
	for a, seqs := range seen {
		for s := uint64(1); s <= uint64(len(seqs)); s++ {
			if !seqs[s] {
				return errorf(ErrMalformed, "actor %s has %d changes but no change %d", a, len(seqs), s)
			}
		}
		counts[a] = uint64(len(seqs))
	}
	d.seqs = counts
	d.budget.Changes = len(chs)
	return nil
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
