package jetstream_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/accord-crdt/accord/internal/natstest"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/jetstream"
)

func fullWrite(v string) *persist.Write {
	return &persist.Write{
		Records:     []persist.Put{{Key: "q1", Value: []byte(v)}, {Key: "q2", Value: []byte(v)}},
		Projections: []persist.Put{{Key: "q1", Value: []byte(v)}},
		Answers:     []persist.Put{{Key: "q1", Value: []byte(v)}},
		Drafts:      []persist.DraftPut{{Decision: "q1", Chunk: []byte(v), Snapshot: true}, {Decision: "q1", Chunk: []byte(v + "+")}, {Decision: "q2", Chunk: []byte(v)}},
	}
}

func isEmpty(d *persist.StoredDocument) bool {
	return len(d.Records)+len(d.Drafts)+len(d.Projections)+len(d.Answers) == 0
}

// TestDeleteDocument checks DeleteDocument as the conformance suite would:
// every kind of value of the document goes, other documents keep theirs,
// the document leaves Documents, a new Write starts it afresh, and bad
// calls change nothing.
func TestDeleteDocument(t *testing.T) {
	t.Parallel()
	for _, mem := range []bool{true, false} {
		name := map[bool]string{true: "memory", false: "file"}[mem]
		t.Run(name, func(t *testing.T) {
			srv := natstest.RunServer(t)
			nc := natstest.Connect(t, srv.ClientURL())
			s := openStore(t, nc, jetstream.Options{Memory: mem})
			ctx := context.Background()
			for _, doc := range []string{"a", "b", "a/b", "\x00"} {
				for _, v := range []string{"1", "2", "3"} {
					if err := s.Commit(ctx, doc, fullWrite(doc+v)); err != nil {
						t.Fatal(err)
					}
				}
			}
			before, _ := s.LoadDocument(ctx, "b")

			if err := s.DeleteDocument(ctx, "a"); err != nil {
				t.Fatalf("DeleteDocument: %v", err)
			}
			if d, err := s.LoadDocument(ctx, "a"); err != nil || !isEmpty(d) {
				t.Fatalf("after delete: %+v, %v; want empty", d, err)
			}
			if h, err := s.Head(ctx, "a"); err != nil || h != 0 {
				t.Fatalf("head after delete = %d, %v; want 0", h, err)
			}
			ids, _ := s.Documents(ctx)
			if want := []string{"\x00", "a/b", "b"}; !slices.Equal(ids, want) {
				t.Fatalf("Documents = %q, want %q", ids, want)
			}
			// A document whose id has a as a prefix (of its encoding or
			// not) is another document.
			for _, doc := range []string{"b", "a/b", "\x00"} {
				d, err := s.LoadDocument(ctx, doc)
				if err != nil || string(d.Records["q1"]) != doc+"3" || string(d.Drafts["q1"].Snapshot) != doc+"3" {
					t.Fatalf("%q after deleting a: %+v, %v", doc, d, err)
				}
			}
			after, _ := s.LoadDocument(ctx, "b")
			if !equalDoc(before, after) {
				t.Fatalf("b changed by deleting a")
			}

			// Written again, the document starts afresh.
			if err := s.Commit(ctx, "a", &persist.Write{Drafts: []persist.DraftPut{{Decision: "q2", Chunk: []byte("new")}}}); err != nil {
				t.Fatal(err)
			}
			d, _ := s.LoadDocument(ctx, "a")
			if len(d.Records) != 0 || len(d.Drafts) != 1 || !slices.EqualFunc(d.Drafts["q2"].Chunks, [][]byte{[]byte("new")}, func(a, b []byte) bool { return string(a) == string(b) }) {
				t.Fatalf("a written after delete: %+v", d)
			}

			if err := s.DeleteDocument(ctx, "never-written"); err != nil {
				t.Fatalf("DeleteDocument of a document never written: %v", err)
			}
			if err := s.DeleteDocument(ctx, ""); !errors.Is(err, persist.ErrEmptyKey) {
				t.Fatalf("DeleteDocument(\"\") = %v, want ErrEmptyKey", err)
			}
			if err := s.DeleteDocument(ctx, strings.Repeat("x", jetstream.MaxKeySize+1)); !errors.Is(err, jetstream.ErrKeyTooLong) {
				t.Fatalf("DeleteDocument of a long id = %v, want ErrKeyTooLong", err)
			}
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if err := s.DeleteDocument(cctx, "b"); !errors.Is(err, context.Canceled) {
				t.Fatalf("DeleteDocument with a cancelled context = %v", err)
			}
			if ids, _ := s.Documents(ctx); !slices.Equal(ids, []string{"\x00", "a", "a/b", "b"}) {
				t.Fatalf("Documents = %q", ids)
			}
			s.Close()
			if err := s.DeleteDocument(ctx, "b"); !errors.Is(err, persist.ErrClosed) {
				t.Fatalf("DeleteDocument after Close = %v, want ErrClosed", err)
			}
		})
	}
}

