package storetest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/accord-crdt/accord/persist"
)

// model is the plain-map reference the property test compares a Store to.
type model map[string]*persist.StoredDocument

// apply applies w to doc as the contract describes: entries of each kind in
// order, answers with a nil Value deleted, a snapshot dropping earlier chunks.
func (m model) apply(doc string, w *persist.Write) {
	if w.Empty() {
		return
	}
	d := m[doc]
	if d == nil {
		d = emptyDocument()
		m[doc] = d
	}
	for _, p := range w.Records {
		d.Records[p.Key] = bytes.Clone(p.Value)
	}
	for _, p := range w.Projections {
		d.Projections[p.Key] = bytes.Clone(p.Value)
	}
	for _, p := range w.Answers {
		if p.Value == nil {
			delete(d.Answers, p.Key)
		} else {
			d.Answers[p.Key] = bytes.Clone(p.Value)
		}
	}
	for _, dp := range w.Drafts {
		dr := d.Drafts[dp.Decision]
		if dp.Snapshot {
			dr = persist.StoredDraft{Snapshot: bytes.Clone(dp.Chunk)}
		} else {
			dr.Chunks = append(slices.Clip(dr.Chunks), bytes.Clone(dp.Chunk))
		}
		d.Drafts[dp.Decision] = dr
	}
}

func (m model) documents() []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func emptyDocument() *persist.StoredDocument {
	return &persist.StoredDocument{
		Records:     make(map[string][]byte),
		Drafts:      make(map[string]persist.StoredDraft),
		Projections: make(map[string][]byte),
		Answers:     make(map[string][]byte),
	}
}

// diffDocument describes the first few differences between got and want, or
// returns "" if they hold the same data. A nil map equals an empty one, and a
// nil value an empty one.
func diffDocument(got, want *persist.StoredDocument) string {
	if got == nil {
		return "LoadDocument returned a nil document"
	}
	if want == nil {
		want = emptyDocument()
	}
	var b strings.Builder
	diffValues(&b, "Records", got.Records, want.Records)
	diffValues(&b, "Projections", got.Projections, want.Projections)
	diffValues(&b, "Answers", got.Answers, want.Answers)
	for _, k := range unionKeys(got.Drafts, want.Drafts) {
		g, gok := got.Drafts[k]
		w, wok := want.Drafts[k]
		switch {
		case !gok:
			fmt.Fprintf(&b, "Drafts[%q]: missing, want %s\n", k, showDraft(w))
		case !wok:
			fmt.Fprintf(&b, "Drafts[%q]: unexpected %s\n", k, showDraft(g))
		case !equalDraft(g, w):
			fmt.Fprintf(&b, "Drafts[%q]: got %s, want %s\n", k, showDraft(g), showDraft(w))
		}
	}
	return b.String()
}

func diffValues(b *strings.Builder, kind string, got, want map[string][]byte) {
	for _, k := range unionKeys(got, want) {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !gok:
			fmt.Fprintf(b, "%s[%q]: missing, want %q\n", kind, k, w)
		case !wok:
			fmt.Fprintf(b, "%s[%q]: unexpected %q\n", kind, k, g)
		case !bytes.Equal(g, w):
			fmt.Fprintf(b, "%s[%q]: got %q, want %q\n", kind, k, g, w)
		}
	}
}

func equalDraft(a, b persist.StoredDraft) bool {
	return bytes.Equal(a.Snapshot, b.Snapshot) && slices.EqualFunc(a.Chunks, b.Chunks, bytes.Equal)
}

func showDraft(d persist.StoredDraft) string {
	return fmt.Sprintf("{Snapshot: %q, Chunks: %q}", d.Snapshot, d.Chunks)
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
