package main

// The demo's side of the sync server (server.Host). Every method runs on
// a document's goroutine: those that must not block only poke work that
// runs elsewhere.

import (
	"context"
	"strings"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/server"
)

// appHost is the app as the sync server's Host: its research (research.go),
// its pages (notes.go), its members and personas, and the work that
// follows commits and findings. No implementation runs in the demo, so
// ImplementationActive is NopHost's.
type appHost struct {
	server.NopHost
	a *app
}

// Work and CancelWork are the demo's research host's.
func (h appHost) Work(ctx context.Context, doc string, kind question.FindingKind, ref string) (question.Work, error) {
	return h.a.research.Work(ctx, doc, kind, ref)
}

func (h appHost) CancelWork(ctx context.Context, doc string, kind question.FindingKind, ref string) (question.Work, error) {
	return h.a.research.Cancel(ctx, doc, kind, ref)
}

// EnsureChannel creates a decision's page with its Notes (ensurePage).
func (h appHost) EnsureChannel(ctx context.Context, doc, channel string) error {
	return h.a.ensurePage(ctx, doc, channel)
}

// KnownMember reports whether login can be asked in doc: a demo member,
// or a persona of the roster when personas are enabled.
func (h appHost) KnownMember(doc, login string) bool {
	for _, p := range personas {
		if strings.EqualFold(p.Login, login) {
			return true
		}
	}
	return h.a.desk.persona(login) != nil
}

// FindingsChanged wakes the research watcher, which posts the notice a
// finding's change owes, and the persona desk, whose personas answer the
// asks made of them.
func (h appHost) FindingsChanged(doc string) { h.a.pokeFindings(doc) }

// Opened wakes the same two when a member opens the document: the
// watcher's sweep settles work that ended while nobody heard.
func (h appHost) Opened(doc, login string) { h.a.pokeFindings(doc) }

// Committed wakes answer delivery and the pages' review list, and takes
// the plan's "Decided" line off each decision a commit reopened (off the
// document's goroutine: it waits on the document).
func (h appHost) Committed(doc string, decisions []string) {
	a := h.a
	if a.driver != nil {
		a.driver.Poke(doc)
	}
	a.feed.notify(doc) // a decision's status changes what owes a review
	if a.hasDecidedLines(doc) {
		a.background.Go(func() { a.unwriteReopened(doc, decisions) })
	}
}
