package postgres

import "errors"

// Limits of what one Commit stores. Keys are indexed, and PostgreSQL
// refuses an index entry over about 2.7 KB; a Write travels in one
// message of the protocol, which holds at most 1 GB.
const (
	// MaxKeySize is the longest document id or key, in bytes.
	MaxKeySize = 512
	// MaxValueSize is the largest value or draft chunk, in bytes.
	MaxValueSize = 256 << 20
	// MaxWriteSize is the most bytes of keys and values one Write holds.
	MaxWriteSize = 512 << 20
)

var (
	// ErrKeyTooLong is returned by Commit when a document id or key is
	// longer than MaxKeySize bytes. Nothing of the Write was applied.
	ErrKeyTooLong = errors.New("postgres: key too long")

	// ErrTooLarge is returned by Commit when a value is larger than
	// MaxValueSize, or the Write larger than MaxWriteSize. Nothing of the
	// Write was applied.
	ErrTooLarge = errors.New("postgres: write too large")

	// ErrChecksum is wrapped in a *persist.CorruptError when a stored
	// value does not match the checksum stored beside it: the row was
	// changed outside the store, or damaged below PostgreSQL.
	ErrChecksum = errors.New("postgres: value does not match its checksum")

	// ErrSchemaTooNew is returned by Open when the database's schema has
	// a version this build does not know: a newer build migrated it, and
	// this one must not write to it.
	ErrSchemaTooNew = errors.New("postgres: the schema is newer than this build")
)
