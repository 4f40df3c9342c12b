package boltstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
)

func Example() {
	dir, err := os.MkdirTemp("", "accord-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	s, err := boltstore.Open(filepath.Join(dir, "accord.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	// One command's effects, committed together and durable on return.
	err = s.Commit(ctx, "plan-1", &persist.Write{
		Records:     []persist.Put{{Key: "d1", Value: []byte("record v1")}},
		Drafts:      []persist.DraftPut{{Decision: "d1", Chunk: []byte("snapshot"), Snapshot: true}},
		Projections: []persist.Put{{Key: "d1", Value: []byte("card")}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// A later edit appends a chunk to the decision's CRDT document.
	err = s.Commit(ctx, "plan-1", &persist.Write{
		Drafts: []persist.DraftPut{{Decision: "d1", Chunk: []byte("edit 1")}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	s.Close()

	// After a restart, everything acknowledged is there.
	s, err = boltstore.Open(filepath.Join(dir, "accord.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ids, _ := s.Documents(ctx)
	doc, err := s.LoadDocument(ctx, "plan-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ids)
	fmt.Printf("%s / %s / %s + %q\n", doc.Records["d1"], doc.Projections["d1"], doc.Drafts["d1"].Snapshot, doc.Drafts["d1"].Chunks)
	// Output:
	// [plan-1]
	// record v1 / card / snapshot + ["edit 1"]
}

func ExampleStore_BackupFile() {
	dir, err := os.MkdirTemp("", "accord-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	s, err := boltstore.Open(filepath.Join(dir, "accord.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	if err := s.Commit(ctx, "plan-1", &persist.Write{Records: []persist.Put{{Key: "d1", Value: []byte("record")}}}); err != nil {
		fmt.Println(err)
		return
	}

	// A consistent copy while the store keeps serving; restoring is
	// replacing the file with it while the server is stopped.
	if _, err := s.BackupFile(ctx, filepath.Join(dir, "backup.db")); err != nil {
		fmt.Println(err)
		return
	}
	b, err := boltstore.Open(filepath.Join(dir, "backup.db"), &boltstore.Options{Verify: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	doc, _ := b.LoadDocument(ctx, "plan-1")
	fmt.Printf("%s\n", doc.Records["d1"])
	// Output:
	// record
}
