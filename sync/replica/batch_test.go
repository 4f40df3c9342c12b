package replica_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/wire"
)

// heldConn holds every frame the server sends until the test releases
// some: released together, they reach the client back to back, so that
// it handles them in one go (several question:changes frames of a
// decision applied as one batch, between replies and events).
type heldConn struct {
	ws   *websocket.Conn
	wmu  sync.Mutex
	in   chan frame
	done chan struct{}
	once sync.Once

	smu   sync.Mutex // held by release while it passes frames on
	mu    sync.Mutex
	queue []frame
	open  bool // pass everything through
	wake  chan struct{}
}

func holdingDialer(conns chan<- *heldConn) replica.Dialer {
	return func(ctx context.Context, url string, h http.Header) (replica.Conn, error) {
		ws, _, err := websocket.DefaultDialer.DialContext(ctx, url, h)
		if err != nil {
			return nil, err
		}
		c := &heldConn{ws: ws, in: make(chan frame, 1024), done: make(chan struct{}), wake: make(chan struct{}, 1)}
		go c.readAll()
		go c.deliver()
		conns <- c
		return c, nil
	}
}

func (c *heldConn) readAll() {
	for {
		typ, data, err := c.ws.ReadMessage()
		c.mu.Lock()
		c.queue = append(c.queue, frame{typ: typ, data: data, err: err})
		c.mu.Unlock()
		c.poke()
		if err != nil {
			return
		}
	}
}

func (c *heldConn) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// release lets up to n held frames through at once; -1 lets everything
// through from now on.
func (c *heldConn) release(n int) {
	// One release at a time, so that frames reach the replica in the order
	// they arrived: the test's final release(-1) and deliver's, woken by a
	// frame read meanwhile, would otherwise interleave their sends.
	c.smu.Lock()
	defer c.smu.Unlock()
	c.mu.Lock()
	if n < 0 {
		c.open = true
		n = len(c.queue)
	}
	n = min(n, len(c.queue))
	out := c.queue[:n:n]
	c.queue = c.queue[n:]
	c.mu.Unlock()
	for _, f := range out {
		select {
		case c.in <- f:
		case <-c.done:
			return
		}
	}
	c.poke()
}

// deliver passes frames through once the connection is opened.
func (c *heldConn) deliver() {
	for {
		select {
		case <-c.done:
			return
		case <-c.wake:
		}
		c.mu.Lock()
		open := c.open
		c.mu.Unlock()
		if open {
			c.release(-1)
		}
	}
}

func (c *heldConn) ReadMessage() (int, []byte, error) {
	select {
	case f := <-c.in:
		return f.typ, f.data, f.err
	case <-c.done:
		return 0, nil, websocket.ErrCloseSent
	}
}

func (c *heldConn) WriteMessage(typ int, data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteMessage(typ, data)
}

func (c *heldConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.ws.Close()
}

