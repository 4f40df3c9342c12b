package server_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// TestNopHostDefaults: a server without a Host refuses research and
// investigations as unavailable, asks anyone named, and opens every page
// without creating anything; stopping work reports it cancelled.
func TestNopHostDefaults(t *testing.T) {
	ts := startServer(t, "")
	ana := dial(t, ts, "ana", wire.Binary)
	rec := ana.create("k1")

	if r := ana.explore(&wire.Explore{ID: rec.ID, Request: "req-1"}); r.OK || r.Reason != question.Unavailable {
		t.Fatalf("research: %+v", r)
	}
	if r := ana.explore(&wire.Explore{ID: rec.ID, Investigation: "inv-1"}); r.OK || r.Reason != question.Unavailable {
		t.Fatalf("investigation: %+v", r)
	}
	if r := ana.explore(&wire.Explore{ID: rec.ID, Member: "zoe"}); !r.OK || r.Finding.Kind != question.FindingAsk {
		t.Fatalf("asking anyone named: %+v", r)
	}
	page := &wire.Target{Header: wire.Header{Kind: wire.KindPage}, ID: rec.ID}
	if r := ana.request(page, &page.Header); !r.OK || r.Record.ChildID != question.ChildChannel(rec.ID) {
		t.Fatalf("page: %+v", r)
	}
	if w, err := (server.NopHost{}).CancelWork(context.Background(), "plan-1", question.FindingResearch, "req-1"); err != nil || w.Status != question.WorkCancelled {
		t.Fatalf("cancel: %+v %v", w, err)
	}
}

// joinLog is a Host that keeps every join it hears of, as doc/login.
type joinLog struct {
	server.NopHost
	mu     sync.Mutex
	joined []string
}

func (l *joinLog) Opened(doc, login string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.joined = append(l.joined, doc+"/"+login)
}

func (l *joinLog) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.joined)
}

// TestHostHearsEveryJoin: Host.Opened is called for each member's join,
// a reconnect included.
func TestHostHearsEveryJoin(t *testing.T) {
	log := &joinLog{}
	ts := startServerWith(t, "", server.Options{Host: log})
	ana := dial(t, ts, "ana", wire.Binary)
	dial(t, ts, "ben", wire.Text)
	ana.ws.Close()
	dial(t, ts, "ana", wire.Text)
	want := []string{"plan-1/ana", "plan-1/ben", "plan-1/ana"}
	testutil.Eventually(t, "three joins", func() bool { return slices.Equal(log.got(), want) })
}
