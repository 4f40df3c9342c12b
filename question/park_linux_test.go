//go:build linux && cgo

package question

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/cmem"
	"github.com/accord-crdt/accord/persist/memstore"
)

// cInUse returns the C heap in use (automerge's memory) once every
// finalizer the collections queued has run.
func cInUse() int64 {
	sm := []metrics.Sample{{Name: "/gc/finalizers/queued:finalizers"}, {Name: "/gc/finalizers/executed:finalizers"}}
	for range 100 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		if metrics.Read(sm); sm[0].Value.Uint64() == sm[1].Value.Uint64() {
			break
		}
	}
	c, _ := cmem.Stats()
	return c
}

// TestParkedDecisionsFreeTheirDocuments: a document reopened from the
// store keeps (almost) no automerge memory for its parked decisions, also
// once they were woken and parked again: nothing a parked decision keeps
// holds a dropped document alive.
func TestParkedDecisionsFreeTheirDocuments(t *testing.T) {
	const n = 300
	store := memstore.New()
	a, err := NewAuthority(parkCtx, Options{Store: store, Doc: "plan", LiveDecisions: -1})
	if err != nil {
		t.Fatal(err)
	}
	ids := createN(t, a, n)
	for _, id := range ids {
		editChoice(t, a, id, "a")
	}
	a = nil
	before := cInUse()
	b, err := NewAuthority(parkCtx, Options{Store: store, Doc: "plan", LiveDecisions: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := b.Save(id); err != nil {
			t.Fatal(err)
		}
	}
	per := float64(cInUse()-before) / n
	runtime.KeepAlive(b)
	// A live small document holds about 40 KB; 4 live ones are 0.5 KB a
	// decision here.
	if per > 2048 {
		t.Fatalf("%s of automerge memory per parked decision", fmt.Sprintf("%.0f bytes", per))
	}
	t.Logf("%.0f bytes of automerge memory per parked decision", per)
}
