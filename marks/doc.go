// Package marks holds the pure values of a decision's criteria matrix: the
// Mark a person gives one cell, the cell keys that address a cell
// ("optionId/criterionId"), the sparse Snapshot a settled answer keeps, and
// the projection attribute that carries a snapshot in a plan document
// (marks="o1/c1:yes o2/c1:no").
//
// Nothing here does I/O or keeps state; every function is deterministic.
//
// # Usage
//
//	key := marks.Key("opt-a", "crit-1")          // "opt-a/crit-1"
//	snap := marks.Snapshot{key: marks.Yes}
//	attr := snap.Attribute()                      // "opt-a/crit-1:yes"
//	back, err := marks.ParseAttribute(attr)       // equal to snap
//
// In a shared draft a cell may also be cleared: its register holds null.
// A cleared cell is distinct from a cell nobody ever marked (the key is
// absent); both render blank and neither is kept in a Snapshot.
package marks
