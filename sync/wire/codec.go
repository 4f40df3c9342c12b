package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Format is how frames are encoded: msgpack in binary WebSocket frames,
// JSON in text frames. Both carry the same schema and field names.
type Format int

const (
	// Binary is msgpack.
	Binary Format = iota
	// Text is JSON; byte fields are base64.
	Text
)

// MaxFrameBytes caps one encoded frame.
const MaxFrameBytes = 8 << 20

// ErrFrame is returned (wrapped) for any frame that cannot be decoded or
// fails its checks.
var ErrFrame = errors.New("wire: bad frame")

// ErrUnknownKind is returned (wrapped, also matching ErrFrame) for a frame
// whose kind this version does not know.
var ErrUnknownKind = fmt.Errorf("%w: unknown kind", ErrFrame)

// Encode encodes m. The caller sets its Header.Kind (and RID for requests
// and replies). It refuses, with ErrFrame, a frame Decode would refuse for
// its size or shape, so the sender learns of it rather than the receiver.
func Encode(m Message, f Format) ([]byte, error) {
	var b []byte
	var err error
	if f == Text {
		b, err = json.Marshal(m)
	} else {
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		enc.SetCustomStructTag("json")
		enc.SetOmitEmpty(true)
		err = enc.Encode(m)
		b = buf.Bytes()
	}
	if err != nil {
		return nil, fmt.Errorf("wire: encode %s: %w", m.FrameKind(), err)
	}
	if len(b) > MaxFrameBytes {
		return nil, fmt.Errorf("%w: %s frame of %d bytes exceeds %d", ErrFrame, m.FrameKind(), len(b), MaxFrameBytes)
	}
	if err := checkShape(b, f); err != nil {
		return nil, fmt.Errorf("%w (encoding %s)", err, m.FrameKind())
	}
	return b, nil
}

// Decode reads one frame. It never panics; any malformed input returns an
// error wrapping ErrFrame that says what is wrong.
func Decode(b []byte, f Format) (m Message, err error) {
	defer recoverFrame(&m, &err)
	if err := checkShape(b, f); err != nil {
		return nil, err
	}
	return decode(b, f)
}

// decode is Decode after checkShape.
func decode(b []byte, f Format) (Message, error) {
	var h Header
	if err := unmarshal(b, f, &h); err != nil {
		return nil, err
	}
	m := newMessage(h.Kind)
	if m == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownKind, truncate(string(h.Kind)))
	}
	if err := unmarshal(b, f, m); err != nil {
		return nil, err
	}
	if v, ok := m.(interface{ validate() error }); ok {
		if err := v.validate(); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrFrame, h.Kind, err)
		}
	}
	return m, nil
}

// recoverFrame turns a panic of the decoder into an ErrFrame error.
func recoverFrame(m *Message, err *error) {
	if r := recover(); r != nil {
		*m, *err = nil, fmt.Errorf("%w: %v", ErrFrame, r)
	}
}

func unmarshal(b []byte, f Format, v any) error {
	var err error
	if f == Text {
		err = json.Unmarshal(b, v)
	} else {
		dec := msgpack.NewDecoder(bytes.NewReader(b))
		dec.SetCustomStructTag("json")
		err = dec.Decode(v)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrFrame, err)
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Limits on a frame's shape, checked by checkShape before anything is
// decoded.
const (
	// maxDepth is how deeply arrays and maps may nest. The deepest frame
	// of this version nests about ten levels.
	maxDepth = 32
	// maxElements caps the array elements and map entries of one frame,
	// all levels together. Decoding turns each element, however few bytes
	// encode it, into a Go value of up to a few hundred bytes, and the
	// msgpack decoder allocates a slice or map for its declared length
	// before reading the elements, so this bounds what one frame can
	// make the decoder allocate.
	maxElements = 1 << 18
)

// checkShape refuses, before anything is decoded, a frame above
// MaxFrameBytes or one whose arrays and maps nest deeper than maxDepth or
// hold more than maxElements entries in all. It allocates nothing. A
// binary frame must moreover hold exactly one well-formed msgpack value,
// each declared length fitting in the bytes that follow it; text frames
// are only scanned, encoding/json reports their syntax errors.
func checkShape(b []byte, f Format) error {
	if len(b) > MaxFrameBytes {
		return fmt.Errorf("%w: %d bytes exceeds %d", ErrFrame, len(b), MaxFrameBytes)
	}
	if f == Text {
		return scanJSON(b)
	}
	return scanMsgpack(b)
}

func scanJSON(b []byte) error {
	depth, elements := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			depth++
			if depth > maxDepth {
				return fmt.Errorf("%w: nested deeper than %d", ErrFrame, maxDepth)
			}
			elements++ // the first element, if any
		case ']', '}':
			depth--
			if depth < 0 {
				return fmt.Errorf("%w: unbalanced %q", ErrFrame, b[i])
			}
		case ',':
			elements++
		}
		if elements > maxElements {
			return fmt.Errorf("%w: more than %d elements", ErrFrame, maxElements)
		}
	}
	return nil
}

