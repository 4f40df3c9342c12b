package marks_test

import (
	"errors"
	"testing"

	"github.com/accord-crdt/accord/marks"
)

// FuzzParseAttribute checks that ParseAttribute never panics, that every
// refusal is a *marks.Error matching ErrInvalid, and that whatever parses
// re-renders to an equal, valid snapshot whose rendering is canonical.
func FuzzParseAttribute(f *testing.F) {
	for _, seed := range []string{
		"",
		"o1/c1:yes",
		"o1/c1:yes o1/c2:partly o2/c1:no",
		"o2/c1:no o1/c1:yes",
		"a-b/x:no a/x:yes",
		" o1/c1:yes",
		"o1/c1:yes ",
		"o1/c1:yes  o2/c1:no",
		"o1/c1",
		"o1/c1:maybe",
		"o1/c1:yes o1/c1:no",
		"é/c1:yes",
		"o1/c1/x:yes",
		"o1/c1:yes\to2/c1:no",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, attr string) {
		s, err := marks.ParseAttribute(attr)
		if err != nil {
			var e *marks.Error
			if !errors.Is(err, marks.ErrInvalid) || !errors.As(err, &e) || e.What != "attribute" {
				t.Fatalf("ParseAttribute(%q) error %v (%T) is not an invalid attribute *marks.Error", attr, err, err)
			}
			if s != nil {
				t.Fatalf("ParseAttribute(%q) returned %v with an error", attr, s)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("ParseAttribute(%q) = %v, which does not validate: %v", attr, s, err)
		}
		out := s.Attribute()
		back, err := marks.ParseAttribute(out)
		if err != nil {
			t.Fatalf("ParseAttribute(%q) = %v re-renders as %q, which fails: %v", attr, s, out, err)
		}
		if !back.Equal(s) {
			t.Fatalf("ParseAttribute(%q) = %v, re-parsed %v", attr, s, back)
		}
		if again := back.Attribute(); again != out {
			t.Fatalf("rendering is not canonical: %q then %q", out, again)
		}
	})
}

// FuzzParseKey checks that ParseKey never panics, refuses with a *marks.Error
// matching ErrInvalid, and that every key it accepts is rebuilt exactly by
// Key from its two valid ids.
func FuzzParseKey(f *testing.F) {
	for _, seed := range []string{"o1/c1", "opt-a/crit_1", "", "/", "o1", "o1/", "/c1", "o1/c1/x", "é/c", "a b/c"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		c, err := marks.ParseKey(key)
		if err != nil {
			var e *marks.Error
			if !errors.Is(err, marks.ErrInvalid) || !errors.As(err, &e) || e.What != "key" {
				t.Fatalf("ParseKey(%q) error %v (%T) is not an invalid key *marks.Error", key, err, err)
			}
			if c != (marks.Cell{}) {
				t.Fatalf("ParseKey(%q) returned %+v with an error", key, c)
			}
			return
		}
		if !marks.ValidID(c.Option) || !marks.ValidID(c.Criterion) {
			t.Fatalf("ParseKey(%q) = %+v with an invalid id", key, c)
		}
		if got := c.Key(); got != key {
			t.Fatalf("ParseKey(%q).Key() = %q", key, got)
		}
		if got := marks.Key(c.Option, c.Criterion); got != key {
			t.Fatalf("Key(%q, %q) = %q, want %q", c.Option, c.Criterion, got, key)
		}
		back, err := marks.ParseKey(c.Key())
		if err != nil || back != c {
			t.Fatalf("ParseKey(%q) = %+v, %v; want %+v", c.Key(), back, err, c)
		}
	})
}
