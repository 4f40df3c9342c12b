package crdt

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/accord-crdt/accord/marks"
)

// Both targets below get every input twice: as it is, and with the
// checksum of every chunk recomputed. A checksum is a plain SHA-256 anyone
// can compute, so a hostile peer sends changes and saves whose checksums
// are right; without the second pass nearly every mutation would stop at
// the checksum and never reach automerge's decoders.

// fixChecksums returns data with the checksum of each chunk it can frame
// recomputed; whatever it cannot frame is copied as it is.
func fixChecksums(data []byte) []byte {
	out := bytes.Clone(data)
	rest := out
	for len(rest) >= 9 && bytes.Equal(rest[:4], chunkMagic[:]) {
		n, w := binary.Uvarint(rest[9:])
		if w <= 0 || n > uint64(len(rest)-9-w) {
			break
		}
		end := 9 + w + int(n)
		typ, body := rest[8], rest[9+w:end]
		h := sha256.New()
		if typ == chunkCompressed {
			// The checksum covers the change as if it were uncompressed.
			dec, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(body)), 1<<20))
			if err != nil {
				break
			}
			typ, body = chunkChange, dec
		}
		h.Write([]byte{typ})
		h.Write(binary.AppendUvarint(nil, uint64(len(body))))
		h.Write(body)
		copy(rest[4:8], h.Sum(nil))
		rest = rest[end:]
	}
	return out
}

// fuzzSeedDoc is a small decision with edits by three actors over two
// generations: the document FuzzApplyChanges applies batches to, and the
// source of both targets' seeds.
func fuzzSeedDoc(tb fataler) (authority, member *Doc) {
	tb.Helper()
	d := newTestDoc(tb)
	a, b := replicaOf(tb, d), replicaOf(tb, d)
	ok(tb, a.SetMark(qPick, "o1", "c1", marks.Yes))
	ok(tb, b.SetMark(qPick, "o1", "c1", marks.Cleared))
	ok(tb, a.Choose(qPick, "o2", true))
	ok(tb, b.Choose(qMany, "o1", true))
	ok(tb, a.SetText(qWhy, "because ünïcode 😀"))
	_, _, err := d.AppendOption(qPick, "k1", Item{"o4", "Redis"})
	ok(tb, err)
	mergeAll(tb, d, a, b)
	ok(tb, d.StartGeneration(2))
	ok(tb, a.Merge(d))
	ok(tb, a.SetMark(qPick, "o4", "c2", marks.Partly))
	return d, a
}

func FuzzLoad(f *testing.F) {
	d, member := fuzzSeedDoc(f)
	snap, err := d.Snapshot()
	ok(f, err)
	all, err := member.ChangesSince(nil)
	ok(f, err)
	empty, err := New(Options{})
	ok(f, err)
	for _, seed := range [][]byte{d.Save(), member.Save(), snap, all, empty.Save(), newTestDoc(f).Save(), nil} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, fixChecksums(data)} {
			d, err := Load(in, nil, Options{})
			if err != nil {
				if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("Load error %v wraps neither ErrMalformed nor ErrTooLarge", err)
				}
				continue
			}
			if _, err := d.State(); err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("State error %v does not wrap ErrMalformed", err)
			}
			d.Heads()
			d.Save()
		}
	})
}

func FuzzApplyChanges(f *testing.F) {
	d, member := fuzzSeedDoc(f)
	// Each input is applied to the member's replica as it was half way
	// through its history, so the seeds carry real changes it lacks: the
	// rest of the history as one batch and change by change (only the first
	// of which has its dependencies), the authority's whole history, and a
	// save (not a change batch at all).
	all, err := d.ChangesSince(nil)
	ok(f, err)
	chs, err := member.am.Changes()
	ok(f, err)
	mid := len(chs) / 2
	cut, err := member.ForkAt(Heads{chs[mid].Hash()}, "")
	ok(f, err)
	saved, err := cut.Snapshot()
	ok(f, err)
	rest, err := member.ChangesSince(cut.Heads())
	ok(f, err)
	f.Add(rest)
	f.Add(all)
	for _, c := range chs[mid:] {
		f.Add(c.Save())
	}
	f.Add(saved)

	f.Fuzz(func(t *testing.T, batch []byte) {
		for _, in := range [][]byte{batch, fixChecksums(batch)} {
			doc, err := Load(saved, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			heads, st := doc.Heads(), stateOf(t, doc)
			fresh, err := doc.ApplyChanges(in)
			if err != nil {
				if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrMissingDeps) && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("ApplyChanges error %v wraps no sentinel", err)
				}
				if fresh != nil || !doc.Heads().Equal(heads) {
					t.Fatalf("refused batch changed the heads")
				}
				if got := stateOf(t, doc); !reflect.DeepEqual(got, st) {
					t.Fatalf("refused batch changed the state")
				}
				continue
			}
			if !doc.Has(fresh) {
				t.Fatalf("ApplyChanges reported changes the document lacks")
			}
			if _, err := doc.State(); err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("State error %v does not wrap ErrMalformed", err)
			}
			if _, err := doc.ChangesSince(heads); err != nil {
				t.Fatalf("ChangesSince after an accepted batch: %v", err)
			}
			doc.Save()
		}
	})
}
