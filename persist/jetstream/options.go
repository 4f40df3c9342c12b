package jetstream

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// Defaults for the zero fields of Options.
const (
	// DefaultStream is the name of the stream that holds every document.
	DefaultStream = "ACCORD"
	// DefaultTimeout bounds each round trip to JetStream.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxBatch is the most messages one Write may take. It is the
	// server's default limit for an atomic batch (max_batch_size).
	DefaultMaxBatch = 1000
	// DefaultMaxInflight is the most Writes one Store has in flight at once.
	// The server accepts 50 open atomic batches per stream, shared by every
	// node that writes to it.
	DefaultMaxInflight = 16
)

// MaxKeySize is the longest document id or key, in bytes. Keys travel
// base64-encoded in subjects, which NATS keeps short.
const MaxKeySize = 512

// Options configure Open. The zero value, or a nil *Options, is a single
// replica file-backed stream named DefaultStream.
type Options struct {
	// Stream is the JetStream stream's name. Several independent stores
	// can share one NATS account under different names. Empty means
	// DefaultStream. The stream's subjects are "<lower-case name>.>".
	Stream string

	// Replicas is the stream's replication factor: 1, 3 or 5 (at most the
	// cluster's size). A Commit returns only after a quorum of replicas
	// stored the Write. Zero means 1. Open updates an existing stream to
	// this value.
	Replicas int

	// Memory keeps the stream in memory instead of files: for tests and
	// benchmarks only, since a restart of every replica loses it.
	Memory bool

	// Timeout bounds each round trip to JetStream (a batch's ack, a
	// stream info, a load's fetch). Zero means DefaultTimeout.
	Timeout time.Duration

	// MaxBatch is the most messages one Write may take, at most the
	// server's max_batch_size. Zero means DefaultMaxBatch.
	MaxBatch int

	// MaxInflight is the most Writes in flight at once. Zero means
	// DefaultMaxInflight.
	MaxInflight int

	// Logger receives the store's messages. Nil discards them.
	Logger *slog.Logger
}

func (o *Options) validate() error {
	var errs []error
	if o.Stream != "" && !validStreamName(o.Stream) {
		errs = append(errs, fmt.Errorf("jetstream: Options.Stream %q is not a valid stream name (letters, digits, - and _)", o.Stream))
	}
	switch o.Replicas {
	case 0, 1, 3, 5:
	default:
		errs = append(errs, fmt.Errorf("jetstream: Options.Replicas is %d, want 1, 3 or 5", o.Replicas))
	}
	if o.Timeout < 0 {
		errs = append(errs, errors.New("jetstream: Options.Timeout is negative"))
	}
	if o.MaxBatch < 0 || o.MaxBatch == 1 {
		errs = append(errs, errors.New("jetstream: Options.MaxBatch must be 0 or at least 2"))
	}
	if o.MaxInflight < 0 {
		errs = append(errs, errors.New("jetstream: Options.MaxInflight is negative"))
	}
	return errors.Join(errs...)
}

func (o *Options) setDefaults() {
	if o.Stream == "" {
		o.Stream = DefaultStream
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.MaxInflight == 0 {
		o.MaxInflight = DefaultMaxInflight
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

func (o *Options) storage() natsjs.StorageType {
	if o.Memory {
		return natsjs.MemoryStorage
	}
	return natsjs.FileStorage
}

func validStreamName(name string) bool {
	if len(name) > 64 {
		return false
	}
	return strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) < 0
}
