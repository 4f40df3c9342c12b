package boltstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"github.com/accord-crdt/accord/persist"
)

// Backup writes a consistent copy of the whole file to w while the store
// keeps serving: the copy is the state of one read transaction, so it holds
// every Commit that returned before Backup began and no part of a Write.
// Commits go on meanwhile. It returns the bytes written. The copy is a
// bbolt file that Open accepts as it is.
//
// A read transaction held open keeps bbolt from reusing the pages that
// commits free meanwhile, so the file grows while a long backup runs:
// prefer a fast w (a local file, see BackupFile) over a slow network
// peer. Cancelling ctx stops the copy at the next write to w.
func (s *Store) Backup(ctx context.Context, w io.Writer) (int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, persist.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int64
	err := s.view("", func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(ctxWriter{ctx, w})
		return err
	})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %v", cerr, err)
		}
		return n, fmt.Errorf("boltstore: backup of %s: %w", s.path, err)
	}
	s.log.Info("boltstore: backup written", "path", s.path, "bytes", n)
	return n, nil
}

// BackupFile writes a hot copy (see Backup) to the file at path, whole or
// not at all: it writes a temporary file in path's folder, fsyncs it,
// renames it over path and fsyncs the folder. path must not be the store's
// own file.
func (s *Store) BackupFile(ctx context.Context, path string) (n int64, err error) {
	if same, err := sameFile(path, s.path); err != nil {
		return 0, fmt.Errorf("boltstore: backup to %s: %w", path, err)
	} else if same {
		return 0, fmt.Errorf("boltstore: backup to %s: that is the store's own file", path)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("boltstore: backup to %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if n, err = s.Backup(ctx, bw); err != nil {
		return 0, err
	}
	if err = bw.Flush(); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Close()
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return 0, fmt.Errorf("boltstore: backup to %s: %w", path, err)
	}
	return n, nil
}

// sameFile reports whether a and b name one file; a missing a is not b.
func sameFile(a, b string) (bool, error) {
	ia, err := os.Stat(a)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	ib, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(ia, ib), nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// ctxWriter stops a copy once its context is done.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
