package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/accord-crdt/accord/internal/natstest"
)

// silentKV answers its first silent reads with "no responders", as a
// bucket does whose replicas have not caught up with its leader yet (just
// created, or a server back).
type silentKV struct {
	natsjs.KeyValue
	mu     sync.Mutex
	silent int
	reads  int
}

func (k *silentKV) Get(ctx context.Context, key string) (natsjs.KeyValueEntry, error) {
	k.mu.Lock()
	k.reads++
	quiet := k.silent > 0
	if quiet {
		k.silent--
	}
	k.mu.Unlock()
	if quiet {
		return nil, nats.ErrNoResponders
	}
	return k.KeyValue.Get(ctx, key)
}

// TestSilentBucketIsAskedAgain: a lease bucket that answers no read for
// a moment neither keeps a node from starting nor refuses a client of a
// document another node owns; a read that fails otherwise is an error.
func TestSilentBucketIsAskedAgain(t *testing.T) {
	s := natstest.RunServer(t)
	nc := natstest.Connect(t, s.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := New(ctx, http.NotFoundHandler(), Options{Conn: nc, Node: "a", URL: "ws://a/sync"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	kv := &silentKV{KeyValue: r.kv, silent: 3}
	if err := awaitReads(ctx, kv); err != nil || kv.reads != 4 {
		t.Fatalf("awaitReads on a bucket silent for 3 reads: %v after %d reads; want nil after 4", err, kv.reads)
	}
	if err := awaitReads(ctx, failingKV{r.kv}); err == nil {
		t.Fatal("awaitReads on a bucket that refuses reads: nil error")
	}

	// Node b holds the lease: a's Create finds it taken, and its read of
	// who holds it meets the silent bucket first.
	other, _ := json.Marshal(owner{Node: "b", URL: "ws://b/sync", Run: "b1"})
	if _, err := r.kv.Create(ctx, leaseKey("held"), other); err != nil {
		t.Fatal(err)
	}
	kv = &silentKV{KeyValue: r.kv, silent: 2}
	r.kv = kv
	node, url, err := r.Owner(ctx, "held")
	if err != nil || node != "b" || url != "ws://b/sync" {
		t.Fatalf("Owner of a document b holds, through a silent bucket: %q %q %v; want b", node, url, err)
	}
	if kv.reads != 3 {
		t.Fatalf("%d reads of the lease; want 3 (two unanswered)", kv.reads)
	}
}

// failingKV refuses every read with an error that is not silence.
type failingKV struct{ natsjs.KeyValue }

func (failingKV) Get(context.Context, string) (natsjs.KeyValueEntry, error) {
	return nil, errors.New("permissions violation")
}
