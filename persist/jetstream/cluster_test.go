package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/natstest"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/jetstream"
	"github.com/accord-crdt/accord/persist/storetest"
)

// openR3 opens a three-replica Store through a connection to url. A new
// cluster may still be settling its first stream placement, so Open is
// retried for a few seconds.
func openR3(t *testing.T, url, stream string) *jetstream.Store {
	t.Helper()
	nc := natstest.Connect(t, url)
	var s *jetstream.Store
	testutil.EventuallyWithin(t, 15*time.Second, "Open R3 "+stream+" through "+url, func() (bool, string) {
		var err error
		s, err = jetstream.Open(context.Background(), nc, &jetstream.Options{Stream: stream, Replicas: 3})
		return err == nil, fmt.Sprint(err)
	})
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestStoreR3 runs the conformance suite on three-replica streams of a
// three-server cluster; each reopen goes through another server.
func TestStoreR3(t *testing.T) {
	t.Parallel()
	c := natstest.RunCluster(t, 3)
	var next sync.Mutex
	turn := 0
	storetest.RunWithOptions(t, func(t *testing.T) persist.Store {
		return openR3(t, c.URLs(), fmt.Sprintf("R%d", streams.Add(1)))
	}, storetest.Options{
		Reopen: func(t *testing.T, s persist.Store) persist.Store {
			name := s.(*jetstream.Store).Stream()
			if err := s.Close(); err != nil && !errors.Is(err, persist.ErrClosed) {
				t.Fatalf("Close: %v", err)
			}
			next.Lock()
			turn++
			url := c.URL(turn % c.Size())
			next.Unlock()
			return openR3(t, url, name)
		},
		Checks: checks(5),
	})
}

// TestCommitAtOneWinner races two Stores, connected to two different
// servers, committing a save of the same decision at the same head, many
// times: each round exactly one wins, the other gets ErrConflict and
// leaves no trace, and the head moves to the winner's.
func TestCommitAtOneWinner(t *testing.T) {
	t.Parallel()
	c := natstest.RunCluster(t, 3)
	a := openR3(t, c.URL(0), "SAVES")
	b := openR3(t, c.URL(1), "SAVES")
	ctx := context.Background()
	const rounds = 40
	wins := map[string]int{}
	for r := range rounds {
		head, err := a.Head(ctx, "doc")
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			who  string
			head uint64
			err  error
		}
		results := make(chan result, 2)
		var start sync.WaitGroup
		start.Add(1)
		for _, st := range []struct {
			who string
			s   *jetstream.Store
		}{{"a", a}, {"b", b}} {
			go func() {
				start.Wait()
				w := &persist.Write{
					Records: []persist.Put{{Key: "q1", Value: []byte(st.who + strconv.Itoa(r))}},
					Drafts:  []persist.DraftPut{{Decision: "q1", Chunk: []byte(st.who + strconv.Itoa(r))}},
				}
				h, err := st.s.CommitAt(ctx, "doc", w, head)
				results <- result{st.who, h, err}
			}()
		}
		start.Done()
		r1, r2 := <-results, <-results
		var win, lose result
		switch {
		case r1.err == nil && errors.Is(r2.err, jetstream.ErrConflict):
			win, lose = r1, r2
		case r2.err == nil && errors.Is(r1.err, jetstream.ErrConflict):
			win, lose = r2, r1
		default:
			t.Fatalf("round %d: outcomes %v and %v, want one nil and one ErrConflict", r, r1.err, r2.err)
		}
		wins[win.who]++
		d, h, err := b.LoadDocumentHead(ctx, "doc")
		if err != nil {
			t.Fatal(err)
		}
		if h != win.head || h <= head {
			t.Fatalf("round %d: head %d after the win at %d (was %d)", r, h, win.head, head)
		}
		want := win.who + strconv.Itoa(r)
		if got := string(d.Records["q1"]); got != want {
			t.Fatalf("round %d: record %q, want the winner's %q", r, got, want)
		}
		chunks := d.Drafts["q1"].Chunks
		if len(chunks) != r+1 || string(chunks[r]) != want {
			t.Fatalf("round %d: %d chunks ending %q, want %d ending %q (loser %s left a trace?)", r, len(chunks), chunks[len(chunks)-1], r+1, want, lose.who)
		}
	}
	t.Logf("%d rounds: wins %v", rounds, wins)
}

// TestR3LeaderLoss stops the stream leader's server between commits and
// checks that every acknowledged Write is there, through the survivors and
// then through the restarted server alone.
func TestR3LeaderLoss(t *testing.T) {
	t.Parallel()
	c := natstest.RunCluster(t, 3)
	s := openR3(t, c.URLs(), "LOSS")
	ctx := context.Background()
	acked := 0
	commit := func(i int) error {
		k := strconv.Itoa(i)
		return s.Commit(ctx, "doc", &persist.Write{
			Records: []persist.Put{{Key: k, Value: []byte(k)}},
			Drafts:  []persist.DraftPut{{Decision: "d", Chunk: []byte(k)}},
		})
	}
	for ; acked < 30; acked++ {
		if err := commit(acked); err != nil {
			t.Fatal(err)
		}
	}
	leader := streamLeader(t, c, "LOSS")
	c.Stop(leader)
	t.Logf("stopped the stream leader n%d after %d commits", leader, acked)
	failed := 0
	start := time.Now()
	for acked < 60 {
		if err := commit(acked); err != nil {
			// Refused while a new leader is elected: not acknowledged,
			// and the same Write is committed again, as a client would.
			failed++
			if time.Since(start) > 20*time.Second {
				t.Fatalf("no commit through the survivors for 20s: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		acked++
	}
	t.Logf("30 more commits acknowledged after %d refusals", failed)
	check := func(s *jetstream.Store) error {
		d, err := s.LoadDocument(ctx, "doc")
		if err != nil {
			return err
		}
		chunks := d.Drafts["d"].Chunks
		for i := range acked {
			k := strconv.Itoa(i)
			if string(d.Records[k]) != k {
				return fmt.Errorf("acknowledged record %s missing", k)
			}
		}
		// A refused Write may still have landed once; none twice, and in order.
		seen := map[string]bool{}
		for _, ch := range chunks {
			if seen[string(ch)] {
				return fmt.Errorf("chunk %s twice", ch)
			}
			seen[string(ch)] = true
		}
		if len(chunks) < acked {
			return fmt.Errorf("%d chunks, %d acknowledged", len(chunks), acked)
		}
		return nil
	}
	if err := check(s); err != nil {
		t.Fatal(err)
	}
	c.Start(leader)
	alone := openR3(t, c.URL(leader), "LOSS")
	testutil.EventuallyWithin(t, 15*time.Second, fmt.Sprintf("the acknowledged writes through the restarted n%d", leader), func() (bool, string) {
		err := check(alone)
		return err == nil, fmt.Sprint(err)
	})
}

func streamLeader(t *testing.T, c *natstest.Cluster, stream string) int {
	t.Helper()
	for i := range c.Size() {
		if srv := c.Server(i); srv != nil && srv.JetStreamIsStreamLeader("$G", stream) {
			return i
		}
	}
	t.Fatalf("no leader for stream %s", stream)
	return -1
}
