package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
)

// fuzzBase is a small healthy store file: three documents with records,
// answers and drafts, some replaced by snapshots, so it has branch, leaf,
// overflow, free and freelist pages.
func fuzzBase(f *testing.F) []byte {
	f.Helper()
	path := filepath.Join(f.TempDir(), "base.db")
	s, err := boltstore.Open(path, nil)
	if err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	for round := range 2 {
		for d := range 3 {
			w := &persist.Write{}
			for i := range 12 {
				k := fmt.Sprintf("dec-%d", i)
				w.Records = append(w.Records, persist.Put{Key: k, Value: make([]byte, 200+i*40)})
				w.Answers = append(w.Answers, persist.Put{Key: k, Value: []byte(k)})
				w.Drafts = append(w.Drafts, persist.DraftPut{Decision: k, Chunk: make([]byte, 100+i*700), Snapshot: round == 1})
			}
			if err := s.Commit(ctx, fmt.Sprintf("doc-%d", d), w); err != nil {
				f.Fatal(err)
			}
		}
	}
	s.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzDamagedFile overwrites bytes of a healthy file at an offset and cuts
// it to a length, then opens it and calls every method: nothing may panic
// or fault, and every error from damage is a *persist.CorruptError naming
// the file.
func FuzzDamagedFile(f *testing.F) {
	base := fuzzBase(f)
	pages := uint32(len(base) / 4096)
	f.Add(uint32(0), []byte{0xff}, uint32(len(base)))
	f.Add(uint32(4096*2), []byte("\xde\xad\xbe\xef\xde\xad\xbe\xef\x01\x00"), uint32(len(base)))
	f.Add(uint32(0), []byte{}, uint32(len(base)/2))
	f.Add(uint32(0), []byte{}, uint32(3*4096))
	for p := uint32(2); p < pages; p += 3 {
		f.Add(p*4096, []byte{byte(p), 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0xff, 0xff}, uint32(len(base)))
		f.Add(p*4096+8, []byte{0x10}, uint32(len(base)))
	}
	f.Fuzz(func(t *testing.T, off uint32, patch []byte, size uint32) {
		b := append([]byte(nil), base...)
		if int(off) < len(b) {
			copy(b[off:], patch)
		}
		if int(size) < len(b) {
			b = b[:size]
		}
		path := filepath.Join(t.TempDir(), "accord.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		check := func(what string, err error) {
			var ce *persist.CorruptError
			if err != nil && !(errors.As(err, &ce) && ce.File == path) && !errors.Is(err, persist.ErrEmptyKey) {
				t.Fatalf("%s: %v (%T), want nil or a CorruptError naming the file", what, err, err)
			}
		}
		s, err := boltstore.Open(path, nil)
		if err != nil {
			check("Open", err)
			return
		}
		defer s.Close()
		ctx := context.Background()
		ids, err := s.Documents(ctx)
		check("Documents", err)
		for _, id := range append(ids, "doc-0", "doc-1", "doc-2") {
			_, err := s.LoadDocument(ctx, id)
			check("LoadDocument", err)
		}
		check("Check", s.Check())
		for d := range 3 {
			doc := fmt.Sprintf("doc-%d", d)
			check("Commit", s.Commit(ctx, doc, &persist.Write{
				Records: []persist.Put{{Key: "dec-1", Value: []byte("new")}},
				Drafts:  []persist.DraftPut{{Decision: "dec-2", Chunk: []byte("c")}, {Decision: "dec-3", Chunk: []byte("s"), Snapshot: true}},
				Answers: []persist.Put{{Key: "dec-4"}},
			}))
		}
		_, err = s.Backup(ctx, io.Discard)
		check("Backup", err)
		check("DeleteDocument", s.DeleteDocument(ctx, "doc-1"))
	})
}
