package interop_test

// Go ↔ JavaScript interoperability: the package @accord-crdt/client holds
// real automerge 3 replicas of each decision (src/replica.js) while the
// server's core is automerge-go (Rust core 0.5). These tests run the
// package's own document code under Node (test/interop.mjs) and check, both ways, that documents
// and change batches cross between the two and reach the same heads and
// values, and that the server accepts edits made by automerge 3.
//
// They need Node and sync/js/node_modules (`make js-check`, or `npm ci`
// in sync/js). Without them the tests fail, never skip: CI
// installs both.

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// jsReplica is the Node process holding automerge 3 documents by name.
type jsReplica struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	errb *strings.Builder
	mu   sync.Mutex
}

// startJS starts test/interop.mjs, failing the test with what to do
// when Node or the page's node_modules are missing.
func startJS(t *testing.T) *jsReplica {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: the Go ↔ JavaScript interoperability test needs Node.js 20 or later " +
			"(Debian: apt-get install nodejs npm), then `npm ci` in sync/js to install its node_modules")
	}
	for _, p := range []string{"../node_modules/@automerge/automerge/package.json", "../node_modules/@automerge/automerge/dist/automerge.wasm"} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run `npm ci` in sync/js (or `make js-check` at the repository root) "+
				"to install the pinned @automerge/automerge the package and this test use", p)
		}
	}
	cmd := exec.Command(node, "test/interop.mjs")
	cmd.Dir = ".."
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errb := &strings.Builder{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node: %v", err)
	}
	j := &jsReplica{t: t, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), errb: errb}
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	info := j.call("info", nil)
	t.Logf("JavaScript side: @automerge/automerge %v", info["version"])
	return j
}

// call sends one command and returns its answer; a refused command fails
// the test.
func (j *jsReplica) call(cmd string, args map[string]any) map[string]any {
	j.t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	m := map[string]any{"cmd": cmd}
	for k, v := range args {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		j.t.Fatal(err)
	}
	if _, err := j.in.Write(append(b, '\n')); err != nil {
		j.t.Fatalf("write to node: %v (stderr: %s)", err, j.errb.String())
	}
	line, err := j.out.ReadBytes('\n')
	if err != nil {
		j.t.Fatalf("read from node: %v (stderr: %s)", err, j.errb.String())
	}
	var res map[string]any
	if err := json.Unmarshal(line, &res); err != nil {
		j.t.Fatalf("node answered %q: %v", line, err)
	}
	if res["ok"] != true {
		j.t.Fatalf("node refused %s: %v", cmd, res["error"])
	}
	return res
}

func (j *jsReplica) heads(name string) []string {
	j.t.Helper()
	return strs(j.call("state", map[string]any{"name": name})["heads"])
}

