package replica_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/wire"
)

// copyDir copies the files of src into a fresh folder: what a crash at
// this moment would leave.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

type tlog struct{ t *testing.T }

func (w tlog) Write(b []byte) (int, error) { w.t.Log(strings.TrimSpace(string(b))); return len(b), nil }

// restored opens a client on dir that never connects, as after a restart
// with the server away.
func restored(t *testing.T, s *fakeServer, dir string) *replica.Client {
	t.Helper()
	s.setDown("offline", true)
	return connect(t, s, "offline", replica.Options{Dir: dir, Background: true, Logger: slog.New(slog.NewTextHandler(tlog{t}, nil))})
}

// sameReplica checks that got holds what want holds of decision id: the
// draft, the accepted heads, whether changes are unsent, and the record.
func sameReplica(t *testing.T, got, want *replica.Client, id, when string) {
	t.Helper()
	gd, gh, gerr := got.Draft(id)
	wd, wh, werr := want.Draft(id)
	if gerr != nil || werr != nil || !gd.Equal(wd) || !gh.Equal(wh) {
		t.Fatalf("%s: restored draft %+v at %v (%v), want %+v at %v (%v)", when, gd, gh, gerr, wd, wh, werr)
	}
	ga, gu, _ := got.Accepted(id)
	wa, wu, _ := want.Accepted(id)
	if !ga.Equal(wa) || gu != wu {
		t.Fatalf("%s: restored accepted %v unsent %v, want %v %v", when, ga, gu, wa, wu)
	}
	gr, _ := got.Record(id)
	wr, _ := want.Record(id)
	if gr.Status != wr.Status || len(gr.Definition.Questions[0].Options) != len(wr.Definition.Questions[0].Options) {
		t.Fatalf("%s: restored record %+v, want %+v", when, gr, wr)
	}
}

func logFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range files {
		files[i] = filepath.Base(files[i])
	}
	return files
}

// TestDirLogRestoresEveryState: after every kind of save (a local edit,
// an accepted reply, a forwarded change, a definition that grew, a
// snapshot after the log grew), the files as they are restore exactly the
// replica the client held.
func TestDirLogRestoresEveryState(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	dir := t.TempDir()
	ana := connect(t, s, "ana", replica.Options{Dir: dir})
	check := func(when string) {
		t.Helper()
		sameReplica(t, restored(t, s, copyDir(t, dir)), ana, id, when)
	}
	check("after the first document")
	s.setDown("ana", true) // so that nothing moves while the files are compared
	s.drop("ana")
	testutil.Eventually(t, "ana to go offline", func() bool { return !ana.Connected() })
	must(t, ana.SetMark(id, "pick", "bolt", "cost", marks.Yes))
	check("after a local edit")
	s.setDown("ana", false)
	flush(t, ana, id)
	check("after the edit was accepted")

	w := writer(t, s, id)
	for i := range 3 {
		before := w.Heads()
		markN(t, w, i+1)
		ch, _ := w.ChangesSince(before)
		s.inject(&wire.Changes{Header: wire.Header{Kind: wire.KindChanges}, ID: id, Changes: ch, Heads: wireHeads(w.Heads())})
		testutil.Eventually(t, "the forwarded change", func() bool { h, _, _ := ana.Accepted(id); return h.Equal(w.Heads()) })
	}
	check("after forwarded changes")
	if _, _, _, err := ana.AppendOption(ctxT(t), id, "pick", "add-lite", "SQLite"); err != nil {
		t.Fatal(err)
	}
	// The option's change comes after the reply; then ana's edit carries
	// the forwarded changes the server lacks, and both hold the same.
	testutil.Eventually(t, "the appended option's change", func() bool {
		_, h, _ := ana.Draft(id)
		_, unsent, _ := ana.Accepted(id)
		return h.Equal(s.heads(id)) && !unsent
	})
	check("after the definition grew")
	if got := logFiles(t, dir); len(got) != 1 || !strings.HasSuffix(got[0], ".1.log") {
		t.Fatalf("logs %v, want the first generation's", got)
	}

	// Enough lines for the log to outgrow the snapshot: a new snapshot,
	// the next generation's log, the old one removed.
	text := strings.Repeat("x", 400)
	second := func() bool { l := logFiles(t, dir); return len(l) > 0 && strings.HasSuffix(l[len(l)-1], ".2.log") }
	for i := 1; !second(); i++ {
		if i > 2000 {
			t.Fatal("the log never gave way to a snapshot")
		}
		must(t, ana.SetText(id, "note", text[:i%400]))
	}
	if got := logFiles(t, dir); len(got) != 1 || !strings.HasSuffix(got[0], ".2.log") {
		t.Fatalf("logs %v after the snapshot, want only the second generation's", got)
	}
	flush(t, ana, id)
	check("after a snapshot")
	must(t, ana.SetText(id, "note", "after the snapshot"))
	flush(t, ana, id)
	check("after a line on the new log")
}

