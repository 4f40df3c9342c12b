package boltstore

import (
	"errors"
	"log/slog"
	"time"
)

// Defaults for the zero fields of Options.
const (
	// DefaultTimeout is how long Open waits for the file lock.
	DefaultTimeout = 2 * time.Second
	// DefaultMaxBatchSize is the most Writes one transaction commits.
	DefaultMaxBatchSize = 1000
)

// Options configure Open. The zero value, or a nil *Options, is a durable
// store with the defaults above.
type Options struct {
	// Logger receives the store's and bbolt's messages. Nil discards them.
	Logger *slog.Logger

	// Timeout is how long Open waits for the file lock, which another
	// process (or another Store in this one) may hold. Zero means
	// DefaultTimeout.
	Timeout time.Duration

	// MaxBatchSize is the most Writes one bbolt transaction (and so one
	// fsync) commits. Zero means DefaultMaxBatchSize.
	MaxBatchSize int

	// MaxBatchDelay is how long the goroutine that starts a transaction
	// waits for more Writes to join it, unless MaxBatchSize Writes are
	// already waiting. Zero, the default, starts at once: Writes that
	// arrive while a transaction commits still share the next one, so a
	// delay only pays off when fsync is cheap and writers are many.
	MaxBatchDelay time.Duration

	// Verify runs Check when the file is opened and refuses a file that
	// fails it. Open always walks the file's page structure before bbolt
	// maps it (and keeps damage below one document to that document);
	// Verify adds bbolt's own consistency check and reads every document
	// back, and refuses damage anywhere, a damaged document included.
	Verify bool

	// NoSync skips fsync on commit. UNSAFE: a crash or power loss can lose
	// Writes whose Commit returned nil, or corrupt the file. For
	// benchmarks that measure everything but the disk; never in service.
	NoSync bool
}

func (o *Options) validate() error {
	var errs []error
	if o.Timeout < 0 {
		errs = append(errs, errors.New("boltstore: Options.Timeout is negative"))
	}
	if o.MaxBatchSize < 0 {
		errs = append(errs, errors.New("boltstore: Options.MaxBatchSize is negative"))
	}
	if o.MaxBatchDelay < 0 {
		errs = append(errs, errors.New("boltstore: Options.MaxBatchDelay is negative"))
	}
	return errors.Join(errs...)
}

func (o *Options) setDefaults() {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBatchSize == 0 {
		o.MaxBatchSize = DefaultMaxBatchSize
	}
}
