package server_test

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/crdt/crdttest"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// rights is a host's table of who may do what, changed while members are
// connected.
type rights struct {
	mu sync.Mutex
	of map[string]string // login → "write", "read"; absent: refused
}

func (r *rights) set(login, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if what == "" {
		delete(r.of, login)
	} else {
		r.of[login] = what
	}
}

func (r *rights) authorize(req *http.Request, doc string) (question.Member, error) {
	login := req.URL.Query().Get("member")
	r.mu.Lock()
	defer r.mu.Unlock()
	switch r.of[strings.ToLower(login)] {
	case "write":
		return question.Member{Login: login, Write: true}, nil
	case "read":
		return question.Member{Login: login}, nil
	}
	return question.Member{}, server.ErrUnauthorized
}

// closedSoon reports whether the peer's connection ends within a few
// seconds, reading what is left.
func closedSoon(p *peer) bool {
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-p.frames:
			if !ok {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// TestReauthorizeAndRevoke: rights change while members are connected.
// A writer now reading is downgraded in place (told, and their next edit
// refused as forbidden with a reset); a member now refused is told and
// closed, and cannot reconnect; a reader now writing is closed and
// reconnects as a writer; unchanged rights keep the connection; Revoke
// closes every connection of a login whatever Authorize says. Logins
// compare case-insensitively.
func TestReauthorizeAndRevoke(t *testing.T) {
	r := &rights{of: map[string]string{"ana": "write", "ben": "write", "cy": "read", "dan": "write"}}
	ts := startWith(t, setup{tune: func(o *server.Options) { o.Authorize = r.authorize; o.Outbox = 64 }})
	ctx := testCtx(t, 30*time.Second)
	ana := dial(t, ts, "ana", wire.Binary)
	ben := dial(t, ts, "ben", wire.Text)
	cy := dial(t, ts, "cy", wire.Binary)
	dan := dial(t, ts, "dan", wire.Binary)
	rec := ana.create("k1")
	for _, p := range []*peer{ben, cy, dan} {
		p.expect(wire.KindDoc)
	}
	mark := func(p *peer, m marks.Mark) *wire.Reply {
		return p.edit(rec.ID, func(d *crdt.Doc) error { return d.SetMark("q1", "email", "cheap", m) })
	}
	if rep := mark(ana, marks.Yes); !rep.OK {
		t.Fatalf("ana's edit before: %+v", rep)
	}

	r.set("ana", "read")
	got, err := ts.srv.Reauthorize(ctx, "ANA")
	if err != nil || got != (server.Reauthorized{Downgraded: 1}) {
		t.Fatalf("reauthorize ana: %+v, %v", got, err)
	}
	if e := ana.expect(wire.KindError).(*wire.Error); e.Reason != string(question.Forbidden) {
		t.Fatalf("ana's notice: %+v", e)
	}
	if rep := mark(ana, marks.No); rep.OK || rep.Reason != question.Forbidden || !rep.Reset {
		t.Fatalf("ana's edit after the downgrade: %+v", rep)
	}
	if got, _ := ts.srv.Reauthorize(ctx, "ana"); got != (server.Reauthorized{Kept: 1}) {
		t.Fatalf("reauthorize ana again: %+v", got)
	}

	r.set("ben", "")
	if got, _ := ts.srv.Reauthorize(ctx, "ben"); got != (server.Reauthorized{Closed: 1}) {
		t.Fatalf("reauthorize ben: %+v", got)
	}
	if e := ben.expect(wire.KindError).(*wire.Error); e.Reason != string(question.Forbidden) {
		t.Fatalf("ben's notice: %+v", e)
	}
	if !closedSoon(ben) {
		t.Fatal("ben's connection stayed open")
	}
	if _, resp, err := websocketDial(ts, "ben"); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("ben reconnected: %v", err)
	}

	r.set("cy", "write")
	if got, _ := ts.srv.Reauthorize(ctx, "cy"); got != (server.Reauthorized{Closed: 1}) {
		t.Fatalf("reauthorize cy: %+v", got)
	}
	if !closedSoon(cy) {
		t.Fatal("cy's connection stayed open")
	}
	cy2 := dial(t, ts, "cy", wire.Binary)
	cy2.expect(wire.KindDoc)
	if rep := mark(cy2, marks.Partly); !rep.OK {
		t.Fatalf("cy's edit as a writer: %+v", rep)
	}

	// dan was never touched; Revoke closes him although Authorize would
	// still let him write.
	if rep := mark(dan, marks.No); !rep.OK {
		t.Fatalf("dan's edit: %+v", rep)
	}
	if n, err := ts.srv.Revoke(ctx, "Dan"); n != 1 || err != nil {
		t.Fatalf("revoke dan: %d, %v", n, err)
	}
	if !closedSoon(dan) {
		t.Fatal("dan's connection stayed open")
	}
	if n, _ := ts.srv.Revoke(ctx, "nobody"); n != 0 {
		t.Fatalf("revoked %d connections of nobody", n)
	}
}

// commitLog is a Host that keeps the decisions of each group committed
// to plan-1.
type commitLog struct {
	server.NopHost
	mu     sync.Mutex
	groups [][]string
}

func (l *commitLog) Committed(doc string, decisions []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if doc == "plan-1" {
		l.groups = append(l.groups, decisions)
	}
}

func (l *commitLog) got() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.groups)
}

