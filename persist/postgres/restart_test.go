package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/pgtest"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/postgres"
)

// TestServerRestart restarts PostgreSQL (pg_ctl restart, a fast shutdown)
// twice under four writers committing without pause. Every commit
// acknowledged is there afterwards; every commit refused with a definite
// error (not persist.ErrOutcomeUnknown) is not; errors say what failed;
// and once the server is back every writer commits again, after loading
// its document as the sync server does after a failed commit.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	srv := pgtest.New(t, pgtest.Options{}) // its own: the restarts would cut the package's other tests
	url := srv.Database(t)
	s, err := postgres.Open(context.Background(), url, &postgres.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	const writers = 4
	type outcomes struct {
		acked, refused, unknown []string
		errs                    []error
	}
	results := make([]outcomes, writers)
	var acks [writers]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			ctx := context.Background()
			doc := fmt.Sprintf("doc-%d", g)
			r := &results[g]
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("k%d", i)
				start := time.Now()
				err := s.Commit(ctx, doc, &persist.Write{
					Records: []persist.Put{{Key: k, Value: []byte(k)}},
					Audit:   []persist.Put{{Key: "d", Value: []byte(k)}},
				})
				if took := time.Since(start); took > 10*time.Second {
					t.Errorf("%s: a commit took %v", doc, took)
				}
				switch {
				case err == nil:
					r.acked = append(r.acked, k)
					acks[g].Add(1)
					continue
				case errors.Is(err, persist.ErrOutcomeUnknown):
					r.unknown = append(r.unknown, k)
				default:
					r.refused = append(r.refused, k)
				}
				r.errs = append(r.errs, err)
				// As the sync server does: load the document again,
				// which lifts the store's fence, then go on.
				for {
					time.Sleep(20 * time.Millisecond)
					if _, err := s.LoadDocument(ctx, doc); err == nil {
						break
					}
					select {
					case <-stop:
						return
					default:
					}
				}
			}
		})
	}
	// waitAcks waits until every writer has n more acknowledged commits.
	waitAcks := func(what string, n int64) {
		t.Helper()
		var base [writers]int64
		for g := range writers {
			base[g] = acks[g].Load()
		}
		deadline := time.Now().Add(60 * time.Second)
		for g := range writers {
			for acks[g].Load() < base[g]+n {
				if time.Now().After(deadline) {
					close(stop)
					wg.Wait()
					t.Fatalf("%s: writer %d committed %d times in 60 s", what, g, acks[g].Load()-base[g])
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	waitAcks("before the restarts", 20)
	for r := range 2 {
		if err := srv.Restart(); err != nil {
			close(stop)
			wg.Wait()
			t.Fatal(err)
		}
		waitAcks(fmt.Sprintf("after restart %d", r+1), 20)
	}
	close(stop)
	wg.Wait()

	check := open(t, url, postgres.DefaultSchema)
	failed := 0
	for g, r := range results {
		doc := fmt.Sprintf("doc-%d", g)
		d := mustLoad(t, check, doc)
		for _, k := range r.acked {
			if string(d.Records[k]) != k {
				t.Errorf("%s: acknowledged %s lost", doc, k)
			}
		}
		for _, k := range r.refused {
			if _, ok := d.Records[k]; ok {
				t.Errorf("%s: %s was refused, yet it landed", doc, k)
			}
		}
		rows, err := check.ReadAudit(context.Background(), doc, "d", 0, 1<<20)
		if err != nil || len(rows) != len(d.Records) {
			t.Errorf("%s: %d audit rows for %d records (%v)", doc, len(rows), len(d.Records), err)
		}
		for _, err := range r.errs {
			if msg := err.Error(); !strings.HasPrefix(msg, "postgres: ") || !strings.Contains(msg, doc) {
				t.Errorf("%s: an unclear error: %v", doc, err)
			}
		}
		failed += len(r.errs)
		t.Logf("%s: %d acknowledged, %d refused, %d of unknown outcome", doc, len(r.acked), len(r.refused), len(r.unknown))
	}
	if failed == 0 {
		t.Error("no commit failed while the server restarted twice")
	}
	for g, r := range results {
		for _, err := range r.errs {
			t.Logf("writer %d: %v", g, err)
			break
		}
	}
}

// cutProxy forwards TCP connections to a server; once cut is set, the
// first bytes the server sends back close the connection instead of
// reaching the client: the server did the work, the client never hears.
type cutProxy struct {
	ln  net.Listener
	cut atomic.Bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() {
				defer c.Close()
				defer s.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 && p.cut.Load() {
						return
					}
					if n > 0 {
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}

// TestOutcomeUnknown: the connection is lost after the server committed a
// Write and before its answer reached the store. Commit says the outcome
// is unknown (the Write did land), refuses the document's next commit
// until it is loaded again, and commits again after that load.
func TestOutcomeUnknown(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	url := srv.Database(t)
	proxy := newCutProxy(t, fmt.Sprintf("127.0.0.1:%d", srv.Port()))
	proxied := strings.Replace(url, fmt.Sprintf(":%d/", srv.Port()), fmt.Sprintf(":%d/", proxy.ln.Addr().(*net.TCPAddr).Port), 1)
	// One connection, whose statements are prepared by the first commit:
	// the cut one goes out in a single write.
	s, err := postgres.Open(context.Background(), proxied, &postgres.Options{MaxConns: 1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	mustLoad(t, s, "plan")
	mustCommit(t, s, "plan", record("q1", "before"))

	proxy.cut.Store(true)
	err = s.Commit(ctx, "plan", record("q1", "cut"))
	proxy.cut.Store(false)
	if !errors.Is(err, persist.ErrOutcomeUnknown) {
		t.Fatalf("Commit whose answer was lost = %v, want ErrOutcomeUnknown", err)
	}
	if d := mustLoad(t, open(t, url, postgres.DefaultSchema), "plan"); string(d.Records["q1"]) != "cut" {
		t.Fatalf("q1 = %q: the server committed the Write, it should be there", d.Records["q1"])
	}
	expectFenced(t, s.Commit(ctx, "plan", record("q1", "blind")), "a Commit after one of unknown outcome")
	mustLoad(t, s, "plan")
	mustCommit(t, s, "plan", record("q1", "after"))
	if d := mustLoad(t, s, "plan"); string(d.Records["q1"]) != "after" || len(d.Drafts["q1"].Chunks) != 3 {
		t.Fatalf("plan = %+v", d)
	}
}
