package wire

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
)

// DeflateDoc compresses a saved document for a Doc frame with Deflated
// set. automerge compresses only its larger columns, so a whole document
// with a long history shrinks by about a fifth more.
func DeflateDoc(saved []byte) []byte {
	var z Deflater
	return z.Deflate(saved)
}

// A Deflater compresses documents for Doc frames as DeflateDoc does,
// reusing its compressor: setting one up (about 800 KB of state) costs
// ten times what compressing a small document does, which a join of
// thousands of decisions paid once per decision. Its zero value is ready;
// it is not safe for concurrent use.
type Deflater struct {
	w *flate.Writer
}

// Deflate returns saved compressed, in a new slice.
func (z *Deflater) Deflate(saved []byte) []byte {
	var buf bytes.Buffer
	if z.w == nil {
		z.w, _ = flate.NewWriter(&buf, flate.BestCompression) // the level is valid
	} else {
		z.w.Reset(&buf)
	}
	z.w.Write(saved)
	z.w.Close()
	return buf.Bytes()
}

// InflateDoc restores the document of a Doc frame with Deflated set,
// refusing (with ErrFrame) input that is not DEFLATE or that inflates to
// more than max bytes, so a hostile frame cannot exhaust memory.
func InflateDoc(b []byte, max int) ([]byte, error) {
	r := flate.NewReader(bytes.NewReader(b))
	defer r.Close()
	out, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: deflated document: %v", ErrFrame, err)
	}
	if len(out) > max {
		return nil, fmt.Errorf("%w: deflated document inflates past %d bytes", ErrFrame, max)
	}
	return out, nil
}
