package replica_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// laggingConn delivers the server's question:changes and question:doc
// frames lag after they arrive, and every other frame (replies, events)
// at once: the order a client sees when the changes of a request take a
// slower path than its reply. Frames of each kind keep their order.
type laggingConn struct {
	ws    *websocket.Conn
	lag   time.Duration
	in    chan frame
	wmu   sync.Mutex
	close sync.Once
	done  chan struct{}
}

type frame struct {
	typ  int
	data []byte
	err  error
}

func lagDialer(lag time.Duration) replica.Dialer {
	return func(ctx context.Context, url string, h http.Header) (replica.Conn, error) {
		ws, _, err := websocket.DefaultDialer.DialContext(ctx, url, h)
		if err != nil {
			return nil, err
		}
		c := &laggingConn{ws: ws, lag: lag, in: make(chan frame, 256), done: make(chan struct{})}
		go c.readAll()
		return c, nil
	}
}

// readAll reads the socket; the lagging frames go through a queue of
// their own, released lag after each arrived.
func (c *laggingConn) readAll() {
	type held struct {
		f  frame
		at time.Time
	}
	late := make(chan held, 256)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for h := range late {
			time.Sleep(time.Until(h.at))
			select {
			case c.in <- h.f:
			case <-c.done:
				return
			}
		}
	}()
	defer func() {
		close(late)
		wg.Wait()
		close(c.in)
	}()
	for {
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			late <- held{f: frame{err: err}, at: time.Now().Add(c.lag)}
			return
		}
		if m, derr := wire.DecodeServerFrame(data, wire.Binary); derr == nil {
			if k := m.FrameKind(); k == wire.KindChanges || k == wire.KindDoc {
				late <- held{f: frame{typ: typ, data: data}, at: time.Now().Add(c.lag)}
				continue
			}
		}
		select {
		case c.in <- frame{typ: typ, data: data}:
		case <-c.done:
			return
		}
	}
}

func (c *laggingConn) ReadMessage() (int, []byte, error) {
	f, ok := <-c.in
	if !ok {
		return 0, nil, websocket.ErrCloseSent
	}
	return f.typ, f.data, f.err
}

func (c *laggingConn) WriteMessage(typ int, data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteMessage(typ, data)
}

func (c *laggingConn) Close() error {
	c.close.Do(func() { close(c.done) })
	return c.ws.Close()
}

