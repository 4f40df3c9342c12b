package replica_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/loopback"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/wire"
)

// fakeServer speaks the server's side of the protocol for one document,
// over loopback pipes or real WebSockets, deciding every command with a
// real question.Authority on an in-memory store. Its knobs let a test take
// it down, hold or refuse edits, and inject frames.
type fakeServer struct {
	t  testing.TB
	wg sync.WaitGroup

	mu     sync.Mutex
	auth   *question.Authority
	conns  map[*fakeConn]bool
	down   map[string]bool // logins whose dials fail; "*" for everyone
	dials  []dialAttempt
	hellos map[string][]*wire.Hello // by login
	frames []wire.Kind              // kinds of client frames received, in order
	// refuseEdits refuses every edit as invalid, with reset.
	refuseEdits bool
	// rebased holds the decisions whose history the test replaced (see
	// rebase): their edits are decided against this document instead of
	// the authority's.
	rebased map[string]*crdt.Doc
	// edits are the change batches of the edits of rebased decisions.
	edits [][]byte
	// withholdJoin sends the welcome of a join but not the decisions'
	// documents that follow it.
	withholdJoin bool
	// echoEdits decides each edit and sends its changes to every
	// connection, the editor's too, but no reply: as an owner does whose
	// early changes reach the editor through another holder's copy, and
	// which never commits them.
	echoEdits bool

	// gate, when set, holds each edit until a value is received from it
	// (outside mu, so the rest of the server runs on).
	gate chan struct{}
}

type dialAttempt struct {
	login string
	at    time.Time
}

type fakeConn struct {
	conn   replica.Conn
	member question.Member
	format wire.Format
	wmu    sync.Mutex
}

const docID = "plan"

// decision ids the fake mints, in order.
var fakeIDs = []string{"dec1", "dec2", "dec3", "o-new1", "o-new2", "c-new1", "c-new2", "c-new3", "x1", "x2", "x3", "x4"}

