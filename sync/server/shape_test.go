package server_test

import (
	"testing"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/crdt/crdttest"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// TestRogueShapeEditsOverTheSocket sends raw automerge changes that
// delete or replace a draft's structure as question:edit frames: each is
// refused with invalid and reset, nobody else hears of it, and marking
// keeps working for everyone afterwards.
func TestRogueShapeEditsOverTheSocket(t *testing.T) {
	ts := startServer(t, "")
	ana := dial(t, ts, "ana", wire.Binary)
	ben := dial(t, ts, "ben", wire.Text)
	rec := ana.create("k1")
	ben.expect(wire.KindCreated)
	ben.expect(wire.KindDoc)
	at := func(p ...any) []any { return p }
	for _, rogue := range []struct {
		name string
		make func(saved []byte) ([]byte, error)
	}{
		{"delete marks", func(s []byte) ([]byte, error) { return crdttest.RawDelete(s, at("drafts", "1", "q1", "marks")) }},
		{"replace marks", func(s []byte) ([]byte, error) { return crdttest.RawNewMap(s, at("drafts", "1", "q1", "marks")) }},
		{"delete the question's draft", func(s []byte) ([]byte, error) { return crdttest.RawDelete(s, at("drafts", "1", "q1")) }},
		{"delete questions", func(s []byte) ([]byte, error) { return crdttest.RawDelete(s, at("questions")) }},
	} {
		ch, err := rogue.make(ana.docs[rec.ID].Save())
		if err != nil {
			t.Fatal(err)
		}
		m := &wire.Edit{Header: wire.Header{Kind: wire.KindEdit}, ID: rec.ID, Changes: ch}
		r := ana.request(m, &m.Header)
		if r.OK || r.Reason != question.Invalid || !r.Reset || len(r.Doc) == 0 {
			t.Fatalf("%s: %+v", rogue.name, r)
		}
		d, err := crdt.Load(r.Doc, nil, crdt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ana.docs[rec.ID] = d // the reset
	}
	r := ana.edit(rec.ID, func(d *crdt.Doc) error { return d.SetMark("q1", "email", "cheap", marks.Yes) })
	if !r.OK {
		t.Fatalf("an honest edit after the rogue ones: %+v", r)
	}
	ch := ben.expect(wire.KindChanges).(*wire.Changes)
	if ch.ID != rec.ID {
		t.Fatalf("changes for %s", ch.ID)
	}
	dr, err := ben.docs[rec.ID].Draft()
	if err != nil || dr.Questions["q1"].Marks["email/cheap"] != marks.Yes {
		t.Fatalf("ben's replica after the rogue edits: %+v %v", dr, err)
	}
	if err := ben.docs[rec.ID].SetMark("q1", "sms", "cheap", marks.No); err != nil {
		t.Fatalf("SetMark on ben's replica: %v", err)
	}
}
