package crdt

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"io"
)

// Column types, flags and ids of automerge's columnar encoding, and the
// operation actions automerge 0.5 knows.
const (
	colActor     = 1
	colDeflate   = 8
	colAction    = 4<<4 | 2 // operation action, integer
	colValueMeta = 5<<4 | 6 // value type and length
	maxAction    = 7        // make map, put, make list, delete, make text, increment, make table, mark
	actionInc    = 5        // increment: needs an integer value
	valueUint    = 3
	valueInt     = 4
	maxColumns   = 64 // automerge writes at most 16
)

// column is one column of a chunk: its spec (id << 4 | type), its
// declared size, and its bytes.
type column struct {
	spec, size uint64
	data       []byte
}

// rle walks a run-length encoded column of unsigned integers. A run opens
// with a signed length: positive, one value repeated; negative, that many
// literal values; zero, followed by a count of nulls. A literal run is
// walked one value at a time.
type rle struct {
	r    leb
	left uint64 // values left in the current run
	lit  bool
	null bool
	val  uint64
}

// next makes the current value available, reading the next run when the
// current one is used up; false at the end, or on an error (in r.err).
func (c *rle) next() bool {
	for c.left == 0 {
		if len(c.r.b) == 0 || c.r.err != nil {
			return false
		}
		switch n := c.r.int(); {
		case n > 0:
			c.left, c.lit, c.null, c.val = uint64(n), false, false, c.r.uint()
		case n < 0:
			c.left, c.lit, c.null, c.val = uint64(-(n+1))+1, true, false, c.r.uint()
		default:
			c.left, c.lit, c.null = c.r.uint(), false, true
		}
	}
	return c.r.err == nil
}

// skip consumes k values of the current run, or of a literal run only the
// current one (reading the next literal).
func (c *rle) skip(k uint64) {
	if c.lit {
		k = 1
	}
	c.left -= min(k, c.left)
	if c.lit && c.left > 0 {
		c.val = c.r.uint()
	}
}

func inflate(b []byte) ([]byte, error) {
	dec, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(b)), MaxDocumentBytes+1))
	if err != nil || len(dec) > MaxDocumentBytes {
		return nil, errors.New("bad compressed column")
	}
	return dec, nil
}

// leb reads LEB128 integers and length-prefixed byte strings, keeping the
// first error.
type leb struct {
	b   []byte
	err error
}

func (r *leb) fail(what string) {
	if r.err == nil {
		r.err = errors.New("truncated or malformed " + what)
	}
	r.b = nil
}

func (r *leb) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("integer")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// int reads a signed LEB128 integer (two's complement, not zigzag).
func (r *leb) int() int64 {
	if r.err != nil {
		return 0
	}
	var v int64
	var shift uint
	for i, c := range r.b {
		if i == 10 {
			break
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			r.b = r.b[i+1:]
			return v
		}
	}
	r.fail("signed integer")
	return 0
}

// count reads a count no larger than max.
func (r *leb) count(max int) int {
	v := r.uint()
	if v > uint64(max) {
		r.fail("count")
		return 0
	}
	return int(v)
}

// take returns the next n bytes.
func (r *leb) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.fail("data")
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *leb) bytes() []byte {
	v := r.uint()
	if v > uint64(len(r.b)) {
		r.fail("length")
		return nil
	}
	return r.take(int(v))
}

// layout reads a column layout: a count, then each column's spec and size.
func (r *leb) layout() []column {
	n := r.count(maxColumns)
	cols := make([]column, 0, n)
	for range n {
		spec, size := r.uint(), r.uint()
		if size > uint64(len(r.b)) {
			r.fail("column size")
		}
		cols = append(cols, column{spec: spec, size: size})
	}
	return cols
}

// fill gives each column its data, which follows in layout order.
func (r *leb) fill(cols []column) {
	for i := range cols {
		if r.err == nil && cols[i].size > uint64(len(r.b)) {
			r.fail("column data")
		}
		if r.err != nil {
			return
		}
		cols[i].data = r.take(int(cols[i].size))
	}
}

// Operation column specs (id << 4 | type) the guard reads.
const (
	specObjActor = 0<<4 | 1
	specObjCtr   = 0<<4 | 2
	specKeyStr   = 1<<4 | 5
	specIDActor  = 2<<4 | 1
	specIDCtr    = 2<<4 | 3
	specInsert   = 3<<4 | 4
)

// decodeChangeOps decodes a change body, after its dependencies. An
// operation's id is the change's start op plus its index, by the author.
func decodeChangeOps(body []byte) ([]chunkOp, error) {
	r := leb{b: body}
	author := r.bytes()
	r.uint() // seq
	start := r.uint()
	r.int()   // time
	r.bytes() // message
	actors := []string{string(author)}
	for n := r.count(len(r.b)); n > 0 && r.err == nil; n-- {
		actors = append(actors, string(r.bytes()))
	}
	cols := r.layout()
	r.fill(cols)
	if r.err != nil {
		return nil, r.err
	}
	return decodeOps(cols, actors, func(i uint64, _ *opColumns) opID {
		return opID{actors[0], start + i}
	})
}

