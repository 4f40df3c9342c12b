package boltstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
)

// bucketAt returns the bucket at path under tx's root, creating it.
func bucketAt(t *testing.T, tx *bolt.Tx, path ...string) *bolt.Bucket {
	t.Helper()
	b, err := tx.CreateBucketIfNotExists([]byte(path[0]))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range path[1:] {
		if b, err = b.CreateBucketIfNotExists([]byte(name)); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func put(t *testing.T, b *bolt.Bucket, k, v string) {
	t.Helper()
	if err := b.Put([]byte(k), []byte(v)); err != nil {
		t.Fatal(err)
	}
}

// openDamaged writes a bbolt file with write, straight through bbolt,
// and opens a Store on it that is closed when t ends.
func openDamaged(t *testing.T, write func(tx *bolt.Tx)) *boltstore.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "accord.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { write(tx); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestCorruptLayout(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name       string
		damage     func(t *testing.T, tx *bolt.Tx)
		bucket     string
		key        string
		err        error
		documents  bool // Documents fails too
		writeFails bool // a Commit to "d1" touching only records fails too
	}{
		{
			name:      "document is a value",
			damage:    func(t *testing.T, tx *bolt.Tx) { put(t, bucketAt(t, tx, "docs"), "d1", "x") },
			bucket:    "docs",
			key:       "d1",
			err:       boltstore.ErrNotBucket,
			documents: true, writeFails: true,
		},
		{
			name:   "records is a value",
			damage: func(t *testing.T, tx *bolt.Tx) { put(t, bucketAt(t, tx, "docs", "d1"), "records", "x") },
			bucket: "docs/d1",
			key:    "records",
			err:    boltstore.ErrNotBucket, writeFails: true,
		},
		{
			name:   "drafts is a value",
			damage: func(t *testing.T, tx *bolt.Tx) { put(t, bucketAt(t, tx, "docs", "d1"), "drafts", "") },
			bucket: "docs/d1",
			key:    "drafts",
			err:    boltstore.ErrNotBucket, writeFails: true,
		},
		{
			name:   "record is a bucket",
			damage: func(t *testing.T, tx *bolt.Tx) { bucketAt(t, tx, "docs", "d1", "records", "r1") },
			bucket: "docs/d1/records",
			key:    "r1",
			err:    boltstore.ErrNotValue, writeFails: true,
		},
		{
			name:   "answer is a bucket",
			damage: func(t *testing.T, tx *bolt.Tx) { bucketAt(t, tx, "docs", "d1", "answers", "a1") },
			bucket: "docs/d1/answers",
			key:    "a1",
			err:    boltstore.ErrNotValue,
		},
		{
			name:   "draft is a value",
			damage: func(t *testing.T, tx *bolt.Tx) { put(t, bucketAt(t, tx, "docs", "d1", "drafts"), "dec", "x") },
			bucket: "docs/d1/drafts",
			key:    "dec",
			err:    boltstore.ErrNotBucket,
		},
		{
			name:   "chunk key not 8 bytes",
			damage: func(t *testing.T, tx *bolt.Tx) { put(t, bucketAt(t, tx, "docs", "d1", "drafts", "dec"), "abc", "x") },
			bucket: "docs/d1/drafts/dec",
			key:    "abc",
			err:    boltstore.ErrChunkKey,
		},
		{
			name:   "snapshot is a bucket",
			damage: func(t *testing.T, tx *bolt.Tx) { bucketAt(t, tx, "docs", "d1", "drafts", "dec", "snapshot") },
			bucket: "docs/d1/drafts/dec",
			key:    "snapshot",
			err:    boltstore.ErrNotValue,
		},
		{
			name: "chunk is a bucket",
			damage: func(t *testing.T, tx *bolt.Tx) {
				bucketAt(t, tx, "docs", "d1", "drafts", "dec", "\x00\x00\x00\x00\x00\x00\x00\x01")
			},
			bucket: "docs/d1/drafts/dec",
			key:    "\x00\x00\x00\x00\x00\x00\x00\x01",
			err:    boltstore.ErrNotValue,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openDamaged(t, func(tx *bolt.Tx) {
				// A healthy document next to the damaged one.
				put(t, bucketAt(t, tx, "docs", "d0", "records"), "r", "ok")
				tc.damage(t, tx)
			})

			checkCorrupt := func(what string, err error) {
				t.Helper()
				var ce *persist.CorruptError
				if !errors.As(err, &ce) {
					t.Fatalf("%s = %v, want a *persist.CorruptError", what, err)
				}
				if ce.Bucket != tc.bucket || ce.Key != tc.key || !errors.Is(err, tc.err) {
					t.Fatalf("%s = %#v (%v), want bucket %q key %q error %v", what, ce, ce.Err, tc.bucket, tc.key, tc.err)
				}
			}
			_, err := s.LoadDocument(ctx, "d1")
			checkCorrupt("LoadDocument", err)
			checkCorrupt("Check", s.Check())

			_, err = s.Documents(ctx)
			if tc.documents {
				checkCorrupt("Documents", err)
			} else if err != nil {
				t.Fatalf("Documents: %v", err)
			}

			err = s.Commit(ctx, "d1", &persist.Write{Records: []persist.Put{{Key: "r1", Value: []byte("v")}}})
			if tc.writeFails {
				checkCorrupt("Commit", err)
			} else if err != nil {
				t.Fatalf("Commit: %v", err)
			}
			// A Write that touches the damage is refused; nothing of it lands.
			w := &persist.Write{
				Records: []persist.Put{{Key: "new", Value: []byte("v")}},
				Drafts:  []persist.DraftPut{{Decision: "dec", Chunk: []byte("c")}},
				Answers: []persist.Put{{Key: "a1"}},
			}
			switch tc.key {
			case "dec", "d1", "records", "drafts", "a1":
				checkCorrupt("Commit touching the damage", s.Commit(ctx, "d1", w))
			}
			if tc.key == "dec" {
				snap := &persist.Write{Drafts: []persist.DraftPut{{Decision: "dec", Chunk: []byte("s"), Snapshot: true}}}
				checkCorrupt("Commit of a snapshot over the damage", s.Commit(ctx, "d1", snap))
			}

			// The healthy document is untouched and still writable.
			d, err := s.LoadDocument(ctx, "d0")
			if err != nil || string(d.Records["r"]) != "ok" {
				t.Fatalf("healthy document: %+v, %v", d, err)
			}
			if err := s.Commit(ctx, "d0", &persist.Write{Records: []persist.Put{{Key: "r2", Value: []byte("v")}}}); err != nil {
				t.Fatalf("Commit to the healthy document: %v", err)
			}
		})
	}
}