// loginServer is a sync server over a real socket whose members are who
// the X-Login header names, all writers; it stops when t ends.
func loginServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv, err := server.New(server.Options{Store: memstore.New(), Authorize: func(r *http.Request, doc string) (question.Member, error) {
		return question.Member{Login: r.Header.Get("X-Login"), Write: true}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return hs
}

// TestCallsReturnReady: every call that returns success returns with its
// effect in the local replica, so the next call can build on it, even when
// the request's changes reach the client 60 ms after its reply. Each call
// is followed at once by an edit that depends on it and a save that must
// succeed with that edit.
func TestCallsReturnReady(t *testing.T) {
	hs := loginServer(t)
	ctx := ctxT(t)
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/?doc=plan"
	ana, err := replica.Dial(ctx, url, replica.Options{Header: http.Header{"X-Login": {"ana"}},
		Dialer: lagDialer(60 * time.Millisecond), MinBackoff: minBackoff, MaxBackoff: maxBackoff})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ana.Close() })

	create := func(t *testing.T, key string) string {
		t.Helper()
		recs, err := ana.Create(ctx, wire.Card{Key: key, Definition: definition()})
		if err != nil {
			t.Fatal(err)
		}
		return recs[0].ID
	}
	save := func(t *testing.T, id string) question.Record {
		t.Helper()
		res, err := ana.Submit(ctx, id)
		if err != nil || len(res) != 1 || !res[0].OK {
			t.Fatalf("save: %+v %v", res, err)
		}
		return *res[0].Record
	}
	answerOf := func(rec question.Record, q string) question.QuestionAnswer {
		for _, a := range rec.Answer.Answers {
			if a.Question == q {
				return a
			}
		}
		t.Fatalf("answer %+v has no %s", rec.Answer, q)
		return question.QuestionAnswer{}
	}

	t.Run("Reopen", func(t *testing.T) {
		id := create(t, "reopen")
		must(t, ana.SetText(id, "note", "first answer"))
		must(t, ana.Choose(id, "pick", "bolt", true))
		save(t, id)
		if _, err := ana.Reopen(ctx, id); err != nil {
			t.Fatal(err)
		}
		d, _, err := ana.Draft(id)
		if err != nil || d.Generation != 2 || d.Questions["note"].Text != "" {
			t.Fatalf("draft after Reopen returned: generation %d, note %q, %v; want the fresh draft", d.Generation, d.Questions["note"].Text, err)
		}
		must(t, ana.SetText(id, "note", "second answer"))
		must(t, ana.Choose(id, "pick", "pg", true))
		if got := answerOf(save(t, id), "note").Text; got != "second answer" {
			t.Fatalf("saved %q, want the edit made right after Reopen", got)
		}
	})
	t.Run("AppendOption", func(t *testing.T) {
		id := create(t, "option")
		opt, def, _, err := ana.AppendOption(ctx, id, "pick", "add-sqlite", "SQLite")
		if err != nil {
			t.Fatal(err)
		}
		if n := len(def.Questions[0].Options); n != 3 {
			t.Fatalf("definition holds %d options", n)
		}
		must(t, ana.SetMark(id, "pick", opt.ID, "cost", marks.Yes))
		must(t, ana.Choose(id, "pick", opt.ID, true))
		must(t, ana.SetText(id, "note", "lighter"))
		a := answerOf(save(t, id), "pick")
		if a.Marks[opt.ID+"/cost"] != marks.Yes || len(a.Choices) != 1 || a.Choices[0] != opt.ID {
			t.Fatalf("saved %+v, want the new option chosen and marked", a)
		}
	})
	t.Run("AppendCriterion", func(t *testing.T) {
		id := create(t, "criterion")
		crit, _, _, err := ana.AppendCriterion(ctx, id, "pick", "add-speed", "Speed")
		if err != nil {
			t.Fatal(err)
		}
		must(t, ana.SetMark(id, "pick", "bolt", crit.ID, marks.Partly))
		must(t, ana.Choose(id, "pick", "bolt", true))
		must(t, ana.SetText(id, "note", "fast enough"))
		if a := answerOf(save(t, id), "pick"); a.Marks["bolt/"+crit.ID] != marks.Partly {
			t.Fatalf("saved %+v, want the new criterion's mark", a)
		}
	})
	t.Run("RepeatedAppend", func(t *testing.T) {
		id := create(t, "repeat")
		first, _, _, err := ana.AppendOption(ctx, id, "pick", "add-x", "X")
		if err != nil {
			t.Fatal(err)
		}
		again, _, repeated, err := ana.AppendOption(ctx, id, "pick", "add-x", "X")
		if err != nil || !repeated || again.ID != first.ID {
			t.Fatalf("repeat: %+v %v %v", again, repeated, err)
		}
		must(t, ana.SetMark(id, "pick", again.ID, "ops", marks.No))
		must(t, ana.Choose(id, "pick", "bolt", true))
		must(t, ana.SetText(id, "note", "known"))
		if a := answerOf(save(t, id), "pick"); a.Marks[again.ID+"/ops"] != marks.No {
			t.Fatalf("saved %+v", a)
		}
	})
	t.Run("DiscardWhyAsk", func(t *testing.T) {
		id := create(t, "settled")
		must(t, ana.SetText(id, "note", "kept"))
		must(t, ana.Choose(id, "pick", "bolt", true))
		save(t, id)
		if rec, err := ana.SetWhy(ctx, id, "It is the simplest."); err != nil || rec.Why != "It is the simplest." {
			t.Fatalf("why: %+v %v", rec, err)
		}
		if held, _ := ana.Record(id); held.Why != "It is the simplest." {
			t.Fatalf("record after SetWhy returned: why %q", held.Why)
		}
		if _, err := ana.Reopen(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ana.Ask(ctx, id, "ben", "Does it scale?"); err != nil {
			t.Fatal(err)
		}
		if held, _ := ana.Record(id); len(held.Findings) != 1 {
			t.Fatalf("record after Ask returned holds %d findings", len(held.Findings))
		}
		if _, err := ana.Discard(ctx, id); err != nil {
			t.Fatal(err)
		}
		if held, _ := ana.Record(id); held.Status != question.Discarded {
			t.Fatalf("record after Discard returned: %s", held.Status)
		}
		if err := ana.SetText(id, "note", "after discard"); err == nil {
			t.Fatal("an edit of a discarded decision was taken locally")
		}
	})
}
