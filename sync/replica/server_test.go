package replica_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// TestWithServer runs clients of both formats against the real server,
// across a server restart on the same store.
func TestWithServer(t *testing.T) {
	store := memstore.New()
	newServer := func() *server.Server {
		srv, err := server.New(server.Options{Store: store, Authorize: func(r *http.Request, doc string) (question.Member, error) {
			login := r.Header.Get("X-Login")
			return question.Member{Login: login, Write: login != "rita"}, nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	shutdown := func(srv *server.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}
	// One address throughout: the handler in front is swapped to restart.
	var current atomic.Pointer[server.Server]
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if srv := current.Load(); srv != nil {
			srv.ServeHTTP(w, r)
			return
		}
		http.Error(w, "restarting", http.StatusServiceUnavailable)
	}))
	defer hs.Close()
	srv := newServer()
	current.Store(srv)

	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/?doc=plan"
	ctx := ctxT(t)
	dial := func(login string, f wire.Format) *replica.Client {
		c, err := replica.Dial(ctx, url, replica.Options{
			Header: http.Header{"X-Login": {login}}, Format: f, MinBackoff: minBackoff, MaxBackoff: maxBackoff,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	ana := dial("ana", wire.Binary)
	ben := dial("ben", wire.Text)
	benEvents := collect(t, ben)

	recs, err := ana.Create(ctx, wire.Card{Key: "k", Definition: definition()})
	if err != nil {
		t.Fatal(err)
	}
	id := recs[0].ID
	ready(t, ana, id)
	ready(t, ben, id)
	if err := ana.SetMark(id, "pick", "bolt", "cost", marks.Yes); err != nil {
		t.Fatal(err)
	}
	if err := ben.SetText(id, "note", "ben"); err != nil {
		t.Fatal(err)
	}
	flush(t, ana, id)
	flush(t, ben, id)
	testutil.Eventually(t, "the replicas to converge", func() bool {
		a, b := draftOf(t, ana, id), draftOf(t, ben, id)
		return a.Equal(b) && a.Questions["note"].Text == "ben" && a.Questions["pick"].Marks["bolt/cost"] == marks.Yes
	})

	opt, def, _, err := ben.AppendOption(ctx, id, "pick", "add-sqlite", "SQLite")
	if err != nil || len(def.Questions[0].Options) != 3 {
		t.Fatalf("append: %+v %v", opt, err)
	}
	testutil.Eventually(t, "ana to hold the new option", func() bool { return ana.Choose(id, "pick", opt.ID, true) == nil })
	res, err := ana.Submit(ctx, id)
	if err != nil || len(res) != 1 || !res[0].OK {
		t.Fatalf("submit: %+v %v", res, err)
	}
	if ev := benEvents.wait(t, "the resolved event", kind(wire.KindResolved)); ev.By != "ana" {
		t.Fatalf("resolved event %+v", ev)
	}
	if _, err := ben.Reopen(ctx, id); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the fresh draft", func() bool { return draftOf(t, ana, id).Generation == 2 })
	if _, err := ana.SetWhy(ctx, id, "Because."); !errors.Is(err, question.ErrNotSettled) {
		t.Fatalf("why on an open decision: %v", err)
	}

	// Restart the server; ana edits while it is down (L11).
	current.Store(nil)
	shutdown(srv)
	testutil.Eventually(t, "ana to go offline", func() bool { return !ana.Connected() })
	if err := ana.SetText(id, "note", "written offline"); err != nil {
		t.Fatal(err)
	}
	srv = newServer()
	current.Store(srv)
	defer shutdown(srv)
	flush(t, ana, id)
	testutil.Eventually(t, "ben to get ana's offline edit", func() bool {
		return draftOf(t, ben, id).Questions["note"].Text == "written offline"
	})
}
