package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Checking the file before bbolt maps it.
//
// bbolt trusts its file: it reads pages through a memory map at whatever
// page ids the meta page and the tree name. A truncated file makes those
// reads fault (SIGBUS, which a recover cannot catch), a freelist page that
// is not one makes Open panic, a cycle in the tree makes a cursor loop
// until memory runs out. So before bbolt sees an existing file, checkFile
// reads it the way bbolt would (both meta pages, the size they promise,
// the freelist, then every branch and leaf page: checkTree) with plain
// reads, and refuses a file that bbolt could not safely map. Damage below
// one document is kept to that document. Damage that appears after Open,
// bbolt meets when it reads there; guard turns that panic into a
// CorruptError.

// The bbolt v2 file format, from go.etcd.io/bbolt/internal/common. Pages
// start with a 16-byte header (id uint64, flags uint16, count uint16,
// overflow uint32) in the machine's byte order; a meta page's body follows.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16
	metaBodySize   = 64 // magic .. checksum
	metaSumLen     = 56 // the checksum covers the body before it

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagMeta     = 0x04
	flagFreelist = 0x10

	noFreelist = ^uint64(0) // meta.freelist when the freelist is not synced

	minPageSize = 1024
	maxPageSize = 1 << 24
)

// Reasons checkFile gives, wrapped in a *persist.CorruptError naming the file.
var (
	// ErrEmptyFile: the file exists but holds no byte. bbolt writes its
	// first pages when it creates a file, so an empty one was cut short
	// (or created by something else).
	ErrEmptyFile = errors.New("boltstore: the file is empty")
	// ErrNoMeta: neither meta page is valid; this is not a bbolt file, or
	// its head is overwritten.
	ErrNoMeta = errors.New("boltstore: neither meta page is valid (not a bbolt file, or its head is overwritten)")
	// ErrTruncated: the file is shorter than its meta page says.
	ErrTruncated = errors.New("boltstore: the file is shorter than its meta page says (truncated)")
	// ErrBadPage: a page the meta page names is not what it should be.
	ErrBadPage = errors.New("boltstore: damaged page")
)

var native = binary.NativeEndian

type meta struct {
	pageSize uint64
	root     uint64
	freelist uint64
	pgid     uint64 // high-water mark: pages in use
	txid     uint64
}

// parseMeta reads a meta page body; ok is false if it fails bbolt's own
// validation (magic, version, checksum).
func parseMeta(page []byte) (m meta, ok bool) {
	if len(page) < pageHeaderSize+metaBodySize {
		return m, false
	}
	b := page[pageHeaderSize : pageHeaderSize+metaBodySize]
	if native.Uint32(b[0:]) != boltMagic || native.Uint32(b[4:]) != boltVersion {
		return m, false
	}
	h := fnv.New64a()
	h.Write(b[:metaSumLen])
	if h.Sum64() != native.Uint64(b[56:]) {
		return m, false
	}
	m = meta{
		pageSize: uint64(native.Uint32(b[8:])),
		root:     native.Uint64(b[16:]),
		freelist: native.Uint64(b[32:]),
		pgid:     native.Uint64(b[40:]),
		txid:     native.Uint64(b[48:]),
	}
	return m, true
}

// checkFile checks an existing bbolt file at path: its head, its freelist
// and its whole page structure (checkTree). A missing file is fine (bbolt
// creates it); a directory or an unreadable file gives an *fs.PathError;
// damage gives the reasons above, which Open wraps in a
// *persist.CorruptError. Damage below one document's bucket is not the
// file's: it comes back in damagedDocs, and the store keeps bbolt away from
// those documents.
func checkFile(path string) (damagedDocs map[string]error, err error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: syscall.EISDIR}
	}
	if !info.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("not a regular file")}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := uint64(info.Size())
	if size == 0 {
		return nil, ErrEmptyFile
	}
	m, err := readMeta(f, size)
	if err != nil {
		return nil, err
	}
	ps := m.pageSize
	if ps < minPageSize || ps > maxPageSize || ps&(ps-1) != 0 {
		return nil, fmt.Errorf("%w: page size %d", ErrNoMeta, ps)
	}
	if m.pgid < 3 { // two meta pages and a root at least
		return nil, fmt.Errorf("%w: meta page says %d pages", ErrBadPage, m.pgid)
	}
	if m.pgid > size/ps {
		return nil, fmt.Errorf("%w: %d bytes, %d pages of %d bytes expected", ErrTruncated, size, m.pgid, ps)
	}
	var free bitmap
	if m.freelist != noFreelist {
		if m.freelist < 2 || m.freelist >= m.pgid {
			return nil, fmt.Errorf("%w: freelist page %d outside pages 2..%d", ErrBadPage, m.freelist, m.pgid-1)
		}
		if free, err = checkFreelist(f, m); err != nil {
			return nil, err
		}
	}
	return checkTree(f, m, free)
}

