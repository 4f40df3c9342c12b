package wire

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

func TestDeflateDocRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 100, 10_000, 1 << 20} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(16)) // compressible, like automerge columns
		}
		z := DeflateDoc(b)
		got, err := InflateDoc(z, n)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if n > 0 {
			if _, err := InflateDoc(z, n-1); !errors.Is(err, ErrFrame) {
				t.Fatalf("%d bytes inflated past a limit of %d: %v", n, n-1, err)
			}
		}
	}
	if _, err := InflateDoc([]byte{0xff, 0x00, 0x13}, 100); !errors.Is(err, ErrFrame) {
		t.Fatalf("garbage inflated: %v", err)
	}
}

// TestDeflaterReused: one Deflater compresses document after document
// exactly as a fresh one does, and what it returned earlier stays intact.
func TestDeflaterReused(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var z Deflater
	var docs, outs [][]byte
	for _, n := range []int{10_000, 0, 1, 300, 70_000, 5} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(16))
		}
		docs, outs = append(docs, b), append(outs, z.Deflate(b))
	}
	for i, b := range docs {
		if !bytes.Equal(outs[i], DeflateDoc(b)) {
			t.Fatalf("document %d: a reused Deflater's output differs from a fresh one's", i)
		}
		if got, err := InflateDoc(outs[i], len(b)); err != nil || !bytes.Equal(got, b) {
			t.Fatalf("document %d does not inflate back: %v", i, err)
		}
	}
}

// BenchmarkDeflateSmallDoc: a small document, compressed by a fresh
// compressor each time or by one Deflater.
func BenchmarkDeflateSmallDoc(b *testing.B) {
	doc := make([]byte, 1500)
	for i := range doc {
		doc[i] = byte(i % 13)
	}
	b.Run("fresh", func(b *testing.B) {
		for b.Loop() {
			var z Deflater
			z.Deflate(doc)
		}
	})
	b.Run("reused", func(b *testing.B) {
		var z Deflater
		for b.Loop() {
			z.Deflate(doc)
		}
	})
}

func FuzzInflateDoc(f *testing.F) {
	f.Add(DeflateDoc([]byte("automerge")))
	f.Add([]byte{0x01, 0x00, 0x00, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := InflateDoc(b, 1<<16)
		if err == nil && len(out) > 1<<16 {
			t.Fatalf("inflated %d bytes past the limit", len(out))
		}
	})
}
