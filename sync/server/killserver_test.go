//go:build unix

package server_test

// The server killed with SIGKILL mid-session, in a child process (this
// test binary re-executed), and restarted on the same bbolt file and
// port: clients reconnect, and nothing the server acknowledged is lost.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/server"
	"github.com/accord-crdt/accord/sync/wire"
)

// childEnv selects TestKillServerChild in a re-executed test binary; its
// value is "<bbolt file>|<listen address>".
const childEnv = "ACCORD_TEST_KILLSERVER_CHILD"

// TestKillServerChild is the server process of TestKillAndRestart: it
// serves the file on the address until SIGTERM (a graceful stop, checking
// the file) or SIGKILL. It does nothing in an ordinary run.
func TestKillServerChild(t *testing.T) {
	spec := os.Getenv(childEnv)
	if spec == "" {
		t.Skip("the server process of TestKillAndRestart; runs only when that test starts it")
	}
	path, addr, _ := strings.Cut(spec, "|")
	st, err := boltstore.Open(path, &boltstore.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Store: st, Authorize: authorize})
	if err != nil {
		t.Fatal(err)
	}
	// The killed predecessor's port is free at once, but allow for a
	// slow kernel.
	var ln net.Listener
	if err := poll(context.Background(), 10*time.Second, func() bool {
		ln, err = net.Listen("tcp", addr)
		return err == nil
	}); err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	fmt.Printf("LISTENING %s\n", ln.Addr())

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	orphaned := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin) // the parent holds stdin open
		close(orphaned)
	}()
	select {
	case <-stop:
	case <-orphaned:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	hs.Close()
	if err := st.Check(); err != nil {
		t.Errorf("bbolt check: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	fmt.Println("STOPPED")
}

// lockedBuffer collects a child's output.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// serverProcess is one run of the child server.
type serverProcess struct {
	cmd    *exec.Cmd
	addr   string
	out    *lockedBuffer
	exited chan struct{}
	err    error // of Wait, once exited is closed
}

// startServerProcess runs the child server on path and addr (port 0: any)
// and waits until it listens.
func startServerProcess(t *testing.T, path, addr string) *serverProcess {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &serverProcess{out: &lockedBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(exe, "-test.run=^TestKillServerChild$", "-test.count=1", "-test.timeout=5m")
	p.cmd.Env = append(os.Environ(), childEnv+"="+path+"|"+addr)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if _, err := p.cmd.StdinPipe(); err != nil { // closed by Wait, or by our exit
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill(t) })
	if err := poll(context.Background(), 30*time.Second, func() bool {
		select {
		case <-p.exited:
			return true
		default:
		}
		_, rest, ok := strings.Cut(p.out.String(), "LISTENING ")
		if ok && strings.Contains(rest, "\n") {
			p.addr, _, _ = strings.Cut(rest, "\n")
			return true
		}
		return false
	}); err != nil || p.addr == "" {
		p.kill(t)
		t.Fatalf("the server process did not start: %v\n%s", p.err, p.out)
	}
	return p
}

// kill ends the process with SIGKILL and waits for it.
func (p *serverProcess) kill(t *testing.T) {
	select {
	case <-p.exited:
		return
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("kill: %v", err)
	}
	<-p.exited
}

// stop ends the process with SIGTERM, a graceful stop.
func (p *serverProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		p.kill(t)
		t.Fatalf("the server did not stop on SIGTERM:\n%s", p.out)
	}
	if p.err != nil || !strings.Contains(p.out.String(), "STOPPED") {
		t.Fatalf("the graceful stop failed: %v\n%s", p.err, p.out)
	}
}

// ledger is what the server acknowledged: per editor, its marks; per save,
// the chosen option; every created decision.
type ledger struct {
	edits []*markLog // editor i writes row o<i> of the matrix

	mu      sync.Mutex
	saves   map[string]savedChoice // decision id → what was saved
	created map[string]string      // decision id → key
}

type savedChoice struct {
	by, option string
}

func (l *ledger) saved(id, by, option string) {
	l.mu.Lock()
	l.saves[id] = savedChoice{by, option}
	l.mu.Unlock()
}

func (l *ledger) made(id, key string) {
	l.mu.Lock()
	l.created[id] = key
	l.mu.Unlock()
}

func (l *ledger) counts() (edits, saves int) {
	for _, e := range l.edits {
		edits += e.ackedCount()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return edits, len(l.saves)
}

// view is what a check reads: from the bbolt file or from a client.
type view struct {
	record func(id string) (question.Record, bool)
	marks  func(id string) (map[string]marks.Mark, error)
}

// check reports every acknowledged edit, save or creation that v lacks.
func (l *ledger) check(matrix string, v view) []error {
	var errs []error
	got, err := v.marks(matrix)
	if err != nil {
		return []error{fmt.Errorf("the matrix: %w", err)}
	}
	for i, e := range l.edits {
		if err := e.check(got); err != nil {
			errs = append(errs, fmt.Errorf("editor %d: %w", i, err))
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, key := range l.created {
		if rec, ok := v.record(id); !ok || rec.Key != key {
			errs = append(errs, fmt.Errorf("created decision %s (%s) is missing", id, key))
		}
	}
	for id, s := range l.saves {
		rec, ok := v.record(id)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("saved decision %s is missing", id))
		case rec.Status != question.Settled || rec.Answer == nil:
			errs = append(errs, fmt.Errorf("saved decision %s is %s", id, rec.Status))
		case rec.Answer.By != s.by || !slices.Equal(rec.Answer.Answers[0].Choices, []string{s.option}):
			errs = append(errs, fmt.Errorf("saved decision %s holds %+v, want %s's %s", id, rec.Answer, s.by, s.option))
		}
	}
	return errs
}

// diskView reads the file a stopped or killed server left.
func diskView(t *testing.T, path string) view {
	a := stored(t, path, "plan-k")
	return view{
		record: a.Record,
		marks: func(id string) (map[string]marks.Mark, error) {
			d, _, err := a.Draft(id)
			return d.Questions["q1"].Marks, err
		},
	}
}

func clientView(c *replica.Client) view {
	return view{
		record: c.Record,
		marks: func(id string) (map[string]marks.Mark, error) {
			d, _, err := c.Draft(id)
			return d.Questions["q1"].Marks, err
		},
	}
}

// TestKillAndRestart: clients edit a shared matrix, open decisions and
// save them while the server is killed with SIGKILL and restarted on the
// same file and port, several times. After every kill the file holds
// every acknowledged edit, creation and save; the clients reconnect on
// their own; at the end a fresh client sees everything, and a graceful
// stop leaves a file that bbolt's check finds clean (L9–L11, DC4, DC6).
func TestKillAndRestart(t *testing.T) {
	const editors, cycles = 4, 5
	path := t.TempDir() + "/accord.db"
	proc := startServerProcess(t, path, "127.0.0.1:0")
	base := "ws://" + proc.addr
	ctx := testCtx(t, 2*time.Minute)

	clients := make([]*replica.Client, editors)
	for i := range clients {
		clients[i] = join(t, base, "plan-k", "k"+strconv.Itoa(i), wire.Format(i%2), func(o *replica.Options) {
			o.MinBackoff, o.MaxBackoff = 10*time.Millisecond, 200*time.Millisecond
		})
	}
	matrix := create(t, clients[0], matrixCard("matrix", 10, 5, true, false))
	for _, c := range clients {
		hasReplica(t, c, matrix)
	}
	l := &ledger{saves: map[string]savedChoice{}, created: map[string]string{}}
	for range editors {
		l.edits = append(l.edits, &markLog{})
	}

	// Every client edits its own row of the matrix; the first two also
	// open decisions and save them. Each operation is bounded, so a
	// server that never comes back fails the test instead of hanging it.
	stop := make(chan struct{})
	errs := make(chan error, 2*editors)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- editLoop(ctx, stop, c, matrix, i, l.edits[i])
		}()
		if i < 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- saveLoop(ctx, stop, c, "k"+strconv.Itoa(i), l)
			}()
		}
	}
	failed := func() {
		t.Helper()
		select {
		case err := <-errs:
			if err != nil {
				close(stop)
				wg.Wait()
				t.Fatalf("a client failed: %v\nserver output:\n%s", err, proc.out)
			}
		default:
		}
	}

	for cycle := range cycles {
		e0, s0 := l.counts()
		testutil.EventuallyWithin(t, 20*time.Second, "edits and saves to be acknowledged", func() (bool, string) {
			e, s := l.counts()
			return e >= e0+30 && s >= s0+3, ""
		})
		failed()
		proc.kill(t)
		e, s := l.counts()
		for _, err := range l.check(matrix, diskView(t, path)) {
			t.Errorf("cycle %d, after SIGKILL: %v", cycle, err)
		}
		if t.Failed() {
			close(stop)
			wg.Wait()
			t.FailNow()
		}
		t.Logf("cycle %d: killed with %d edits and %d saves acknowledged, all in the file", cycle, e, s)
		proc = startServerProcess(t, path, proc.addr)
		testutil.EventuallyWithin(t, 20*time.Second, "every client to reconnect", func() (bool, string) {
			for _, c := range clients {
				if !c.Connected() {
					return false, ""
				}
			}
			return true, ""
		})
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a client failed: %v", err)
		}
	}

	// Everything left is flushed; a fresh client sees all of it, exactly.
	for i, c := range clients {
		n := l.edits[i].made()
		if err := c.Flush(ctx); err != nil {
			t.Fatalf("final flush of client %d: %v", i, err)
		}
		l.edits[i].ack(n)
	}
	fresh := join(t, base, "plan-k", "fresh", wire.Text, nil)
	hasReplica(t, fresh, matrix)
	if err := poll(ctx, 10*time.Second, func() bool { return len(l.check(matrix, clientView(fresh))) == 0 }); err != nil {
		for _, err := range l.check(matrix, clientView(fresh)) {
			t.Errorf("the fresh client: %v", err)
		}
		t.FailNow()
	}
	for _, c := range clients {
		c.Close()
	}
	proc.stop(t)
	for _, err := range l.check(matrix, diskView(t, path)) {
		t.Errorf("after the graceful stop: %v", err)
	}
	e, s := l.counts()
	t.Logf("%d kill cycles; %d edits and %d saves acknowledged, none lost", cycles, e, s)
}

