package marks_test

import (
	"errors"
	"fmt"

	"github.com/accord-crdt/accord/marks"
)

func ExampleKey() {
	key := marks.Key("opt-a", "crit-1")
	fmt.Println(key)

	cell, err := marks.ParseKey(key)
	fmt.Println(cell.Option, cell.Criterion, err)
	// Output:
	// opt-a/crit-1
	// opt-a crit-1 <nil>
}

func ExampleSnapshot_Attribute() {
	snap := marks.Snapshot{
		marks.Key("postgres", "no-storage"): marks.Yes,
		marks.Key("sqlite", "easy-reset"):   marks.Partly,
		marks.Key("postgres", "easy-reset"): marks.No,
	}
	// Cells come out by option id, then criterion id, whatever the map order.
	fmt.Printf("marks=%q\n", snap.Attribute())

	// A snapshot with no marked cells renders as "": the projection then
	// leaves the attribute out.
	fmt.Printf("%q\n", marks.Snapshot{}.Attribute())
	// Output:
	// marks="postgres/easy-reset:no postgres/no-storage:yes sqlite/easy-reset:partly"
	// ""
}

func ExampleParseAttribute() {
	snap, err := marks.ParseAttribute("o1/c1:yes o2/c1:no")
	fmt.Println(snap[marks.Key("o1", "c1")], snap[marks.Key("o2", "c1")], len(snap), err)

	_, err = marks.ParseAttribute("o1/c1:yes o1/c1:no")
	fmt.Println(errors.Is(err, marks.ErrInvalid))
	fmt.Println(err)
	// Output:
	// yes no 2 <nil>
	// true
	// marks: invalid attribute "o1/c1:yes o1/c1:no": cell "o1/c1" is given twice
}
