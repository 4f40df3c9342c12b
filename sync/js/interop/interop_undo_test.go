package interop_test

// Undo and redo, Go ↔ JavaScript (docs/PROTOCOL.md, "Undo"): an undo the
// package's client makes (src/undo.js) is an ordinary edit, a text undo a
// change made on a fork under a fresh actor, which the real server accepts
// and the Go client (sync/replica) shows as the package's own replica
// does, while what the Go client's member typed meanwhile stays; and a
// skip names the Go client's member, whose edit the server attributed.
// The other way round the same, and both clients' results and states
// have the same JSON.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// undoServer runs the real server (bbolt store; the member is the URL's
// member parameter) and returns the sync URL of document "undo".
func undoServer(t *testing.T) string {
	t.Helper()
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "accord.db"), nil)
	must(t, err)
	srv, err := server.New(server.Options{
		Store: store,
		Authorize: func(r *http.Request, doc string) (question.Member, error) {
			return question.Member{Login: r.URL.Query().Get("member"), Write: true}, nil
		},
	})
	must(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		hs.Close()
		store.Close()
	})
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/sync?doc=undo"
}

// undoPair starts the server, the Go client of ben, who creates the
// decision, and the package's client of ana, connected; it returns
// them and the decision's id.
func undoPair(t *testing.T) (*jsReplica, *replica.Client, string) {
	t.Helper()
	url := undoServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	ben, err := replica.Dial(ctx, url+"&member=ben", replica.Options{})
	must(t, err)
	t.Cleanup(func() { ben.Close() })
	recs, err := ben.Create(ctx, wire.Card{Key: "undo-1", Origin: question.FromPerson, Definition: question.Definition{Questions: []question.Question{{
		ID: "q1", Text: "Which onboarding?", Options: []question.Option{{ID: "o1", Label: "Tour"}, {ID: "o2", Label: "Template"}},
		Criteria: []question.Criterion{{ID: "c1", Label: "New device"}},
	}, {
		ID: "q2", Text: "Why?", Response: question.Text, Options: []question.Option{},
	}}}})
	must(t, err)
	id := recs[0].ID
	js := startJS(t)
	js.call("connect", map[string]any{"name": "ana", "url": url + "&member=ana", "member": "ana"})
	return js, ben, id
}

// jsDraft is the package client's draft of one question.
func jsDraft(js *jsReplica, id, q string) map[string]any {
	qs, _ := js.call("draft", map[string]any{"name": "ana", "id": id})["questions"].(map[string]any)
	d, _ := qs[q].(map[string]any)
	return d
}

func benDraft(t *testing.T, c *replica.Client, id, q string) crdt.QuestionDraft {
	t.Helper()
	d, _, err := c.Draft(id)
	must(t, err)
	return d.Questions[q]
}

// jsEdit makes an edit in the package's client.
func jsEdit(js *jsReplica, id, op string, args map[string]any) {
	m := map[string]any{"name": "ana", "id": id, "op": op}
	for k, v := range args {
		m[k] = v
	}
	js.call("edit", m)
}

// jsUndo undoes (redo: redoes) in the package's client and returns the
// result, nil when there was nothing to take.
func jsUndo(js *jsReplica, id string, redo bool) map[string]any {
	cmd := "undo"
	if redo {
		cmd = "redo"
	}
	r, _ := js.call(cmd, map[string]any{"name": "ana", "id": id})["result"].(map[string]any)
	return r
}

