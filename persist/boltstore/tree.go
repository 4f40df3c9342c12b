package boltstore

import (
	"fmt"
	"io"
)

// checkTree walks the whole B+tree of a bbolt file with plain reads, the
// way bbolt's cursors would walk it through the map, and checks what
// bbolt takes on trust: every page id it follows lies within the pages in
// use, every page says it is the page it was reached as, has a branch or
// leaf type and an overflow that stays within the file, every element and
// key lies within its page, no page is reached twice (a cycle would make a
// cursor loop or recurse until the process dies) and no reachable page is
// on the freelist (bbolt would hand it out again and overwrite live data).
// None of these can be caught by a recover once bbolt meets them: a cycle
// exhausts memory or the stack, a huge overflow count makes bbolt's own
// check loop billions of times, a page id past the map faults in a
// goroutine that is not ours.
//
// It reads every branch and leaf page (the first page of an overflow run
// holds its elements; values are bounds-checked, not read).

// maxTreeDepth bounds the nesting of pages and buckets. A real file is a
// few levels deep per bucket and Accord nests four buckets.
const maxTreeDepth = 256

const (
	elementSize     = 16 // branch and leaf elements are both 16 bytes
	bucketHeader    = 16 // InBucket: root pgid, sequence
	bucketLeafFlag  = 0x01
	maxElementCount = 0xFFFF
)

type treeCheck struct {
	r    io.ReaderAt
	m    meta
	seen bitmap
	free bitmap // nil: not checked
	// docs maps a document whose own buckets are damaged to the damage.
	docs map[string]error
}

// Where a page lies, so that damage below one document is that
// document's alone.
type scope int

const (
	inRoot scope = iota // the root bucket's tree
	inDocs              // the docs bucket's tree: its leaves are documents
	inDoc               // below one document, or any other bucket
)

type bitmap []uint64

func newBitmap(n uint64) bitmap    { return make(bitmap, (n+63)/64) }
func (b bitmap) has(i uint64) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bitmap) set(i uint64)      { b[i/64] |= 1 << (i % 64) }
func (b bitmap) setRange(i, n uint64) { // pages i .. i+n-1
	for ; n > 0; i, n = i+1, n-1 {
		b.set(i)
	}
}

// checkTree checks the tree under meta m's root. free, if not nil, holds
// the pages on the freelist (and the freelist's own pages). Damage below
// one document's bucket is returned in docs, by document id, and the walk
// goes on with the others; damage anywhere else is err.
func checkTree(r io.ReaderAt, m meta, free bitmap) (docs map[string]error, err error) {
	c := &treeCheck{r: r, m: m, seen: newBitmap(m.pgid), free: free, docs: map[string]error{}}
	c.seen.setRange(0, 2) // the meta pages
	if err := c.page(m.root, 0, "", inRoot); err != nil {
		return nil, err
	}
	return c.docs, nil
}

func (c *treeCheck) page(id uint64, depth int, path string, sc scope) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("%w: %s: deeper than %d levels (a cycle?)", ErrBadPage, path, maxTreeDepth)
	}
	if id < 2 || id >= c.m.pgid {
		return fmt.Errorf("%w: %s: page %d outside pages 2..%d", ErrBadPage, path, id, c.m.pgid-1)
	}
	var h [pageHeaderSize]byte
	if _, err := c.r.ReadAt(h[:], int64(id*c.m.pageSize)); err != nil {
		return fmt.Errorf("%w: %s: page %d: %v", ErrBadPage, path, id, err)
	}
	if got := native.Uint64(h[0:]); got != id {
		return fmt.Errorf("%w: %s: page %d says it is page %d", ErrBadPage, path, id, got)
	}
	flags, overflow := native.Uint16(h[8:]), uint64(native.Uint32(h[12:]))
	if flags != flagBranch && flags != flagLeaf {
		return fmt.Errorf("%w: %s: page %d has flags %#x, neither branch nor leaf", ErrBadPage, path, id, flags)
	}
	if id+overflow >= c.m.pgid {
		return fmt.Errorf("%w: %s: page %d overflows past page %d", ErrBadPage, path, id, c.m.pgid-1)
	}
	for i := id; i <= id+overflow; i++ {
		if c.seen.has(i) {
			return fmt.Errorf("%w: %s: page %d is reached twice", ErrBadPage, path, i)
		}
		if c.free != nil && c.free.has(i) {
			return fmt.Errorf("%w: %s: page %d is in use and on the freelist", ErrBadPage, path, i)
		}
	}
	c.seen.setRange(id, overflow+1)
	// Element tables and keys sit in the first page unless keys are large;
	// read the whole run only then.
	buf := make([]byte, c.m.pageSize)
	if _, err := c.r.ReadAt(buf, int64(id*c.m.pageSize)); err != nil {
		return fmt.Errorf("%w: %s: page %d: %v", ErrBadPage, path, id, err)
	}
	extent := (overflow + 1) * c.m.pageSize
	return c.elements(buf, extent, id, flags, depth, path, sc)
}

