package crdt

import (
	"bytes"
	"errors"
	"testing"

	"github.com/automerge/automerge-go"
)

// FuzzSyncMessage feeds arbitrary bytes through the guard (ParseSyncMessage,
// then CheckSyncChanges against the receiving document) and everything it
// lets through to automerge, exactly as a sync session would: receive, then
// generate replies, which is where a bad Bloom filter or a forged sequence
// number used to panic. Any input that kills the process is a hole in the
// guard.
//
// Seeds are the messages of real sessions (so the fuzzer starts from valid
// heads, filters and changes, and mutates change bodies that automerge's own
// loader must reject cleanly) and the messages known to crash automerge.
func FuzzSyncMessage(f *testing.F) {
	for _, raw := range syncMsgCorpus(f) {
		f.Add(raw)
	}
	for _, b := range syncMsgBombs(f) {
		f.Add(b.msg)
	}

	// The peer each input is delivered to holds a few changes, so that
	// Bloom filters are consulted when it replies.
	peer := automerge.New()
	for i := range 3 {
		syncMsgEdit(f, peer, "k", i)
	}
	saved := peer.Save()

	// Messages between the peer and a fork of it name hashes the peer
	// knows, which leads into other paths of automerge than strangers do.
	fork, err := peer.Fork()
	if err != nil {
		f.Fatal(err)
	}
	syncMsgEdit(f, fork, "k", "fork")
	syncMsgEdit(f, peer, "p", 1)
	for _, raw := range syncMsgExchange(f, automerge.NewSyncState(peer), automerge.NewSyncState(fork)) {
		f.Add(raw)
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseSyncMessage(data)
		if err != nil {
			if !errors.Is(err, ErrMalformedSync) {
				t.Fatalf("error %v does not wrap ErrMalformedSync", err)
			}
			return
		}
		enc := m.Encode()
		if !bytes.Equal(enc, data) {
			t.Fatalf("Encode(Parse(b)) != b\n b: %x\nre: %x", data, enc)
		}

		doc, err := automerge.Load(saved)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkSyncChanges(doc, m.Changes); err != nil {
			if !errors.Is(err, ErrMalformedSync) && !errors.Is(err, ErrMissingDeps) {
				t.Fatalf("error %v wraps neither ErrMalformedSync nor ErrMissingDeps", err)
			}
			return
		}
		ss := automerge.NewSyncState(doc)
		// automerge may refuse a message the guard passed, for instance a
		// change whose body is garbage; it must only not crash.
		if _, err := ss.ReceiveMessage(enc); err != nil {
			return
		}
		ss.GenerateMessage()
		ss.GenerateMessage()
	})
}
