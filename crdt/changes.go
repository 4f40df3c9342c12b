package crdt

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/binary"
	"io"
)

// Chunk types of automerge's binary format.
const (
	chunkDocument   = 0
	chunkChange     = 1
	chunkCompressed = 2
)

var chunkMagic = [4]byte{0x85, 0x6f, 0x4a, 0x83}

// rawChange is one change of a batch, read without automerge: its hash and
// the hashes it depends on.
type rawChange struct {
	hash ChangeHash
	deps []ChangeHash
}

// splitChanges reads a batch of concatenated change chunks far enough to
// know each change's hash and dependencies. automerge-go can only load a
// batch whose dependencies are all inside it, and otherwise parks changes
// with missing dependencies silently; reading the headers here lets
// ApplyChanges refuse such batches before automerge sees them.
func splitChanges(batch []byte) ([]rawChange, error) {
	var out []rawChange
	for len(batch) > 0 {
		if len(batch) < 9 || !bytes.Equal(batch[:4], chunkMagic[:]) {
			return nil, errorf(ErrMalformed, "change %d: not an automerge change chunk", len(out)+1)
		}
		typ := batch[8]
		n, w := binary.Uvarint(batch[9:])
		if w <= 0 || n > uint64(len(batch)-9-w) {
			return nil, errorf(ErrMalformed, "change %d: bad length", len(out)+1)
		}
		body := batch[9+w : 9+w+int(n)]
		checksum := batch[4:8]
		batch = batch[9+w+int(n):]
		switch typ {
		case chunkChange:
		case chunkCompressed:
			dec, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(body)), MaxChangesBytes*4+1))
			if err != nil || len(dec) > MaxChangesBytes*4 {
				return nil, errorf(ErrMalformed, "change %d: bad compressed body", len(out)+1)
			}
			body = dec
		default:
			return nil, errorf(ErrMalformed, "change %d: chunk type %d is not a change", len(out)+1, typ)
		}
		// The hash covers the uncompressed change chunk's type, length and
		// body; its first four bytes are the checksum.
		h := sha256.New()
		h.Write([]byte{chunkChange})
		h.Write(binary.AppendUvarint(nil, uint64(len(body))))
		h.Write(body)
		var c rawChange
		copy(c.hash[:], h.Sum(nil))
		if !bytes.Equal(c.hash[:4], checksum) {
			return nil, errorf(ErrMalformed, "change %d: checksum mismatch", len(out)+1)
		}
		nd, w := binary.Uvarint(body)
		if w <= 0 || nd > uint64(len(body)-w)/32 {
			return nil, errorf(ErrMalformed, "change %d: bad dependency list", len(out)+1)
		}
		body = body[w:]
		for i := uint64(0); i < nd; i++ {
			var d ChangeHash
			copy(d[:], body[:32])
			body = body[32:]
			c.deps = append(c.deps, d)
		}
		out = append(out, c)
	}
	return out, nil
}