func TestInteropJSUndoSeenByGo(t *testing.T) {
	js, ben, id := undoPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	text := func(d map[string]any) string { s, _ := d["text"].(string); return s }

	// Ben's text; ana's burst replaces "keep" by "ship".
	must(t, ben.SetText(id, "q2", "The plan: keep it."))
	must(t, ben.Flush(ctx, id))
	testutil.Eventually(t, "ana to see ben's text", func() bool { return text(jsDraft(js, id, "q2")) == "The plan: keep it." })
	for p := 13; p >= 10; p-- {
		jsEdit(js, id, "splice", map[string]any{"q": "q2", "pos": p, "del": 1, "ins": ""})
	}
	for i, ch := range "ship" {
		jsEdit(js, id, "splice", map[string]any{"q": "q2", "pos": 10 + i, "del": 0, "ins": string(ch)})
	}
	js.call("flush", map[string]any{"name": "ana"})
	testutil.Eventually(t, "ben to see ana's burst", func() bool { return benDraft(t, ben, id, "q2").Text == "The plan: ship it." })

	// Ben types before, inside and after ana's word; then ana undoes.
	must(t, ben.SpliceText(id, "q2", 12, 0, "X"))
	must(t, ben.SpliceText(id, "q2", 10, 0, "["))
	must(t, ben.SpliceText(id, "q2", 16, 0, "]"))
	must(t, ben.Flush(ctx, id))
	testutil.Eventually(t, "ana to see ben's typing", func() bool { return text(jsDraft(js, id, "q2")) == "The plan: [shXip] it." })
	r := jsUndo(js, id, false)
	if g, _ := r["group"].(map[string]any); r["done"] != true || r["by"] != "ana" || g["kind"] != "text" || g["from"] != "keep" || g["to"] != "ship" || g["question"] != "q2" {
		t.Fatalf("ana's undo: %v", r)
	}
	undone := text(jsDraft(js, id, "q2"))
	if strings.Replace(undone, "keep", "", 1) != "The plan: [X] it." {
		t.Fatalf("after ana's undo: %q", undone)
	}
	js.call("flush", map[string]any{"name": "ana"})
	testutil.Eventually(t, "ben to see ana's undo", func() bool { return benDraft(t, ben, id, "q2").Text == undone })
	// The redo puts ana's characters back where they were among ben's.
	jsUndo(js, id, true)
	redone := text(jsDraft(js, id, "q2"))
	if redone != "The plan: [shXip] it." {
		t.Fatalf("after ana's redo: %q", redone)
	}
	js.call("flush", map[string]any{"name": "ana"})
	testutil.Eventually(t, "ben to see ana's redo", func() bool { return benDraft(t, ben, id, "q2").Text == redone })

	// A mark ana sets and undoes; one ben changes since is skipped, naming him.
	jsEdit(js, id, "mark", map[string]any{"q": "q1", "o": "o1", "c": "c1", "mark": "yes"})
	jsEdit(js, id, "mark", map[string]any{"q": "q1", "o": "o2", "c": "c1", "mark": "no"})
	if r := jsUndo(js, id, false); r["done"] != true {
		t.Fatalf("ana's mark undo: %v", r)
	}
	js.call("flush", map[string]any{"name": "ana"})
	testutil.Eventually(t, "ben to see o1 marked and o2 not", func() bool {
		m := benDraft(t, ben, id, "q1").Marks
		return m["o1/c1"] == marks.Yes && !m["o2/c1"].Valid()
	})
	must(t, ben.SetMark(id, "q1", "o1", "c1", marks.Partly))
	must(t, ben.Flush(ctx, id))
	testutil.Eventually(t, "ana to see ben's mark", func() bool {
		m, _ := jsDraft(js, id, "q1")["marks"].(map[string]any)
		return m["o1/c1"] == "partly"
	})
	r = jsUndo(js, id, false)
	if g, _ := r["group"].(map[string]any); r["done"] != false || r["by"] != "ben" || g["cell"] != "o1/c1" || g["to"] != "yes" {
		t.Fatalf("ana's undo of a mark ben changed since: %v", r)
	}
	if m := benDraft(t, ben, id, "q1").Marks["o1/c1"]; m != marks.Partly {
		t.Fatalf("ben's mark %q after ana's skipped undo", m)
	}

	// A burst of ana's whose last characters a later burst deleted and
	// whose undo put back as new ones: undone whole, and so seen by ben.
	end := len(redone)
	jsEdit(js, id, "splice", map[string]any{"q": "q2", "pos": end, "del": 0, "ins": " hello"})
	jsEdit(js, id, "mark", map[string]any{"q": "q1", "o": "o2", "c": "c1", "mark": "yes"}) // another kind: a new group
	jsEdit(js, id, "splice", map[string]any{"q": "q2", "pos": end + 5, "del": 1, "ins": ""})
	jsEdit(js, id, "splice", map[string]any{"q": "q2", "pos": end + 4, "del": 1, "ins": ""})
	for range 3 {
		if r := jsUndo(js, id, false); r["done"] != true {
			t.Fatalf("ana's undo: %v", r)
		}
	}
	if got := text(jsDraft(js, id, "q2")); got != redone {
		t.Fatalf("ana's text %q after undoing both bursts, want %q", got, redone)
	}
	js.call("flush", map[string]any{"name": "ana"})
	testutil.Eventually(t, "ben to see both bursts undone", func() bool { return benDraft(t, ben, id, "q2").Text == redone })
}

// asJSON is v as JSON decodes it without types, for comparing shapes.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	var out any
	must(t, json.Unmarshal(b, &out))
	return out
}

