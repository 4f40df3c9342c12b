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
// and replies).
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
	return b, nil
}

// Decode reads one frame. It never panics; any malformed input returns an
// error wrapping ErrFrame that says what is wrong.
func Decode(b []byte, f Format) (m Message, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("%w: %v", ErrFrame, r)
		}
	}()
	if len(b) > MaxFrameBytes {
		return nil, fmt.Errorf("%w: %d bytes exceeds %d", ErrFrame, len(b), MaxFrameBytes)
	}
	var h Header
	if err := unmarshal(b, f, &h); err != nil {
		return nil, err
	}
	m = newMessage(h.Kind)
	if m == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownKind, truncate(h.Kind))
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

// newMessage returns an empty frame of a kind. Reply frames share their
// request's kind, so a decoder must know which side it is on: requests
// decode as requests on the server; the client decodes with DecodeReply.
func newMessage(kind string) Message {
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
	case KindReopen, KindDiscard, KindExpand:
		return &Target{}
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
	}
	return nil
}

// IsRequest reports whether kind is a request that gets a Reply.
func IsRequest(kind string) bool {
	switch kind {
	case KindCreate, KindEdit, KindSubmit, KindReopen, KindDiscard, KindOption, KindCriterion, KindWhy, KindExpand:
		return true
	}
	return false
}

// DecodeServerFrame decodes a frame the client received: replies (a
// request kind with "ok") decode as *Reply, everything else as Decode does.
func DecodeServerFrame(b []byte, f Format) (Message, error) {
	if len(b) > MaxFrameBytes {
		return nil, fmt.Errorf("%w: %d bytes exceeds %d", ErrFrame, len(b), MaxFrameBytes)
	}
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
	return Decode(b, f)
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
		if len(x) != 64 {
			return fmt.Errorf("head %q is not 64 hex digits", truncate(x))
		}
	}
	return nil
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
	if len(m.Text) > maxText {
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
