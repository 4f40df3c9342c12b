package server_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner/memhost"
	"github.com/accord-crdt/accord/question/planner/research"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// workHost is the host's research: work by ref, all of document plan-1.
type workHost struct {
	mu   sync.Mutex
	work map[string]question.Work
}

func (h *workHost) set(ref string, w question.Work) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.work[ref] = w
}

func (h *workHost) Work(_ context.Context, doc string, _ question.FindingKind, ref string) (question.Work, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w, ok := h.work[ref]
	if !ok || doc != "plan-1" {
		return question.Work{}, &question.Refusal{Reason: question.NotFound, Message: "no such work in this document"}
	}
	return w, nil
}

func (h *workHost) Cancel(ctx context.Context, doc string, k question.FindingKind, ref string) (question.Work, error) {
	w, err := h.Work(ctx, doc, k, ref)
	if err == nil && w.Status == question.WorkRunning {
		w = question.Work{Status: question.WorkCancelled}
		h.set(ref, w)
	}
	return w, err
}

// findingsHost is the server's Host: the research of work, a watcher
// told of every change and every join, and every member but "nobody".
type findingsHost struct {
	server.NopHost
	work *workHost
	w    *research.Watcher
}

func (h *findingsHost) Work(ctx context.Context, doc string, k question.FindingKind, ref string) (question.Work, error) {
	return h.work.Work(ctx, doc, k, ref)
}

func (h *findingsHost) CancelWork(ctx context.Context, doc string, k question.FindingKind, ref string) (question.Work, error) {
	return h.work.Cancel(ctx, doc, k, ref)
}

func (h *findingsHost) KnownMember(doc, login string) bool { return login != "nobody" }
func (h *findingsHost) FindingsChanged(doc string)         { h.w.Poke(doc) }
func (h *findingsHost) Opened(doc, _ string)               { h.w.Poke(doc) }

