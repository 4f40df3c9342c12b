package main

// Tests of the plan's edit API and its event stream (plan_edit.go) over a
// real listener and a real bbolt folder; the page's side is in
// browser_plan_test.go.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/question/planner/memhost"
)

func postEdit(t *testing.T, base, query, body string) (int, map[string]any) {
	t.Helper()
	res, err := http.Post(base+"/api/plan/edit"+query, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("POST /api/plan/edit%s: %v", query, err)
	}
	return res.StatusCode, out
}

// Bad plan edits get a status and a reason word and change nothing: no
// member or a reader, a revision the plan moved past, an unknown block, a
// card, an unknown op or kind, a second title, too long a text, a body
// that is not an edit_plan input; a good one moves the revision on and
// lists the decisions whose passage it broke (anchors_pending).
func TestPlanEditRefusals(t *testing.T) {
	a, hs := testApp(t)
	ids := map[string]string{}
	code, body := postStart(t, hs, "?member=ana")
	if code != http.StatusOK {
		t.Fatalf("start: %d %v", code, body)
	}
	for _, o := range body["opened"].([]any) {
		m := o.(map[string]any)
		ids[m["key"].(string)] = m["id"].(string)
	}
	// The demo's ask places its card on its own: wait for all four.
	testutil.EventuallyWithin(t, waitTime, "the demo's four cards", func() (bool, string) {
		n := 0
		for _, b := range a.host.Docs.Blocks(demoDoc) {
			if b.Decision != "" {
				n++
			}
		}
		return n == 4, fmt.Sprint(n, " cards")
	})
	rev := a.host.Docs.Revision(demoDoc)
	before := a.host.Docs.State(demoDoc)
	long := strings.Repeat("x", maxBlockText+1)
	for _, c := range []struct {
		name, query, body string
		code              int
		reason, mention   string
	}{
		{"nobody", "", `{"revision":"` + rev + `","edits":[{"op":"edit","block":"b3","text":"x"}]}`, 401, "unauthorized", "sign in"},
		{"a stranger", "?member=mallory", `{"revision":"` + rev + `","edits":[{"op":"edit","block":"b3","text":"x"}]}`, 401, "unauthorized", "sign in"},
		{"a reader", "?member=rita", `{"revision":"` + rev + `","edits":[{"op":"edit","block":"b3","text":"x"}]}`, 403, "forbidden", "read"},
		{"an unknown plan", "?member=ana&doc=nowhere", `{"revision":"r0","edits":[{"op":"insert","kind":"paragraph","text":"x"}]}`, 404, "not_found", "nowhere"},
		{"an old revision", "?member=ana", `{"revision":"r1","edits":[{"op":"edit","block":"b3","text":"x"}]}`, 409, "stale", "r1"},
		{"no revision", "?member=ana", `{"edits":[{"op":"edit","block":"b3","text":"x"}]}`, 400, "invalid", "revision"},
		{"no edits", "?member=ana", `{"revision":"` + rev + `","edits":[]}`, 400, "invalid", "edits"},
		{"an unknown block", "?member=ana", `{"revision":"` + rev + `","edits":[{"op":"edit","block":"b99","text":"x"}]}`, 400, "invalid", "b99"},
		{"a card", "?member=ana", `{"revision":"` + rev + `","edits":[{"op":"delete","block":"card-` + ids["rollout"] + `"}]}`, 400, "invalid", "edits[0].block"},
		{"the second edit bad", "?member=ana", `{"revision":"` + rev + `","edits":[{"op":"edit","block":"b3","text":"ok"},{"op":"move","block":"b3"}]}`, 400, "invalid", "edits[1].op"},
		{"no kind", "?member=ana", `{"revision":"` + rev + `","edits":[{"op":"insert","after":"b3","text":"x"}]}`, 400, "invalid", "edits[0].kind"},
		{"a second title", "?member=ana", `{"revision":"` + rev + `","edits":[{"op":"insert","after":"b3","kind":"title","text":"x"}]}`, 400, "invalid", "title"},
		{"too long a text", "?member=ana", `{"revision":"` + rev + `","edits":[{"op":"edit","block":"b3","text":"` + long + `"}]}`, 400, "invalid", "edits[0].text"},
		{"not JSON", "?member=ana", `revision=r1`, 400, "invalid", "edit_plan"},
		{"an unknown field", "?member=ana", `{"revision":"` + rev + `","edits":[],"force":true}`, 400, "invalid", "force"},
	} {
		code, body := postEdit(t, hs.URL, c.query, c.body)
		msg, _ := body["error"].(string)
		if code != c.code || body["reason"] != c.reason || !strings.Contains(msg, c.mention) {
			t.Errorf("%s: %d %v, want %d %s naming %q", c.name, code, body, c.code, c.reason, c.mention)
		}
		if after := a.host.Docs.State(demoDoc); !same(after, before) {
			t.Fatalf("%s changed the plan: %+v", c.name, after)
		}
	}

	// A heading inserted inside the recovery passage (b5, b6) is an
	// unrelated gap: the recovery decision owes a review.
	code, body = postEdit(t, hs.URL, "?member=ben", `{"revision":"`+rev+`","edits":[{"op":"edit","block":"b3","text":"New users sign in from the invitation."},{"op":"insert","after":"b5","kind":"heading","text":"Channels"}]}`)
	if code != http.StatusOK {
		t.Fatalf("a good edit: %d %v", code, body)
	}
	pending, _ := body["anchors_pending"].([]any)
	if body["revision"] == rev || len(pending) != 1 || pending[0].(map[string]any)["decision"] != ids["recovery"] ||
		!strings.Contains(pending[0].(map[string]any)["reason"].(string), "unrelated gap") {
		t.Fatalf("a good edit: %v", body)
	}
	if got := a.host.Docs.Text(demoDoc, "b3"); got != "New users sign in from the invitation." {
		t.Fatalf("b3 = %q", got)
	}
	var plan planJSON
	getJSON(t, hs.URL+"/api/plan?member=rita", &plan)
	if plan.Revision != body["revision"] || len(plan.Pending) != 1 || plan.Pending[0].Decision != ids["recovery"] {
		t.Fatalf("GET /api/plan after the edit: revision %s, pending %+v", plan.Revision, plan.Pending)
	}
}

