package crdt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
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