func scanMsgpack(b []byte) error {
	var open [maxDepth]uint64 // values still due in each enclosing container
	depth, elements := 0, uint64(0)
	due := uint64(1) // values still due at this level: the frame is one value
	i := 0
	for {
		for due == 0 {
			if depth == 0 {
				if i != len(b) {
					return fmt.Errorf("%w: %d bytes after the msgpack value", ErrFrame, len(b)-i)
				}
				return nil
			}
			depth--
			due = open[depth]
		}
		if i >= len(b) {
			return fmt.Errorf("%w: msgpack truncated at byte %d", ErrFrame, i)
		}
		c := b[i]
		i++
		due--

		// Each value is a code byte, then either a payload of skip bytes
		// or, for an array or map, its values.
		var skip, values, entries uint64
		container := false
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
			// fixint, nil, false, true
		case c <= 0x8f:
			container, entries = true, uint64(c&0x0f)
			values = 2 * entries
		case c <= 0x9f:
			container, entries = true, uint64(c&0x0f)
			values = entries
		case c <= 0xbf:
			skip = uint64(c & 0x1f)
		case c == 0xc1:
			return fmt.Errorf("%w: msgpack code 0xc1 at byte %d", ErrFrame, i-1)
		default:
			var n uint64
			if w := msgpackLenWidth(c); w > 0 {
				if len(b)-i < w {
					return fmt.Errorf("%w: msgpack truncated at byte %d", ErrFrame, i)
				}
				for _, x := range b[i : i+w] {
					n = n<<8 | uint64(x)
				}
				i += w
			}
			switch c {
			case 0xc4, 0xc5, 0xc6, 0xd9, 0xda, 0xdb: // bin, str
				skip = n
			case 0xc7, 0xc8, 0xc9: // ext: type byte, then data
				skip = n + 1
			case 0xcc, 0xd0: // uint8, int8
				skip = 1
			case 0xcd, 0xd1: // uint16, int16
				skip = 2
			case 0xca, 0xce, 0xd2: // float32, uint32, int32
				skip = 4
			case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
				skip = 8
			case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16: type byte, then data
				skip = 1 + 1<<(c-0xd4)
			case 0xdc, 0xdd: // array
				container, entries, values = true, n, n
			case 0xde, 0xdf: // map
				container, entries, values = true, n, 2*n
			}
		}
		rest := uint64(len(b) - i)
		if !container {
			if skip > rest {
				return fmt.Errorf("%w: msgpack value at byte %d needs %d bytes, %d remain", ErrFrame, i, skip, rest)
			}
			i += int(skip)
			continue
		}
		if values > rest {
			return fmt.Errorf("%w: msgpack container at byte %d declares %d values, %d bytes remain", ErrFrame, i, values, rest)
		}
		if depth == maxDepth {
			return fmt.Errorf("%w: nested deeper than %d", ErrFrame, maxDepth)
		}
		elements += entries
		if elements > maxElements {
			return fmt.Errorf("%w: more than %d elements", ErrFrame, maxElements)
		}
		if values > 0 {
			open[depth] = due
			depth++
			due = values
		}
	}
}

// msgpackLenWidth is how many length bytes follow code c: those of bin,
// str, ext, array and map; 0 for every other code.
func msgpackLenWidth(c byte) int {
	switch c {
	case 0xc4, 0xc7, 0xd9:
		return 1
	case 0xc5, 0xc8, 0xda, 0xdc, 0xde:
		return 2
	case 0xc6, 0xc9, 0xdb, 0xdd, 0xdf:
		return 4
	}
	return 0
}

// newMessage returns an empty frame of a kind. Reply frames share their
// request's kind, so a decoder must know which side it is on: requests
// decode as requests on the server; the client decodes with DecodeReply.
func newMessage(kind Kind) Message {
	switch kind {
	case KindHello:
		return &Hello{}
	case KindWelcome:
		return &Welcome{}
	case KindError:
		return &Error{}
	case KindCreate:
		return &Create{}
	case KindEdit:
		return &Edit{}
	case KindSubmit:
		return &Submit{}
	case KindReopen, KindDiscard, KindExpand, KindPage, KindProvenance:
		return &Target{}
	case KindExplore:
		return &Explore{}
	case KindExploreStop:
		return &ExploreStop{}
	case KindTake:
		return &Take{}
	case KindOption, KindCriterion:
		return &Append{}
	case KindWhy:
		return &Why{}
	case KindSync:
		return &Sync{}
	case KindDoc:
		return &Doc{}
	case KindChanges:
		return &Changes{}
	case KindCreated, KindMeta, KindResolved, KindReopened, KindDiscarded, KindOptionAdded, KindCriterionAdded:
		return &Event{}
	case KindPresence:
		return &Presence{}
	}
	return nil
}

