package main

// The page's view of the plan and Chat, pushed live, and the plan edits a
// person makes in the page. Every window of a document holds one feed
// socket (GET /api/plan/socket): it gets the plan and Chat when it
// connects and again after every change, whoever made it (a person in
// another window, the Planner, an agent over MCP, a write-up, a rewrite).
// A person's edit (POST /api/plan/edit) is the host's edit_plan, the same
// call the Planner makes in a foreground rewrite, so the plan's revision
// guards it and its result lists the decisions whose passage it broke
// (anchors_pending), which the page shows on their cards until the
// Planner re-anchors them (anchor_plan).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

// planFeed wakes the feeds of a document when its plan, its Chat or its
// decisions change. Waking never blocks: a feed that is still sending
// picks up every change it missed in its next snapshot.
type planFeed struct {
	// up accepts the page's feed socket from its own origin only
	// (gorilla's default check).
	up     websocket.Upgrader
	mu     sync.Mutex
	subs   map[chan struct{}]string // wake channel -> document
	closed chan struct{}
	once   sync.Once
}

func newPlanFeed() *planFeed {
	return &planFeed{up: websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 16 << 10},
		subs: map[chan struct{}]string{}, closed: make(chan struct{})}
}

// subscribe returns a channel that receives after each change of doc, and
// the function that ends the subscription.
func (f *planFeed) subscribe(doc string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	f.subs[ch] = doc
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
	}
}

// notify wakes doc's feeds. It runs inside the host's locks (the plan
// and Chat call it as they persist a change), so it only signals.
func (f *planFeed) notify(doc string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch, d := range f.subs {
		if d == doc {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// close ends every feed, at shutdown.
func (f *planFeed) close() { f.once.Do(func() { close(f.closed) }) }

// planBlock is a block as the page reads it: a decision card is a block
// of kind "decision" naming its decision and the block it is linked to.
type planBlock struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Text     string `json:"text,omitempty"`
	Decision string `json:"decision,omitempty"`
	Link     string `json:"link,omitempty"`
}

// planJSON is GET /api/plan's answer and the feed's plan message.
type planJSON struct {
	Revision string      `json:"revision"`
	Blocks   []planBlock `json:"blocks"`
	// Pending are the decisions that owe a review since an edit broke
	// their passage (what edit_plan reports as anchors_pending).
	Pending []planner.PendingAnchor `json:"pending"`
}

func (a *app) planView(ctx context.Context, doc string) (planJSON, error) {
	snap, err := a.host.Docs.Read(ctx, doc)
	if err != nil {
		return planJSON{}, err
	}
	out := planJSON{Revision: snap.Revision, Blocks: []planBlock{}, Pending: []planner.PendingAnchor{}}
	for _, b := range snap.Blocks {
		kind := string(b.Kind)
		if b.Kind == planner.Card {
			kind = "decision"
		}
		out.Blocks = append(out.Blocks, planBlock{ID: b.ID, Kind: kind, Text: b.Text, Decision: b.Decision, Link: b.Link})
	}
	if len(snap.Blocks) > 0 {
		if out.Pending, err = a.tools.AnchorsPending(ctx, doc); err != nil {
			return planJSON{}, err
		}
	}
	return out, nil
}

type chatNotice struct {
	ID    string `json:"id"`
	Text  string `json:"text"`
	Quiet bool   `json:"quiet,omitempty"` // a failure's notice (research.go)
}

type chatJSON struct {
	Notices []chatNotice `json:"notices"`
	// Agent is set while an agent answers as the Planner (mcp.go).
	Agent *agentJSON `json:"agent,omitempty"`
}

func (a *app) chatView(doc string) chatJSON {
	out := chatJSON{Notices: []chatNotice{}, Agent: a.agentView(doc)}
	for _, n := range a.host.Chat.Notices(doc) {
		out.Notices = append(out.Notices, chatNotice{ID: n.ID, Text: n.Text, Quiet: n.Quiet})
	}
	return out
}

// Feeds wait this long after a change before they read the plan, so a
// burst of changes (a rewrite relinking several cards) is one message.
const (
	feedSettle = 25 * time.Millisecond
	feedPing   = 20 * time.Second
	feedWrite  = 10 * time.Second // a page that takes longer to read is dropped
)

// feedMessage is one message of the feed: a whole snapshot of the plan
// (shaped as GET /api/plan answers) or of Chat (as GET /api/chat).
type feedMessage struct {
	Plan *planJSON `json:"plan,omitempty"`
	Chat *chatJSON `json:"chat,omitempty"`
}

// planSocket serves GET /api/plan/socket, the page's live feed of the
// plan and Chat: a WebSocket (which, unlike a long-lived HTTP response,
// does not take one of the few connections a browser keeps per server,
// so any number of windows may hold one). It sends the plan and Chat when
// it opens and again whenever they change; the page sends nothing. It
// ends when the page goes, a write stalls, or the app shuts down.
func (a *app) planSocket(w http.ResponseWriter, r *http.Request) {
	doc := docParam(r)
	wake, stop := a.feed.subscribe(doc)
	defer stop()
	ws, err := a.feed.up.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered the request
	}
	defer ws.Close()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// The reader's only work is to notice the page going (and to answer
	// pings, which gorilla does inside ReadMessage).
	ws.SetReadLimit(512)
	go func() {
		defer cancel()
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}()
	send := func(m feedMessage) bool {
		ws.SetWriteDeadline(time.Now().Add(feedWrite))
		return ws.WriteJSON(m) == nil
	}
	ping := time.NewTicker(feedPing)
	defer ping.Stop()
	var lastPlan, lastChat []byte
	for {
		plan, err := a.planView(ctx, doc)
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("plan feed", "doc", doc, "err", err)
			}
			return
		}
		chat := a.chatView(doc)
		rawPlan, _ := json.Marshal(plan)
		rawChat, _ := json.Marshal(chat)
		if string(rawPlan) != string(lastPlan) {
			if !send(feedMessage{Plan: &plan}) {
				return
			}
			lastPlan = rawPlan
		}
		if string(rawChat) != string(lastChat) {
			if !send(feedMessage{Chat: &chat}) {
				return
			}
			lastChat = rawChat
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return
			case <-a.feed.closed:
				// The page reconnects to the next server on this address.
				ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "shutting down"), time.Now().Add(time.Second))
				return
			case <-ping.C:
				if ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(feedWrite)) != nil {
					return
				}
			case <-wake:
				break wait
			}
		}
		select {
		case <-time.After(feedSettle):
		case <-ctx.Done():
			return
		}
	}
}