func TestInteropGoUndoSeenByJS(t *testing.T) {
	js, ben, id := undoPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	text := func() string { s, _ := jsDraft(js, id, "q2")["text"].(string); return s }

	// Ana's text; ben's burst replaces "keep" by "ship".
	jsEdit(js, id, "settext", map[string]any{"q": "q2", "text": "The plan: keep it."})
	js.call("flush", map[string]any{"name": "ana"})
	testutil.Eventually(t, "ben to see ana's text", func() bool { return benDraft(t, ben, id, "q2").Text == "The plan: keep it." })
	for p := 13; p >= 10; p-- {
		must(t, ben.SpliceText(id, "q2", p, 1, ""))
	}
	for i, ch := range "ship" {
		must(t, ben.SpliceText(id, "q2", 10+i, 0, string(ch)))
	}
	must(t, ben.Flush(ctx, id))
	testutil.Eventually(t, "ana to see ben's burst", func() bool { return text() == "The plan: ship it." })

	// Ana types before, inside and after ben's word; then ben undoes.
	jsEdit(js, id, "splice", map[string]any{"q": "q2", "pos": 12, "del": 0, "ins": "X"})
	jsEdit(js, id, "splice", map[string]any{"q": "q2", "pos": 10, "del": 0, "ins": "["})
	jsEdit(js, id, "splice", map[string]any{"q": "q2", "pos": 16, "del": 0, "ins": "]"})
	js.call("flush", map[string]any{"name": "ana"})
	testutil.Eventually(t, "ben to see ana's typing", func() bool { return benDraft(t, ben, id, "q2").Text == "The plan: [shXip] it." })
	r, err := ben.Undo(ctx, id)
	must(t, err)
	want := map[string]any{"group": map[string]any{"kind": "text", "question": "q2", "cell": "", "from": "keep", "to": "ship"}, "done": true, "by": "ben"}
	if got := asJSON(t, r); !reflect.DeepEqual(got, want) {
		t.Fatalf("ben's undo: %v, want %v", got, want)
	}
	undone := benDraft(t, ben, id, "q2").Text
	if strings.Replace(undone, "keep", "", 1) != "The plan: [X] it." {
		t.Fatalf("after ben's undo: %q", undone)
	}
	must(t, ben.Flush(ctx, id))
	testutil.Eventually(t, "ana to see ben's undo", func() bool { return text() == undone })
	_, err = ben.Redo(ctx, id)
	must(t, err)
	redone := benDraft(t, ben, id, "q2").Text
	if redone != "The plan: [shXip] it." {
		t.Fatalf("after ben's redo: %q", redone)
	}
	must(t, ben.Flush(ctx, id))
	testutil.Eventually(t, "ana to see ben's redo", func() bool { return text() == redone })

	// A mark ben sets that ana changes since: ben's undo is skipped and
	// names her; both clients' results and states read alike.
	must(t, ben.SetMark(id, "q1", "o1", "c1", marks.Yes))
	must(t, ben.Flush(ctx, id))
	marksOf := func() map[string]any { m, _ := jsDraft(js, id, "q1")["marks"].(map[string]any); return m }
	testutil.Eventually(t, "ana to see ben's mark", func() bool { return marksOf()["o1/c1"] == "yes" })
	jsEdit(js, id, "mark", map[string]any{"q": "q1", "o": "o1", "c": "c1", "mark": "no"})
	js.call("flush", map[string]any{"name": "ana"})
	testutil.Eventually(t, "ben to see ana's mark", func() bool { return benDraft(t, ben, id, "q1").Marks["o1/c1"] == marks.No })
	r, err = ben.Undo(ctx, id)
	must(t, err)
	want = map[string]any{"group": map[string]any{"kind": "mark", "question": "q1", "cell": "o1/c1", "from": "", "to": "yes"}, "done": false, "by": "ana"}
	if got := asJSON(t, r); !reflect.DeepEqual(got, want) {
		t.Fatalf("ben's undo of a mark ana changed since: %v, want %v", got, want)
	}
	if m := marksOf()["o1/c1"]; m != "no" {
		t.Fatalf("ana's mark %v after ben's skipped undo", m)
	}
	jsState := js.call("undostate", map[string]any{"name": "ana", "id": id})["state"]
	if want := map[string]any{"undo": map[string]any{"kind": "mark", "question": "q1", "cell": "o1/c1", "from": "yes", "to": "no"}, "redo": nil, "cleared": ""}; !reflect.DeepEqual(jsState, want) {
		t.Fatalf("ana's undo state %v, want %v", jsState, want)
	}
	goState := asJSON(t, ben.UndoState(id))
	if want := map[string]any{"undo": map[string]any{"kind": "text", "question": "q2", "cell": "", "from": "keep", "to": "ship"}, "redo": nil, "cleared": ""}; !reflect.DeepEqual(goState, want) {
		t.Fatalf("ben's undo state %v, want %v", goState, want)
	}
	jsResult := jsUndo(js, id, false)
	if want := map[string]any{"group": map[string]any{"kind": "mark", "question": "q1", "cell": "o1/c1", "from": "yes", "to": "no"}, "done": true, "by": "ana"}; !reflect.DeepEqual(jsResult, want) {
		t.Fatalf("ana's undo: %v, want %v", jsResult, want)
	}
	js.call("flush", map[string]any{"name": "ana"})
	testutil.Eventually(t, "ben to see ana's undo", func() bool { return benDraft(t, ben, id, "q1").Marks["o1/c1"] == marks.Yes })
}
