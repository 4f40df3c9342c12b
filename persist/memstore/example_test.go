package memstore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/memstore"
)

func Example() {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()

	err := s.Commit(ctx, "plan-1", &persist.Write{
		Records: []persist.Put{{Key: "d1", Value: []byte("record")}},
		Drafts: []persist.DraftPut{
			{Decision: "d1", Chunk: []byte("snap"), Snapshot: true},
			{Decision: "d1", Chunk: []byte("c1")},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	doc, err := s.LoadDocument(ctx, "plan-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("record %s, snapshot %s, chunks %q\n", doc.Records["d1"], doc.Drafts["d1"].Snapshot, doc.Drafts["d1"].Chunks)
	// Output:
	// record record, snapshot snap, chunks ["c1"]
}

func ExampleStore_FailNextCommit() {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()

	errDisk := errors.New("disk full")
	s.FailNextCommit(errDisk)
	err := s.Commit(ctx, "plan-1", &persist.Write{
		Records: []persist.Put{{Key: "d1", Value: []byte("record")}},
	})
	fmt.Println(errors.Is(err, errDisk))

	ids, _ := s.Documents(ctx)
	fmt.Println(len(ids))
	// Output:
	// true
	// 0
}