// maxBlockText bounds the text of one block a person writes in the page.
const maxBlockText = 4000

// planEdit serves POST /api/plan/edit: a person's edit of the
// plan's text (edit, insert or delete blocks, all or none) at the revision
// their page shows, through the host's edit_plan. A reader is refused
// (forbidden), a page behind the plan gets stale, and bad input invalid,
// each with a reason word and nothing changed.
func (a *app) planEdit(w http.ResponseWriter, r *http.Request) {
	m, ok := a.sessions.memberOf(r)
	if !ok {
		refuse(w, http.StatusUnauthorized, "unauthorized", "sign in to edit the plan")
		return
	}
	if !m.Write {
		refuse(w, http.StatusForbidden, string(question.Forbidden), "you can read this plan but not change it")
		return
	}
	doc := docParam(r)
	if len(a.host.Docs.Blocks(doc)) == 0 {
		refuse(w, http.StatusNotFound, string(question.NotFound), "there is no plan "+doc)
		return
	}
	var in planner.EditPlanInput
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 256<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		refuse(w, http.StatusBadRequest, string(question.Invalid), "the body is an edit_plan input {revision, edits}: "+err.Error())
		return
	}
	for i, e := range in.Edits {
		if n := utf8.RuneCountInString(e.Text); n > maxBlockText {
			refuse(w, http.StatusBadRequest, string(question.Invalid), fmt.Sprintf("edits[%d].text holds %d characters; a block holds at most %d", i, n, maxBlockText))
			return
		}
		if e.Op == planner.OpInsert && e.Kind == planner.Title {
			refuse(w, http.StatusBadRequest, string(question.Invalid), fmt.Sprintf("edits[%d].kind: the plan has one title; insert a heading or a paragraph", i))
			return
		}
	}
	res, err := a.tools.EditPlan(r.Context(), planner.Call{Doc: doc}, in)
	if err != nil {
		refuseErr(w, a.log, err)
		return
	}
	writeJSON(w, res)
}

// demoRewriteRoute serves POST /api/demo/rewrite for a member
// who can write (demoRewrite).
func (a *app) demoRewriteRoute() http.HandlerFunc {
	// Every window hears of the rewrite in Chat; the rewriter's page
	// shows the same words.
	rewrite := demoRewrite(a.tools, a.host.Docs, a.log, func(r *http.Request, doc string, res planner.UpdateDocumentResult) string {
		m, _ := a.sessions.memberOf(r)
		if err := a.host.Chat.Post(r.Context(), doc, planner.Notice{ID: "rewrite-" + res.Revision, Text: rewriteNote("@"+m.Login, res)}); err != nil {
			a.log.Warn("chat", "doc", doc, "err", err)
		}
		return rewriteNote(m.Name, res)
	})
	return func(w http.ResponseWriter, r *http.Request) {
		m, ok := a.sessions.memberOf(r)
		if !ok {
			refuse(w, http.StatusUnauthorized, "unauthorized", "sign in to rewrite the plan")
			return
		}
		if !m.Write {
			refuse(w, http.StatusForbidden, string(question.Forbidden), "only a member who can write can rewrite the plan")
			return
		}
		if len(a.host.Docs.Blocks(docParam(r))) == 0 {
			refuse(w, http.StatusNotFound, string(question.NotFound), "there is no plan "+docParam(r))
			return
		}
		rewrite(w, r)
	}
}

func refuse(w http.ResponseWriter, status int, reason, msg string) {
	w.WriteHeader(status)
	writeJSON(w, map[string]string{"reason": reason, "error": msg})
}

// refuseErr answers a tool's error: a refusal with its reason word (stale
// is a conflict, the others bad input), anything else a server error.
func refuseErr(w http.ResponseWriter, log *slog.Logger, err error) {
	var ref *question.Refusal
	if !errors.As(err, &ref) {
		log.Error("plan edit", "err", err)
		refuse(w, http.StatusInternalServerError, string(question.Unavailable), "the plan could not be changed; nothing was changed")
		return
	}
	status := http.StatusBadRequest
	switch ref.Reason {
	case question.Stale:
		status = http.StatusConflict
	case question.Unavailable:
		status = http.StatusServiceUnavailable
	}
	msg := ref.Message
	if msg == "" {
		msg = ref.Error()
	}
	refuse(w, status, string(ref.Reason), msg)
}
