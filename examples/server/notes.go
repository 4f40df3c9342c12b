package main

// The decision's page (E1, E2). Expand (question:page) turns a decision of
// the plan into its own child document, question:<recordId>. The child's
// body is the decision's Notes: one written decision with the key "notes"
// in the child document, whose shared draft text every member edits live
// through the same sync path as any answer (an automerge text, stored in
// bbolt). It is never saved: Notes have no answer, only their draft.

import (
	"context"

	"github.com/accord-crdt/accord/question"
)

// notesKey is the key of the Notes decision in a page's child document.
const notesKey = "notes"

// pageHost is who creates a page's Notes: the host itself, not a member.
var pageHost = question.Member{Login: "accord", Write: true}

// ensurePage creates the child document of a decision's page with its
// Notes (appHost.EnsureChannel, server.Host). It is idempotent: the key
// makes a retry, or a second member's expand, return the same Notes. It
// runs on the parent document's goroutine and waits on the child's, which
// never waits on its parent.
func (a *app) ensurePage(ctx context.Context, doc, channel string) error {
	return a.srv.Do(ctx, channel, func(auth *question.Authority) error {
		_, err := auth.Create(ctx, pageHost, []question.CreateRequest{{
			Key:    notesKey,
			Origin: question.FromPerson,
			Definition: question.Definition{Questions: []question.Question{{
				Text: "Notes", Response: question.Text,
			}}},
		}})
		return err
	})
}
