//go:build unix

package server_test

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/wire"
)

// announced collects the saves a member heard of (question:resolved).
type announced struct {
	mu    sync.Mutex
	saves map[string]savedChoice
}

func (a *announced) listen(c *replica.Client) {
	for e := range c.Events() {
		if e.Kind == wire.KindResolved && e.Answer != nil && len(e.Answer.Answers) > 0 && len(e.Answer.Answers[0].Choices) == 1 {
			a.mu.Lock()
			a.saves[e.ID] = savedChoice{by: e.Answer.By, option: e.Answer.Answers[0].Choices[0]}
			a.mu.Unlock()
		}
	}
}

// TestKillWithEarlyFanOut: draft edits reach the other members before
// their commit is durable, so a SIGKILL can leave members holding changes
// the file lacks. Editors mark a matrix and a saver saves decisions while
// two members only watch; the server is killed and restarted on the same
// file five times. After each kill the file holds every acknowledged edit
// and save and every save any member was told of (question:resolved is
// never announced before it is durable); at the end every member, editor
// or watcher, holds exactly the server's draft (same heads as a fresh
// client): the changes the killed server forwarded but never stored came
// back from their holders when they reconnected, and none is left only
// on a client (early fan-out).
func TestKillWithEarlyFanOut(t *testing.T) {
	const editors, watchers, cycles = 4, 2, 5
	path := t.TempDir() + "/accord.db"
	proc := startServerProcess(t, path, "127.0.0.1:0")
	base := "ws://" + proc.addr
	ctx := testCtx(t, 3*time.Minute)
	tune := func(o *replica.Options) {
		o.MinBackoff, o.MaxBackoff = 10*time.Millisecond, 200*time.Millisecond
		o.EventBuffer = 1 << 16
	}

	var clients []*replica.Client
	for i := range editors + watchers + 1 {
		clients = append(clients, join(t, base, "plan-k", "m"+strconv.Itoa(i), wire.Format(i%2), tune))
	}
	eds, ws, saver := clients[:editors], clients[editors:editors+watchers], clients[editors+watchers]
	heard := &announced{saves: map[string]savedChoice{}}
	for _, w := range ws {
		go heard.listen(w)
	}
	matrix := create(t, eds[0], matrixCard("matrix", 10, 5, true, false))
	for _, c := range clients {
		hasReplica(t, c, matrix)
	}
	l := &ledger{saves: map[string]savedChoice{}, created: map[string]string{}}
	for range editors {
		l.edits = append(l.edits, &markLog{})
	}
	stop := make(chan struct{})
	errs := make(chan error, editors+1)
	var wg sync.WaitGroup
	for i, c := range eds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- editLoop(ctx, stop, c, matrix, i, l.edits[i])
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs <- saveLoop(ctx, stop, saver, "m"+strconv.Itoa(editors+watchers), l)
	}()
	halt := func() {
		close(stop)
		wg.Wait()
	}

	ahead := 0 // kills after which a watcher held changes the file lacked
	for cycle := range cycles {
		e0, s0 := l.counts()
		testutil.EventuallyWithin(t, 30*time.Second, "edits and saves to be acknowledged", func() (bool, string) {
			e, s := l.counts()
			return e >= e0+30 && s >= s0+2, ""
		})
		proc.kill(t)
		a := stored(t, path, "plan-k")
		for _, err := range l.check(matrix, view{record: a.Record, marks: func(id string) (map[string]marks.Mark, error) {
			d, _, err := a.Draft(id)
			return d.Questions["q1"].Marks, err
		}}) {
			t.Errorf("cycle %d, after SIGKILL: %v", cycle, err)
		}
		heard.mu.Lock()
		for id, s := range heard.saves {
			rec, ok := a.Record(id)
			if !ok || rec.Status != question.Settled || rec.Answer == nil || rec.Answer.By != s.by || !slices.Equal(rec.Answer.Answers[0].Choices, []string{s.option}) {
				t.Errorf("cycle %d: the save of %s was announced (%+v) but the file holds %+v", cycle, id, s, rec.Answer)
			}
		}
		n := len(heard.saves)
		heard.mu.Unlock()
		saved, err := a.Save(matrix)
		if err != nil {
			t.Fatal(err)
		}
		disk, err := crdt.Load(saved, nil, crdt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			if _, h, err := w.Draft(matrix); err == nil && !disk.Has(h) {
				ahead++
				break
			}
		}
		if t.Failed() {
			halt()
			t.FailNow()
		}
		t.Logf("cycle %d: killed; every acknowledged edit and save and all %d announced saves are in the file", cycle, n)
		proc = startServerProcess(t, path, proc.addr)
		testutil.EventuallyWithin(t, 30*time.Second, "every client to reconnect", func() (bool, string) {
			for _, c := range clients {
				if !c.Connected() {
					return false, ""
				}
			}
			return true, ""
		})
	}
	halt()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a client failed: %v", err)
		}
	}
	t.Logf("after %d of %d kills a watcher held draft changes the file lacked", ahead, cycles)

	for i, c := range eds {
		n := l.edits[i].made()
		if err := c.Flush(ctx); err != nil {
			t.Fatalf("final flush of editor %d: %v", i, err)
		}
		l.edits[i].ack(n)
	}
	fresh := join(t, base, "plan-k", "fresh", wire.Text, tune)
	hasReplica(t, fresh, matrix)
	same := func() error {
		_, want, err := fresh.Draft(matrix)
		if err != nil {
			return err
		}
		for i, c := range clients {
			_, h, err := c.Draft(matrix)
			acc, unsent, aerr := c.Accepted(matrix)
			if err != nil || aerr != nil || !h.Equal(want) || unsent || !acc.Equal(want) {
				return fmt.Errorf("member %d is at %v (accepted %v, unsent %v), the server at %v", i, h, acc, unsent, want)
			}
		}
		return nil
	}
	if err := poll(ctx, 30*time.Second, func() bool { return same() == nil }); err != nil {
		t.Fatalf("the members never converged on the server's draft: %v", same())
	}
	for _, err := range l.check(matrix, clientView(fresh)) {
		t.Errorf("the fresh client: %v", err)
	}
	for _, c := range clients {
		c.Close()
	}
	proc.stop(t)
}
