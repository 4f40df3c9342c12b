package cluster_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/natstest"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
)

// BenchmarkSave measures one member's save and reopen of a decision, each
// a durable R3 commit, through the document's owner and through another
// node that forwards the connection to it.
func BenchmarkSave(b *testing.B) {
	for _, via := range []string{"owner", "forwarded"} {
		b.Run(via, func(b *testing.B) {
			c := natstest.RunCluster(b, 3)
			tb := b
			a := startNode(tb, "a", c.URL(0))
			o := startNode(tb, "b", c.URL(1))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			first := join(tb, a.url, "bench", "ana") // a owns the document
			cl := first
			if via == "forwarded" {
				cl = join(tb, o.url, "bench", "ben")
			}
			recs, err := first.Create(ctx, card("bench"))
			if err != nil {
				b.Fatal(err)
			}
			id := recs[0].ID
			testutil.Eventually(tb, "the decision", func() bool { _, _, err := cl.Draft(id); return err == nil })
			lat := make([]time.Duration, 0, b.N)
			for i := 0; b.Loop(); i++ {
				waitOpen(b, cl, id)
				if err := cl.Choose(id, "q1", "o"+strconv.Itoa(i%3), true); err != nil {
					b.Fatal(err)
				}
				if err := cl.Flush(ctx, id); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				res, err := cl.Submit(ctx, id)
				lat = append(lat, time.Since(start))
				if err != nil || len(res) != 1 || !res[0].OK {
					b.Fatalf("save %d: %+v %v", i, res, err)
				}
				if _, err := cl.Reopen(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "save-p50-µs")
			b.ReportMetric(float64(lat[(len(lat)-1)*99/100].Microseconds()), "save-p99-µs")
		})
	}
}

func waitOpen(b *testing.B, cl *replica.Client, id string) {
	b.Helper()
	testutil.Eventually(b, "the decision to open", func() bool {
		d, _, err := cl.Draft(id)
		r, ok := cl.Record(id)
		return err == nil && ok && r.Status == question.Open && d.Generation == r.Generation
	})
}
