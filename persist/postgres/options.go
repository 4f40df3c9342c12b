package postgres

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"
)

// Defaults for the zero fields of Options.
const (
	// DefaultSchema is the PostgreSQL schema that holds the store's tables.
	DefaultSchema = "accord"
	// DefaultMaxConns is the most connections a Store opens unless the
	// URL's pool_max_conns or Options.MaxConns says otherwise.
	DefaultMaxConns = 16
	// DefaultTimeout bounds the wait for a commit's outcome once it was
	// sent, and for every other call's round trip.
	DefaultTimeout = 10 * time.Second
)

// Options configure Open. The zero value, or a nil *Options, is the store
// in schema DefaultSchema, through a pool sized as the URL says.
type Options struct {
	// Schema is the PostgreSQL schema of the store's tables, created if
	// missing. Several independent stores can share a database under
	// different schemas. Lower-case letters, digits and _, starting with
	// a letter or _; empty means DefaultSchema.
	Schema string

	// MaxConns is the most connections the Store opens. Zero means the
	// URL's pool_max_conns, or DefaultMaxConns. Commits of different
	// documents run on connections of their own, and the server flushes
	// the commits that arrive together in one write of its log: more
	// connections, more commits per flush (docs/BENCHMARKS.md).
	MaxConns int32

	// Timeout bounds each call's round trips to the server; once a Commit
	// was sent, it waits that long for its outcome whatever its context
	// says, so as not to give up on a Write that may still land. Zero
	// means DefaultTimeout.
	Timeout time.Duration

	// Logger receives the store's messages. Nil discards them.
	Logger *slog.Logger
}

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func (o *Options) validate() error {
	var errs []error
	if o.Schema != "" && !schemaName.MatchString(o.Schema) {
		errs = append(errs, fmt.Errorf("postgres: Options.Schema %q is not a plain schema name (lower-case letters, digits and _, at most 63)", o.Schema))
	}
	if o.MaxConns < 0 {
		errs = append(errs, errors.New("postgres: Options.MaxConns is negative"))
	}
	if o.Timeout < 0 {
		errs = append(errs, errors.New("postgres: Options.Timeout is negative"))
	}
	return errors.Join(errs...)
}

func (o *Options) setDefaults() {
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}
