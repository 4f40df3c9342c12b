package replica_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// realServer serves a bbolt file over real sockets; X-Login names the
// member and "rita" only reads.
func realServer(t *testing.T) string {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "accord.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Store: st, Authorize: func(r *http.Request, doc string) (question.Member, error) {
		login := r.Header.Get("X-Login")
		return question.Member{Login: login, Write: login != "rita"}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		hs.Close()
		st.Close()
	})
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/?doc=plan"
}

// TestOverwriteEvent: Ben replaces Ana's Yes by No. Ana's client reports
// it once, naming Ben, the cell, both values; Ben's own client reports
// nothing, nor does Cleo's, who had set nothing; Provenance names Ben.
func TestOverwriteEvent(t *testing.T) {
	url := realServer(t)
	ctx := ctxT(t)
	dial := func(login string, f wire.Format) *replica.Client { return dialAs(t, ctx, url, login, f) }
	ana, ben, cleo := dial("ana", wire.Binary), dial("ben", wire.Text), dial("cleo", wire.Binary)
	anaEvents, benEvents, cleoEvents := collect(t, ana), collect(t, ben), collect(t, cleo)
	recs, err := ana.Create(ctx, wire.Card{Key: "k", Definition: definition()})
	if err != nil {
		t.Fatal(err)
	}
	id := recs[0].ID
	ready(t, ana, id)
	ready(t, ben, id)
	ready(t, cleo, id)
	if err := ana.SetMark(id, "pick", "bolt", "cost", marks.Yes); err != nil {
		t.Fatal(err)
	}
	flush(t, ana, id)
	testutil.Eventually(t, "ben to see Ana's mark", func() bool { return draftOf(t, ben, id).Questions["pick"].Marks["bolt/cost"] == marks.Yes })
	if err := ben.SetMark(id, "pick", "bolt", "cost", marks.No); err != nil {
		t.Fatal(err)
	}
	flush(t, ben, id)
	ev := anaEvents.wait(t, "Ana's overwrite notice", kind(replica.KindOverwritten))
	if ev.By != "ben" || ev.ID != id || ev.Cell == nil || ev.Cell.Cell != "bolt/cost" || ev.Cell.Was != "yes" || ev.Cell.Value != "no" || ev.Cell.WasBy != "ana" {
		t.Fatalf("overwrite event %+v cell %+v", ev, ev.Cell)
	}
	testutil.Eventually(t, "cleo to see Ben's mark", func() bool { return draftOf(t, cleo, id).Questions["pick"].Marks["bolt/cost"] == marks.No })
	// Ana replaces Ben's No in turn: now Ben hears, once.
	if err := ana.SetMark(id, "pick", "bolt", "cost", marks.Partly); err != nil {
		t.Fatal(err)
	}
	flush(t, ana, id)
	benEvents.wait(t, "Ben's overwrite notice", kind(replica.KindOverwritten))
	testutil.Eventually(t, "cleo to see Ana's mark", func() bool { return draftOf(t, cleo, id).Questions["pick"].Marks["bolt/cost"] == marks.Partly })
	count := func(e *events) int {
		n := 0
		for _, k := range e.kinds() {
			if k == replica.KindOverwritten {
				n++
			}
		}
		return n
	}
	if a, b, c := count(anaEvents), count(benEvents), count(cleoEvents); a != 1 || b != 1 || c != 0 {
		t.Fatalf("overwrite notices: ana %d, ben %d, cleo %d; want 1, 1, 0", a, b, c)
	}
	ps, err := cleo.Provenance(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].By != "ana" || ps[0].WasBy != "ben" || ps[0].Value != "partly" {
		t.Fatalf("provenance %+v", ps)
	}
}

// dialAs dials the real server at url as login, in format f, and closes
// the client when the test ends.
func dialAs(t *testing.T, ctx context.Context, url, login string, f wire.Format) *replica.Client {
	t.Helper()
	c, err := replica.Dial(ctx, url, replica.Options{Header: http.Header{"X-Login": {login}}, Format: f,
		MinBackoff: minBackoff, MaxBackoff: maxBackoff})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