// TestDirLogTornTail: a log whose last line a crash cut restores up to the
// line before; the next save writes a new snapshot rather than appending
// after the damage, and logs of other generations are removed.
func TestDirLogTornTail(t *testing.T) {
	s := newFakeServer(t)
	id := s.create("k1")
	dir := t.TempDir()
	ana := connect(t, s, "ana", replica.Options{Dir: dir})
	must(t, ana.SetMark(id, "pick", "pg", "ops", marks.No))
	flush(t, ana, id)
	saved := copyDir(t, dir)
	must(t, ana.SetText(id, "note", "lost in the crash"))
	logs := logFiles(t, saved)
	if len(logs) != 1 {
		t.Fatalf("logs %v", logs)
	}
	f, err := os.OpenFile(filepath.Join(saved, logs[0]), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"c":"AAAA`) // a torn append
	f.Close()
	stale := "d-" + hex.EncodeToString([]byte(id)) + ".7.log"
	if err := os.WriteFile(filepath.Join(saved, stale), []byte("junk\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	back := restored(t, s, saved)
	d := draftOf(t, back, id)
	if d.Questions["pick"].Marks["pg/ops"] != marks.No || d.Questions["note"].Text != "" {
		t.Fatalf("restored %+v, want the state before the torn line", d.Questions)
	}
	if _, err := os.Stat(filepath.Join(saved, stale)); !os.IsNotExist(err) {
		t.Fatalf("a stale log was kept: %v", err)
	}
	must(t, back.SetText(id, "note", "after the crash"))
	if got := logFiles(t, saved); len(got) != 0 {
		t.Fatalf("logs %v: the save after a torn log must be a snapshot", got)
	}
	again := restored(t, s, copyDir(t, saved))
	if got := draftOf(t, again, id).Questions["note"].Text; got != "after the crash" {
		t.Fatalf("restored text %q", got)
	}
}

// FuzzRestoreLog: whatever a decision's log holds (torn, reordered,
// garbage), restoring never panics, yields a readable replica, and what
// the client saves next restores again to the same replica.
func FuzzRestoreLog(f *testing.F) {
	s := newFakeServer(f)
	id := s.create("k1")
	dir := f.TempDir()
	c, err := replica.Dial(context.Background(), "loopback:///?doc="+docID, replica.Options{Dir: dir, Dialer: s.dial, Header: http.Header{"X-Login": {"ana"}}})
	if err != nil {
		f.Fatal(err)
	}
	for i, txt := range []string{"one", "one two", "two"} {
		if err := c.SetText(id, "note", txt); err != nil {
			f.Fatal(err)
		}
		if err := c.SetMark(id, "pick", "bolt", "cost", marks.All[i]); err != nil {
			f.Fatal(err)
		}
		if err := c.Flush(context.Background(), id); err != nil {
			f.Fatal(err)
		}
	}
	c.Close()
	snapName := "d-" + hex.EncodeToString([]byte(id)) + ".json"
	snap, err := os.ReadFile(filepath.Join(dir, snapName))
	if err != nil {
		f.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(logs) != 1 {
		f.Fatalf("logs %v", logs)
	}
	logName := filepath.Base(logs[0])
	valid, err := os.ReadFile(logs[0])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add(append(append([]byte{}, valid...), `{"c":"AAAA","a":["zz"]}`+"\n"...))
	f.Add([]byte("\n\n"))
	f.Add([]byte(`{"c":"AAECAwQ=","a":null}` + "\n"))
	down := func(context.Context, string, http.Header) (replica.Conn, error) { return nil, errors.New("offline") }
	open := func(t *testing.T, dir string) *replica.Client {
		c, err := replica.Dial(context.Background(), "loopback:///?doc="+docID, replica.Options{Dir: dir, Dialer: down, Background: true})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	f.Fuzz(func(t *testing.T, log []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, snapName), snap, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, logName), log, 0o600); err != nil {
			t.Fatal(err)
		}
		c := open(t, dir)
		if _, _, err := c.Draft(id); err != nil {
			t.Fatalf("the restored replica cannot be read: %v", err)
		}
		if err := c.SetText(id, "note", "after restore"); err != nil {
			t.Fatal(err)
		}
		want, wh, _ := c.Draft(id)
		wa, wu, _ := c.Accepted(id)
		c.Close()
		again := open(t, dir)
		defer again.Close()
		got, gh, err := again.Draft(id)
		ga, gu, _ := again.Accepted(id)
		if err != nil || !got.Equal(want) || !gh.Equal(wh) || !ga.Equal(wa) || gu != wu {
			t.Fatalf("restored again: %+v at %v (accepted %v %v, %v), want %+v at %v (accepted %v %v)", got, gh, ga, gu, err, want, wh, wa, wu)
		}
	})
}

// TestDirLogProperty: for random sequences of local edits, syncs and
// changes forwarded from another writer, the files in Dir at any quiet
// moment (here: the client offline) restore exactly the replica the
// client holds, across snapshots and log lines alike.
func TestDirLogProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := newFakeServer(t)
		id := s.create("k1")
		dir := t.TempDir()
		ana := connect(t, s, "ana", replica.Options{Dir: dir})
		defer ana.Close()
		w := writer(t, s, id)
		offline := func() {
			s.setDown("ana", true)
			s.drop("ana")
			testutil.Eventually(t, "ana offline", func() bool { return !ana.Connected() })
		}
		online := func() {
			s.setDown("ana", false)
			flush(t, ana, id)
		}
		offline()
		n := 0
		for step := range rapid.IntRange(1, 12).Draw(rt, "steps") {
			switch rapid.SampledFrom([]string{"mark", "text", "sync", "forward"}).Draw(rt, fmt.Sprint("op ", step)) {
			case "mark":
				o := rapid.SampledFrom([]string{"bolt", "pg"}).Draw(rt, "option")
				c := rapid.SampledFrom([]string{"cost", "ops"}).Draw(rt, "criterion")
				must(t, ana.SetMark(id, "pick", o, c, rapid.SampledFrom(marks.All[:]).Draw(rt, "mark")))
			case "text":
				must(t, ana.SetText(id, "note", rapid.StringMatching(`[a-z ]{0,12}`).Draw(rt, "text")))
			case "sync":
				online()
				offline()
			case "forward":
				online()
				// the writer first takes in what ana's edits made the server hold
				s.mu.Lock()
				saved, _ := s.auth.Save(id)
				s.mu.Unlock()
				srv, err := crdt.Load(saved, nil, crdt.Options{})
				if err != nil {
					t.Fatal(err)
				}
				must(t, w.Merge(srv))
				before := w.Heads()
				markN(t, w, n)
				n++
				ch, _ := w.ChangesSince(before)
				s.forward(id, "ben", ch)
				testutil.Eventually(t, "the forwarded change", func() bool { _, h, _ := ana.Draft(id); return h.Equal(s.heads(id)) })
				offline()
			}
			back := restored(t, s, copyDir(t, dir))
			sameReplica(t, back, ana, id, fmt.Sprint("after step ", step))
			back.Close()
		}
	})
}