// state returns the JavaScript replica's reading of the document,
// normalised to the form goState writes.
func (j *jsReplica) state(name string) map[string]any {
	j.t.Helper()
	st := j.call("state", map[string]any{"name": name})["state"]
	b, _ := json.Marshal(st)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

func (j *jsReplica) since(name string, heads []string) []byte {
	j.t.Helper()
	res := j.call("since", map[string]any{"name": name, "heads": heads})
	b, err := base64.StdEncoding.DecodeString(res["changes"].(string))
	if err != nil {
		j.t.Fatal(err)
	}
	return b
}

func (j *jsReplica) apply(name string, changes []byte) []string {
	j.t.Helper()
	res := j.call("apply", map[string]any{"name": name, "changes": base64.StdEncoding.EncodeToString(changes)})
	if res["complete"] != true {
		j.t.Fatalf("JavaScript replica %s is missing dependencies after applying Go's changes", name)
	}
	return strs(res["heads"])
}

func (j *jsReplica) save(name string) []byte {
	j.t.Helper()
	b, err := base64.StdEncoding.DecodeString(j.call("save", map[string]any{"name": name})["doc"].(string))
	if err != nil {
		j.t.Fatal(err)
	}
	return b
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// goState renders a Go document's State in the shape the JavaScript side's
// readState returns, through JSON, so the two compare with reflect.
func goState(t *testing.T, d *crdt.Doc) map[string]any {
	t.Helper()
	st, err := d.State()
	if err != nil {
		t.Fatalf("Go State: %v", err)
	}
	type item struct {
		ID    string `json:"id"`
		Label string `json:"label"`
	}
	items := func(in []crdt.Item) []item {
		out := []item{}
		for _, it := range in {
			out = append(out, item{it.ID, it.Label})
		}
		return out
	}
	qs := map[string]any{}
	for id, q := range st.Questions {
		qs[id] = map[string]any{"written": q.Written, "multiple": q.Multiple, "options": items(q.Options), "criteria": items(q.Criteria)}
	}
	app := map[string]any{}
	for k, a := range st.Appended {
		app[k] = map[string]any{"kind": a.Kind, "question": a.Question, "id": a.ID}
	}
	drafts := map[string]any{}
	for g, dr := range st.Drafts {
		m := map[string]any{}
		for qid, qd := range dr.Questions {
			mk := map[string]any{}
			for k, v := range qd.Marks {
				if v == marks.Cleared {
					mk[k] = nil
				} else {
					mk[k] = string(v)
				}
			}
			ch := qd.Choices
			if ch == nil {
				ch = []string{}
			}
			m[qid] = map[string]any{"text": qd.Text, "choices": ch, "marks": mk}
		}
		drafts[strconv.FormatUint(g, 10)] = m
	}
	b, _ := json.Marshal(map[string]any{"v": 1, "generation": st.Generation, "questions": qs, "appended": app, "drafts": drafts})
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

func hexHeads(h crdt.Heads) []string {
	out := make([]string, len(h))
	for i, c := range h {
		out[i] = c.String()
	}
	slices.Sort(out)
	return out
}

func sameValues(t *testing.T, what string, goSt, jsSt map[string]any) {
	t.Helper()
	if !reflect.DeepEqual(goSt, jsSt) {
		g, _ := json.MarshalIndent(goSt, "", " ")
		j, _ := json.MarshalIndent(jsSt, "", " ")
		t.Fatalf("%s: Go and JavaScript read different values\nGo:\n%s\nJavaScript:\n%s", what, g, j)
	}
}

func sameHeads(t *testing.T, what string, goHeads crdt.Heads, jsHeads []string) {
	t.Helper()
	if g := hexHeads(goHeads); !slices.Equal(g, jsHeads) {
		t.Fatalf("%s: heads differ\nGo:         %v\nJavaScript: %v", what, g, jsHeads)
	}
}

// Shapes of the sample decision: a written question, a single choice with
// criteria, and a multiple choice.
var (
	qText = crdt.QuestionShape{ID: "q-text", Written: true}
	qPick = crdt.QuestionShape{ID: "q-pick",
		Options:  []crdt.Item{{ID: "o1", Label: "Guided tour"}, {ID: "o2", Label: "Template workspace"}, {ID: "o3", Label: "Both"}},
		Criteria: []crdt.Item{{ID: "c1", Label: "New device"}, {ID: "c2", Label: "Easy reset"}}}
	qMany = crdt.QuestionShape{ID: "q-many", Multiple: true,
		Options: []crdt.Item{{ID: "m1", Label: "Email"}, {ID: "m2", Label: "Chat"}, {ID: "m3", Label: "Phone"}}}
)

func goSample(t *testing.T) *crdt.Doc {
	t.Helper()
	d, err := crdt.New(crdt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	must(t, d.AddQuestion(qText))
	must(t, d.AddQuestion(qPick))
	must(t, d.AddQuestion(qMany))
	must(t, d.StartGeneration(1))
	must(t, d.SpliceText("q-text", 0, 0, "Start with a naïve tour 👋🏽 — then a template"))
	must(t, d.SpliceText("q-text", 0, 5, "Begin"))
	must(t, d.SetMark("q-pick", "o1", "c1", marks.Yes))
	must(t, d.SetMark("q-pick", "o2", "c2", marks.No))
	must(t, d.SetMark("q-pick", "o1", "c2", marks.Partly))
	must(t, d.SetMark("q-pick", "o1", "c2", marks.Cleared))
	must(t, d.Choose("q-pick", "o2", true))
	must(t, d.Choose("q-many", "m1", true))
	must(t, d.Choose("q-many", "m3", true))
	must(t, d.Choose("q-many", "m3", false))
	must(t, d.Choose("q-many", "m2", true))
	return d
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// checkChunkTypes asserts a batch from JavaScript is a series of plain
// change chunks (type 1), the only kind crdt.Doc.ApplyChanges takes.
func checkChunkTypes(t *testing.T, batch []byte) int {
	t.Helper()
	n := 0
	for len(batch) > 0 {
		if len(batch) < 10 || string(batch[:4]) != "\x85\x6f\x4a\x83" {
			t.Fatalf("change %d: not an automerge chunk", n+1)
		}
		if batch[8] != 1 {
			t.Fatalf("change %d: chunk type %d, want 1 (an uncompressed change)", n+1, batch[8])
		}
		size, w := uvarint(batch[9:])
		batch = batch[9+w+int(size):]
		n++
	}
	return n
}

func uvarint(b []byte) (uint64, int) {
	var v uint64
	for i, c := range b {
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

func TestInteropGoDocumentLoadsInJS(t *testing.T) {
	js := startJS(t)
	g := goSample(t)
	js.call("load", map[string]any{"name": "d", "doc": base64.StdEncoding.EncodeToString(g.Save())})
	sameHeads(t, "after load", g.Heads(), js.heads("d"))
	sameValues(t, "after load", goState(t, g), js.state("d"))

	// The Snapshot form (which may be a list of changes) loads too.
	snap, err := g.Snapshot()
	must(t, err)
	js.call("load", map[string]any{"name": "s", "doc": base64.StdEncoding.EncodeToString(snap)})
	sameValues(t, "snapshot", goState(t, g), js.state("s"))
	// So does the whole history as one change batch, applied to an empty
	// replica.
	all, err := g.ChangesSince(nil)
	must(t, err)
	js.call("load", map[string]any{"name": "e", "doc": base64.StdEncoding.EncodeToString(all)})
	sameHeads(t, "history batch", g.Heads(), js.heads("e"))
}

func TestInteropJSChangesApplyInGo(t *testing.T) {
	js := startJS(t)
	g := goSample(t)
	js.call("load", map[string]any{"name": "d", "doc": base64.StdEncoding.EncodeToString(g.Save())})
	base := js.heads("d")

	js.call("mark", map[string]any{"name": "d", "q": "q-pick", "o": "o2", "c": "c1", "mark": "partly"})
	js.call("mark", map[string]any{"name": "d", "q": "q-pick", "o": "o1", "c": "c1", "mark": nil})
	js.call("mark", map[string]any{"name": "d", "q": "q-pick", "o": "o3", "c": "c2", "mark": "yes"})
	js.call("choose", map[string]any{"name": "d", "q": "q-pick", "o": "o1", "on": true, "multiple": false})
	js.call("choose", map[string]any{"name": "d", "q": "q-many", "o": "m1", "on": false, "multiple": true})
	js.call("choose", map[string]any{"name": "d", "q": "q-many", "o": "m3", "on": true, "multiple": true})
	js.call("settext", map[string]any{"name": "d", "q": "q-text", "text": "Begin with a naïve tour 🧭👋🏽 — then a template, 日本語 too"})
	// A long paste: one change of several kilobytes.
	js.call("splice", map[string]any{"name": "d", "q": "q-text", "pos": 0, "del": 0, "ins": strings.Repeat("Onboarding notes. ", 300)})

	batch := js.since("d", base)
	n := checkChunkTypes(t, batch)
	t.Logf("%d changes from automerge 3, %d bytes, all plain change chunks", n, len(batch))
	fresh, err := g.ApplyChanges(batch)
	if err != nil {
		t.Fatalf("Go's ApplyChanges refused automerge 3's changes: %v", err)
	}
	if len(fresh) != n {
		t.Fatalf("Go applied %d of %d changes", len(fresh), n)
	}
	sameHeads(t, "after applying JavaScript's changes", g.Heads(), js.heads("d"))
	sameValues(t, "after applying JavaScript's changes", goState(t, g), js.state("d"))

	// A second batch on top, and the same batch again (nothing new).
	js.call("settext", map[string]any{"name": "d", "q": "q-text", "text": "Short."})
	b2 := js.since("d", hexHeads(g.Heads()))
	_, err = g.ApplyChanges(b2)
	must(t, err)
	fresh, err = g.ApplyChanges(b2)
	must(t, err)
	if len(fresh) != 0 {
		t.Fatalf("a repeated batch applied %d changes again", len(fresh))
	}
	sameValues(t, "second batch", goState(t, g), js.state("d"))
}

func TestInteropConcurrentEditsConverge(t *testing.T) {
	js := startJS(t)
	g := goSample(t)
	js.call("load", map[string]any{"name": "d", "doc": base64.StdEncoding.EncodeToString(g.Save())})
	common := g.Heads()

	for round := range 3 {
		// Go and JavaScript edit the same registers and text concurrently.
		must(t, g.SetMark("q-pick", "o2", "c1", marks.All[round%3]))
		must(t, g.SetMark("q-pick", "o3", "c1", marks.Yes))
		must(t, g.SpliceText("q-text", 0, 0, fmt.Sprintf("[go %d] ", round)))
		must(t, g.Choose("q-pick", "o3", true))
		must(t, g.Choose("q-many", "m3", round%2 == 0))
		js.call("mark", map[string]any{"name": "d", "q": "q-pick", "o": "o2", "c": "c1", "mark": []string{"no", "yes", "partly"}[round]})
		js.call("mark", map[string]any{"name": "d", "q": "q-pick", "o": "o3", "c": "c2", "mark": nil})
		js.call("mark", map[string]any{"name": "d", "q": "q-pick", "o": "o3", "c": "c2", "mark": "no"})
		st := js.state("d")
		text := st["drafts"].(map[string]any)["1"].(map[string]any)["q-text"].(map[string]any)["text"].(string)
		js.call("settext", map[string]any{"name": "d", "q": "q-text", "text": text + fmt.Sprintf(" [js %d 🚀]", round)})
		js.call("choose", map[string]any{"name": "d", "q": "q-pick", "o": "o1", "on": true, "multiple": false})
		js.call("choose", map[string]any{"name": "d", "q": "q-many", "o": "m2", "on": round%2 == 1, "multiple": true})

		goBatch, err := g.ChangesSince(common)
		must(t, err)
		jsBatch := js.since("d", hexHeads(common))
		checkChunkTypes(t, jsBatch)
		if _, err := g.ApplyChanges(jsBatch); err != nil {
			t.Fatalf("round %d: Go refused JavaScript's concurrent changes: %v", round, err)
		}
		js.apply("d", goBatch)
		sameHeads(t, fmt.Sprintf("round %d", round), g.Heads(), js.heads("d"))
		sameValues(t, fmt.Sprintf("round %d", round), goState(t, g), js.state("d"))
		common = g.Heads()
	}
	dr, err := g.Draft()
	must(t, err)
	text := dr.Questions["q-text"].Text
	for _, want := range []string{"[go 0] ", "[go 2] ", " [js 0 🚀]", " [js 2 🚀]"} {
		if !strings.Contains(text, want) {
			t.Fatalf("merged text %q lost %q", text, want)
		}
	}
}

func TestInteropJSSaveLoadsInGo(t *testing.T) {
	js := startJS(t)
	g := goSample(t)
	js.call("load", map[string]any{"name": "d", "doc": base64.StdEncoding.EncodeToString(g.Save())})
	js.call("mark", map[string]any{"name": "d", "q": "q-pick", "o": "o3", "c": "c1", "mark": "no"})
	js.call("settext", map[string]any{"name": "d", "q": "q-text", "text": "Saved by JavaScript ✓ " + strings.Repeat("long enough for deflated columns; ", 200)})

	back, err := crdt.Load(js.save("d"), nil, crdt.Options{})
	if err != nil {
		t.Fatalf("Go cannot load a document automerge 3 saved: %v", err)
	}
	sameHeads(t, "JavaScript save", back.Heads(), js.heads("d"))
	sameValues(t, "JavaScript save", goState(t, back), js.state("d"))

	// A document made from scratch by automerge 3 with the same layout.
	js.call("create", map[string]any{"name": "n", "questions": []any{
		map[string]any{"id": "q-text", "written": true},
		map[string]any{"id": "q-pick", "options": qPick.Options, "criteria": qPick.Criteria},
		map[string]any{"id": "q-many", "multiple": true, "options": qMany.Options},
	}})
	js.call("mark", map[string]any{"name": "n", "q": "q-pick", "o": "o1", "c": "c2", "mark": "partly"})
	js.call("settext", map[string]any{"name": "n", "q": "q-text", "text": "From scratch"})
	made, err := crdt.Load(js.save("n"), nil, crdt.Options{})
	if err != nil {
		t.Fatalf("Go cannot load a document automerge 3 created: %v", err)
	}
	sameValues(t, "JavaScript-made document", goState(t, made), js.state("n"))
	if made.Generation() != 1 {
		t.Fatalf("generation %d, want 1 (an automerge uint)", made.Generation())
	}
	// Go edits it and JavaScript follows.
	must(t, made.SetMark("q-pick", "o2", "c1", marks.Yes))
	must(t, made.SetText("q-text", "From scratch, then Go"))
	b, err := made.ChangesSince(nil)
	must(t, err)
	js.apply("n", b)
	sameHeads(t, "Go edits of a JavaScript-made document", made.Heads(), js.heads("n"))
	sameValues(t, "Go edits of a JavaScript-made document", goState(t, made), js.state("n"))
}

// TestInteropServerAcceptsJSEdits sends automerge 3's changes through the
// real server as question:edit frames, then saves the revision the
// JavaScript replica displays: the page's whole write path.
func TestInteropServerAcceptsJSEdits(t *testing.T) {
	js := startJS(t)
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "accord.db"), nil)
	must(t, err)
	t.Cleanup(func() { store.Close() })
	srv, err := server.New(server.Options{
		Store: store,
		Authorize: func(r *http.Request, doc string) (question.Member, error) {
			m := r.URL.Query().Get("member")
			return question.Member{Login: m, Write: m != "rita"}, nil
		},
	})
	must(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		hs.Close()
	})

	ana := dialWire(t, hs.URL, "ana")
	ana.send(&wire.Create{Header: wire.Header{Kind: wire.KindCreate, RID: "c1"}, Cards: []wire.Card{{
		Key: "interop-1", Origin: question.FromPerson,
		Definition: question.Definition{Questions: []question.Question{{
			ID: "q1", Text: "Which onboarding?", Options: []question.Option{{ID: "o1", Label: "Tour"}, {ID: "o2", Label: "Template"}},
			Criteria: []question.Criterion{{ID: "c1", Label: "New device"}},
		}, {
			ID: "q2", Text: "Why?", Response: question.Text, Options: []question.Option{},
		}}},
	}}})
	var id string
	var doc []byte
	for id == "" || doc == nil {
		switch m := ana.next().(type) {
		case *wire.Reply:
			if !m.OK {
				t.Fatalf("create refused: %s: %s", m.Reason, m.Message)
			}
			id = m.Records[0].ID
		case *wire.Doc:
			doc = m.Doc
		}
	}
	js.call("load", map[string]any{"name": "d", "doc": base64.StdEncoding.EncodeToString(doc)})
	accepted := js.heads("d")

	js.call("mark", map[string]any{"name": "d", "q": "q1", "o": "o2", "c": "c1", "mark": "yes"})
	js.call("choose", map[string]any{"name": "d", "q": "q1", "o": "o2", "on": true, "multiple": false})
	js.call("settext", map[string]any{"name": "d", "q": "q2", "text": "Works on a new device 👍"})
	edit := func(rid string) *wire.Reply {
		ana.send(&wire.Edit{Header: wire.Header{Kind: wire.KindEdit, RID: rid}, ID: id, Changes: js.since("d", accepted)})
		return ana.reply(rid)
	}
	rep := edit("e1")
	if !rep.OK {
		t.Fatalf("the server refused automerge 3's edit: %s: %s", rep.Reason, rep.Message)
	}
	if !slices.Equal(sortedCopy(rep.Heads), js.heads("d")) {
		t.Fatalf("accepted heads %v, replica at %v", rep.Heads, js.heads("d"))
	}
	accepted = js.heads("d")

	// A mark on a cell the definition does not describe is refused with a
	// reset, and the replica loads the accepted document the refusal
	// carries.
	js.call("mark", map[string]any{"name": "d", "q": "q1", "o": "o9", "c": "c1", "mark": "no"})
	rep = edit("e2")
	if rep.OK || !rep.Reset || rep.Reason != question.Invalid || len(rep.Doc) == 0 {
		t.Fatalf("a mark on an unknown cell: %+v", rep)
	}
	js.call("load", map[string]any{"name": "d", "doc": base64.StdEncoding.EncodeToString(rep.Doc)})
	if !slices.Equal(js.heads("d"), accepted) {
		t.Fatalf("reset replica at %v, want %v", js.heads("d"), accepted)
	}
	js.call("mark", map[string]any{"name": "d", "q": "q1", "o": "o1", "c": "c1", "mark": "no"})
	rep = edit("e3")
	if !rep.OK {
		t.Fatalf("edit after the reset refused: %s: %s", rep.Reason, rep.Message)
	}
	accepted = js.heads("d")

	// Save exactly the displayed revision.
	ana.send(&wire.Submit{Header: wire.Header{Kind: wire.KindSubmit, RID: "s1"}, Items: []wire.SubmitItem{{ID: id, Heads: accepted}}})
	rep = ana.reply("s1")
	if !rep.OK || len(rep.Results) != 1 || !rep.Results[0].OK {
		t.Fatalf("submit refused: %+v", rep)
	}
	ans := rep.Results[0].Record.Answer
	if ans == nil || len(ans.Answers) != 2 {
		t.Fatalf("answer %+v", ans)
	}
	for _, a := range ans.Answers {
		switch a.Question {
		case "q1":
			if !slices.Equal(a.Choices, []string{"o2"}) || a.Marks["o2/c1"] != marks.Yes || a.Marks["o1/c1"] != marks.No {
				t.Fatalf("q1 answer %+v", a)
			}
		case "q2":
			if a.Text != "Works on a new device 👍" {
				t.Fatalf("q2 answer %q", a.Text)
			}
		}
	}

	// An edit to the settled decision is refused with reset and the
	// accepted document, which the JavaScript replica loads.
	js.call("settext", map[string]any{"name": "d", "q": "q2", "text": "too late"})
	rep = edit("e4")
	if rep.OK || !rep.Reset || len(rep.Doc) == 0 {
		t.Fatalf("edit after save: %+v", rep)
	}
	js.call("load", map[string]any{"name": "d", "doc": base64.StdEncoding.EncodeToString(rep.Doc)})
	if !slices.Equal(js.heads("d"), accepted) {
		t.Fatalf("reset replica at %v, want %v", js.heads("d"), accepted)
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// wireConn is a bare protocol connection speaking msgpack, as the page does.
type wireConn struct {
	t *testing.T
	c *websocket.Conn
}

func dialWire(t *testing.T, base, member string) *wireConn {
	t.Helper()
	u := "ws" + strings.TrimPrefix(base, "http") + "/sync?doc=interop&member=" + member
	c, _, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	w := &wireConn{t: t, c: c}
	w.send(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version})
	if _, ok := w.next().(*wire.Welcome); !ok {
		t.Fatal("no welcome")
	}
	return w
}

func (w *wireConn) send(m wire.Message) {
	w.t.Helper()
	b, err := wire.Encode(m, wire.Binary)
	must(w.t, err)
	must(w.t, w.c.WriteMessage(websocket.BinaryMessage, b))
}

func (w *wireConn) next() wire.Message {
	w.t.Helper()
	_ = w.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := w.c.ReadMessage()
	if err != nil {
		w.t.Fatalf("read: %v", err)
	}
	m, err := wire.DecodeServerFrame(b, wire.Binary)
	if err != nil {
		w.t.Fatalf("decode: %v", err)
	}
	if e, ok := m.(*wire.Error); ok {
		w.t.Fatalf("server error: %s: %s", e.Reason, e.Message)
	}
	return m
}

// reply reads frames until the reply to rid.
func (w *wireConn) reply(rid string) *wire.Reply {
	w.t.Helper()
	for {
		if r, ok := w.next().(*wire.Reply); ok && r.RID == rid {
			return r
		}
	}
}

// TestInteropPageUsesNoSyncMessages pins that the client catches up with
// question:doc and question:changes (hello.have) and writes with
// question:edit only: it never needs automerge's sync protocol, whose
// messages differ between automerge 0.5 and 3.
func TestInteropPageUsesNoSyncMessages(t *testing.T) {
	var found []string
	err := filepath.WalkDir("../src", func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range []string{"question:sync", "generateSyncMessage", "receiveSyncMessage"} {
			if strings.Contains(string(b), s) {
				found = append(found, p+": "+s)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Fatalf("the client uses automerge sync messages: %v", found)
	}
}
