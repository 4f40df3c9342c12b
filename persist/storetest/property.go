package storetest

import (
	"context"
	"errors"
	"flag"
	"slices"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/persist"
)

// Small alphabets, so that random Writes collide on documents and keys.
// They include ids that look like a backend's layout.
var (
	genDoc   = rapid.SampledFrom([]string{"a", "b", "docs", "snapshot"})
	genKey   = rapid.SampledFrom([]string{"k1", "k2", "k3", "snapshot", "records", "\x00"})
	genBytes = rapid.Custom(func(t *rapid.T) []byte {
		v := rapid.SliceOfN(rapid.Byte(), 0, 12).Draw(t, "bytes")
		return append([]byte{}, v...) // never nil: nil means delete for answers
	})
	genPut = rapid.Custom(func(t *rapid.T) persist.Put {
		return persist.Put{Key: genKey.Draw(t, "key"), Value: genBytes.Draw(t, "value")}
	})
	genAnswer = rapid.Custom(func(t *rapid.T) persist.Put {
		p := genPut.Draw(t, "answer")
		if rapid.IntRange(0, 2).Draw(t, "delete") == 0 {
			p.Value = nil
		}
		return p
	})
	genDraftPut = rapid.Custom(func(t *rapid.T) persist.DraftPut {
		return persist.DraftPut{
			Decision: genKey.Draw(t, "decision"),
			Chunk:    genBytes.Draw(t, "chunk"),
			Snapshot: rapid.IntRange(0, 3).Draw(t, "snapshot") == 0,
		}
	})
	genWrite = rapid.Custom(func(t *rapid.T) *persist.Write {
		return &persist.Write{
			Records:     rapid.SliceOfN(genPut, 0, 3).Draw(t, "records"),
			Drafts:      rapid.SliceOfN(genDraftPut, 0, 5).Draw(t, "drafts"),
			Projections: rapid.SliceOfN(genPut, 0, 2).Draw(t, "projections"),
			Answers:     rapid.SliceOfN(genAnswer, 0, 3).Draw(t, "answers"),
		}
	})
)

// machine drives a Store and the model with the same random Writes.
type machine struct {
	tt     *testing.T // the test that owns the Stores
	reopen func(t *testing.T, s persist.Store) persist.Store
	s      persist.Store
	m      model
}

func (sm *machine) commit(t *rapid.T) {
	doc := genDoc.Draw(t, "doc")
	w := genWrite.Draw(t, "write")
	if err := sm.s.Commit(context.Background(), doc, w); err != nil {
		t.Fatalf("Commit(%q): %v", doc, err)
	}
	sm.m.apply(doc, w)
}

// commitMerged commits two Writes merged into one, which must equal
// committing them one after the other.
func (sm *machine) commitMerged(t *rapid.T) {
	doc := genDoc.Draw(t, "doc")
	w1 := genWrite.Draw(t, "first")
	w2 := genWrite.Draw(t, "second")
	merged := &persist.Write{}
	merged.Merge(w1)
	merged.Merge(w2)
	if err := sm.s.Commit(context.Background(), doc, merged); err != nil {
		t.Fatalf("Commit(%q) of a merged Write: %v", doc, err)
	}
	sm.m.apply(doc, w1)
	sm.m.apply(doc, w2)
}

// commitInvalid commits a Write with one empty key, which must fail with
// ErrEmptyKey and apply nothing.
func (sm *machine) commitInvalid(t *rapid.T) {
	doc := genDoc.Draw(t, "doc")
	w := genWrite.Draw(t, "write")
	switch rapid.IntRange(0, 4).Draw(t, "where") {
	case 0:
		doc = ""
	case 1:
		w.Records = append(w.Records, persist.Put{Value: []byte("v")})
	case 2:
		w.Drafts = append(w.Drafts, persist.DraftPut{Chunk: []byte("v")})
	case 3:
		w.Projections = append(w.Projections, persist.Put{Value: []byte("v")})
	case 4:
		w.Answers = append(w.Answers, persist.Put{})
	}
	if err := sm.s.Commit(context.Background(), doc, w); !errors.Is(err, persist.ErrEmptyKey) {
		t.Fatalf("Commit(%q) with an empty key = %v, want ErrEmptyKey", doc, err)
	}
}

// deleteDocument deletes a document, written or not.
func (sm *machine) deleteDocument(t *rapid.T) {
	doc := genDoc.Draw(t, "doc")
	if err := sm.s.DeleteDocument(context.Background(), doc); err != nil {
		t.Fatalf("DeleteDocument(%q): %v", doc, err)
	}
	delete(sm.m, doc)
}

func (sm *machine) reopenStore(t *rapid.T) {
	sm.s = sm.reopen(sm.tt, sm.s)
	if sm.s == nil {
		t.Fatal("Reopen returned a nil Store")
	}
}

func (sm *machine) check(t *rapid.T) {
	ids, err := sm.s.Documents(context.Background())
	if err != nil {
		t.Fatalf("Documents: %v", err)
	}
	if want := sm.m.documents(); !slices.Equal(ids, want) {
		t.Fatalf("Documents = %q, want %q", ids, want)
	}
	for _, doc := range append(ids, "never-written") {
		d, err := sm.s.LoadDocument(context.Background(), doc)
		if err != nil {
			t.Fatalf("LoadDocument(%q): %v", doc, err)
		}
		if diff := diffDocument(d, sm.m[doc]); diff != "" {
			t.Fatalf("LoadDocument(%q) differs from the model:\n%s", doc, diff)
		}
	}
}

func (h *harness) testProperty(t *testing.T) {
	for range propertyRounds(h.opts.Checks) {
		rapid.Check(t, func(rt *rapid.T) {
			sm := &machine{tt: t, reopen: h.opts.Reopen, s: h.open(t), m: model{}}
			if sm.s == nil {
				rt.Fatal("open returned a nil Store")
			}
			defer func() { _ = sm.s.Close() }()
			actions := map[string]func(*rapid.T){
				"":              sm.check,
				"commit":        sm.commit,
				"commitMerged":  sm.commitMerged,
				"commitInvalid": sm.commitInvalid,
				"delete":        sm.deleteDocument,
			}
			if sm.reopen != nil {
				actions["reopen"] = sm.reopenStore
			}
			rt.Repeat(actions)
		})
	}
}

// propertyRounds is how many times rapid.Check must run for at least checks
// random sequences, given the -rapid.checks flag (default 100). A fixed
// -rapid.seed gives one round, since every round would repeat it.
func propertyRounds(checks int) int {
	if f := flag.Lookup("rapid.seed"); f != nil && f.Value.String() != "0" {
		return 1
	}
	perRound := 100
	if f := flag.Lookup("rapid.checks"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
			perRound = n
		}
	}
	return max(1, (checks+perRound-1)/perRound)
}
