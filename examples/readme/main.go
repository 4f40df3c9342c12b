// Command readme is Accord's first program: a sync server on a bbolt
// file, a member's replica, and one decision created, marked, saved and
// read back settled.
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The server: decisions are committed to a bbolt file, and Authorize
	// says who each connection's member is and whether they may write.
	dir, err := os.MkdirTemp("", "accord-readme")
	check(err)
	defer os.RemoveAll(dir)
	store, err := boltstore.Open(filepath.Join(dir, "decisions.db"), nil)
	check(err)
	defer store.Close()
	srv, err := server.New(server.Options{
		Store: store,
		Authorize: func(r *http.Request, doc string) (question.Member, error) {
			// A real host checks the request's session or token here.
			return question.Member{Login: r.Header.Get("X-Login"), Write: true}, nil
		},
	})
	check(err)
	mux := http.NewServeMux()
	mux.Handle("/sync", srv) // ws://host/sync?doc=<document>
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	hs := &http.Server{Handler: mux}
	go hs.Serve(l)
	defer hs.Close()
	defer srv.Shutdown(context.Background()) // commits what was accepted

	// A member's replica of the document plan-1. Dial returns once the
	// decisions already in the document are ready to edit.
	c, err := replica.Dial(ctx, "ws://"+l.Addr().String()+"/sync?doc=plan-1", replica.Options{
		Header: http.Header{"X-Login": {"ana"}},
	})
	check(err)
	defer c.Close()

	// A decision: one choice question, its options, and the criteria each
	// option is marked against. Create returns once its draft is here.
	recs, err := c.Create(ctx, wire.Card{
		Key: "store-choice", // idempotency key: a retry returns the same decision
		Definition: question.Definition{Questions: []question.Question{{
			ID:   "store",
			Text: "Which store do we ship with?",
			Options: []question.Option{
				{ID: "bolt", Label: "bbolt"},
				{ID: "pg", Label: "Postgres"},
			},
			Criteria: []question.Criterion{
				{ID: "no-server", Label: "No server to run"},
				{ID: "cheap", Label: "Cheap to host"},
			},
		}}},
	})
	check(err)
	id := recs[0].ID

	// Edits apply to the local replica at once and reach the server (and
	// everyone else) when connected.
	check(c.SetMark(id, "store", "bolt", "no-server", marks.Yes))
	check(c.SetMark(id, "store", "pg", "no-server", marks.No))
	check(c.Choose(id, "store", "bolt", true))

	// Save: Submit waits until the edits are accepted, then claims the
	// revision displayed; a save from an outdated draft is refused as stale.
	res, err := c.Submit(ctx, id)
	check(err)
	if !res[0].OK {
		log.Fatalf("not saved: %s: %s", res[0].Reason, res[0].Message)
	}

	// The settled record: who saved it, what was chosen and marked.
	rec, _ := c.Record(id)
	answer := rec.Answer.Answers[0]
	fmt.Println(rec.Status, "by", rec.Answer.By)
	fmt.Println("choices:", answer.Choices)
	fmt.Println("marks:", answer.Marks.Attribute())
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