// TestCorruptWriteInGroup checks that a Write refused for a damaged layout
// does not take down the Writes that shared its transaction.
func TestCorruptWriteInGroup(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "accord.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		put(t, bucketAt(t, tx, "docs"), "bad", "x")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := boltstore.Open(path, &boltstore.Options{MaxBatchDelay: 20 * time.Millisecond}) // so the Writes below share a group
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	errs := make(chan error, 8)
	for i := range 8 {
		doc := "good"
		if i == 3 {
			doc = "bad"
		}
		go func() {
			errs <- s.Commit(ctx, doc, &persist.Write{Drafts: []persist.DraftPut{{Decision: "d", Chunk: []byte{byte(i)}}}})
		}()
	}
	var corrupt, ok int
	for range 8 {
		var ce *persist.CorruptError
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.As(err, &ce):
			corrupt++
		default:
			t.Errorf("Commit: %v", err)
		}
	}
	if corrupt != 1 || ok != 7 {
		t.Fatalf("%d corrupt, %d ok; want 1 and 7", corrupt, ok)
	}
	d, err := s.LoadDocument(ctx, "good")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(d.Drafts["d"].Chunks); n != 7 {
		t.Fatalf("%d chunks landed, want 7", n)
	}
}

// TestCorruptAuditLog: a damaged audit log is reported by ReadAudit and
// Check, and costs nothing else: the document loads and takes commits.
func TestCorruptAuditLog(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		damage func(t *testing.T, tx *bolt.Tx)
		bucket string
		key    string
		err    error
	}{
		{
			name:   "audit is a value",
			damage: func(t *testing.T, tx *bolt.Tx) { put(t, bucketAt(t, tx, "docs", "d1"), "audit", "x") },
			bucket: "docs/d1", key: "audit", err: boltstore.ErrNotBucket,
		},
		{
			name:   "a decision's log is a value",
			damage: func(t *testing.T, tx *bolt.Tx) { put(t, bucketAt(t, tx, "docs", "d1", "audit"), "dec", "x") },
			bucket: "docs/d1/audit", key: "dec", err: boltstore.ErrNotBucket,
		},
		{
			name:   "row key not 8 bytes",
			damage: func(t *testing.T, tx *bolt.Tx) { put(t, bucketAt(t, tx, "docs", "d1", "audit", "dec"), "abc", "x") },
			bucket: "docs/d1/audit/dec", key: "abc", err: boltstore.ErrAuditKey,
		},
		{
			name: "row is a bucket",
			damage: func(t *testing.T, tx *bolt.Tx) {
				bucketAt(t, tx, "docs", "d1", "audit", "dec", "\x00\x00\x00\x00\x00\x00\x00\x01")
			},
			bucket: "docs/d1/audit/dec", key: "\x00\x00\x00\x00\x00\x00\x00\x01", err: boltstore.ErrNotValue,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openDamaged(t, func(tx *bolt.Tx) {
				put(t, bucketAt(t, tx, "docs", "d1", "records"), "dec", "ok")
				tc.damage(t, tx)
			})
			checkCorrupt := func(what string, err error) {
				t.Helper()
				var ce *persist.CorruptError
				if !errors.As(err, &ce) || ce.Bucket != tc.bucket || ce.Key != tc.key || !errors.Is(err, tc.err) {
					t.Fatalf("%s = %v, want a CorruptError at bucket %q key %q, %v", what, err, tc.bucket, tc.key, tc.err)
				}
			}
			_, err := s.ReadAudit(ctx, "d1", "dec", 0, 10)
			checkCorrupt("ReadAudit", err)
			checkCorrupt("Check", s.Check())
			d, err := s.LoadDocument(ctx, "d1")
			if err != nil || string(d.Records["dec"]) != "ok" {
				t.Fatalf("LoadDocument beside a damaged audit log = %+v, %v", d, err)
			}
			if err := s.Commit(ctx, "d1", &persist.Write{Records: []persist.Put{{Key: "dec", Value: []byte("v2")}}}); err != nil {
				t.Fatalf("Commit without audit rows: %v", err)
			}
		})
	}
}
