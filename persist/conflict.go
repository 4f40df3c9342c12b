package persist

import "errors"

// ErrConflict is wrapped by the error of a Commit refused because another
// writer committed to the document since this one loaded it: the Write was
// decided on a state that is no longer the document's, so nothing of it
// was applied (the stale writer is fenced). The writer loads the document
// again before it commits. Stores that several servers share return it:
// persist/postgres's Commit, persist/jetstream's CommitAt and the
// FencedStore of sync/cluster.
var ErrConflict = errors.New("persist: the document changed since it was loaded (conflict)")