func newFakeServer(t testing.TB) *fakeServer {
	t.Helper()
	var mintMu sync.Mutex
	ids := slices.Clone(fakeIDs)
	n := 0
	auth, err := question.NewAuthority(context.Background(), question.Options{
		Store: memstore.New(), Doc: docID,
		NewID: func() string {
			mintMu.Lock()
			defer mintMu.Unlock()
			n++
			if len(ids) > 0 {
				id := ids[0]
				ids = ids[1:]
				return id
			}
			return "gen" + strings.Repeat("x", n)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{t: t, auth: auth, conns: map[*fakeConn]bool{}, down: map[string]bool{}, hellos: map[string][]*wire.Hello{}}
	t.Cleanup(s.close)
	return s
}

// definition: a choice question with a matrix and a written question.
func definition() question.Definition {
	return question.Definition{Questions: []question.Question{
		{ID: "pick", Text: "Which store?", Options: []question.Option{{ID: "bolt", Label: "bbolt"}, {ID: "pg", Label: "Postgres"}},
			Criteria: []question.Criterion{{ID: "cost", Label: "Cost"}, {ID: "ops", Label: "Operations"}}},
		{ID: "note", Text: "Why?", Response: question.Text, Options: []question.Option{}},
	}}
}

// create opens a decision directly on the authority and returns its id.
func (s *fakeServer) create(key string) string {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	out, err := s.auth.Create(context.Background(), question.Member{Login: "planner", Write: true},
		[]question.CreateRequest{{Key: key, Definition: definition()}})
	if err != nil {
		s.t.Fatal(err)
	}
	return out[0].Record.ID
}

func (s *fakeServer) draft(id string) crdt.Draft {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if doc := s.rebased[id]; doc != nil {
		d, err := doc.Draft()
		if err != nil {
			s.t.Fatal(err)
		}
		return d
	}
	d, _, err := s.auth.Draft(id)
	if err != nil {
		s.t.Fatal(err)
	}
	return d
}

func (s *fakeServer) heads(id string) crdt.Heads {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if doc := s.rebased[id]; doc != nil {
		return doc.Heads()
	}
	_, h, err := s.auth.Draft(id)
	if err != nil {
		s.t.Fatal(err)
	}
	return h
}

// rebase replaces a decision's history with a new one holding the same
// state, as the server's compaction does: a fresh document with the same
// questions and the current draft's values, sharing no change with the
// old history. From then on the fake decides the decision's edits against
// it: changes that apply are accepted, changes of another history are
// refused as stale with reset and the rebased document. With announce,
// every connection gets the rebased document as a question:doc.
func (s *fakeServer) rebase(id string, announce bool) *crdt.Doc {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.auth.Record(id)
	if !ok {
		s.t.Fatalf("rebase: no decision %s", id)
	}
	draft, _, err := s.auth.Draft(id)
	if err != nil {
		s.t.Fatal(err)
	}
	doc, err := crdt.New(crdt.Options{})
	if err != nil {
		s.t.Fatal(err)
	}
	for _, q := range rec.Definition.Questions {
		shape := crdt.QuestionShape{ID: q.ID, Written: q.Written(), Multiple: q.Multiple}
		for _, o := range q.Options {
			shape.Options = append(shape.Options, crdt.Item{ID: o.ID, Label: o.Label})
		}
		for _, c := range q.Criteria {
			shape.Criteria = append(shape.Criteria, crdt.Item{ID: c.ID, Label: c.Label})
		}
		if err := doc.AddQuestion(shape); err != nil {
			s.t.Fatal(err)
		}
	}
	if err := doc.StartGeneration(draft.Generation); err != nil {
		s.t.Fatal(err)
	}
	for q, qd := range draft.Questions {
		for k, m := range qd.Marks {
			cell, err := marks.ParseKey(k)
			if err != nil {
				s.t.Fatal(err)
			}
			if err := doc.SetMark(q, cell.Option, cell.Criterion, m); err != nil {
				s.t.Fatal(err)
			}
		}
		for _, o := range qd.Choices {
			if err := doc.Choose(q, o, true); err != nil {
				s.t.Fatal(err)
			}
		}
		if qd.Text != "" {
			if err := doc.SetText(q, qd.Text); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	if got, err := doc.Draft(); err != nil || !got.Equal(draft) {
		s.t.Fatalf("rebase: the new document holds %+v, want %+v (%v)", got, draft, err)
	}
	if s.rebased == nil {
		s.rebased = map[string]*crdt.Doc{}
	}
	s.rebased[id] = doc
	if announce {
		s.broadcast(nil, s.catchUp(id, nil))
	}
	return doc
}

// setDown makes the dials of login ("*": everyone) fail, or succeed again.
func (s *fakeServer) setDown(login string, down bool) {
	s.mu.Lock()
	s.down[login] = down
	s.mu.Unlock()
}

// drop closes the connections of login ("*": everyone) from the server's
// side.
func (s *fakeServer) drop(login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for fc := range s.conns {
		if login == "*" || fc.member.Login == login {
			fc.conn.Close()
		}
	}
}

func (s *fakeServer) close() {
	s.setDown("*", true)
	s.drop("*")
	s.mu.Lock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *fakeServer) countFrames(kind wire.Kind) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, k := range s.frames {
		if k == kind {
			n++
		}
	}
	return n
}

func (s *fakeServer) frameLog() []wire.Kind {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.frames)
}

// dialTimes returns when login dialled, in order.
func (s *fakeServer) dialTimes(login string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Time
	for _, d := range s.dials {
		if d.login == login {
			out = append(out, d.at)
		}
	}
	return out
}

// hellosOf returns the hellos login sent, in order.
func (s *fakeServer) hellosOf(login string) []*wire.Hello {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hellos[login])
}

// dial is an Options.Dialer over loopback. The X-Login header names the
// member; X-Read-Only makes them a reader.
func (s *fakeServer) dial(ctx context.Context, url string, h http.Header) (replica.Conn, error) {
	member := memberOf(h)
	s.mu.Lock()
	s.dials = append(s.dials, dialAttempt{member.Login, time.Now()})
	down := s.down["*"] || s.down[member.Login]
	s.mu.Unlock()
	if down {
		return nil, errors.New("connection refused")
	}
	a, b := loopback.Pipe()
	s.serve(b, member)
	return a, nil
}

func memberOf(h http.Header) question.Member {
	login := h.Get("X-Login")
	if login == "" {
		login = "ana"
	}
	return question.Member{Login: login, Write: h.Get("X-Read-Only") == ""}
}

// httpServer serves the fake over real WebSockets.
func (s *fakeServer) httpServer() *httptest.Server {
	up := websocket.Upgrader{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		down := s.down["*"]
		s.mu.Unlock()
		if down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if r.URL.Query().Get("doc") != docID {
			http.Error(w, "unknown document", http.StatusNotFound)
			return
		}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		s.serve(ws, memberOf(r.Header))
	}))
	s.t.Cleanup(hs.Close)
	return hs
}

