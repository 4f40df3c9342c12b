package question

import (
	"bytes"
	"testing"
	"time"
)

// FuzzProvenanceEnvelope: whatever bytes a stored chunk holds, reading its
// provenance envelope never panics, never claims a record longer than the
// input, and a record it accepts encodes again to one it reads the same.
func FuzzProvenanceEnvelope(f *testing.F) {
	at := time.Date(2026, 10, 19, 9, 0, 0, 0, time.UTC)
	rec := &provRecord{By: "ana", At: &at, Changes: []string{"ab"}, Cells: []CellProvenance{
		{Generation: 1, Question: "q1", Kind: CellMark, Cell: "email/easy", Value: "yes", By: "ana", At: at, Was: "no", WasBy: "ben"}}}
	good, err := wrapDraft(rec, []byte{0x85, 0x6f, 0x4a, 0x83, 1, 2, 3})
	if err != nil {
		f.Fatal(err)
	}
	whole, _ := wrapDraft(&provRecord{Whole: true, Cells: rec.Cells}, []byte{0x85, 0x6f, 0x4a, 0x83})
	f.Add(good)
	f.Add(whole)
	f.Add([]byte{0x85, 0x6f, 0x4a, 0x83, 0})
	f.Add([]byte("AcPv"))
	f.Add([]byte("AcPv\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))
	f.Add(append([]byte("AcPv\x0a"), `{"v":2}xx`...))
	f.Add(append([]byte("AcPv\x12"), `{"v":1,"cells":[{}]}`...))
	f.Fuzz(func(t *testing.T, b []byte) {
		meta, body, err := splitDraft(b)
		if err != nil {
			return
		}
		if len(meta)+len(body) > len(b) {
			t.Fatalf("record %d and body %d bytes from %d", len(meta), len(body), len(b))
		}
		if meta == nil {
			if !bytes.Equal(body, b) {
				t.Fatal("a bare chunk changed")
			}
			return
		}
		rec, err := readProvRecord(meta)
		if err != nil {
			return
		}
		again, err := wrapDraft(rec, body)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Cells) == 0 && !rec.Whole {
			return
		}
		m2, b2, err := splitDraft(again)
		if err != nil || !bytes.Equal(b2, body) {
			t.Fatalf("re-wrapped envelope does not split: %v", err)
		}
		if _, err := readProvRecord(m2); err != nil {
			t.Fatalf("re-wrapped record does not read: %v", err)
		}
		if _, _, _, err := unwrapStored(b, [][]byte{b}, true, func(error) {}); err != nil {
			t.Fatal(err)
		}
	})
}