func equalDoc(a, b *persist.StoredDocument) bool {
	eq := func(x, y map[string][]byte) bool {
		return len(x) == len(y) && !slices.ContainsFunc(slices.Collect(mapKeys(x)), func(k string) bool { return string(x[k]) != string(y[k]) })
	}
	if !eq(a.Records, b.Records) || !eq(a.Projections, b.Projections) || !eq(a.Answers, b.Answers) || len(a.Drafts) != len(b.Drafts) {
		return false
	}
	for k, d := range a.Drafts {
		e := b.Drafts[k]
		if string(d.Snapshot) != string(e.Snapshot) || len(d.Chunks) != len(e.Chunks) {
			return false
		}
		for i := range d.Chunks {
			if string(d.Chunks[i]) != string(e.Chunks[i]) {
				return false
			}
		}
	}
	return true
}

func mapKeys(m map[string][]byte) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestLimits checks the refusals before anything is sent: too many
// messages for one batch, a value beyond max_payload, a key too long.
// Each applies nothing.
func TestLimits(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.ClientURL())
	s := openStore(t, nc, jetstream.Options{Memory: true, MaxBatch: 4})
	ctx := context.Background()
	many := &persist.Write{}
	for _, k := range []string{"a", "b", "c", "d"} {
		many.Records = append(many.Records, persist.Put{Key: k, Value: []byte(k)})
	}
	if err := s.Commit(ctx, "doc", many); !errors.Is(err, jetstream.ErrTooLarge) {
		t.Errorf("Commit of 4 records and a head with MaxBatch 4 = %v, want ErrTooLarge", err)
	}
	// Puts of one key collapse to one message, so this fits.
	same := &persist.Write{Records: []persist.Put{{Key: "a", Value: []byte("1")}, {Key: "a", Value: []byte("2")}, {Key: "a", Value: []byte("3")}, {Key: "a", Value: []byte("4")}}}
	if err := s.Commit(ctx, "fits", same); err != nil {
		t.Errorf("Commit of 4 puts of one key: %v", err)
	}
	big := &persist.Write{Records: []persist.Put{{Key: "a", Value: make([]byte, nc.MaxPayload())}}}
	if err := s.Commit(ctx, "doc", big); !errors.Is(err, jetstream.ErrTooLarge) {
		t.Errorf("Commit of a value of max_payload bytes = %v, want ErrTooLarge", err)
	}
	long := &persist.Write{Records: []persist.Put{{Key: strings.Repeat("k", jetstream.MaxKeySize+1), Value: []byte("v")}}}
	if err := s.Commit(ctx, "doc", long); !errors.Is(err, jetstream.ErrKeyTooLong) {
		t.Errorf("Commit with a long key = %v, want ErrKeyTooLong", err)
	}
	if ids, _ := s.Documents(ctx); !slices.Equal(ids, []string{"fits"}) {
		t.Errorf("Documents = %q, want only \"fits\"", ids)
	}
}

// TestCorruptLayout publishes messages that do not fit the layout into the
// stream, as a foreign writer could: loading the document reports a
// *persist.CorruptError naming the subject, never a panic.
func TestCorruptLayout(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.ClientURL())
	ctx := context.Background()
	// After the document's token: a key that is not base64url, an unknown
	// kind, a chunk without its unique token, a record with one too many.
	for _, tail := range []string{"r.!!", "x.cTE", "c.cTE", "r.cTE.extra"} {
		t.Run(tail, func(t *testing.T) {
			s := openStore(t, nc, jetstream.Options{Memory: true})
			if err := s.Commit(ctx, "doc", fullWrite("v")); err != nil {
				t.Fatal(err)
			}
			prefix := strings.ToLower(s.Stream()) + ".ZG9j." // base64url("doc")
			js, _ := nc.JetStream()
			if _, err := js.PublishMsg(&nats.Msg{Subject: prefix + tail, Data: []byte("x")}); err != nil {
				t.Fatal(err)
			}
			// The foreign message came after the last head: a Write
			// closes over it only with another commit.
			if err := s.Commit(ctx, "doc", fullWrite("w")); err != nil {
				t.Fatal(err)
			}
			_, err := s.LoadDocument(ctx, "doc")
			var ce *persist.CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, jetstream.ErrLayout) {
				t.Fatalf("LoadDocument = %v, want a *persist.CorruptError wrapping ErrLayout", err)
			}
			t.Logf("%v", err)
		})
	}
}
