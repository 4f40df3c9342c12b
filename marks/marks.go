package marks

import (
	"slices"
	"strconv"
	"strings"
)

// Mark is one person's judgement of how well an option meets a criterion.
type Mark string

// The three marks a cell can hold.
const (
	Yes    Mark = "yes"
	Partly Mark = "partly"
	No     Mark = "no"
)

// All lists the valid marks in display order.
var All = [...]Mark{Yes, Partly, No}

// Valid reports whether m is one of Yes, Partly or No.
func (m Mark) Valid() bool { return m == Yes || m == Partly || m == No }

// ParseMark returns the Mark spelled s, or an error naming s.
func ParseMark(s string) (Mark, error) {
	m := Mark(s)
	if !m.Valid() {
		return "", invalid("mark", s, `want "yes", "partly" or "no"`)
	}
	return m, nil
}

// MaxIDLen is the longest option or criterion id.
const MaxIDLen = 64

// ValidID reports whether id matches ^[A-Za-z0-9_-]{1,64}$, the form of
// every option and criterion id.
func ValidID(id string) bool { return CheckID(id) == nil }

// CheckID returns nil when id matches ^[A-Za-z0-9_-]{1,64}$ and otherwise
// an error saying what is wrong.
func CheckID(id string) error {
	if id == "" {
		return invalid("id", id, "empty")
	}
	if len(id) > MaxIDLen {
		return invalid("id", id, "longer than 64 characters")
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return invalid("id", id, "only letters, digits, '_' and '-' are allowed")
		}
	}
	return nil
}

// Cell addresses one cell of the matrix: an option (row) and a criterion
// (column).
type Cell struct {
	Option    string
	Criterion string
}

// Key returns the cell key "optionID/criterionID" (Question.markKey).
func Key(optionID, criterionID string) string { return optionID + "/" + criterionID }

// Key returns the cell's key.
func (c Cell) Key() string { return Key(c.Option, c.Criterion) }

// ParseKey splits a cell key into its option and criterion ids and checks
// both.
func ParseKey(key string) (Cell, error) {
	opt, crit, ok := strings.Cut(key, "/")
	if !ok {
		return Cell{}, invalid("key", key, `want "optionId/criterionId"`)
	}
	if err := CheckID(opt); err != nil {
		return Cell{}, invalid("key", key, "option id: "+err.(*Error).Reason)
	}
	if err := CheckID(crit); err != nil {
		return Cell{}, invalid("key", key, "criterion id: "+err.(*Error).Reason)
	}
	return Cell{Option: opt, Criterion: crit}, nil
}

// Snapshot is the sparse, flat record of marked cells kept in a settled
// answer (Answer.marks): cell key to mark. Unmarked and cleared cells are
// absent.
type Snapshot map[string]Mark

// Validate checks every key and mark in s. When several cells are wrong it
// reports the first in canonical order, so the error does not depend on map
// iteration order.
func (s Snapshot) Validate() error {
	for _, k := range s.Keys() {
		m := s[k]
		if _, err := ParseKey(k); err != nil {
			return err
		}
		if !m.Valid() {
			return invalid("mark", string(m), "cell "+k+`: want "yes", "partly" or "no"`)
		}
	}
	return nil
}

// Keys returns the snapshot's cell keys in their canonical order: by option
// id, then criterion id, bytewise.
func (s Snapshot) Keys() []string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	return keys
}

// compareKeys orders by option then criterion, so "a/x" < "a-b/x" follows
// the option ids rather than the raw bytes of the joined key. Malformed keys
// that split alike ("a" and "a/") fall back to their bytes, so the order is
// total and Keys never depends on map iteration order.
func compareKeys(a, b string) int {
	ao, ac, _ := strings.Cut(a, "/")
	bo, bc, _ := strings.Cut(b, "/")
	if c := strings.Compare(ao, bo); c != 0 {
		return c
	}
	if c := strings.Compare(ac, bc); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// Equal reports whether s and t hold the same cells with the same marks.
// A nil and an empty snapshot are equal.
func (s Snapshot) Equal(t Snapshot) bool {
	if len(s) != len(t) {
		return false
	}
	for k, m := range s {
		if n, ok := t[k]; !ok || n != m {
			return false
		}
	}
	return true
}

// Clone returns a copy of s (nil when s is empty).
func (s Snapshot) Clone() Snapshot {
	if len(s) == 0 {
		return nil
	}
	c := make(Snapshot, len(s))
	for k, m := range s {
		c[k] = m
	}
	return c
}

// Attribute renders s as the projection attribute value
// "o1/c1:yes o2/c1:no", cells in canonical order. An empty snapshot renders
// as "".
func (s Snapshot) Attribute() string {
	var b strings.Builder
	for i, k := range s.Keys() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte(':')
		b.WriteString(string(s[k]))
	}
	return b.String()
}

// ParseAttribute parses a projection attribute value produced by
// Snapshot.Attribute. Cells are separated by single spaces; each is
// "optionId/criterionId:mark". A cell given twice, an unknown mark or a
// malformed key is an error naming it. "" parses as an empty snapshot.
func ParseAttribute(attr string) (Snapshot, error) {
	if attr == "" {
		return Snapshot{}, nil
	}
	switch {
	case strings.HasPrefix(attr, " "):
		return nil, invalid("attribute", attr, "leading space")
	case strings.HasSuffix(attr, " "):
		return nil, invalid("attribute", attr, "trailing space")
	}
	s := Snapshot{}
	for _, cell := range strings.Split(attr, " ") {
		if cell == "" {
			return nil, invalid("attribute", attr, "cells must be separated by exactly one space")
		}
		key, mark, ok := strings.Cut(cell, ":")
		if !ok {
			return nil, invalid("attribute", attr, "cell "+quote(cell)+` has no ":mark"`)
		}
		if _, err := ParseKey(key); err != nil {
			return nil, invalid("attribute", attr, "cell "+quote(cell)+": "+err.(*Error).Reason)
		}
		m, err := ParseMark(mark)
		if err != nil {
			return nil, invalid("attribute", attr, "cell "+quote(cell)+`: mark must be "yes", "partly" or "no"`)
		}
		if _, dup := s[key]; dup {
			return nil, invalid("attribute", attr, "cell "+quote(key)+" is given twice")
		}
		s[key] = m
	}
	return s, nil
}

// quote quotes s Go-style, so control characters in a reason stay visible.
func quote(s string) string { return strconv.Quote(s) }

// Cleared is the value a draft reports for a cell whose register was
// cleared (null). It is not Valid and never appears in a Snapshot; a cell
// that was never marked is simply absent from the draft.
const Cleared Mark = ""
