package marks_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/marks"
)

// wantInvalid checks that err is an *marks.Error of the given kind that
// matches marks.ErrInvalid and whose reason mentions every fragment.
func wantInvalid(t *testing.T, err error, what string, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got nil error, want invalid %s", what)
	}
	if !errors.Is(err, marks.ErrInvalid) {
		t.Errorf("errors.Is(%v, ErrInvalid) = false", err)
	}
	var e *marks.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *marks.Error", err, err)
	}
	if e.What != what {
		t.Errorf("What = %q, want %q (error %v)", e.What, what, err)
	}
	for _, f := range fragments {
		if !strings.Contains(e.Reason, f) {
			t.Errorf("Reason %q does not mention %q", e.Reason, f)
		}
	}
	if e.Error() == "" || !strings.HasPrefix(e.Error(), "marks: invalid "+what) {
		t.Errorf("Error() = %q, want prefix %q", e.Error(), "marks: invalid "+what)
	}
}

func TestParseMark(t *testing.T) {
	for _, m := range marks.All {
		got, err := marks.ParseMark(string(m))
		if err != nil || got != m {
			t.Errorf("ParseMark(%q) = %q, %v; want %q, nil", m, got, err, m)
		}
		if !m.Valid() {
			t.Errorf("%q.Valid() = false", m)
		}
	}
	for _, s := range []string{"", "Yes", "YES", " yes", "yes ", "maybe", "null", "partial", "n", "y", "no\x00"} {
		t.Run(fmt.Sprintf("%q", s), func(t *testing.T) {
			got, err := marks.ParseMark(s)
			if got != "" {
				t.Errorf("ParseMark(%q) returned mark %q with the error", s, got)
			}
			wantInvalid(t, err, "mark", "yes", "partly", "no")
			var e *marks.Error
			if errors.As(err, &e) && e.Input != s {
				t.Errorf("Input = %q, want %q", e.Input, s)
			}
			if marks.Mark(s).Valid() {
				t.Errorf("Mark(%q).Valid() = true", s)
			}
		})
	}
	if marks.Cleared.Valid() {
		t.Error("Cleared is Valid")
	}
	if want := [...]marks.Mark{"yes", "partly", "no"}; marks.All != want {
		t.Errorf("All = %v, want %v", marks.All, want)
	}
}

func TestCheckID(t *testing.T) {
	valid := []string{
		"a", "Z", "0", "_", "-", "opt-a", "crit_1", "ABCxyz019-_",
		strings.Repeat("a", marks.MaxIDLen),
		strings.Repeat("-", 64),
	}
	for _, id := range valid {
		if err := marks.CheckID(id); err != nil {
			t.Errorf("CheckID(%q) = %v, want nil", id, err)
		}
		if !marks.ValidID(id) {
			t.Errorf("ValidID(%q) = false", id)
		}
	}
	invalid := []struct {
		id     string
		reason string
	}{
		{"", "empty"},
		{strings.Repeat("a", 65), "longer than 64"},
		{strings.Repeat("é", 33), "longer than 64"}, // 66 bytes
		{"é", "only letters"},
		{"日本", "only letters"},
		{"a b", "only letters"},
		{"a/b", "only letters"},
		{"a:b", "only letters"},
		{"a.b", "only letters"},
		{" a", "only letters"},
		{"a\n", "only letters"},
		{"a\x00", "only letters"},
		{"\xff", "only letters"},
		{"ａ", "only letters"}, // fullwidth a
	}
	for _, tc := range invalid {
		t.Run(fmt.Sprintf("%q", tc.id), func(t *testing.T) {
			wantInvalid(t, marks.CheckID(tc.id), "id", tc.reason)
			if marks.ValidID(tc.id) {
				t.Errorf("ValidID(%q) = true", tc.id)
			}
		})
	}
}

func TestErrorInputTruncated(t *testing.T) {
	long := strings.Repeat("x", 79) + "é" + strings.Repeat("y", 20) // é straddles byte 80
	err := marks.CheckID(long)
	var e *marks.Error
	if !errors.As(err, &e) {
		t.Fatalf("CheckID: %v", err)
	}
	if !utf8.ValidString(e.Input) {
		t.Errorf("Input %q is not valid UTF-8: truncation split a character", e.Input)
	}
	if want := strings.Repeat("x", 79) + "…"; e.Input != want {
		t.Errorf("Input = %q, want %q", e.Input, want)
	}
	short := strings.Repeat("x", 80) + "!"
	if err := marks.CheckID(short); !errors.As(err, &e) || e.Input != strings.Repeat("x", 80)+"…" {
		t.Errorf("Input = %q, want 80 bytes and an ellipsis", e.Input)
	}
}

