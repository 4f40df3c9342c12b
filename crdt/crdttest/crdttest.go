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
	return rawEdit(saved, func(am *automerge.Doc) error {
		if err := am.Path(path...).Set(value); err != nil {
			return fmt.Errorf("write %v: %w", path, err)
		}
		return nil
	})
}

// RawDelete loads the saved document, deletes the key at path with no
// checks, and returns the resulting change, encoded as RawChange does.
func RawDelete(saved []byte, path []any) ([]byte, error) {
	return rawEdit(saved, func(am *automerge.Doc) error {
		if err := am.Path(path...).Delete(); err != nil {
			return fmt.Errorf("delete %v: %w", path, err)
		}
		return nil
	})
}

// rawEdit applies edit to a copy of the saved document under a fresh actor
// and returns the change it made.
func rawEdit(saved []byte, edit func(am *automerge.Doc) error) ([]byte, error) {
	am, err := automerge.Load(saved)
	if err != nil {
		return nil, err
	}
	if err := am.SetActorID(string(crdt.NewActorID())); err != nil {
		return nil, err
	}
	heads := am.Heads()
	if err := edit(am); err != nil {
		return nil, err
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

// RawNewMap loads the saved document, puts a fresh empty map at path
// (replacing whatever was there), and returns the change, encoded as
// RawChange does.
func RawNewMap(saved []byte, path []any) ([]byte, error) {
	return rawEdit(saved, func(am *automerge.Doc) error {
		if err := am.Path(path...).Set(automerge.NewMap()); err != nil {
			return fmt.Errorf("replace %v: %w", path, err)
		}
		return nil
	})
}

// RawNewText loads the saved document, puts a fresh text holding s at path
// (replacing whatever was there), and returns the change, encoded as
// RawChange does.
func RawNewText(saved []byte, path []any, s string) ([]byte, error) {
	return rawEdit(saved, func(am *automerge.Doc) error {
		if err := am.Path(path...).Set(automerge.NewText(s)); err != nil {
			return fmt.Errorf("replace %v: %w", path, err)
		}
		return nil
	})
}
