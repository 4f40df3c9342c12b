package crdt

import (
	"encoding/binary"
	"fmt"
)

// checkChunks checks the chunks of a saved document or incremental save
// before automerge loads them: each chunk's header and length, and every
// change chunk as parseSyncChange does (actor indices automerge 0.5 uses
// unchecked). Document chunks are left to automerge's loader, which
// returned errors, not crashes, on every malformed input fuzzed.
func checkChunks(buf []byte) error {
	for i := 0; len(buf) > 0; i++ {
		if len(buf) < syncChunkHeaderMin || buf[0] != syncChangeMagic[0] || buf[1] != syncChangeMagic[1] ||
			buf[2] != syncChangeMagic[2] || buf[3] != syncChangeMagic[3] {
			return errorf(ErrMalformed, "chunk %d: not an automerge chunk", i+1)
		}
		n, w := binary.Uvarint(buf[9:])
		if w <= 0 || n > uint64(len(buf)-9-w) {
			return errorf(ErrMalformed, "chunk %d: bad length", i+1)
		}
		end := 9 + w + int(n)
		if buf[8] == syncChunkTypeChange {
			if _, err := parseSyncChange(fmt.Sprintf("chunk %d", i+1), buf[:end]); err != nil {
				return errorf(ErrMalformed, "%v", err)
			}
		}
		buf = buf[end:]
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
		seen[a][c.ActorSeq()] = true
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
	return nil
}