// same compares two stored plan states.
func same(a, b memhost.DocState) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// The feed socket sends the plan and Chat when it opens and a new plan
// after each change, whoever made it; it refuses another site's page, and
// ends when the app shuts down.
func TestPlanFeedPushesEveryChange(t *testing.T) {
	a, hs := testApp(t)
	wsURL := "ws" + strings.TrimPrefix(hs.URL, "http") + "/api/plan/socket"
	if _, res, err := websocket.DefaultDialer.Dial(wsURL, nil); err == nil || res == nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the feed to someone not signed in: %v %v, want 401", res, err)
	}
	rita := memberHeader(t, wsURL+"?member=rita")
	elsewhere := rita.Clone()
	elsewhere.Set("Origin", "http://elsewhere.example")
	if _, res, err := websocket.DefaultDialer.Dial(wsURL, elsewhere); err == nil || res == nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("another origin's feed: %v %v", res, err)
	}
	ws, _, err := websocket.DefaultDialer.Dial(wsURL, rita)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	msgs := make(chan feedMessage, 16)
	go func() {
		defer close(msgs)
		for {
			var m feedMessage
			if err := ws.ReadJSON(&m); err != nil {
				return
			}
			msgs <- m
		}
	}()
	nextPlan := func() planJSON {
		t.Helper()
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					t.Fatal("the feed ended before a plan")
				}
				if m.Plan != nil {
					return *m.Plan
				}
			case <-time.After(waitTime):
				t.Fatal("no plan from the feed")
			}
		}
	}
	first := nextPlan()
	if first.Revision != a.host.Docs.Revision(demoDoc) || len(first.Blocks) != len(samplePlan()) {
		t.Fatalf("first plan: %+v", first)
	}
	code, body := postEdit(t, hs.URL, "?member=ana", `{"revision":"`+first.Revision+`","edits":[{"op":"edit","block":"b8","text":"Everyone switches in June."}]}`)
	if code != http.StatusOK {
		t.Fatalf("edit: %d %v", code, body)
	}
	p := nextPlan()
	if p.Revision != body["revision"] {
		t.Fatalf("pushed revision %s, the edit made %v", p.Revision, body["revision"])
	}
	for _, b := range p.Blocks {
		if b.ID == "b8" && b.Text != "Everyone switches in June." {
			t.Fatalf("pushed b8 = %q", b.Text)
		}
	}
	// Changes the host makes (the Planner placing cards, its Chat
	// notices) are pushed too.
	if code, body := postStart(t, hs, "?member=ana"); code != http.StatusOK {
		t.Fatalf("start: %d %v", code, body)
	}
	testutil.EventuallyWithin(t, waitTime, "the Planner's cards in a pushed plan", func() (bool, string) {
		p := nextPlan()
		n := 0
		for _, b := range p.Blocks {
			if b.Kind == "decision" {
				n++
			}
		}
		return n >= 3, p.Revision
	})

	a.feed.close()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-msgs:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the feed did not end when the app shut down")
		}
	}
}