func (s *fakeServer) serve(conn replica.Conn, member question.Member) {
	fc := &fakeConn{conn: conn, member: member}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer conn.Close()
		defer func() {
			s.mu.Lock()
			delete(s.conns, fc)
			s.mu.Unlock()
		}()
		joined := false
		for {
			typ, data, err := conn.ReadMessage()
			if err != nil {
				return
			}
			format := wire.Binary
			if typ == websocket.TextMessage {
				format = wire.Text
			}
			m, err := wire.Decode(data, format)
			if err != nil {
				s.t.Errorf("fake server: client sent a bad frame: %v", err)
				return
			}
			s.mu.Lock()
			s.frames = append(s.frames, m.FrameKind())
			gate := s.gate
			s.mu.Unlock()
			if !joined {
				h, ok := m.(*wire.Hello)
				if !ok {
					s.t.Errorf("fake server: first frame is %s", m.FrameKind())
					return
				}
				s.join(fc, h, format)
				joined = true
				continue
			}
			if _, ok := m.(*wire.Edit); ok && gate != nil {
				if _, ok := <-gate; !ok {
					return
				}
			}
			s.mu.Lock()
			s.handle(fc, m)
			s.mu.Unlock()
		}
	}()
}

func (fc *fakeConn) send(m wire.Message) {
	b, err := wire.Encode(m, fc.format)
	if err != nil {
		panic(err)
	}
	typ := websocket.BinaryMessage
	if fc.format == wire.Text {
		typ = websocket.TextMessage
	}
	fc.wmu.Lock()
	defer fc.wmu.Unlock()
	fc.conn.WriteMessage(typ, b) // a failed write shows as the conn's read failing
}

// broadcast sends to every joined conn but except. The caller holds mu.
func (s *fakeServer) broadcast(except *fakeConn, m wire.Message) {
	for fc := range s.conns {
		if fc != except {
			fc.send(m)
		}
	}
}

// inject sends a frame to every connection.
func (s *fakeServer) inject(m wire.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.broadcast(nil, m)
}

func wireHeads(h crdt.Heads) []string {
	out := make([]string, len(h))
	for i := range h {
		out[i] = h[i].String()
	}
	return out
}

func (s *fakeServer) join(fc *fakeConn, h *wire.Hello, format wire.Format) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fc.format = format
	s.hellos[fc.member.Login] = append(s.hellos[fc.member.Login], h)
	recs := s.auth.Records()
	fc.send(&wire.Welcome{Header: wire.Header{Kind: wire.KindWelcome}, V: wire.Version, Doc: docID,
		Member: fc.member.Login, Write: fc.member.Write, Records: recs})
	for _, r := range recs {
		if !s.withholdJoin {
			fc.send(s.catchUp(r.ID, h.Have[r.ID]))
		}
	}
	s.conns[fc] = true
}

func (s *fakeServer) catchUp(id string, have []string) wire.Message {
	if doc := s.rebased[id]; doc != nil {
		if h, err := crdt.ParseHeads(strings.Join(have, ",")); err == nil && have != nil && doc.Has(h) {
			if ch, err := doc.ChangesSince(h); err == nil {
				return &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: id, Changes: ch, Heads: wireHeads(doc.Heads())}
			}
		}
		return &wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: id, Doc: doc.Save(), Heads: wireHeads(doc.Heads())}
	}
	_, cur, _ := s.auth.Draft(id)
	if have != nil {
		if h, err := crdt.ParseHeads(strings.Join(have, ",")); err == nil {
			if ch, err := s.auth.ChangesSince(id, h); err == nil {
				return &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: id, Changes: ch, Heads: wireHeads(cur)}
			}
		}
	}
	saved, _ := s.auth.Save(id)
	return &wire.Doc{Header: wire.Header{Kind: wire.KindDoc}, ID: id, Doc: saved, Heads: wireHeads(cur)}
}