// readMeta returns the meta page bbolt would use: the valid one with the
// higher transaction id. It finds the second meta page the way bbolt does,
// at the page size the first names, or else at every size bbolt supports.
func readMeta(f *os.File, size uint64) (meta, error) {
	buf := make([]byte, pageHeaderSize+metaBodySize)
	read := func(off uint64) (meta, bool) {
		if off+uint64(len(buf)) > size {
			return meta{}, false
		}
		if _, err := f.ReadAt(buf, int64(off)); err != nil {
			return meta{}, false
		}
		return parseMeta(buf)
	}
	m0, ok0 := read(0)
	var m1 meta
	ok1 := false
	if ok0 {
		m1, ok1 = read(m0.pageSize)
	} else {
		for ps := uint64(minPageSize); ps <= maxPageSize && !ok1; ps <<= 1 {
			if m1, ok1 = read(ps); ok1 && m1.pageSize != ps {
				ok1 = false
			}
		}
	}
	switch {
	case ok0 && ok1 && m1.txid > m0.txid:
		return m1, nil
	case ok0:
		return m0, nil
	case ok1:
		return m1, nil
	}
	return meta{}, ErrNoMeta
}

func pageHeader(f *os.File, m meta, id uint64) (flags uint16, count uint16, overflow uint32, err error) {
	var h [pageHeaderSize]byte
	if _, err := f.ReadAt(h[:], int64(id*m.pageSize)); err != nil {
		return 0, 0, 0, fmt.Errorf("%w: page %d: %v", ErrBadPage, id, err)
	}
	if got := native.Uint64(h[0:]); got != id {
		return 0, 0, 0, fmt.Errorf("%w: page %d says it is page %d", ErrBadPage, id, got)
	}
	return native.Uint16(h[8:]), native.Uint16(h[10:]), native.Uint32(h[12:]), nil
}

// checkFreelist checks the freelist page bbolt reads on Open: its type,
// that its ids fit in it, and that every id is a page in use.
func checkFreelist(f *os.File, m meta) (bitmap, error) {
	flags, count, overflow, err := pageHeader(f, m, m.freelist)
	if err != nil {
		return nil, fmt.Errorf("freelist: %w", err)
	}
	if flags != flagFreelist {
		return nil, fmt.Errorf("%w: freelist page %d has flags %#x", ErrBadPage, m.freelist, flags)
	}
	if m.freelist+uint64(overflow) >= m.pgid {
		return nil, fmt.Errorf("%w: freelist page %d overflows past page %d", ErrBadPage, m.freelist, m.pgid-1)
	}
	extent := (uint64(overflow) + 1) * m.pageSize
	r := io.NewSectionReader(f, int64(m.freelist*m.pageSize+pageHeaderSize), int64(extent-pageHeaderSize))
	n, skip := uint64(count), uint64(0)
	if count == 0xFFFF { // the count does not fit in the header; it is the first id
		var first [8]byte
		if _, err := io.ReadFull(r, first[:]); err != nil {
			return nil, fmt.Errorf("%w: freelist page %d: %v", ErrBadPage, m.freelist, err)
		}
		n, skip = native.Uint64(first[:]), 1
	}
	if (n+skip)*8 > extent-pageHeaderSize || n > m.pgid {
		return nil, fmt.Errorf("%w: freelist page %d lists %d ids, room for %d", ErrBadPage, m.freelist, n, (extent-pageHeaderSize)/8-skip)
	}
	// The freelist's own pages count as free: no tree page may be one.
	free := newBitmap(m.pgid)
	free.setRange(m.freelist, uint64(overflow)+1)
	buf := make([]byte, 8*1024)
	for n > 0 {
		chunk := buf[:8*min(n, uint64(len(buf)/8))]
		if _, err := io.ReadFull(r, chunk); err != nil {
			return nil, fmt.Errorf("%w: freelist page %d: %v", ErrBadPage, m.freelist, err)
		}
		for i := 0; i < len(chunk); i += 8 {
			id := native.Uint64(chunk[i:])
			if id < 2 || id >= m.pgid {
				return nil, fmt.Errorf("%w: freelist page %d lists page %d, outside pages 2..%d", ErrBadPage, m.freelist, id, m.pgid-1)
			}
			free.set(id)
		}
		n -= uint64(len(chunk) / 8)
	}
	return free, nil
}
