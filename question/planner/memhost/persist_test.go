package memhost_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/question/planner/memhost"
)

var bg = context.Background()

// A change whose persisting fails is undone and reported; a stored state
// restores the same document and Chat, pending turns included.
func TestPersistAndRestore(t *testing.T) {
	d := memhost.NewDocuments()
	d.Set("p", planner.Block{ID: "a", Kind: planner.Paragraph, Text: "one"})
	var stored memhost.DocState
	fail := errors.New("disk full")
	d.Persist(func(string, memhost.DocState) error { return fail })
	rev := d.Revision("p")
	if err := d.Edit("p", "a", "two"); !errors.Is(err, fail) || d.Text("p", "a") != "one" || d.Revision("p") != rev {
		t.Fatalf("a failed persist kept the edit: %v, %q, %s", err, d.Text("p", "a"), d.Revision("p"))
	}
	if err := d.Place(bg, "p", []planner.Placement{{Decision: "x", After: "a", Link: "a"}}); !errors.Is(err, fail) || len(d.Blocks("p")) != 1 {
		t.Fatalf("a failed persist kept the card: %v", err)
	}
	d.Persist(func(_ string, st memhost.DocState) error { stored = st; return nil })
	if err := d.Edit("p", "a", "two"); err != nil {
		t.Fatal(err)
	}
	if err := d.ApplyWriteUp(bg, "p", planner.WriteUp{Base: d.Revision("p"), Scope: []string{"a"}, Source: map[string]string{"a": "three"},
		Anchors: []planner.Anchor{{Decision: "x", Blocks: []string{"a"}}}, Receipts: []planner.Receipt{{Decision: "x", Generation: 1}}}); err != nil {
		t.Fatal(err)
	}
	e := memhost.NewDocuments()
	e.Restore("p", stored)
	sa, _ := d.Read(bg, "p")
	sb, _ := e.Read(bg, "p")
	if sa.Revision != sb.Revision || !slices.Equal(sa.Blocks, sb.Blocks) || !slices.Equal(sa.Receipts, sb.Receipts) || !slices.Equal(e.Anchors("p")["x"], []string{"a"}) {
		t.Fatalf("restored %+v, want %+v", sb, sa)
	}
	if ok, _ := e.Unchanged(bg, "p", "a", sa.Revision); !ok {
		t.Fatal("the restored block lost its revision")
	}

	c := memhost.NewChat()
	c.Persist(func(string, memhost.ChatState) error { return fail })
	turn := planner.Turn{ID: "t1", Notice: "@ana answered"}
	if err := c.Accept(bg, "p", turn); !errors.Is(err, fail) {
		t.Fatalf("accept = %v", err)
	}
	if ok, _ := c.Accepted(bg, "p", "t1"); ok || c.Running("p") != 0 {
		t.Fatal("a failed persist kept the accepted turn")
	}
	var chat memhost.ChatState
	c.Persist(func(_ string, st memhost.ChatState) error { chat = st; return nil })
	if err := c.Accept(bg, "p", turn); err != nil {
		t.Fatal(err)
	}
	r := memhost.NewChat()
	if err := r.Accept(bg, "p", turn); err != nil { // accepted again before the restore
		t.Fatal(err)
	}
	r.Restore("p", chat)
	if ok, _ := r.Accepted(bg, "p", "t1"); !ok || len(r.Turns("p")) != 1 || len(r.Notices("p")) != 1 || len(r.Pending("p")) != 1 {
		t.Fatalf("restored chat: %+v", r.State("p"))
	}
	if !r.Finish("p", "t1") || len(r.Pending("p")) != 0 {
		t.Fatal("the restored turn did not finish")
	}
}