// PeekHeader reads only a frame's kind and rid, so that a server can
// address its refusal of a frame that does not decode to the request that
// sent it. It returns a zero Header when even that cannot be read, and for
// any frame checkShape refuses: the msgpack decoder skips nested values
// recursively, so a deeply nested frame would overflow the stack.
func PeekHeader(b []byte, f Format) (h Header) {
	defer func() {
		if recover() != nil {
			h = Header{}
		}
	}()
	if checkShape(b, f) != nil || unmarshal(b, f, &h) != nil || len(h.RID) > 256 {
		return Header{}
	}
	return h
}

// IsRequest reports whether kind is a request that gets a Reply.
func IsRequest(kind Kind) bool {
	switch kind {
	case KindCreate, KindEdit, KindSubmit, KindReopen, KindDiscard, KindOption, KindCriterion, KindWhy, KindExpand,
		KindPage, KindExplore, KindExploreStop, KindTake, KindProvenance:
		return true
	}
	return false
}

// DecodeServerFrame decodes a frame the client received: replies (a
// request kind with "ok") decode as *Reply, everything else as Decode does.
// Like Decode, it never panics.
func DecodeServerFrame(b []byte, f Format) (m Message, err error) {
	defer recoverFrame(&m, &err)
	if err := checkShape(b, f); err != nil {
		return nil, err
	}
	return decodeServerFrame(b, f)
}

// decodeServerFrame is DecodeServerFrame after checkShape.
func decodeServerFrame(b []byte, f Format) (Message, error) {
	var h Header
	if err := unmarshal(b, f, &h); err != nil {
		return nil, err
	}
	if IsRequest(h.Kind) {
		var r Reply
		if err := unmarshal(b, f, &r); err != nil {
			return nil, err
		}
		return &r, nil
	}
	return decode(b, f)
}

// Limits on request contents, checked by Decode.
const (
	maxIDLen   = 64
	maxKeyLen  = 200
	maxLabel   = 1000
	maxText    = 400_000
	maxCards   = 10
	maxItems   = 100
	maxHeads   = 1024
	maxHaveIDs = 10_000
)

func checkID(field, id string) error {
	if id == "" || len(id) > maxIDLen {
		return fmt.Errorf("%s must be 1 to %d bytes", field, maxIDLen)
	}
	return nil
}

func checkHeads(h []string) error {
	if len(h) > maxHeads {
		return fmt.Errorf("%d heads, at most %d", len(h), maxHeads)
	}
	for _, x := range h {
		if len(x) != 64 || !isHex(x) {
			return fmt.Errorf("head %q is not 64 hex digits", truncate(x))
		}
	}
	return nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func (m *Hello) validate() error {
	if len(m.Have) > maxHaveIDs {
		return fmt.Errorf("have lists %d decisions", len(m.Have))
	}
	for id, h := range m.Have {
		if err := checkID("have id", id); err != nil {
			return err
		}
		if err := checkHeads(h); err != nil {
			return err
		}
	}
	return nil
}

func (m *Create) validate() error {
	if len(m.Cards) == 0 || len(m.Cards) > maxCards*2 {
		return fmt.Errorf("%d cards", len(m.Cards))
	}
	return nil
}

func (m *Edit) validate() error {
	if err := checkID("id", m.ID); err != nil {
		return err
	}
	if len(m.Changes) == 0 {
		return errors.New("no changes")
	}
	return nil
}

func (m *Submit) validate() error {
	if len(m.Items) == 0 || len(m.Items) > maxItems {
		return fmt.Errorf("%d items, want 1 to %d", len(m.Items), maxItems)
	}
	for _, it := range m.Items {
		if err := checkID("id", it.ID); err != nil {
			return err
		}
		if err := checkHeads(it.Heads); err != nil {
			return err
		}
	}
	return nil
}

func (m *Target) validate() error { return checkID("id", m.ID) }

func (m *Append) validate() error {
	if err := checkID("id", m.ID); err != nil {
		return err
	}
	if err := checkID("question", m.Question); err != nil {
		return err
	}
	if len(m.Key) > maxKeyLen || len(m.Label) > maxLabel {
		return errors.New("key or label too long")
	}
	return nil
}

func (m *Why) validate() error {
	if err := checkID("id", m.ID); err != nil {
		return err
	}
	if len(m.Text) > maxText || m.Seen != nil && len(*m.Seen) > maxText {
		return errors.New("text too long")
	}
	return nil
}

func (m *Sync) validate() error {
	if err := checkID("id", m.ID); err != nil {
		return err
	}
	if len(m.Msg) == 0 {
		return errors.New("empty sync message")
	}
	return nil
}
