package crdt

import (
	"bytes"
	"encoding/hex"
	"slices"

	"github.com/automerge/automerge-go"
)

// ChangeHash identifies one change: the SHA-256 of its encoding.
type ChangeHash [32]byte

// String renders the hash as 64 hex digits.
func (h ChangeHash) String() string { return hex.EncodeToString(h[:]) }

// fromAM converts automerge's hashes (the same 32 bytes) to ours.
func fromAM(hs []automerge.ChangeHash) []ChangeHash {
	out := make([]ChangeHash, len(hs))
	for i, h := range hs {
		out[i] = ChangeHash(h)
	}
	return out
}

// toAM converts hashes to automerge's.
func toAM(hs []ChangeHash) []automerge.ChangeHash {
	out := make([]automerge.ChangeHash, len(hs))
	for i, h := range hs {
		out[i] = automerge.ChangeHash(h)
	}
	return out
}

// amHeads returns automerge's heads of d, unsorted, as it lists them.
func (d *Doc) amHeads() []ChangeHash {
	if c := d.heads; c.am == d.am && c.heads != nil {
		return c.heads
	}
	h := fromAM(d.am.Heads())
	d.heads = headsCache{am: d.am, heads: h}
	return h
}

// headsCache holds the heads automerge last listed for one automerge
// document. Every call that changes its history (commit, LoadIncremental,
// Merge) drops it, and a document replaced (Rollback) no longer matches it.
// Listing heads through cgo costs as much as a small apply, and an edit
// needs them several times. Callers share the slice and never modify it.
type headsCache struct {
	am    *automerge.Doc
	heads []ChangeHash
}

// Heads returns the hashes of the document's latest changes, sorted: the
// revision a replica displays.
func (d *Doc) Heads() Heads { return sortHeads(d.amHeads()) }

// Has reports whether every change in heads is in d.
func (d *Doc) Has(heads Heads) bool {
	if d.known == nil {
		chs, err := d.am.Changes()
		if err != nil {
			return false
		}
		d.known = make(map[ChangeHash]bool, len(chs))
		for _, c := range chs {
			d.known[ChangeHash(c.Hash())] = true
		}
	}
	for _, h := range heads {
		if !d.known[h] {
			return false
		}
	}
	return true
}

func sameHeads(a, b []ChangeHash) bool {
	return slices.Equal(sortHeads(a), sortHeads(b))
}

func sortHeads(h []ChangeHash) Heads {
	out := Heads(slices.Clone(h))
	slices.SortFunc(out, func(a, b ChangeHash) int { return bytes.Compare(a[:], b[:]) })
	return out
}

func short(h ChangeHash) string { return h.String()[:12] }
