package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/natstest"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/question/planner/memhost"
	"github.com/accord-crdt/accord/sync/cluster"
)

// TestOwnerOnly: host work runs on the node holding the document's lease;
// elsewhere it is refused with ErrNotOwner, and a Driver there, whose
// calls Skip picks, finds nothing to do, without loading the document.
func TestOwnerOnly(t *testing.T) {
	c := natstest.RunCluster(t, 3)
	a := startNode(t, "a", c.URL(0))
	b := startNode(t, "b", c.URL(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if node, _, err := a.router.Owner(ctx, "owned"); err != nil || node != "a" {
		t.Fatalf("owner = %q, %v; want a", node, err)
	}
	ran := false
	if err := cluster.NewOwnerOnly(b.router, b.srv).Do(ctx, "owned", func(*question.Authority) error { ran = true; return nil }); !errors.Is(err, cluster.ErrNotOwner) || ran {
		t.Fatalf("work on b (not the owner): ran %v, err %v; want ErrNotOwner, not run", ran, err)
	}
	if err := cluster.NewOwnerOnly(a.router, a.srv).Do(ctx, "owned", func(*question.Authority) error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("work on a (the owner): ran %v, err %v", ran, err)
	}

	// The driver's own calls are skipped on b without an error; any other
	// call through the same OwnerOnly is still refused.
	owned := cluster.NewOwnerOnly(b.router, b.srv)
	owned.Skip = planner.FromDriver
	if err := owned.Do(ctx, "owned", func(*question.Authority) error { ran = true; return nil }); !errors.Is(err, cluster.ErrNotOwner) {
		t.Fatalf("work on b with Skip, not the driver's: err %v; want ErrNotOwner", err)
	}
	host := memhost.New()
	host.Runtime.SetOwner("owned", "ana")
	host.Members.Add("owned", question.Member{Login: "ana", Write: true})
	opts := planner.Options{Authorities: owned}
	host.Wire(&opts)
	d, err := planner.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if p, err := d.Step(ctx, "owned"); err != nil || !p.Wake.IsZero() {
		t.Fatalf("driver on b: %+v, %v; want nothing due", p, err)
	}
	if _, err := d.RunJobs(ctx, "owned"); err != nil {
		t.Fatalf("driver jobs on b: %v", err)
	}
	if n := b.srv.Stats().Documents; n != 0 {
		t.Fatalf("b loaded %d documents for a driver that is not the owner's", n)
	}
}