// startResearchServer is a server whose host runs research, with a
// research watcher posting to an in-memory Chat.
func startResearchServer(t *testing.T) (*testServer, *workHost, *memhost.Chat, *research.Watcher) {
	t.Helper()
	st, err := boltstore.Open(t.TempDir()+"/accord.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	work := &workHost{work: map[string]question.Work{}}
	chat := memhost.NewChat()
	host := &findingsHost{work: work}
	srv, err := server.New(server.Options{Store: st, Authorize: authorize, Host: host})
	if err != nil {
		t.Fatal(err)
	}
	w, err := research.New(research.Options{Authorities: srv, Host: work, Chat: chat, RetryAfter: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	host.w = w
	hs := httptest.NewServer(srv)
	ts := &testServer{t: t, url: "ws" + strings.TrimPrefix(hs.URL, "http"), srv: srv, hs: hs, store: st}
	t.Cleanup(func() { w.Close(); ts.stop() })
	return ts, work, chat, w
}

func (p *peer) explore(m *wire.Explore) *wire.Reply {
	p.t.Helper()
	m.Header = wire.Header{Kind: wire.KindExplore}
	return p.request(m, &m.Header)
}

// meta waits for a question:meta whose record satisfies ok.
func (p *peer) meta(ok func(question.Record) bool) question.Record {
	p.t.Helper()
	for {
		if ev, isEv := p.expect(wire.KindMeta).(*wire.Event); isEv && ev.Record != nil && ok(*ev.Record) {
			return *ev.Record
		}
	}
}

func TestFindingsOverRealSockets(t *testing.T) {
	ts, host, chat, w := startResearchServer(t)
	ana := dial(t, ts, "ana", wire.Binary)
	ben := dial(t, ts, "ben", wire.Text)
	rec := ana.create("k1")
	ben.expect(wire.KindCreated)

	// R2: the host's check comes first.
	if r := ana.explore(&wire.Explore{ID: rec.ID, Request: "req-missing"}); r.OK || r.Reason != question.NotFound {
		t.Fatalf("unknown work: %+v", r)
	}
	if r := ana.explore(&wire.Explore{ID: rec.ID, Request: "a", Member: "ben"}); r.OK || r.Reason != question.Invalid {
		t.Fatalf("two targets: %+v", r)
	}
	host.set("req-1", question.Work{Status: question.WorkRunning})
	r := ana.explore(&wire.Explore{ID: rec.ID, Request: "req-1", Focus: "costs"})
	if !r.OK || r.Finding == nil || r.Finding.Status != question.FindingRunning || r.Finding.Focus != "costs" {
		t.Fatalf("explore: %+v", r)
	}
	research1 := r.Finding.ID
	ben.meta(func(rec question.Record) bool { return len(rec.Findings) == 1 })

	// R5: only the starter stops it.
	stop := &wire.ExploreStop{Header: wire.Header{Kind: wire.KindExploreStop}, ID: rec.ID, Finding: research1}
	if r := ben.request(stop, &stop.Header); r.OK || r.Reason != question.Forbidden {
		t.Fatalf("stop by a non-starter: %+v", r)
	}

	// R3: the host's event settles it; everyone hears question:meta and
	// Chat gets one notice.
	ready := question.Work{Status: question.WorkReady, Title: "Reset costs", Summary: "Email is free."}
	host.set("req-1", ready)
	w.Changed("plan-1", question.FindingResearch, "req-1", ready)
	got := ben.meta(func(rec question.Record) bool {
		return len(rec.Findings) == 1 && rec.Findings[0].Status == question.FindingReady
	})
	if got.Findings[0].Summary != "Email is free." {
		t.Fatalf("settled finding: %+v", got.Findings[0])
	}
	testutil.Eventually(t, "one notice", func() bool { return len(chat.Notices("plan-1")) == 1 })

	// R8: ask ben; only ben takes, with a stance.
	if r := ana.explore(&wire.Explore{ID: rec.ID, Member: "nobody"}); r.OK || r.Reason != question.NotFound {
		t.Fatalf("asking a stranger: %+v", r)
	}
	r = ana.explore(&wire.Explore{ID: rec.ID, Member: "ben"})
	if !r.OK || r.Finding.Kind != question.FindingAsk || r.Finding.Ref != "ben" {
		t.Fatalf("ask: %+v", r)
	}
	ask := r.Finding.ID
	take := &wire.Take{Header: wire.Header{Kind: wire.KindTake}, ID: rec.ID, Finding: ask, Reply: "Email it is.", Stance: question.Supports}
	if r := ana.request(take, &take.Header); r.OK || r.Reason != question.Forbidden {
		t.Fatalf("take by the asker: %+v", r)
	}
	take.Header = wire.Header{Kind: wire.KindTake}
	if r := ben.request(take, &take.Header); !r.OK || r.Finding.Stance != question.Supports || r.Finding.Summary != "Email it is." {
		t.Fatalf("take: %+v", r)
	}
	ana.meta(func(rec question.Record) bool {
		return len(rec.Findings) == 2 && rec.Findings[1].Status == question.FindingReady
	})
	testutil.Eventually(t, "the ask's notice", func() bool { return len(chat.Notices("plan-1")) == 2 })

	// E1: question:page is expand's other name.
	page := &wire.Target{Header: wire.Header{Kind: wire.KindPage}, ID: rec.ID}
	if r := ana.request(page, &page.Header); !r.OK || r.Record.ChildID != "question:"+rec.ID {
		t.Fatalf("page: %+v", r)
	}
}

// TestSweepOnOpenSettlesMissedWork is R4: work that ended while nobody
// heard is settled when a member (re)opens the document.
func TestSweepOnOpenSettlesMissedWork(t *testing.T) {
	ts, host, chat, _ := startResearchServer(t)
	ana := dial(t, ts, "ana", wire.Binary)
	rec := ana.create("k1")
	host.set("inv-1", question.Work{Status: question.WorkRunning})
	if r := ana.explore(&wire.Explore{ID: rec.ID, Investigation: "inv-1"}); !r.OK {
		t.Fatalf("explore: %+v", r)
	}
	host.set("inv-1", question.Work{Status: question.WorkFailed}) // no event
	ben := dial(t, ts, "ben", wire.Binary)                        // a member opens the document
	ben.meta(func(rec question.Record) bool {
		return len(rec.Findings) == 1 && rec.Findings[0].Status == question.FindingFailed
	})
	testutil.Eventually(t, "a quiet notice", func() bool {
		n := chat.Notices("plan-1")
		return len(n) == 1 && n[0].Quiet
	})
}
