package persist

import "fmt"

// Limits bounds the keys and values a backend can store, for CheckWrite.
// A zero limit is no limit.
type Limits struct {
	// Name starts the message of every limit error, e.g. "boltstore".
	Name string
	// MaxKey is the longest document id or key, in bytes.
	MaxKey int
	// MaxValue is the largest value or draft chunk, in bytes.
	MaxValue int64
	// ErrKey is wrapped by the error for a key over MaxKey, ErrValue by the
	// one for a value over MaxValue, so that callers can match them with
	// errors.Is. Each is set with its limit.
	ErrKey, ErrValue error
}

// CheckWrite checks a Write for doc against the contract and l before a
// backend stores any of it: an empty document id, Put key or draft decision
// is ErrEmptyKey; a key longer than l.MaxKey, or a value or chunk larger
// than l.MaxValue, is an error wrapping l.ErrKey or l.ErrValue. The parts
// are checked in a fixed order (the document, then records, projections,
// answers, audit rows and drafts) and the first fault is returned. A nil w
// checks doc alone.
func CheckWrite(doc string, w *Write, l Limits) error {
	if err := l.checkKey(doc, "document"); err != nil {
		return err
	}
	if w == nil {
		return nil
	}
	for _, kind := range []struct {
		name string
		puts []Put
	}{{"record", w.Records}, {"projection", w.Projections}, {"answer", w.Answers}, {"audit", w.Audit}} {
		for _, p := range kind.puts {
			if err := l.checkKey(p.Key, kind.name); err != nil {
				return err
			}
			if err := l.checkValue(p.Value, kind.name, p.Key); err != nil {
				return err
			}
		}
	}
	for _, dp := range w.Drafts {
		if err := l.checkKey(dp.Decision, "draft"); err != nil {
			return err
		}
		if err := l.checkValue(dp.Chunk, "draft", dp.Decision); err != nil {
			return err
		}
	}
	return nil
}

func (l Limits) checkKey(key, kind string) error {
	if key == "" {
		return ErrEmptyKey
	}
	if l.MaxKey > 0 && len(key) > l.MaxKey {
		return fmt.Errorf("%s: %s key of %d bytes, limit %d: %w", l.Name, kind, len(key), l.MaxKey, l.ErrKey)
	}
	return nil
}

func (l Limits) checkValue(v []byte, kind, key string) error {
	if l.MaxValue > 0 && int64(len(v)) > l.MaxValue {
		return fmt.Errorf("%s: %s %q value of %d bytes, limit %d: %w", l.Name, kind, key, len(v), l.MaxValue, l.ErrValue)
	}
	return nil
}
