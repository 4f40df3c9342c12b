// Package memhost implements the host side of package planner in memory:
// a plan document (Documents), Chat, the Planner runtime and members with
// their captured sessions. Tests use it, and so can an example server; a
// real host backs the same interfaces with its own document, Chat and
// agent.
//
// # Usage
//
//	h := memhost.New()
//	h.Docs.Set("plan-1", planner.Block{ID: "t", Kind: planner.Title, Text: "Plan"}, ...)
//	h.Members.Add("plan-1", question.Member{Login: "ana", Write: true})
//	h.Members.Capture("ana")
//	h.Runtime.SetOwner("plan-1", "ana")
//	opts := planner.Options{Authorities: local}
//	h.Wire(&opts) // Document, Chat, Runtime and Members
//	d, err := planner.New(opts)
//	h.Runtime.OnChange(func(string) { d.PokeAll() }) // an owner appearing, a Planner attaching, a turn ending
//
// Documents is also a planner.Editor (edit_plan, update_document) and a
// planner.Relinker (cards and anchors move after a rewrite).
//
// Everything is held in memory and lost with the process, unless the host
// installs Persist on Documents and Chat (every change is then handed to it
// before it is reported done) and Restores what it stored at start; Chat records
// accepted turns so that Accepted answers for as long as the Host lives.
// Accepted turns count as running (the Chat is busy) until Chat.Finish.
package memhost
