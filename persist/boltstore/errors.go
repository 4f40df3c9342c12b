package boltstore

import "errors"

// These errors are wrapped in a *persist.CorruptError, which names the bucket
// and key where the layout is wrong.
var (
	// ErrNotBucket is returned when the layout expects a bucket and finds
	// a value.
	ErrNotBucket = errors.New("boltstore: value where a bucket is expected")

	// ErrNotValue is returned when the layout expects a value and finds a
	// bucket.
	ErrNotValue = errors.New("boltstore: bucket where a value is expected")

	// ErrChunkKey is returned when a draft holds a key that is neither
	// "snapshot" nor an 8-byte chunk sequence number.
	ErrChunkKey = errors.New("boltstore: draft key is neither \"snapshot\" nor an 8-byte sequence number")

	// ErrAuditKey is returned when an audit log holds a key that is not
	// an 8-byte sequence number.
	ErrAuditKey = errors.New("boltstore: audit key is not an 8-byte sequence number")
)
