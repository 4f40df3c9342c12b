package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// failingStore fails the commits it is told to, as a fenced commit fails
// on a node whose lease another node took: nothing is applied.
// With landed set, the failed commits are applied and then reported of
// unknown outcome, as a commit whose acknowledgement was lost.
type failingStore struct {
	persist.Store
	fail   atomic.Int32
	landed bool
}

func (f *failingStore) Commit(ctx context.Context, doc string, w *persist.Write) error {
	if !w.Empty() && f.fail.Add(-1) >= 0 {
		if f.landed {
			if err := f.Store.Commit(ctx, doc, w); err != nil {
				return err
			}
			return fmt.Errorf("no acknowledgement: %w", persist.ErrOutcomeUnknown)
		}
		return errors.New("commit refused")
	}
	return f.Store.Commit(ctx, doc, w)
}

// TestTypedOnceAfterAFailedCommit: the edit of a token whose commit fails
// is refused to its author with reset (the replica drops it), but the
// other member received it early and offers it again when it redials.
// The token must not be typed again: both copies would land in the
// answer. typeUntilStored, which writes the failover tests' probe edits,
// types a token of a new name instead, so every token is there at most
// once and the stored one exactly once. (Typing the same token again is
// what put two probe tokens twice in TestSIGKILLFailoverCycles' answer.)
func TestTypedOnceAfterAFailedCommit(t *testing.T) {
	store := &failingStore{}
	base := serveOn(t, func(bolt persist.Store) persist.Store { store.Store = bolt; return store })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(member string) *replica.Client {
		u := base + "/?" + url.Values{"doc": {"typed"}, "member": {member}}.Encode()
		cl, err := replica.Dial(ctx, u, replica.Options{Format: wire.Binary, MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	author, other := dial("ana"), dial("bo")
	recs, err := author.Create(ctx, textCard("text"))
	if err != nil {
		t.Fatal(err)
	}
	id := recs[0].ID
	testutil.Eventually(t, "the other member to hold the decision", func() bool { _, _, err := other.Draft(id); return err == nil })

	store.fail.Store(1)
	var mu sync.Mutex
	var typed []string
	stored, err := typeUntilStored(ctx, author, id, "ana", 2*time.Second, func(tok string) {
		mu.Lock()
		typed = append(typed, tok)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if store.fail.Load() >= 0 {
		t.Fatal("no commit failed: the test did not exercise a reset")
	}
	everyone := []*replica.Client{author, other}
	testutil.Eventually(t, "both members to flush and converge", func() bool {
		for _, cl := range everyone {
			fctx, fcancel := context.WithTimeout(ctx, time.Second)
			err := cl.Flush(fctx)
			fcancel()
			if err != nil {
				return false
			}
		}
		return converged(everyone, id)
	})
	d, _, _ := author.Draft(id)
	text := d.Questions["q1"].Text
	mu.Lock()
	defer mu.Unlock()
	if len(typed) < 2 {
		t.Fatalf("typed %v: the failed commit's refusal did not reach the author", typed)
	}
	for _, tok := range typed {
		n := strings.Count(text, tok)
		if n > 1 || (tok == stored && n != 1) {
			t.Fatalf("token %s is in the answer %d times (typed %v, stored %s): %q", tok, n, typed, stored, text)
		}
	}
	t.Logf("typed %v, stored %s; the answer reads %q", typed, stored, text)
}

// TestUnknownCommitOutcomeIsNotARefusal: an append whose commit landed
// but was never acknowledged (the store says its outcome is unknown) is
// not answered as refused, which would tell the client nothing was
// applied, nor as applied: the connection closes unanswered. The append
// sent again with the same key (by the replica on its next connection,
// or by the caller) is answered as a repeat, and the option is there
// once.
func TestUnknownCommitOutcomeIsNotARefusal(t *testing.T) {
	bolt, err := boltstore.Open(filepath.Join(t.TempDir(), "accord.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	store := &failingStore{Store: bolt, landed: true}
	srv, err := server.New(server.Options{Store: store, Authorize: authorize})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = bolt.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(hs.URL, "http") + "/?" + url.Values{"doc": {"unknown"}, "member": {"ana"}}.Encode()
	cl, err := replica.Dial(ctx, u, replica.Options{Format: wire.Binary, MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs, err := cl.Create(ctx, card("appends"))
	if err != nil {
		t.Fatal(err)
	}
	id := recs[0].ID
	store.fail.Store(1)
	opt, _, repeated, err := cl.AppendOption(ctx, id, "q1", "k1", "Sharded")
	if r := (*question.Refusal)(nil); errors.As(err, &r) {
		t.Fatalf("an append whose commit may have landed was refused (%s): the client would take it as not applied", r.Reason)
	}
	if err == nil && !repeated {
		t.Fatal("an append whose commit's outcome is unknown was acknowledged as applied")
	}
	if err != nil {
		testutil.Eventually(t, "the retried append", func() bool {
			opt, _, repeated, err = cl.AppendOption(ctx, id, "q1", "k1", "Sharded")
			return err == nil
		})
	}
	rec, _ := cl.Record(id)
	n := 0
	for _, o := range rec.Definition.Questions[0].Options {
		if o.Label == "Sharded" {
			n++
		}
	}
	if !repeated || n != 1 {
		t.Fatalf("retried append: %+v repeated=%v; the option is there %d times", opt, repeated, n)
	}
}

// lateStore holds back the first Write it is asked to commit, as a node
// cut off from NATS holds one whose ack never comes: that Commit reports
// its outcome unknown, and the Write lands only when the next Commit
// comes (the partition heals), first, so that the next one, decided on
// the state before it, is refused (fenced), nothing of it applied.
type lateStore struct {
	persist.Store
	mu   sync.Mutex
	arm  bool // hold the next Write
	held *persist.Write
}

func (l *lateStore) Commit(ctx context.Context, doc string, w *persist.Write) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case w.Empty():
	case l.arm:
		l.arm, l.held = false, w
		return fmt.Errorf("no acknowledgement: %w", persist.ErrOutcomeUnknown)
	case l.held != nil:
		held := l.held
		l.held = nil
		if err := l.Store.Commit(ctx, doc, held); err != nil {
			return err
		}
		return errors.New("fenced: the document moved since it was loaded")
	}
	return l.Store.Commit(ctx, doc, w)
}

// TestResentRequestLandingLateIsNotRefused: a request sent again after its
// connection dropped, whose first send's Write lands only after the resend
// was decided (its commit then refused: unavailable, nothing of it
// applied), is not reported refused: the first send took effect. The
// client sends it once more; decided on the document as it then is, it is
// answered as a repeat.
func TestResentRequestLandingLateIsNotRefused(t *testing.T) {
	store := &lateStore{}
	base := serveOn(t, func(bolt persist.Store) persist.Store { store.Store = bolt; return store })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u := base + "/?" + url.Values{"doc": {"late"}, "member": {"ana"}}.Encode()
	cl, err := replica.Dial(ctx, u, replica.Options{Format: wire.Binary, MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs, err := cl.Create(ctx, card("appends"))
	if err != nil {
		t.Fatal(err)
	}
	id := recs[0].ID
	store.mu.Lock()
	store.arm = true
	store.mu.Unlock()
	opt, _, repeated, err := cl.AppendOption(ctx, id, "q1", "k1", "Sharded")
	rec, _ := cl.Record(id)
	n := 0
	for _, o := range rec.Definition.Questions[0].Options {
		if o.Label == "Sharded" {
			n++
		}
	}
	if r := (*question.Refusal)(nil); errors.As(err, &r) {
		t.Fatalf("an append whose first send took effect was reported refused (%s); the option is there %d times", r.Reason, n)
	}
	if err != nil || !repeated || n != 1 {
		t.Fatalf("append: %+v repeated=%v, %v; the option is there %d times", opt, repeated, err, n)
	}
}

// serveOn serves the sync protocol over a real socket on a fresh bbolt
// file, wrapped in the store wrap returns, until the test ends; it
// returns the server's WebSocket base URL.
func serveOn(t *testing.T, wrap func(persist.Store) persist.Store) string {
	t.Helper()
	bolt, err := boltstore.Open(filepath.Join(t.TempDir(), "accord.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Store: wrap(bolt), Authorize: authorize})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = bolt.Close()
	})
	return "ws" + strings.TrimPrefix(hs.URL, "http")
}