func (s *fakeServer) refusal(h wire.Header, id string, err error) *wire.Reply {
	r := &wire.Reply{Header: h, ID: id}
	var ref *question.Refusal
	if !errors.As(err, &ref) {
		s.t.Errorf("fake server: %s failed: %v", h.Kind, err)
		ref = &question.Refusal{Reason: question.Unavailable}
	}
	r.Reason, r.Message, r.Reset = ref.Reason, ref.Message, ref.Reset
	if r.Reset {
		r.Doc, _ = s.auth.Save(id)
	}
	return r
}

// handle decides one request. The caller holds mu.
func (s *fakeServer) handle(fc *fakeConn, m wire.Message) {
	ctx := context.Background()
	switch m := m.(type) {
	case *wire.Edit:
		if s.refuseEdits {
			fc.send(s.refusal(m.Header, m.ID, &question.Refusal{Reason: question.Invalid, Message: "refused by the test", Reset: true}))
			return
		}
		if doc := s.rebased[m.ID]; doc != nil {
			s.rebasedEdit(fc, doc, m)
			return
		}
		res, err := s.auth.Edit(ctx, fc.member, m.ID, m.Changes)
		if err != nil {
			fc.send(s.refusal(m.Header, m.ID, err))
			return
		}
		if s.echoEdits {
			if len(res.Changes) > 0 {
				s.broadcast(nil, &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: m.ID, Changes: res.Changes, Heads: wireHeads(res.Heads), By: "someone"})
			}
			return
		}
		fc.send(&wire.Reply{Header: m.Header, ID: m.ID, OK: true, Heads: wireHeads(res.Heads)})
		if len(res.Changes) > 0 {
			s.broadcast(fc, &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: m.ID, Changes: res.Changes, Heads: wireHeads(res.Heads), By: fc.member.Login})
		}
	case *wire.Submit:
		reqs := make([]question.SubmitRequest, len(m.Items))
		for i, it := range m.Items {
			h, err := crdt.ParseHeads(strings.Join(it.Heads, ","))
			if err != nil {
				s.t.Errorf("fake server: bad heads %v", it.Heads)
			}
			reqs[i] = question.SubmitRequest{ID: it.ID, Heads: h}
		}
		out, err := s.auth.Submit(ctx, fc.member, reqs)
		if err != nil {
			fc.send(s.refusal(m.Header, "", err))
			return
		}
		r := &wire.Reply{Header: m.Header, OK: true}
		for _, o := range out {
			res := wire.SubmitResult{ID: o.ID, OK: o.Err == nil}
			if o.Err != nil {
				res.Reason, res.Message = question.ReasonOf(o.Err), o.Err.Error()
			} else {
				rec := o.Record
				res.Record = &rec
			}
			r.Results = append(r.Results, res)
		}
		fc.send(r)
		for _, res := range r.Results {
			if res.OK {
				s.broadcast(nil, &wire.Event{Header: wire.Header{Kind: wire.KindResolved}, ID: res.ID, Record: res.Record, Answer: res.Record.Answer, By: fc.member.Login})
			}
		}
	case *wire.Target:
		if m.Kind != wire.KindReopen {
			fc.send(&wire.Error{Header: wire.Header{Kind: wire.KindError, RID: m.RID}, Reason: "invalid", Message: "not in the fake"})
			return
		}
		_, before, _ := s.auth.Draft(m.ID)
		res, err := s.auth.Reopen(ctx, fc.member, m.ID, m.Generation)
		if err != nil {
			fc.send(s.refusal(m.Header, m.ID, err))
			return
		}
		rec := res.Record
		fc.send(&wire.Reply{Header: m.Header, ID: m.ID, OK: true, Record: &rec})
		s.broadcast(nil, &wire.Event{Header: wire.Header{Kind: wire.KindReopened}, ID: m.ID, Record: &rec, By: fc.member.Login})
		s.broadcastChanges(m.ID, before, fc.member.Login)
	case *wire.Append:
		_, before, _ := s.auth.Draft(m.ID)
		req := question.AppendRequest{ID: m.ID, Question: m.Question, Key: m.Key, Label: m.Label}
		var res question.AppendResult
		var err error
		if m.Kind == wire.KindCriterion {
			res, err = s.auth.AppendCriterion(ctx, fc.member, req)
		} else {
			res, err = s.auth.AppendOption(ctx, fc.member, req)
		}
		if err != nil {
			fc.send(s.refusal(m.Header, m.ID, err))
			return
		}
		def := res.Definition
		r := &wire.Reply{Header: m.Header, ID: m.ID, OK: true, Definition: &def, Repeated: res.Repeated}
		ev := &wire.Event{ID: m.ID, Question: m.Question, Definition: &def, By: fc.member.Login}
		if m.Kind == wire.KindCriterion {
			crit := question.Criterion(res.Item)
			r.Criterion, ev.Criterion, ev.Kind = &crit, &crit, wire.KindCriterionAdded
		} else {
			opt := res.Item
			r.Option, ev.Option, ev.Kind = &opt, &opt, wire.KindOptionAdded
		}
		fc.send(r)
		if !res.Repeated {
			s.broadcast(nil, ev)
			s.broadcastChanges(m.ID, before, fc.member.Login)
		}
	case *wire.Create:
		reqs := make([]question.CreateRequest, len(m.Cards))
		for i, c := range m.Cards {
			reqs[i] = question.CreateRequest{Key: c.Key, Origin: c.Origin, Definition: c.Definition}
		}
		out, err := s.auth.Create(ctx, fc.member, reqs)
		if err != nil {
			fc.send(s.refusal(m.Header, "", err))
			return
		}
		r := &wire.Reply{Header: m.Header, OK: true}
		for _, o := range out {
			r.Records = append(r.Records, o.Record)
		}
		fc.send(r)
		for _, o := range out {
			rec := o.Record
			s.broadcast(nil, &wire.Event{Header: wire.Header{Kind: wire.KindCreated}, ID: rec.ID, Record: &rec, By: fc.member.Login})
			s.broadcast(nil, s.catchUp(rec.ID, nil))
		}
	default:
		fc.send(&wire.Error{Header: wire.Header{Kind: wire.KindError}, Reason: "invalid", Message: "not in the fake: " + string(m.FrameKind())})
	}
}