// TestBatchedFramesProperty: a member whose frames arrive in random
// bursts (its decision's changes then applied several frames to a call,
// between its own edits and the replies to them) ends with the same draft
// as the members who take each change as it comes, and as the server.
func TestBatchedFramesProperty(t *testing.T) {
	hs := loginServer(t)
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		ctx := ctxT(t)
		url := "ws" + strings.TrimPrefix(hs.URL, "http") + fmt.Sprintf("/?doc=batch-%d", run%64)
		dial := func(login string, o replica.Options) *replica.Client {
			o.Header = http.Header{"X-Login": {login}}
			o.MinBackoff, o.MaxBackoff = minBackoff, maxBackoff
			c, err := replica.Dial(ctx, url, o)
			if err != nil {
				rt.Fatal(err)
			}
			return c
		}
		ana, ben := dial("ana", replica.Options{}), dial("ben", replica.Options{})
		defer ana.Close()
		defer ben.Close()
		// The sessions take 64 documents in turn, a decision each, so a
		// soak run stays within the server's 1,024 loaded documents.
		recs, err := ana.Create(ctx, wire.Card{Key: fmt.Sprint("k", run), Definition: definition()})
		if err != nil {
			rt.Fatal(err)
		}
		id := recs[0].ID
		conns := make(chan *heldConn, 16)
		held := dial("cleo", replica.Options{Dialer: holdingDialer(conns), Background: true})
		defer held.Close()
		hc := <-conns
		hc.release(-1) // the hello's answers pass; then frames are held
		testutil.Eventually(t, "cleo to hold the decision", func() bool { _, _, err := held.Draft(id); return err == nil })
		hc.mu.Lock()
		hc.open = false
		hc.mu.Unlock()

		members := []*replica.Client{ana, ben, held}
		// ben learns of the decision from the create's event, which may
		// still be on its way.
		testutil.Eventually(t, "every member to hold the decision", func() bool {
			for _, cl := range members {
				if _, _, err := cl.Draft(id); err != nil {
					return false
				}
			}
			return true
		})
		options, criteria := []string{"bolt", "pg"}, []string{"cost", "ops"}
		steps := rapid.IntRange(1, 25).Draw(rt, "steps")
		for range steps {
			who := rapid.IntRange(0, 2).Draw(rt, "who")
			cl := members[who]
			var err error
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0:
				m := rapid.SampledFrom([]marks.Mark{marks.Yes, marks.Partly, marks.No, ""}).Draw(rt, "mark")
				err = cl.SetMark(id, "pick", rapid.SampledFrom(options).Draw(rt, "option"), rapid.SampledFrom(criteria).Draw(rt, "criterion"), m)
			case 1:
				err = cl.Choose(id, "pick", rapid.SampledFrom(options).Draw(rt, "option"), rapid.Bool().Draw(rt, "on"))
			case 2:
				d, _, derr := cl.Draft(id)
				if derr != nil {
					rt.Fatal(derr)
				}
				text := []rune(d.Questions["note"].Text)
				pos := rapid.IntRange(0, len(text)).Draw(rt, "pos")
				del := rapid.IntRange(0, len(text)-pos).Draw(rt, "del")
				err = cl.SpliceText(id, "note", pos, del, rapid.StringMatching(`[a-z ]{0,4}`).Draw(rt, "ins"))
				if errors.Is(err, crdt.ErrInvalid) {
					// pos and del fit the text as it was read; another
					// member's change that arrived since shortened it, and
					// the out-of-range splice is refused as it should be:
					// this step makes no edit.
					err = nil
				}
			case 3:
				hc.release(rapid.IntRange(1, 12).Draw(rt, "burst"))
			}
			if err != nil {
				rt.Fatal(err)
			}
			if rapid.Bool().Draw(rt, "pause") {
				time.Sleep(time.Millisecond)
			}
		}
		hc.release(-1)
		hc.mu.Lock()
		hc.open = true
		hc.mu.Unlock()

		// Everyone's edits are accepted, and every member holds the same
		// draft, which a member who joins now loads from the server.
		for i, cl := range members {
			if err := cl.Flush(ctx); err != nil {
				rt.Fatalf("member %d's edits were not all accepted: %v", i, err)
			}
		}
		late := dial("dan", replica.Options{})
		defer late.Close()
		testutil.Eventually(t, "the late member to load the decision", func() bool { _, _, err := late.Draft(id); return err == nil })
		want, _, _ := late.Draft(id)
		for time.Sleep(0); ; time.Sleep(2 * time.Millisecond) {
			same := true
			for _, cl := range members {
				d, _, _ := cl.Draft(id)
				same = same && d.Equal(want)
			}
			latest, _, _ := late.Draft(id)
			if same && latest.Equal(want) {
				return
			}
			want = latest
			if ctx.Err() != nil {
				for i, cl := range members {
					d, _, _ := cl.Draft(id)
					rt.Logf("member %d: %+v", i, d)
				}
				rt.Fatalf("the members' drafts never converged on the server's %+v", want)
			}
		}
	})
}
