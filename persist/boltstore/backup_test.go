package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
)

// TestBackupWhileCommitting takes hot copies while 8 goroutines commit. Each
// copy opens (and passes Verify), holds every Write acknowledged before its
// Backup began, and holds each writer's Writes as a prefix: no gap, no part
// of a Write.
func TestBackupWhileCommitting(t *testing.T) {
	s := openTemp(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const writers = 8
	var acked [writers]atomic.Int64
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			doc := fmt.Sprintf("doc-%d", g)
			for i := 0; ctx.Err() == nil; i++ {
				k := strconv.Itoa(i)
				w := &persist.Write{
					Records: []persist.Put{{Key: k, Value: []byte(k)}},
					Drafts:  []persist.DraftPut{{Decision: "d", Chunk: []byte(k)}},
				}
				if err := s.Commit(context.Background(), doc, w); err != nil {
					t.Errorf("Commit: %v", err)
					return
				}
				acked[g].Store(int64(i + 1))
			}
		})
	}
	dir := t.TempDir()
	for round := range 4 {
		// Wait for some commits of every writer, so the copy is not trivial.
		for g := range writers {
			for acked[g].Load() < int64(5*(round+1)) && !t.Failed() {
				if _, err := s.Documents(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		var before [writers]int64
		for g := range writers {
			before[g] = acked[g].Load()
		}
		path := filepath.Join(dir, fmt.Sprintf("backup-%d.db", round))
		var n int64
		var err error
		if round%2 == 0 {
			n, err = s.BackupFile(ctx, path)
		} else {
			var buf bytes.Buffer
			n, err = s.Backup(ctx, &buf)
			if err == nil && int64(buf.Len()) != n {
				t.Fatalf("Backup wrote %d bytes, says %d", buf.Len(), n)
			}
			if err == nil {
				err = os.WriteFile(path, buf.Bytes(), 0o600)
			}
		}
		if err != nil {
			t.Fatalf("backup %d: %v", round, err)
		}
		if info, err := os.Stat(path); err != nil || info.Size() != n {
			t.Fatalf("backup %d: file %v, %v; Backup said %d bytes", round, info, err, n)
		}
		c, err := boltstore.Open(path, &boltstore.Options{Verify: true})
		if err != nil {
			t.Fatalf("open backup %d: %v", round, err)
		}
		for g := range writers {
			d, err := c.LoadDocument(ctx, fmt.Sprintf("doc-%d", g))
			if err != nil {
				t.Fatal(err)
			}
			n := len(d.Records)
			if int64(n) < before[g] {
				t.Errorf("backup %d, writer %d: %d records, %d acknowledged before the backup", round, g, n, before[g])
			}
			chunks := d.Drafts["d"].Chunks
			if len(chunks) != n {
				t.Errorf("backup %d, writer %d: %d records but %d chunks: part of a Write", round, g, n, len(chunks))
			}
			for i := range n {
				k := strconv.Itoa(i)
				if string(d.Records[k]) != k || i < len(chunks) && string(chunks[i]) != k {
					t.Errorf("backup %d, writer %d: Write %d missing or out of order", round, g, i)
					break
				}
			}
		}
		c.Close()
	}
	cancel()
	wg.Wait()
}

func TestBackupFileErrors(t *testing.T) {
	s := openTemp(t, nil)
	ctx := context.Background()
	if err := s.Commit(ctx, "doc", &persist.Write{Records: []persist.Put{{Key: "k", Value: []byte("v")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BackupFile(ctx, s.Path()); err == nil {
		t.Fatal("BackupFile over the store's own file succeeded")
	}
	dir := t.TempDir()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	target := filepath.Join(dir, "backup.db")
	if _, err := s.BackupFile(cctx, target); !errors.Is(err, context.Canceled) {
		t.Fatalf("BackupFile with a cancelled context = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a failed BackupFile left %v behind", entries)
	}
	if _, err := s.BackupFile(ctx, filepath.Join(dir, "missing", "backup.db")); err == nil {
		t.Fatal("BackupFile into a missing folder succeeded")
	}
	// A backup replaces an older one whole.
	if err := os.WriteFile(target, []byte("old backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BackupFile(ctx, target); err != nil {
		t.Fatal(err)
	}
	c, err := boltstore.Open(target, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := c.LoadDocument(ctx, "doc"); err != nil || string(d.Records["k"]) != "v" {
		t.Fatalf("backup holds %+v, %v", d, err)
	}
	c.Close()
	s.Close()
	if _, err := s.Backup(ctx, &bytes.Buffer{}); !errors.Is(err, persist.ErrClosed) {
		t.Fatalf("Backup after Close = %v, want ErrClosed", err)
	}
}
