package crdt

import (
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
