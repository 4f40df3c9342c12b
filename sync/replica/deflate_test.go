package replica_test

import (
	"testing"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/wire"
)

// TestCompressedDocuments: the replica asks for compressed documents in
// its hello and loads a question:doc sent with deflated set; one that
// does not inflate is dropped and changes nothing.
func TestCompressedDocuments(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	w := writer(t, s, id)
	for i := range 40 {
		markN(t, w, i)
	}
	ana := connect(t, s, "ana", replica.Options{})
	if hs := s.hellosOf("ana"); len(hs) == 0 || !hs[0].Deflate {
		t.Fatalf("the hello does not ask for compressed documents: %+v", hs)
	}
	saved := w.Save()
	z := wire.DeflateDoc(saved)
	if len(z) >= len(saved) {
		t.Fatalf("the document does not compress (%d → %d bytes)", len(saved), len(z))
	}
	before, _, _ := ana.Accepted(id)
	s.inject(&wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: id, Doc: []byte{0xff, 0xfe, 0x01}, Heads: wireHeads(w.Heads()), Deflated: true})
	s.inject(&wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: id, Doc: z, Heads: wireHeads(w.Heads()), Deflated: true})
	testutil.Eventually(t, "the compressed document to be loaded", func() bool {
		h, _, _ := ana.Accepted(id)
		if !h.Equal(w.Heads()) && !h.Equal(before) {
			t.Fatalf("accepted %v, neither the old %v nor the document's %v", h, before, w.Heads())
		}
		return h.Equal(w.Heads())
	})
	got, _, err := ana.Draft(id)
	if err != nil {
		t.Fatal(err)
	}
	want, err := w.State()
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(want.Drafts[want.Generation]) {
		t.Fatalf("draft %+v, want %+v", got, want.Drafts[want.Generation])
	}
}