// decodeDocOps decodes the operations of a document body.
func decodeDocOps(body []byte) ([]chunkOp, error) {
	r := leb{b: body}
	var actors []string
	for n := r.count(len(body)); n > 0 && r.err == nil; n-- {
		actors = append(actors, string(r.bytes()))
	}
	r.take(r.count(len(r.b)/32) * 32) // heads
	changes, ops := r.layout(), r.layout()
	r.fill(changes)
	r.fill(ops)
	if r.err != nil {
		return nil, r.err
	}
	return decodeOps(ops, actors, func(_ uint64, c *opColumns) opID {
		a, _ := c.idActor.row()
		return opID{actorAt(actors, a), uint64(c.idCtr.row())}
	})
}

func actorAt(actors []string, i int64) string {
	if i < 0 || i >= int64(len(actors)) {
		return "" // refused by checkActorRuns or parseSyncChange
	}
	return actors[i]
}

// opColumns reads the columns of an operation chunk row by row.
type opColumns struct {
	objActor, objCtr, keyStr, action, idActor runs
	idCtr                                     deltas
	insert                                    bools
}

func decodeOps(cols []column, actors []string, id func(uint64, *opColumns) opID) ([]chunkOp, error) {
	var c opColumns
	readers := map[uint64]*runs{
		specObjActor: &c.objActor, specObjCtr: &c.objCtr, specKeyStr: &c.keyStr,
		colAction: &c.action, specIDActor: &c.idActor,
	}
	for _, col := range cols {
		data := col.data
		if col.spec&colDeflate != 0 {
			var err error
			if data, err = inflate(data); err != nil {
				return nil, err
			}
		}
		switch spec := col.spec &^ colDeflate; {
		case readers[spec] != nil:
			readers[spec].r = leb{b: data}
		case spec == specIDCtr:
			c.idCtr.r = leb{b: data}
		case spec == specInsert:
			c.insert.r = leb{b: data}
		}
	}
	c.keyStr.str = true
	var out []chunkOp
	for i := uint64(0); !c.action.done(); i++ {
		if i == maxChunkOps {
			return nil, errorf(ErrBudget, "more than %d operations", maxChunkOps)
		}
		var op chunkOp
		op.id = id(i, &c)
		oa, oaNull := c.objActor.row()
		oc, ocNull := c.objCtr.row()
		op.root = oaNull && ocNull
		op.obj = opID{actorAt(actors, oa), uint64(oc)}
		_, noStr := c.keyStr.row()
		op.strKey = !noStr
		if op.strKey {
			op.key = c.keyStr.sv
		}
		op.insert = c.insert.row()
		a, _ := c.action.row()
		op.action = uint64(a)
		out = append(out, op)
	}
	for _, r := range []*leb{&c.objActor.r, &c.objCtr.r, &c.keyStr.r, &c.action.r, &c.idActor.r, &c.idCtr.r, &c.insert.r} {
		if r.err != nil {
			return nil, r.err
		}
	}
	return out, nil
}

// runs reads a run-length encoded column row by row: integers, or (str)
// length-prefixed strings, the current one in sv. A column that
// runs out reads as nulls.
type runs struct {
	r    leb
	str  bool
	sv   []byte // the current string, for a string column
	left uint64
	lit  bool
	null bool
	val  int64
}

func (c *runs) done() bool { return c.left == 0 && (len(c.r.b) == 0 || c.r.err != nil) }

func (c *runs) value() int64 {
	if c.str {
		c.sv = c.r.bytes()
		return 0
	}
	return int64(c.r.uint())
}

func (c *runs) row() (int64, bool) {
	for c.left == 0 {
		if len(c.r.b) == 0 || c.r.err != nil {
			return 0, true
		}
		switch n := c.r.int(); {
		case n > 0:
			c.left, c.lit, c.null, c.val = uint64(n), false, false, c.value()
		case n < 0:
			c.left, c.lit, c.null = uint64(-(n+1))+1, true, false
		default:
			c.left, c.lit, c.null = c.r.uint(), false, true
		}
	}
	if c.lit {
		c.val = c.value()
	}
	c.left--
	return c.val, c.null
}

// deltas reads a delta-encoded column: run-length encoded signed
// differences, summed.
type deltas struct {
	r    leb
	left uint64
	lit  bool
	null bool
	d    int64
	sum  int64
}

func (c *deltas) row() int64 {
	for c.left == 0 {
		if len(c.r.b) == 0 || c.r.err != nil {
			return c.sum
		}
		switch n := c.r.int(); {
		case n > 0:
			c.left, c.lit, c.null, c.d = uint64(n), false, false, c.r.int()
		case n < 0:
			c.left, c.lit, c.null = uint64(-(n+1))+1, true, false
		default:
			c.left, c.lit, c.null = c.r.uint(), false, true
		}
	}
	if c.lit {
		c.d = c.r.int()
	}
	c.left--
	if !c.null {
		c.sum += c.d
	}
	return c.sum
}

// bools reads a boolean column: run lengths of alternating values,
// starting with false.
type bools struct {
	r       leb
	left    uint64
	val     bool
	started bool
}

func (c *bools) row() bool {
	for c.left == 0 {
		if len(c.r.b) == 0 || c.r.err != nil {
			return false
		}
		if c.started {
			c.val = !c.val
		}
		c.started = true
		c.left = c.r.uint()
	}
	c.left--
	return c.val
}
