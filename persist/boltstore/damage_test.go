package boltstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
)

const damageDocs = 24

func damageDoc(i int) string { return fmt.Sprintf("plan-%02d", i) }

// populate writes a file shaped like a served one: documents with records,
// projections, answers and drafts whose snapshots replaced earlier chunks
// (so the file has free pages and a freelist), and values large enough to
// need overflow pages.
func populate(t testing.TB, path string) {
	t.Helper()
	s, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	val := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return b
	}
	for round := range 3 {
		for i := range damageDocs {
			w := &persist.Write{}
			for d := range 6 {
				dec := fmt.Sprintf("dec-%d", d)
				w.Records = append(w.Records, persist.Put{Key: dec, Value: val(300 + rng.IntN(900))})
				w.Projections = append(w.Projections, persist.Put{Key: dec, Value: val(200)})
				w.Answers = append(w.Answers, persist.Put{Key: dec, Value: val(100)})
				w.Drafts = append(w.Drafts, persist.DraftPut{Decision: dec, Chunk: val(2000 + rng.IntN(6000)), Snapshot: round != 1})
				w.Drafts = append(w.Drafts, persist.DraftPut{Decision: dec, Chunk: val(500)})
			}
			if err := s.Commit(ctx, damageDoc(i), w); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// pagesOf lists the ids of the pages of the given bbolt page types ("leaf",
// "branch", "freelist", "free", "meta").
func pagesOf(t *testing.T, path string, types ...string) []int {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ids []int
	err = db.View(func(tx *bolt.Tx) error {
		for id := 0; ; id++ {
			p, err := tx.Page(id)
			if err != nil || p == nil {
				return err
			}
			for _, typ := range types {
				if p.Type == typ {
					ids = append(ids, id)
				}
			}
			if p.Type != "free" { // a free page's header is stale
				id += p.OverflowCount
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) == 0 {
		t.Fatalf("no %v pages in %s", types, path)
	}
	return ids
}

// inUse returns the bytes of the pages in use (bbolt grows a file ahead).
func inUse(t *testing.T, path string) int64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	_ = db.View(func(tx *bolt.Tx) error { n = tx.Size(); return nil })
	return n
}

// overwritePageHeaders writes 16 random bytes over the header of each page.
func overwritePageHeaders(t *testing.T, path string, seed uint64, ids []int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, id := range ids {
		var h [16]byte
		binary.LittleEndian.PutUint64(h[:8], rng.Uint64())
		binary.LittleEndian.PutUint64(h[8:], rng.Uint64())
		if _, err := f.WriteAt(h[:], int64(id)*4096); err != nil {
			t.Fatal(err)
		}
	}
}

// overwriteAt writes n random bytes at off.
func overwriteAt(t *testing.T, path string, off int64, n int) {
	t.Helper()
	b := make([]byte, n)
	rng := rand.New(rand.NewPCG(uint64(off), 5))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func randomizeFrom(t *testing.T, path string, offset int64) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, info.Size()-offset)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, offset); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, path string, size func(int64) int64) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size(info.Size())); err != nil {
		t.Fatal(err)
	}
}

// use runs every Store method on s and returns the errors they gave.
func use(s *boltstore.Store) map[string]error {
	ctx := context.Background()
	errs := map[string]error{}
	for i := range damageDocs {
		if _, err := s.LoadDocument(ctx, damageDoc(i)); err != nil {
			errs["LoadDocument "+damageDoc(i)] = err
		}
	}
	if _, err := s.Documents(ctx); err != nil {
		errs["Documents"] = err
	}
	if err := s.Check(); err != nil {
		errs["Check"] = err
	}
	for i := range damageDocs {
		w := &persist.Write{
			Records: []persist.Put{{Key: "dec-0", Value: []byte("after the damage")}},
			Drafts:  []persist.DraftPut{{Decision: "dec-1", Chunk: []byte("c")}, {Decision: "dec-2", Chunk: []byte("s"), Snapshot: true}},
			Answers: []persist.Put{{Key: "dec-3"}},
		}
		if err := s.Commit(ctx, damageDoc(i), w); err != nil {
			errs["Commit "+damageDoc(i)] = err
		}
	}
	if _, err := s.Backup(ctx, io.Discard); err != nil {
		errs["Backup"] = err
	}
	if err := s.DeleteDocument(ctx, damageDoc(damageDocs-1)); err != nil {
		errs["DeleteDocument"] = err
	}
	return errs
}