// TestStatsAndCommittedHook: Stats counts connections, documents,
// commits, frames and refusals as real traffic flows, and the Committed
// Host.Committed names exactly the decisions each group wrote.
func TestStatsAndCommittedHook(t *testing.T) {
	log := &commitLog{}
	ts := startWith(t, setup{tune: func(o *server.Options) {
		o.Outbox = 64
		o.Host = log
	}})
	if st := ts.srv.Stats(); st != (server.Stats{}) {
		t.Fatalf("a new server's stats: %+v", st)
	}
	ana := dial(t, ts, "ana", wire.Binary)
	ben := dial(t, ts, "ben", wire.Text)
	m := &wire.Create{Header: wire.Header{Kind: wire.KindCreate}, Cards: []wire.Card{
		{Key: "a", Definition: question.Definition{Questions: []question.Question{{Text: "Which reset flow?",
			Options: []question.Option{{ID: "email", Label: "Email"}, {ID: "sms", Label: "SMS"}}, Criteria: []question.Criterion{{ID: "cheap", Label: "Cheap"}}}}}},
		{Key: "b", Definition: question.Definition{Questions: []question.Question{{Text: "What should the email say?", Response: question.Text}}}},
	}}
	rep := ana.request(m, &m.Header)
	if !rep.OK || len(rep.Records) != 2 {
		t.Fatalf("create: %+v", rep)
	}
	a, b := rep.Records[0].ID, rep.Records[1].ID
	ana.expect(wire.KindDoc)
	ana.expect(wire.KindDoc)
	ben.expect(wire.KindDoc)
	ben.expect(wire.KindDoc)
	if r := ana.edit(a, func(d *crdt.Doc) error { return d.SetMark("q1", "email", "cheap", marks.Yes) }); !r.OK {
		t.Fatalf("edit: %+v", r)
	}
	ben.expect(wire.KindChanges)
	// A refused edit: a cell the definition does not describe.
	raw, err := crdttest.RawChange(ana.docs[a].Save(), []any{"drafts", "1", "q1", "marks", "sms/fast"}, "yes")
	if err != nil {
		t.Fatal(err)
	}
	e := &wire.Edit{Header: wire.Header{Kind: wire.KindEdit}, ID: a, Changes: raw}
	if r := ana.request(e, &e.Header); r.OK {
		t.Fatal("a rogue mark was accepted")
	}

	got := log.got()
	want := [][]string{{a, b}, {a}}
	slices.Sort(want[0])
	if len(got) != 2 || !slices.Equal(got[0], want[0]) || !slices.Equal(got[1], want[1]) {
		t.Fatalf("committed groups %v, want %v", got, want)
	}
	st := ts.srv.Stats()
	if st.Connections != 2 || st.Documents != 1 || st.Commits != 2 || st.CommitFailures != 0 || st.Refusals != 1 || st.SlowDrops != 0 {
		t.Fatalf("stats %+v", st)
	}
	// In: 2 hellos, a create, 2 edits. Out: 2 welcomes, the create's
	// reply, 2×(created, doc) to each peer, an edit reply, a changes, a
	// refusal.
	// A frame is counted once its write returned, which may be just after
	// the peer read it.
	const out = 2 + 1 + 8 + 1 + 1 + 1
	testutil.Eventually(t, "every frame to be counted", func() bool { return ts.srv.Stats().FramesOut >= out })
	if st := ts.srv.Stats(); st.FramesIn != 5 || st.FramesOut != out {
		t.Fatalf("frames in %d out %d", st.FramesIn, st.FramesOut)
	}
	ana.ws.Close()
	ben.ws.Close()
	testutil.Eventually(t, "the connections to end", func() bool { return ts.srv.Stats().Connections == 0 })
}

func websocketDial(ts *testServer, member string) (*websocket.Conn, *http.Response, error) {
	return websocket.DefaultDialer.Dial(ts.url+"?doc=plan-1&member="+member, nil)
}
