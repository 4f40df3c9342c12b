package jetstream

import (
	"errors"
	"fmt"

	"github.com/accord-crdt/accord/persist"
)

var (
	// ErrConflict is returned by CommitAt when the document's head moved
	// since the head the caller read: another writer committed to the
	// document first. Nothing of the Write was applied. It matches
	// persist.ErrConflict, as every store's fenced commit does.
	ErrConflict = fmt.Errorf("jetstream: document head moved: %w", persist.ErrConflict)

	// ErrTooLarge is returned by Commit when a Write needs more messages
	// than one atomic batch holds (Options.MaxBatch), or one of its values,
	// with its subject and headers, exceeds the server's max_payload.
	// Nothing of the Write was applied.
	ErrTooLarge = errors.New("jetstream: write too large")

	// ErrKeyTooLong is returned by Commit when a document id or key is
	// longer than MaxKeySize bytes.
	ErrKeyTooLong = errors.New("jetstream: key too long")

	// ErrLayout is wrapped in a *persist.CorruptError when a message in the
	// stream does not fit the layout (an undecodable subject token, an
	// unknown kind).
	ErrLayout = errors.New("jetstream: message does not fit the layout")
)