func TestKey(t *testing.T) {
	tests := []struct {
		opt, crit, key string
	}{
		{"o1", "c1", "o1/c1"},
		{"opt-a", "crit_1", "opt-a/crit_1"},
		{"A", "-", "A/-"},
		{strings.Repeat("o", 64), strings.Repeat("c", 64), strings.Repeat("o", 64) + "/" + strings.Repeat("c", 64)},
	}
	for _, tc := range tests {
		if got := marks.Key(tc.opt, tc.crit); got != tc.key {
			t.Errorf("Key(%q, %q) = %q, want %q", tc.opt, tc.crit, got, tc.key)
		}
		c := marks.Cell{Option: tc.opt, Criterion: tc.crit}
		if got := c.Key(); got != tc.key {
			t.Errorf("%+v.Key() = %q, want %q", c, got, tc.key)
		}
		got, err := marks.ParseKey(tc.key)
		if err != nil || got != c {
			t.Errorf("ParseKey(%q) = %+v, %v; want %+v", tc.key, got, err, c)
		}
	}
}

func TestParseKeyInvalid(t *testing.T) {
	tests := []struct {
		key    string
		reason string
	}{
		{"", "optionId/criterionId"},
		{"o1", "optionId/criterionId"},
		{"o1:c1", "optionId/criterionId"},
		{"/c1", "option id: empty"},
		{"o1/", "criterion id: empty"},
		{"/", "option id: empty"},
		{"o1/c1/x", "criterion id: only letters"},
		{"o 1/c1", "option id: only letters"},
		{"o1/c 1", "criterion id: only letters"},
		{"é/c1", "option id: only letters"},
		{"o1/ü", "criterion id: only letters"},
		{strings.Repeat("a", 65) + "/c", "option id: longer than 64"},
		{"o/" + strings.Repeat("a", 65), "criterion id: longer than 64"},
		{" o1/c1", "option id"},
		{"o1/c1 ", "criterion id"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q", tc.key), func(t *testing.T) {
			c, err := marks.ParseKey(tc.key)
			if c != (marks.Cell{}) {
				t.Errorf("ParseKey(%q) returned %+v with the error", tc.key, c)
			}
			wantInvalid(t, err, "key", tc.reason)
		})
	}
}

func TestSnapshotValidate(t *testing.T) {
	good := []marks.Snapshot{
		nil,
		{},
		{"o1/c1": marks.Yes},
		{"o1/c1": marks.Yes, "o1/c2": marks.Partly, "o2/c1": marks.No},
	}
	for _, s := range good {
		if err := s.Validate(); err != nil {
			t.Errorf("%v.Validate() = %v", s, err)
		}
	}
	bad := []struct {
		name   string
		s      marks.Snapshot
		what   string
		reason string
	}{
		{"bad key", marks.Snapshot{"o1": marks.Yes}, "key", "optionId/criterionId"},
		{"bad option id", marks.Snapshot{"o 1/c1": marks.Yes}, "key", "option id"},
		{"cleared mark", marks.Snapshot{"o1/c1": marks.Cleared}, "mark", "cell o1/c1"},
		{"unknown mark", marks.Snapshot{"o1/c1": "maybe"}, "mark", "cell o1/c1"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			wantInvalid(t, tc.s.Validate(), tc.what, tc.reason)
		})
	}
	// With several wrong cells the first in canonical order is reported,
	// whatever the map iteration order.
	s := marks.Snapshot{"b/c": "x", "a/c": "y", "a/b": "z", "c/a": "w"}
	for range 50 {
		var e *marks.Error
		if err := s.Validate(); !errors.As(err, &e) || e.Input != "z" {
			t.Fatalf("Validate() = %v, want the error for cell a/b", err)
		}
	}
}

func TestSnapshotKeys(t *testing.T) {
	s := marks.Snapshot{
		"b/a":   marks.Yes,
		"a-b/x": marks.No,
		"a/y":   marks.Partly,
		"a/x":   marks.Yes,
		"A/z":   marks.Yes,
		"a_/a":  marks.No,
		"a/-":   marks.Yes,
	}
	// By option id, then criterion id, bytewise: "A" < "a" < "a-b" < "a_" < "b",
	// even though the joined bytes would put "a-b/x" before "a/x".
	want := []string{"A/z", "a/-", "a/x", "a/y", "a-b/x", "a_/a", "b/a"}
	for range 20 {
		if got := s.Keys(); !slices.Equal(got, want) {
			t.Fatalf("Keys() = %q, want %q", got, want)
		}
	}
	if got := marks.Snapshot(nil).Keys(); len(got) != 0 {
		t.Errorf("nil Keys() = %q", got)
	}
	// Malformed keys still sort deterministically.
	odd := marks.Snapshot{"a": marks.Yes, "a/": marks.No, "a//": marks.Yes, "": marks.No}
	first := odd.Keys()
	for range 50 {
		if got := odd.Keys(); !slices.Equal(got, first) {
			t.Fatalf("Keys() of malformed snapshot changed: %q then %q", first, got)
		}
	}
}