func (s *fakeServer) broadcastChanges(id string, before crdt.Heads, by string) {
	ch, err := s.auth.ChangesSince(id, before)
	if err != nil || len(ch) == 0 {
		return
	}
	_, cur, _ := s.auth.Draft(id)
	s.broadcast(nil, &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: id, Changes: ch, Heads: wireHeads(cur), By: by})
}

// rebasedEdit decides an edit of a rebased decision. The caller holds mu.
func (s *fakeServer) rebasedEdit(fc *fakeConn, doc *crdt.Doc, m *wire.Edit) {
	s.edits = append(s.edits, m.Changes)
	if _, err := doc.ApplyChanges(m.Changes); err != nil {
		r := &wire.Reply{Header: m.Header, ID: m.ID, Reason: question.Invalid, Message: err.Error(), Reset: true, Doc: doc.Save()}
		if errors.Is(err, crdt.ErrMissingDeps) {
			r.Reason, r.Message = question.Stale, "the decision's history was rebased"
		}
		fc.send(r)
		return
	}
	fc.send(&wire.Reply{Header: m.Header, ID: m.ID, OK: true, Heads: wireHeads(doc.Heads())})
	s.broadcast(fc, &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: m.ID, Changes: m.Changes, Heads: wireHeads(doc.Heads()), By: fc.member.Login})
}

// forward decides a peer's edit on the authority, as if by login over
// another connection, and forwards the accepted changes to every
// connection.
func (s *fakeServer) forward(id, login string, changes []byte) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := s.auth.Edit(context.Background(), question.Member{Login: login, Write: true}, id, changes)
	if err != nil {
		s.t.Fatalf("forward: %v", err)
	}
	if len(res.Changes) > 0 {
		s.broadcast(nil, &wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: id, Changes: res.Changes, Heads: wireHeads(res.Heads), By: login})
	}
}
