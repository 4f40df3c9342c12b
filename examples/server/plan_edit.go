package main

// The page's view of the plan and Chat, pushed live, and the plan edits a
// person makes in the page. Every window of a document holds one
// Server-Sent Events stream (GET /api/plan/events): it gets the plan and
// Chat when it connects and again after every change, whoever made it (a
// person in another window, the Planner, an agent over MCP, a write-up, a
// rewrite). A person's edit (POST /api/plan/edit) is the host's edit_plan,
// the same call the Planner makes in a foreground rewrite, so the plan's
// revision guards it and its result lists the decisions whose passage it
// broke (anchors_pending), which the page shows on their cards until the
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

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/delivery"
)

// planFeed wakes the event streams of a document when its plan, its Chat
// or its decisions change. Waking never blocks: a stream that is still
// sending picks up every change it missed in its next snapshot.
type planFeed struct {
	mu     sync.Mutex
	subs   map[chan struct{}]string // wake channel -> document
	closed chan struct{}
	once   sync.Once
}

func newPlanFeed() *planFeed {
	return &planFeed{subs: map[chan struct{}]string{}, closed: make(chan struct{})}
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

// notify wakes doc's streams. It runs inside the host's locks (the plan
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

// close ends every stream: at shutdown, so that the HTTP server's graceful
// shutdown does not wait for connections that never go idle.
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

// planJSON is GET /api/plan's answer and the stream's plan event.
type planJSON struct {
	Revision string      `json:"revision"`
	Blocks   []planBlock `json:"blocks"`
	// Pending are the decisions that owe a review since an edit broke
	// their passage (what edit_plan reports as anchors_pending).
	Pending []delivery.PendingAnchor `json:"pending"`
}

func (a *app) planView(ctx context.Context, doc string) (planJSON, error) {
	snap, err := a.host.Docs.Read(ctx, doc)
	if err != nil {
		return planJSON{}, err
	}
	out := planJSON{Revision: snap.Revision, Blocks: []planBlock{}, Pending: []delivery.PendingAnchor{}}
	for _, b := range snap.Blocks {
		kind := string(b.Kind)
		if b.Kind == delivery.Card {
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
}

func (a *app) chatView(doc string) chatJSON {
	out := chatJSON{Notices: []chatNotice{}}
	for _, n := range a.host.Chat.Notices(doc) {
		out.Notices = append(out.Notices, chatNotice{ID: n.ID, Text: n.Text, Quiet: n.Quiet})
	}
	return out
}

// Streams wait this long after a change before they read the plan, so a
// burst of changes (a rewrite relinking several cards) is one event.
const (
	feedSettle    = 25 * time.Millisecond
	feedHeartbeat = 20 * time.Second
)

// planEvents serves GET /api/plan/events: Server-Sent Events "plan" and
// "chat", each a whole snapshot in the shape of GET /api/plan and GET
// /api/chat, sent when the stream opens and whenever they change.
func (a *app) planEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	doc := docParam(r)
	wake, stop := a.feed.subscribe(doc)
	defer stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	// A dropped stream comes back within a second (the browser's
	// EventSource reconnects by itself, also across a server restart).
	if _, err := fmt.Fprint(w, "retry: 1000\n\n"); err != nil {
		return
	}
	beat := time.NewTicker(feedHeartbeat)
	defer beat.Stop()
	var lastPlan, lastChat []byte
	for {
		plan, err := a.planView(r.Context(), doc)
		if err != nil {
			if r.Context().Err() == nil {
				a.log.Warn("plan events", "doc", doc, "err", err)
			}
			return
		}
		for _, ev := range []struct {
			name string
			v    any
			last *[]byte
		}{{"plan", plan, &lastPlan}, {"chat", a.chatView(doc), &lastChat}} {
			raw, err := json.Marshal(ev.v)
			if err != nil {
				a.log.Error("plan events", "err", err)
				return
			}
			if string(raw) == string(*ev.last) {
				continue
			}
			*ev.last = raw
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, raw); err != nil {
				return
			}
		}
		fl.Flush()
	wait:
		for {
			select {
			case <-r.Context().Done():
				return
			case <-a.feed.closed:
				return
			case <-beat.C:
				if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
					return
				}
				fl.Flush()
			case <-wake:
				break wait
			}
		}
		select {
		case <-time.After(feedSettle):
		case <-r.Context().Done():
			return
		}
	}
}

// maxBlockText bounds the text of one block a person writes in the page.
const maxBlockText = 4000

// planEdit serves POST /api/plan/edit?member=…: a person's edit of the
// plan's text (edit, insert or delete blocks, all or none) at the revision
// their page shows, through the host's edit_plan. A reader is refused
// (forbidden), a page behind the plan gets stale, and bad input invalid,
// each with a reason word and nothing changed.
func (a *app) planEdit(w http.ResponseWriter, r *http.Request) {
	m, ok := memberOf(r)
	if !ok {
		refuse(w, http.StatusUnauthorized, "unauthorized", "name a demo member (?member=ana) to edit the plan")
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
	var in delivery.EditPlanInput
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
		if e.Op == delivery.OpInsert && e.Kind == delivery.Title {
			refuse(w, http.StatusBadRequest, string(question.Invalid), fmt.Sprintf("edits[%d].kind: the plan has one title; insert a heading or a paragraph", i))
			return
		}
	}
	res, err := a.tools.EditPlan(r.Context(), delivery.Call{Doc: doc}, in)
	if err != nil {
		refuseErr(w, a.log, err)
		return
	}
	writeJSON(w, res)
}

// demoRewriteRoute serves POST /api/demo/rewrite?member=… for a member
// who can write (demoRewrite).
func (a *app) demoRewriteRoute() http.HandlerFunc {
	rewrite := demoRewrite(a.tools, a.host.Docs, a.log)
	return func(w http.ResponseWriter, r *http.Request) {
		m, ok := memberOf(r)
		if !ok {
			refuse(w, http.StatusUnauthorized, "unauthorized", "name a demo member (?member=ana) to rewrite the plan")
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