func TestSnapshotEqualClone(t *testing.T) {
	a := marks.Snapshot{"o1/c1": marks.Yes, "o2/c1": marks.No}
	tests := []struct {
		s, t marks.Snapshot
		want bool
	}{
		{nil, nil, true},
		{nil, marks.Snapshot{}, true},
		{marks.Snapshot{}, nil, true},
		{a, marks.Snapshot{"o2/c1": marks.No, "o1/c1": marks.Yes}, true},
		{a, marks.Snapshot{"o1/c1": marks.Yes}, false},
		{a, marks.Snapshot{"o1/c1": marks.Yes, "o2/c1": marks.Partly}, false},
		{a, marks.Snapshot{"o1/c1": marks.Yes, "o3/c1": marks.No}, false},
		{marks.Snapshot{"o1/c1": marks.Cleared}, marks.Snapshot{"o2/c1": marks.Cleared}, false},
		{a, nil, false},
	}
	for _, tc := range tests {
		if got := tc.s.Equal(tc.t); got != tc.want {
			t.Errorf("%v.Equal(%v) = %v, want %v", tc.s, tc.t, got, tc.want)
		}
		if got := tc.t.Equal(tc.s); got != tc.want {
			t.Errorf("%v.Equal(%v) = %v, want %v (symmetry)", tc.t, tc.s, got, tc.want)
		}
	}

	c := a.Clone()
	if !c.Equal(a) {
		t.Fatalf("Clone() = %v, want %v", c, a)
	}
	c["o1/c1"] = marks.Partly
	c["o9/c9"] = marks.No
	if a["o1/c1"] != marks.Yes || len(a) != 2 {
		t.Errorf("changing the clone changed the original: %v", a)
	}
	if got := marks.Snapshot(nil).Clone(); got != nil {
		t.Errorf("nil Clone() = %v, want nil", got)
	}
	if got := (marks.Snapshot{}).Clone(); got != nil {
		t.Errorf("empty Clone() = %v, want nil", got)
	}
}

func TestAttribute(t *testing.T) {
	tests := []struct {
		s    marks.Snapshot
		attr string
	}{
		{nil, ""},
		{marks.Snapshot{}, ""},
		{marks.Snapshot{"o1/c1": marks.Yes}, "o1/c1:yes"},
		{
			marks.Snapshot{"o2/c1": marks.No, "o1/c2": marks.Partly, "o1/c1": marks.Yes},
			"o1/c1:yes o1/c2:partly o2/c1:no",
		},
		{
			marks.Snapshot{"a-b/x": marks.No, "a/x": marks.Yes},
			"a/x:yes a-b/x:no",
		},
	}
	for _, tc := range tests {
		for range 20 { // map iteration order varies between calls
			if got := tc.s.Attribute(); got != tc.attr {
				t.Fatalf("%v.Attribute() = %q, want %q", tc.s, got, tc.attr)
			}
		}
		got, err := marks.ParseAttribute(tc.attr)
		if err != nil {
			t.Fatalf("ParseAttribute(%q): %v", tc.attr, err)
		}
		if got == nil {
			t.Errorf("ParseAttribute(%q) = nil, want a non-nil snapshot", tc.attr)
		}
		if !got.Equal(tc.s) {
			t.Errorf("ParseAttribute(%q) = %v, want %v", tc.attr, got, tc.s)
		}
	}
}

