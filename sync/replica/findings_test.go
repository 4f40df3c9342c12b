package replica_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// oneWork is a host with a single research request, running until told.
type oneWork struct {
	server.NopHost
	w question.Work
}

func (h *oneWork) Work(_ context.Context, _ string, _ question.FindingKind, ref string) (question.Work, error) {
	if ref != "req-1" {
		return question.Work{}, &question.Refusal{Reason: question.NotFound, Message: "no such request"}
	}
	return h.w, nil
}

func (h *oneWork) CancelWork(ctx context.Context, doc string, k question.FindingKind, ref string) (question.Work, error) {
	h.w = question.Work{Status: question.WorkCancelled}
	return h.Work(ctx, doc, k, ref)
}

// TestFindingsFromTheReplica drives research, asks, takes, stops and the
// page from Go clients against the real server.
func TestFindingsFromTheReplica(t *testing.T) {
	host := &oneWork{w: question.Work{Status: question.WorkRunning}}
	srv, err := server.New(server.Options{Store: memstore.New(), Host: host,
		Authorize: func(r *http.Request, doc string) (question.Member, error) {
			return question.Member{Login: r.Header.Get("X-Login"), Write: true}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ctx := ctxT(t)
	dial := func(login string, f wire.Format) *replica.Client {
		c, err := replica.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/?doc=plan",
			replica.Options{Header: http.Header{"X-Login": {login}}, Format: f, MinBackoff: minBackoff, MaxBackoff: maxBackoff})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	ana, ben := dial("ana", wire.Binary), dial("ben", wire.Text)
	recs, err := ana.Create(ctx, wire.Card{Key: "k", Definition: definition()})
	if err != nil {
		t.Fatal(err)
	}
	id := recs[0].ID

	f, rec, err := ana.Research(ctx, id, "req-1", "costs")
	if err != nil || f.Status != question.FindingRunning || len(rec.Findings) != 1 {
		t.Fatalf("research: %+v %+v %v", f, rec.Findings, err)
	}
	testutil.Eventually(t, "ben holds the finding", func() bool {
		r, ok := ben.Record(id)
		return ok && len(r.Findings) == 1
	})
	if _, _, err := ben.StopExplore(ctx, id, f.ID); question.ReasonOf(err) != question.Forbidden {
		t.Fatalf("stop by ben: %v", err)
	}
	if f, _, err = ana.StopExplore(ctx, id, f.ID); err != nil || f.Status != question.FindingStopped {
		t.Fatalf("stop: %+v %v", f, err)
	}
	ask, _, err := ana.Ask(ctx, id, "ben", "")
	if err != nil {
		t.Fatal(err)
	}
	took, _, err := ben.Take(ctx, id, ask.ID, "Postgres is overkill.", question.Objects)
	if err != nil || took.Stance != question.Objects {
		t.Fatalf("take: %+v %v", took, err)
	}
	testutil.Eventually(t, "ana holds the take", func() bool {
		r, _ := ana.Record(id)
		return len(r.Findings) == 2 && r.Findings[1].Summary == "Postgres is overkill."
	})
	page, err := ben.Page(ctx, id)
	if err != nil || page.ChildID != "question:"+id {
		t.Fatalf("page: %+v %v", page, err)
	}
}
