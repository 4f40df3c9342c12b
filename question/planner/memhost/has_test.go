package memhost_test

import (
	"testing"

	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/question/planner/memhost"
)

// Has tells a document the host holds from a name nobody set up, also
// after that name was read (reads answer an empty plan at r0) and after a
// restore.
func TestHas(t *testing.T) {
	d := memhost.NewDocuments()
	d.Set("plan-1", planner.Block{ID: "a", Kind: planner.Paragraph, Text: "one"})
	d.Set("emptied")
	if _, err := d.Read(bg, "plan-x"); err != nil {
		t.Fatal(err)
	}
	_ = d.Blocks("plan-y")
	e := memhost.NewDocuments()
	e.Restore("plan-1", d.State("plan-1"))
	e.Restore("never", d.State("plan-x"))
	for _, tc := range []struct {
		d    *memhost.Documents
		doc  string
		want bool
	}{
		{d, "plan-1", true},
		{d, "emptied", true},
		{d, "plan-x", false},
		{d, "plan-y", false},
		{d, "plan-z", false},
		{e, "plan-1", true},
		{e, "never", false},
	} {
		if got := tc.d.Has(tc.doc); got != tc.want {
			t.Errorf("Has(%q) = %v, want %v", tc.doc, got, tc.want)
		}
	}
}
