package boltstore

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/accord-crdt/accord/persist"
)

// guard runs fn, a call into bbolt, so that damage bbolt trips over becomes
// a *persist.CorruptError naming the file (and bucket, when known) instead
// of taking the host down: a panic is recovered, and a memory fault on the
// mapped file (a page id pointing past its end) is turned into a panic
// first, for this goroutine only. It is the last line behind checkFile.
//
// Every CorruptError fn returns is given the file's path too.
func guard(file, bucket string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = &persist.CorruptError{File: file, Bucket: bucket, Err: fmt.Errorf("boltstore: bbolt panicked: %v", p)}
		}
	}()
	return inFile(file, fn())
}

// inFile names file in a CorruptError err carries that names none.
func inFile(file string, err error) error {
	var ce *persist.CorruptError
	if errors.As(err, &ce) && ce.File == "" {
		ce.File = file
	}
	return err
}