// elements checks the elements of a page whose first bytes are buf and
// whose run is extent bytes, and walks what they point to. An inline
// bucket's page (id 0) is its whole buf.
func (c *treeCheck) elements(buf []byte, extent, id uint64, flags uint16, depth int, path string, sc scope) error {
	count := uint64(native.Uint16(buf[10:]))
	if flags == flagBranch && count == 0 {
		return fmt.Errorf("%w: %s: branch page %d has no elements", ErrBadPage, path, id)
	}
	if pageHeaderSize+count*elementSize > extent {
		return fmt.Errorf("%w: %s: page %d: %d elements do not fit in %d bytes", ErrBadPage, path, id, count, extent)
	}
	// read returns n bytes of the run at off, from buf if they are there.
	read := func(off, n uint64) ([]byte, error) {
		if off+n > extent || off+n < off {
			return nil, fmt.Errorf("%w: %s: page %d: bytes %d..%d past its end %d", ErrBadPage, path, id, off, off+n, extent)
		}
		if off+n <= uint64(len(buf)) {
			return buf[off : off+n], nil
		}
		if id == 0 { // inline: buf is all there is
			return nil, fmt.Errorf("%w: %s: inline page: bytes %d..%d past its end %d", ErrBadPage, path, off, off+n, len(buf))
		}
		b := make([]byte, n)
		if _, err := c.r.ReadAt(b, int64(id*c.m.pageSize+off)); err != nil {
			return nil, fmt.Errorf("%w: %s: page %d: %v", ErrBadPage, path, id, err)
		}
		return b, nil
	}
	if pageHeaderSize+count*elementSize > uint64(len(buf)) {
		var err error
		if buf, err = read(0, pageHeaderSize+count*elementSize); err != nil {
			return err
		}
	}
	for i := range count {
		off := pageHeaderSize + i*elementSize
		e := buf[off : off+elementSize]
		if flags == flagBranch {
			pos, ksize, child := uint64(native.Uint32(e[0:])), uint64(native.Uint32(e[4:])), native.Uint64(e[8:])
			if _, err := read(off+pos, ksize); err != nil {
				return err
			}
			if err := c.page(child, depth+1, path, sc); err != nil {
				return err
			}
			continue
		}
		eflags, pos, ksize, vsize := native.Uint32(e[0:]), uint64(native.Uint32(e[4:])), uint64(native.Uint32(e[8:])), uint64(native.Uint32(e[12:]))
		key, err := read(off+pos, ksize)
		if err != nil {
			return err
		}
		if eflags&bucketLeafFlag == 0 {
			if off+pos+ksize+vsize > extent { // bounds only: values are not read
				return fmt.Errorf("%w: %s: page %d: a value runs past its end", ErrBadPage, path, id)
			}
			continue
		}
		val, err := read(off+pos+ksize, vsize)
		if err != nil {
			return err
		}
		sub, subScope := string(key), inDoc
		if path != "" {
			sub = path + "/" + sub
		}
		if sc == inRoot && string(key) == string(bucketDocs) {
			subScope = inDocs
		}
		err = c.bucket(val, depth+1, sub, subScope)
		if err != nil && sc == inDocs {
			// One document's buckets: its damage, not the file's.
			c.docs[string(key)] = err
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// bucket checks a bucket value (its header and root page or inline page).
func (c *treeCheck) bucket(val []byte, depth int, path string, sc scope) error {
	if len(val) < bucketHeader {
		return fmt.Errorf("%w: %s: bucket header of %d bytes", ErrBadPage, path, len(val))
	}
	if root := native.Uint64(val[0:]); root != 0 {
		return c.page(root, depth, path, sc)
	}
	inline := val[bucketHeader:]
	if len(inline) < pageHeaderSize {
		return fmt.Errorf("%w: %s: inline bucket of %d bytes", ErrBadPage, path, len(inline))
	}
	if f := native.Uint16(inline[8:]); f != flagLeaf {
		return fmt.Errorf("%w: %s: inline bucket page has flags %#x", ErrBadPage, path, f)
	}
	if depth > maxTreeDepth {
		return fmt.Errorf("%w: %s: deeper than %d levels", ErrBadPage, path, maxTreeDepth)
	}
	return c.elements(inline, uint64(len(inline)), 0, flagLeaf, depth, path, sc)
}