// TestDamagedFiles damages real bbolt files in the ways a disk, a full
// volume or a careless copy does. None may panic the host: Open, or the
// first read that meets the damage, returns a *persist.CorruptError naming
// the file.
func TestDamagedFiles(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, path string)
		// atOpen: Open itself must refuse the file.
		atOpen bool
	}{
		{"truncated to half", func(t *testing.T, p string) { truncate(t, p, func(n int64) int64 { return n / 2 }) }, true},
		{"truncated to three pages", func(t *testing.T, p string) { truncate(t, p, func(int64) int64 { return 3 * 4096 }) }, true},
		{"last page in use cut off", func(t *testing.T, p string) { truncate(t, p, func(int64) int64 { return inUse(t, p) - 4096 }) }, true},
		{"truncated to one byte", func(t *testing.T, p string) { truncate(t, p, func(int64) int64 { return 1 }) }, true},
		{"zero-length", func(t *testing.T, p string) { truncate(t, p, func(int64) int64 { return 0 }) }, true},
		{"meta pages overwritten", func(t *testing.T, p string) { overwriteAt(t, p, 0, 128); overwriteAt(t, p, 4096, 128) }, true},
		{"freelist page header overwritten", func(t *testing.T, p string) { overwritePageHeaders(t, p, 2, pagesOf(t, p, "freelist")) }, true},
		{"every page header overwritten", func(t *testing.T, p string) {
			overwritePageHeaders(t, p, 3, pagesOf(t, p, "leaf", "branch", "freelist", "free"))
		}, true},
		{"leaf and branch page headers overwritten", func(t *testing.T, p string) {
			overwritePageHeaders(t, p, 4, pagesOf(t, p, "leaf", "branch"))
		}, true},
		{"one leaf page header overwritten", func(t *testing.T, p string) {
			leaves := pagesOf(t, p, "leaf")
			overwritePageHeaders(t, p, 5, leaves[len(leaves)/2:len(leaves)/2+1])
		}, false},
		{"a few page headers overwritten", func(t *testing.T, p string) {
			pages := pagesOf(t, p, "leaf", "branch")
			overwritePageHeaders(t, p, 6, []int{pages[1], pages[len(pages)/3], pages[len(pages)-1]})
		}, false},
		{"random bytes", func(t *testing.T, p string) { randomizeFrom(t, p, 0) }, true},
		{"random bytes after the meta pages", func(t *testing.T, p string) { randomizeFrom(t, p, 2*4096) }, true},
	}
	// One populated file, copied for each case.
	basePath := filepath.Join(t.TempDir(), "base.db")
	populate(t, basePath)
	base, err := os.ReadFile(basePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "accord.db")
			if err := os.WriteFile(path, base, 0o600); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, path)

			isCorrupt := func(what string, err error) {
				t.Helper()
				var ce *persist.CorruptError
				if !errors.As(err, &ce) || !errors.Is(err, persist.ErrCorrupt) {
					t.Fatalf("%s = %v (%T), want a *persist.CorruptError", what, err, err)
				}
				if ce.File != path || !strings.Contains(err.Error(), path) {
					t.Fatalf("%s = %v: names file %q, want %q", what, err, ce.File, path)
				}
			}
			s, err := boltstore.Open(path, nil)
			if err != nil {
				isCorrupt("Open", err)
				t.Logf("Open: %v", err)
				return
			}
			defer s.Close()
			if tc.atOpen {
				t.Errorf("Open accepted the damaged file")
			}
			errs := use(s)
			if len(errs) == 0 {
				t.Fatal("no method noticed the damage")
			}
			for what, err := range errs {
				isCorrupt(what, err)
			}
			isCorrupt("Check", errs["Check"])
			t.Logf("%d of the calls failed, e.g. Check: %.200v", len(errs), errs["Check"])

			// Verify refuses at Open what the default Open leaves to reads.
			s.Close()
			s2, err := boltstore.Open(path, &boltstore.Options{Verify: true})
			if err == nil {
				s2.Close()
				t.Fatal("Open with Verify accepted the damaged file")
			}
			isCorrupt("Open with Verify", err)
		})
	}
}

