package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/accord-crdt/accord/internal/natstest"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/jetstream"
	"github.com/accord-crdt/accord/persist/storetest"
)

// streams names a fresh stream per Store, so the suite's Stores are empty
// and independent while they share one server.
var streams atomic.Int64

func openStore(t *testing.T, nc *nats.Conn, opts jetstream.Options) *jetstream.Store {
	t.Helper()
	if opts.Stream == "" {
		opts.Stream = fmt.Sprintf("T%d", streams.Add(1))
	}
	s, err := jetstream.Open(context.Background(), nc, &opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// reopen closes s and opens a new Store on the same stream through a new
// connection, as a restarted process would.
func reopen(url string, opts jetstream.Options) func(t *testing.T, s persist.Store) persist.Store {
	return func(t *testing.T, s persist.Store) persist.Store {
		t.Helper()
		name := s.(*jetstream.Store).Stream()
		if err := s.Close(); err != nil && !errors.Is(err, persist.ErrClosed) {
			t.Fatalf("Close: %v", err)
		}
		nc := natstest.Connect(t, url)
		opts.Stream = name
		s2, err := jetstream.Open(context.Background(), nc, &opts)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		return s2
	}
}

// checks is n random sequences, a tenth of them under the race detector.
func checks(n int) int {
	if raceEnabled {
		return max(1, n/10)
	}
	return n
}

// TestStore runs the conformance suite on memory streams of one server,
// where a commit costs tens of microseconds, so the property test runs the
// most sequences.
func TestStore(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.ClientURL())
	storetest.RunWithOptions(t, func(t *testing.T) persist.Store {
		return openStore(t, nc, jetstream.Options{Memory: true})
	}, storetest.Options{Reopen: reopen(srv.ClientURL(), jetstream.Options{Memory: true}), Checks: checks(20)})
}

// TestStoreFile runs the suite on file streams, the default. A single
// replica file stream stages every atomic batch in its own fsynced file
// (6 to 20 ms a commit on this machine), so the property test runs fewer
// sequences here.
func TestStoreFile(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.ClientURL())
	storetest.RunWithOptions(t, func(t *testing.T) persist.Store {
		return openStore(t, nc, jetstream.Options{})
	}, storetest.Options{Reopen: reopen(srv.ClientURL(), jetstream.Options{}), Checks: checks(5)})
}

func TestOpenInvalidOptions(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.ClientURL())
	for _, o := range []jetstream.Options{
		{Stream: "has.dot"},
		{Stream: "has space"},
		{Stream: strings.Repeat("x", 65)},
		{Replicas: 2},
		{Replicas: -1},
		{Timeout: -1},
		{MaxBatch: 1},
		{MaxInflight: -1},
	} {
		if s, err := jetstream.Open(context.Background(), nc, &o); err == nil {
			s.Close()
			t.Errorf("Open(%+v) succeeded", o)
		}
	}
	if _, err := jetstream.Open(context.Background(), nil, nil); err == nil {
		t.Error("Open without a connection succeeded")
	}
	// Three replicas on a single server cannot be placed.
	if s, err := jetstream.Open(context.Background(), nc, &jetstream.Options{Stream: "R3", Replicas: 3}); err == nil {
		s.Close()
		t.Error("Open with 3 replicas on one server succeeded")
	}
}
