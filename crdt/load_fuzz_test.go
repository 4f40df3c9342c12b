package crdt

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/automerge/automerge-go"

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
	// Fixed actors and clock: the same seeds, and the same document to
	// apply them to, in every run, so that a crasher replays.
	d, err := New(Options{Actor: actorA, Now: testNow})
	ok(tb, err)
	for _, s := range testShapes() {
		ok(tb, d.AddQuestion(s))
	}
	ok(tb, d.StartGeneration(1))
	a, err := Load(d.Save(), nil, Options{Actor: actorB, Now: testNow})
	ok(tb, err)
	b, err := Load(d.Save(), nil, Options{Actor: "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3", Now: testNow})
	ok(tb, err)
	ok(tb, a.SetMark(qPick, "o1", "c1", marks.Yes))
	ok(tb, b.SetMark(qPick, "o1", "c1", marks.Cleared))
	ok(tb, a.Choose(qPick, "o2", true))
	ok(tb, b.Choose(qMany, "o1", true))
	ok(tb, a.SetText(qWhy, "because ünïcode 😀"))
	_, _, err = d.AppendOption(qPick, "k1", Item{"o4", "Redis"})
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
	cut, err := member.ForkAt(Heads{ChangeHash(chs[mid].Hash())}, "")
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

// fuzzApplyTarget is the document FuzzApplyChanges applies each input to:
// the member's replica of fuzzSeedDoc half way through its history.
func fuzzApplyTarget(tb fataler) []byte {
	tb.Helper()
	_, member := fuzzSeedDoc(tb)
	chs, err := member.am.Changes()
	ok(tb, err)
	cut, err := member.ForkAt(Heads{ChangeHash(chs[len(chs)/2].Hash())}, "")
	ok(tb, err)
	saved, err := cut.Snapshot()
	ok(tb, err)
	return saved
}

// fuzzInput reads an input of a fuzz target's regression corpus.
func fuzzInput(tb fataler, target, name string) []byte {
	tb.Helper()
	raw, err := os.ReadFile("testdata/fuzz/" + target + "/" + name)
	ok(tb, err)
	lit, ok1 := strings.CutPrefix(strings.TrimSpace(string(raw)), "go test fuzz v1\n[]byte(")
	lit, ok2 := strings.CutSuffix(lit, ")")
	data, err := strconv.Unquote(lit)
	if !ok1 || !ok2 || err != nil {
		tb.Fatalf("%s/%s is not a []byte corpus entry", target, name)
	}
	return []byte(data)
}

const chunkGuardCrashEnv = "CRDT_CHUNK_GUARD_CRASH"

// chunkGuardCases are the inputs the fuzz targets found that abort the
// process inside automerge 0.5 when nothing checks them first.
var chunkGuardCases = []struct {
	name, target, input string
	apply               bool   // applied to FuzzApplyChanges' document (else loaded)
	panic               string // what automerge's Rust panic says
}{
	{"unknown action in a document", "FuzzLoad", "cf6cebba8a7004ba", false, "UnknownAction"},
	{"operation on an unknown object", "FuzzLoad", "op-on-unknown-object", false, "can only compare map keys"},
	{"string key on a list", "FuzzApplyChanges", "map-key-on-list", true, "can only compare map keys"},
}

// TestChunkGuardsAreNeeded shows, in a child process, that each input the
// fuzz targets found aborts the process when given to automerge unchecked,
// and, here, that Load and ApplyChanges refuse it instead.
func TestChunkGuardsAreNeeded(t *testing.T) {
	if which := os.Getenv(chunkGuardCrashEnv); which != "" {
		for _, tc := range chunkGuardCases {
			if tc.name != which {
				continue
			}
			data := fuzzInput(t, tc.target, tc.input)
			for _, in := range [][]byte{data, fixChecksums(data)} {
				var am *automerge.Doc
				var err error
				if tc.apply {
					if am, err = automerge.Load(fuzzApplyTarget(t)); err == nil {
						err = am.LoadIncremental(in)
					}
				} else {
					am, err = automerge.Load(in)
				}
				if err == nil {
					(&Doc{am: am}).State()
				}
			}
		}
		os.Exit(0) // survived: the guard would not be needed
	}
	for _, tc := range chunkGuardCases {
		t.Run(tc.name, func(t *testing.T) {
			data := fixChecksums(fuzzInput(t, tc.target, tc.input))
			var err error
			if tc.apply {
				var d *Doc
				if d, err = Load(fuzzApplyTarget(t), nil, Options{}); err == nil {
					_, err = d.ApplyChanges(data)
				}
			} else {
				_, err = Load(data, nil, Options{})
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("guarded call = %v, want ErrMalformed", err)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChunkGuardsAreNeeded$", "-test.count=1")
			cmd.Env = append(os.Environ(), chunkGuardCrashEnv+"="+tc.name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("automerge survived the input unchecked; the guard may no longer be needed")
			}
			if !bytes.Contains(out, []byte(tc.panic)) {
				t.Fatalf("the child died (%v) without the expected panic %q:\n%.2000s", err, tc.panic, out)
			}
		})
	}
}
