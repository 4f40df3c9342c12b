package replica_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// TestRebaseThroughTheServer replaces a long written answer until the
// server rebases the decision's history: both members move to the rebased
// document and keep editing it, and the file loads again after a restart.
func TestRebaseThroughTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("long answers take a while")
	}
	path := t.TempDir() + "/accord.db"
	st, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	ctx, cancelAll := context.WithTimeout(context.Background(), 2*time.Minute) // long answers, slow under -race
	defer cancelAll()
	srv, dial := serveMembers(ctx, t, server.Options{Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ana, ben := dial("ana"), dial("ben")
	recs, err := ana.Create(ctx, wire.Card{Key: "k", Definition: question.Definition{Questions: []question.Question{
		{ID: "note", Text: "What should the email say?", Response: question.Text, Options: []question.Option{}}}}})
	if err != nil {
		t.Fatal(err)
	}
	id := recs[0].ID
	ready(t, ben, id)
	var last string
	for i := 0; i < 4; i++ { // 4 × ~190,000 operations passes the rebase threshold
		last = strings.Repeat(string(rune('a'+i)), 95_000)
		if err := ana.SetText(id, "note", last); err != nil {
			t.Fatal(err)
		}
		if err := ana.Flush(ctx, id); err != nil {
			t.Fatalf("replacement %d: %v", i, err)
		}
	}
	// Ben adds to the text he sees: the last replacement, once it is here
	// (a splice made on an older text would add his text beside Ana's).
	testutil.Eventually(t, "ben holds the last replacement", func() bool {
		d, _, err := ben.Draft(id)
		return err == nil && d.Questions["note"].Text == last
	})
	if err := ben.SetText(id, "note", last+" Ben was here."); err != nil {
		t.Fatal(err)
	}
	if err := ben.Flush(ctx, id); err != nil {
		t.Fatal(err)
	}
	want := last + " Ben was here."
	for _, c := range []*replica.Client{ana, ben} {
		testutil.Eventually(t, "both hold the last text", func() bool {
			d, _, err := c.Draft(id)
			return err == nil && d.Questions["note"].Text == want
		})
	}
	if !strings.Contains(logs.String(), "rebased a decision's document") {
		t.Fatal("the server never rebased the decision's history")
	}
	sctx, cancel := contextWithTimeout(10 * time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st2, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	a, err := question.NewAuthority(ctx, question.Options{Store: st2, Doc: "plan"})
	if err != nil {
		t.Fatalf("the rebased file does not load: %v", err)
	}
	d, _, err := a.Draft(id)
	if err != nil || d.Questions["note"].Text != want {
		t.Fatalf("after restart: %v", err)
	}
}

// TestQuietRebaseThroughTheServer: a decision edited without a pause
// past the point where its history outgrew its values is rebased only
// once the edits stop for the server's QuietRebase, and both members then
// move to the rebased document and go on editing it.
func TestQuietRebaseThroughTheServer(t *testing.T) {
	st, err := boltstore.Open(t.TempDir()+"/accord.db", &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rebases := &rebaseLog{}
	const quiet = 1500 * time.Millisecond
	ctx, cancelAll := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelAll()
	srv, dial := serveMembers(ctx, t, server.Options{Store: st, QuietRebase: quiet, Logger: slog.New(rebases)})
	defer srv.Shutdown(context.Background())
	ana, ben := dial("ana"), dial("ben")
	recs, err := ana.Create(ctx, wire.Card{Key: "k", Definition: question.Definition{Questions: []question.Question{
		{ID: "count", Text: "How many?", Response: question.Text, Options: []question.Option{}}}}})
	if err != nil {
		t.Fatal(err)
	}
	id := recs[0].ID
	ready(t, ben, id)
	count := func(n int) {
		t.Helper()
		if err := ana.SetText(id, "count", fmt.Sprint(n)); err != nil {
			t.Fatal(err)
		}
		if err := ana.Flush(ctx, id); err != nil {
			t.Fatalf("edit %d: %v", n, err)
		}
	}
	// About 2 operations an edit: past crdt.CompactOps, well short of
	// twice it (when an edit would rebase the decision).
	const edits = 700
	for n := 1; n <= edits; n++ {
		count(n)
	}
	stopped := time.Now()
	testutil.Eventually(t, "the server rebases the decision once the edits stop", func() bool { return rebases.count() == 1 })
	if at := rebases.first(); at.Before(stopped) {
		t.Fatalf("the server rebased the decision while it was being edited (%v before the last edit returned)", stopped.Sub(at))
	}
	count(edits + 1)
	for _, c := range []*replica.Client{ana, ben} {
		testutil.Eventually(t, "both hold the edit made after the rebase", func() bool {
			d, _, err := c.Draft(id)
			return err == nil && d.Questions["count"].Text == fmt.Sprint(edits+1)
		})
	}
	if n := rebases.count(); n != 1 {
		t.Fatalf("%d rebases, want 1", n)
	}
}

// serveMembers serves opts on a test server whose members are named by
// the X-Login header, all writing, and returns it and a dial of a member's
// replica of the document "plan" (closed when the test ends).
func serveMembers(ctx context.Context, t *testing.T, opts server.Options) (*server.Server, func(login string) *replica.Client) {
	t.Helper()
	opts.Authorize = func(r *http.Request, doc string) (question.Member, error) {
		return question.Member{Login: r.Header.Get("X-Login"), Write: true}, nil
	}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	dial := func(login string) *replica.Client {
		c, err := replica.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/?doc=plan",
			replica.Options{Header: http.Header{"X-Login": {login}}, MinBackoff: minBackoff, MaxBackoff: maxBackoff})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	return srv, dial
}

// rebaseLog is a slog.Handler that keeps when the server logged a rebase.
type rebaseLog struct {
	mu sync.Mutex
	at []time.Time
}

func (l *rebaseLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *rebaseLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *rebaseLog) WithGroup(string) slog.Handler            { return l }
func (l *rebaseLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "rebased a decision's document" {
		l.mu.Lock()
		l.at = append(l.at, time.Now())
		l.mu.Unlock()
	}
	return nil
}

func (l *rebaseLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.at)
}

func (l *rebaseLog) first() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at[0]
}

// syncBuffer is a log sink several goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