// TestDamagedPageLeavesOtherDocuments checks that damage deep in one
// document's pages is that document's error alone: Open finds it, the
// others load and take writes.
func TestDamagedPageLeavesOtherDocuments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "accord.db")
	populate(t, path)
	// The root page of one draft bucket holds only that draft's chunks.
	var page int
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("docs")).Bucket([]byte(damageDoc(5))).Bucket([]byte("drafts")).Bucket([]byte("dec-2"))
		page = int(b.RootPage())
		return nil
	})
	db.Close()
	if err != nil || page == 0 {
		t.Fatalf("no page for the draft bucket: %v", err)
	}
	overwritePageHeaders(t, path, 9, []int{page})

	s, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := range damageDocs {
		_, err := s.LoadDocument(ctx, damageDoc(i))
		var ce *persist.CorruptError
		switch {
		case i == 5:
			if !errors.As(err, &ce) || ce.File != path || ce.Bucket != "docs/"+damageDoc(5) {
				t.Errorf("LoadDocument of the damaged document = %v, want a CorruptError naming its bucket", err)
			}
		case err != nil:
			t.Errorf("LoadDocument(%s) = %v; only %s is damaged", damageDoc(i), err, damageDoc(5))
		}
	}
	if ids, err := s.Documents(ctx); err != nil || len(ids) != damageDocs {
		t.Errorf("Documents = %d ids, %v", len(ids), err)
	}
	// Writes to the damaged document are refused (bbolt would walk its
	// pages); the others take writes.
	w := &persist.Write{Records: []persist.Put{{Key: "dec-0", Value: []byte("v")}}}
	for _, err := range []error{s.Commit(ctx, damageDoc(5), w), s.DeleteDocument(ctx, damageDoc(5))} {
		if !errors.Is(err, persist.ErrCorrupt) {
			t.Errorf("write to the damaged document = %v, want a CorruptError", err)
		}
	}
	if err := s.Commit(ctx, damageDoc(6), w); err != nil {
		t.Errorf("Commit to a healthy document: %v", err)
	}
	if err := s.DeleteDocument(ctx, damageDoc(7)); err != nil {
		t.Errorf("DeleteDocument of a healthy document: %v", err)
	}
	if err := s.Check(); !errors.Is(err, persist.ErrCorrupt) {
		t.Errorf("Check = %v, want the damage", err)
	}
}

// TestOneMetaPageLostStillOpens: bbolt keeps two meta pages so that a torn
// write of one loses nothing. The file head check must not refuse that.
func TestOneMetaPageLostStillOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "accord.db")
	populate(t, path)
	overwriteAt(t, path, 0, 4096)
	s, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatalf("Open with one meta page lost: %v", err)
	}
	defer s.Close()
	for i := range damageDocs {
		if d, err := s.LoadDocument(context.Background(), damageDoc(i)); err != nil || len(d.Records) != 6 {
			t.Fatalf("LoadDocument(%s) = %d records, %v", damageDoc(i), len(d.Records), err)
		}
	}
}

// TestOpenNotAFile covers paths that are no bbolt file at all: a directory,
// and a file the process may not read. They are *fs.PathError naming the
// path (not damage: restoring a backup over them would not help).
func TestOpenNotAFile(t *testing.T) {
	t.Run("directory", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "accord.db")
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		s, err := boltstore.Open(path, nil)
		if err == nil {
			s.Close()
			t.Fatal("Open of a directory succeeded")
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != path || !errors.Is(err, syscall.EISDIR) || errors.Is(err, persist.ErrCorrupt) {
			t.Fatalf("Open of a directory = %v (%T), want an *fs.PathError naming it, EISDIR", err, err)
		}
	})
	t.Run("mode 000", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("running as root, which reads a file whatever its mode")
		}
		path := filepath.Join(t.TempDir(), "accord.db")
		populate(t, path)
		if err := os.Chmod(path, 0); err != nil {
			t.Fatal(err)
		}
		s, err := boltstore.Open(path, nil)
		if err == nil {
			s.Close()
			t.Fatal("Open of a mode 000 file succeeded")
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != path || !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("Open of a mode 000 file = %v (%T), want an *fs.PathError naming it, ErrPermission", err, err)
		}
	})
}

// TestUndamagedFilePassesFileCheck guards the head check against refusing
// healthy files: fresh, populated, after deletes, and a backup copy.
func TestUndamagedFilePassesFileCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "accord.db")
	populate(t, path)
	s, err := boltstore.Open(path, &boltstore.Options{Verify: true})
	if err != nil {
		t.Fatalf("Open of a healthy file: %v", err)
	}
	ctx := context.Background()
	for i := range damageDocs / 2 {
		if err := s.DeleteDocument(ctx, damageDoc(i)); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := s.Backup(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	s.Close()
	copyPath := filepath.Join(dir, "copy.db")
	if err := os.WriteFile(copyPath, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, copyPath} {
		s, err := boltstore.Open(p, &boltstore.Options{Verify: true})
		if err != nil {
			t.Fatalf("Open %s: %v", p, err)
		}
		s.Close()
	}
}

// BenchmarkOpen opens a 2.5 MB file of 24 documents: the cost of the
// structural check Open runs before bbolt maps the file (every branch and
// leaf page read once), against Open with Verify (bbolt's full check and
// every document read back too).
func BenchmarkOpen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "accord.db")
	populate(b, path)
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		opts *boltstore.Options
	}{{"default", nil}, {"verify", &boltstore.Options{Verify: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(info.Size())
			for b.Loop() {
				s, err := boltstore.Open(path, bc.opts)
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}