// editLoop marks cells of row o<row> in small batches, each followed by a
// Flush, until stop; every Flush that returns nil acknowledges the batch.
func editLoop(ctx context.Context, stop <-chan struct{}, c *replica.Client, matrix string, row int, log *markLog) error {
	rng := rand.New(rand.NewPCG(uint64(row), 99))
	opt := "o" + strconv.Itoa(row)
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		for range 1 + rng.IntN(3) {
			crit, m := "c"+strconv.Itoa(rng.IntN(5)), anyMark[rng.IntN(len(anyMark))]
			if err := c.SetMark(matrix, "q1", opt, crit, m); err != nil {
				return fmt.Errorf("editor %d: %w", row, err)
			}
			log.wrote(marks.Key(opt, crit), m)
		}
		n := log.made()
		opCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := c.Flush(opCtx, matrix)
		cancel()
		if err != nil {
			return fmt.Errorf("editor %d: flush: %w", row, err)
		}
		log.ack(n)
	}
}

// saveLoop opens a decision, chooses an option and saves it, over and
// over until stop. A create is retried with its key until it is
// acknowledged; a save whose reply was lost with the connection is left
// unrecorded, since it may or may not have been applied.
func saveLoop(ctx context.Context, stop <-chan struct{}, c *replica.Client, login string, l *ledger) error {
	rng := rand.New(rand.NewPCG(uint64(len(login)), 7))
	for n := 0; ; n++ {
		select {
		case <-stop:
			return nil
		default:
		}
		key := fmt.Sprintf("save-%s-%d", login, n)
		card := matrixCard(key, 3, 1, false, false)
		var id string
		for id == "" {
			opCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			recs, err := c.Create(opCtx, card)
			cancel()
			switch {
			case err == nil:
				id = recs[0].ID
			case errors.Is(err, replica.ErrDisconnected):
				// Retry with the same key: it returns the same card.
			default:
				return fmt.Errorf("%s: create %s: %w", login, key, err)
			}
		}
		l.made(id, key)
		opt := "o" + strconv.Itoa(rng.IntN(3))
		var chosen error
		if err := poll(ctx, 30*time.Second, func() bool {
			chosen = c.Choose(id, "q1", opt, true)
			return !errors.Is(chosen, replica.ErrNoReplica)
		}); err != nil {
			return fmt.Errorf("%s: the document of %s never arrived", login, id)
		}
		if chosen != nil {
			return fmt.Errorf("%s: choose in %s: %w", login, id, chosen)
		}
		opCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := c.Submit(opCtx, id)
		cancel()
		switch {
		case err == nil && len(res) == 1 && res[0].OK:
			l.saved(id, login, opt)
		case errors.Is(err, replica.ErrDisconnected):
		default:
			return fmt.Errorf("%s: save %s: %+v %w", login, id, res, err)
		}
	}
}
