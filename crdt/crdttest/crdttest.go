// Package crdttest builds raw automerge changes that the typed crdt API
// refuses to write, so tests can prove that the authority refuses them
// when they arrive from a replica.
package crdttest

import (
	"fmt"

	"github.com/automerge/automerge-go"

	"github.com/accord-crdt/accord/crdt"
)

// RawChange loads the saved document, writes value at path with no checks,
// and returns the resulting change encoded as crdt.Doc.ChangesSince does.
// A path element is a string (map key) or an int (list index).
func RawChange(saved []byte, path []any, value any) ([]byte, error) {
	am, err := automerge.Load(saved)
	if err != nil {
		return nil, err
	}
	if err := am.SetActorID(string(crdt.NewActorID())); err != nil {
		return nil, err
	}
	heads := am.Heads()
	if value == nil {
		err = am.Path(path...).Set(nil)
	} else {
		err = am.Path(path...).Set(value)
	}
	if err != nil {
		return nil, fmt.Errorf("write %v: %w", path, err)
	}
	if _, err := am.Commit("raw"); err != nil {
		return nil, err
	}
	chs, err := am.Changes(heads...)
	if err != nil {
		return nil, err
	}
	return automerge.SaveChanges(chs), nil
}

// RawDelete loads the saved document, deletes the key at path with no
// checks, and returns the resulting change, encoded as RawChange does.
func RawDelete(saved []byte, path []any) ([]byte, error) {
	am, err := automerge.Load(saved)
	if err != nil {
		return nil, err
	}
	if err := am.SetActorID(string(crdt.NewActorID())); err != nil {
		return nil, err
	}
	heads := am.Heads()
	if err := am.Path(path...).Delete(); err != nil {
		return nil, fmt.Errorf("delete %v: %w", path, err)
	}
	if _, err := am.Commit("raw"); err != nil {
		return nil, err
	}
	chs, err := am.Changes(heads...)
	if err != nil {
		return nil, err
	}
	return automerge.SaveChanges(chs), nil
}