func TestParseAttributeAnyOrder(t *testing.T) {
	// Cells out of canonical order still parse; rendering puts them in order.
	got, err := marks.ParseAttribute("o2/c1:no o1/c1:yes")
	if err != nil {
		t.Fatal(err)
	}
	want := marks.Snapshot{"o1/c1": marks.Yes, "o2/c1": marks.No}
	if !got.Equal(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if a := got.Attribute(); a != "o1/c1:yes o2/c1:no" {
		t.Errorf("Attribute() = %q", a)
	}
}

func TestParseAttributeInvalid(t *testing.T) {
	tests := []struct {
		name   string
		attr   string
		reason string
	}{
		{"leading space", " o1/c1:yes", "leading space"},
		{"trailing space", "o1/c1:yes ", "trailing space"},
		{"only a space", " ", "leading space"},
		{"double space", "o1/c1:yes  o2/c1:no", "exactly one space"},
		{"tab separator", "o1/c1:yes\to2/c1:no", `"o1/c1:yes\to2/c1:no"`},
		{"newline separator", "o1/c1:yes\no2/c1:no", `mark must be`},
		{"missing colon", "o1/c1", `cell "o1/c1" has no ":mark"`},
		{"missing colon second cell", "o1/c1:yes o2/c1", `cell "o2/c1" has no ":mark"`},
		{"empty mark", "o1/c1:", `cell "o1/c1:": mark must be "yes", "partly" or "no"`},
		{"bad mark", "o1/c1:maybe", `cell "o1/c1:maybe": mark must be`},
		{"capital mark", "o1/c1:Yes", `cell "o1/c1:Yes": mark must be`},
		{"mark with colon", "o1/c1:yes:no", `cell "o1/c1:yes:no": mark must be`},
		{"no slash", "o1:yes", `cell "o1:yes": want "optionId/criterionId"`},
		{"empty key", ":yes", `cell ":yes": want "optionId/criterionId"`},
		{"empty option id", "/c1:yes", "option id: empty"},
		{"empty criterion id", "o1/:yes", "criterion id: empty"},
		{"bad option id", "ö/c1:yes", "option id: only letters"},
		{"bad criterion id", "o1/c.1:yes", "criterion id: only letters"},
		{"extra slash", "o1/c1/x:yes", "criterion id"},
		{"long option id", strings.Repeat("o", 65) + "/c:yes", "option id: longer than 64"},
		{"duplicate cell", "o1/c1:yes o1/c1:no", `cell "o1/c1" is given twice`},
		{"duplicate cell same mark", "o1/c1:yes o2/c1:no o1/c1:yes", `cell "o1/c1" is given twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := marks.ParseAttribute(tc.attr)
			if s != nil {
				t.Errorf("ParseAttribute(%q) returned %v with the error", tc.attr, s)
			}
			wantInvalid(t, err, "attribute", tc.reason)
		})
	}
}

// genID draws a valid option or criterion id.
func genID(t *rapid.T, label string) string {
	return rapid.StringOfN(rapid.SampledFrom([]rune("abcXYZ019_-")), 1, marks.MaxIDLen, -1).Draw(t, label)
}

// genSnapshot draws a valid snapshot over a few options and criteria.
func genSnapshot(t *rapid.T) marks.Snapshot {
	opts := rapid.SliceOfNDistinct(rapid.Custom(func(t *rapid.T) string { return genID(t, "option") }), 0, 6, rapid.ID[string]).Draw(t, "options")
	crits := rapid.SliceOfNDistinct(rapid.Custom(func(t *rapid.T) string { return genID(t, "criterion") }), 0, 5, rapid.ID[string]).Draw(t, "criteria")
	s := marks.Snapshot{}
	for _, o := range opts {
		for _, c := range crits {
			if rapid.Bool().Draw(t, "marked") {
				s[marks.Key(o, c)] = rapid.SampledFrom(marks.All[:]).Draw(t, "mark")
			}
		}
	}
	return s
}

func TestAttributeRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSnapshot(t)
		if err := s.Validate(); err != nil {
			t.Fatalf("generated invalid snapshot: %v", err)
		}
		attr := s.Attribute()
		back, err := marks.ParseAttribute(attr)
		if err != nil {
			t.Fatalf("ParseAttribute(%q): %v", attr, err)
		}
		if !back.Equal(s) {
			t.Fatalf("ParseAttribute(%q) = %v, want %v", attr, back, s)
		}
		if again := back.Attribute(); again != attr {
			t.Fatalf("re-rendered %q, first rendered %q", again, attr)
		}

		// Independent of map iteration and insertion order: build the same
		// snapshot by inserting its cells in a random order.
		keys := slices.Sorted(maps.Keys(s))
		perm := rapid.Permutation(keys).Draw(t, "insertion order")
		rebuilt := make(marks.Snapshot, len(perm))
		for _, k := range perm {
			rebuilt[k] = s[k]
		}
		if got := rebuilt.Attribute(); got != attr {
			t.Fatalf("Attribute depends on insertion order: %q vs %q", got, attr)
		}
		if got := s.Clone().Attribute(); got != attr {
			t.Fatalf("Clone().Attribute() = %q, want %q", got, attr)
		}

		// Canonical order: each key sorts after the previous one by
		// (option, criterion).
		ks := s.Keys()
		for i := 1; i < len(ks); i++ {
			p, _ := marks.ParseKey(ks[i-1])
			c, _ := marks.ParseKey(ks[i])
			if p.Option > c.Option || p.Option == c.Option && p.Criterion >= c.Criterion {
				t.Fatalf("Keys() out of order at %d: %q then %q", i, ks[i-1], ks[i])
			}
		}
	})
}
