package postgres_test

import (
	"context"
	"errors"
	"log"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/postgres"
)

// Two servers on one database: the one that loaded a document before the
// other committed to it is fenced. (Compiled, not run: it needs a server.)
func ExampleOpen() {
	ctx := context.Background()
	url := "postgres://accord@db.internal/accord"
	a, err := postgres.Open(ctx, url, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := postgres.Open(ctx, url, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	save := func(by string) *persist.Write {
		return &persist.Write{Records: []persist.Put{{Key: "q1", Value: []byte("settled by " + by)}}}
	}
	_, _ = a.LoadDocument(ctx, "plan-1")
	_, _ = b.LoadDocument(ctx, "plan-1") // both decide on the same state
	if err := a.Commit(ctx, "plan-1", save("ana")); err != nil {
		log.Fatal(err)
	}
	err = b.Commit(ctx, "plan-1", save("ben"))
	if errors.Is(err, persist.ErrConflict) {
		// Nothing of ben's Write was applied: load the document again,
		// and decide on what it holds now.
		d, _ := b.LoadDocument(ctx, "plan-1")
		log.Printf("%s", d.Records["q1"]) // settled by ana
	}
}
