package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// client is a minimal protocol client holding one decision's replica.
// When the server drops it (a slow consumer's outbox filled), it redials
// with backoff, as the page does: its hello names the server heads it
// holds, and the edit whose reply it was waiting for is sent again.
type client struct {
	name    string
	srv     *child
	url     string        // where it dialled, and redials
	alt     func() string // if set, where it redials instead (another node)
	mu      sync.Mutex    // guards ws, doc, id, known, pending and writes
	ws      *websocket.Conn
	doc     *crdt.Doc
	id      string
	known   []string   // heads of the server's last doc or changes frame, all applied
	pending *wire.Edit // the edit awaiting its reply
	replies chan *wire.Reply
	seen    func(c *client, heads string, at time.Time)
	bytes   atomic.Int64
	applied atomic.Int64
	redials atomic.Int64
	// wait is the backoff before the next redial; it grows while
	// connections keep failing early and is reset by one that lasted.
	wait      time.Duration
	connected time.Time
	closing   bool          // set by close, under mu
	noRedial  atomic.Bool   // a lost connection ends the client
	ready     chan struct{} // closed when the first document or changes arrived
	readyOne  sync.Once
	done      chan struct{}
}

func dialClient(c *child, name string, have map[string][]string, seen func(*client, string, time.Time)) (*client, error) {
	return dialWith(c, name, have, nil, "", seen)
}

// dialWith connects a client that already holds doc (the replica of
// decision id), as a client returning after a disconnect does.
func dialWith(c *child, name string, have map[string][]string, doc *crdt.Doc, id string, seen func(*client, string, time.Time)) (*client, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 16384, WriteBufferSize: 16384}
	url := c.url(name)
	ws, _, err := d.Dial(url, nil)
	if err != nil {
		return nil, err
	}
	cl := &client{name: name, srv: c, url: url, ws: ws, replies: make(chan *wire.Reply, 16), seen: seen, ready: make(chan struct{}), done: make(chan struct{}), doc: doc, id: id}
	if h, ok := have[id]; ok && doc != nil {
		cl.known = h
	}
	go cl.read()
	if err := cl.send(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version, Have: have}); err != nil {
		return nil, err
	}
	return cl, nil
}

// send writes a frame. A failed write closes the connection, so that the
// reader notices the loss and redials; the edit awaiting a reply is sent
// again then.
func (cl *client) send(m wire.Message) error {
	b, err := wire.Encode(m, wire.Binary)
	if err != nil {
		return err
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if err := cl.ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
		cl.ws.Close()
		if cl.noRedial.Load() {
			return err
		}
	}
	return nil
}

// redial replaces a lost connection, with jittered exponential backoff
// (50 ms doubling to 2 s) for up to a minute: a connection that fails
// within seconds of its dial counts as a failed attempt, so that a server
// dropping clients is not met by a storm of redials. It reports whether
// the client is connected again.
func (cl *client) redial() bool {
	start := time.Now()
	if cl.wait == 0 || time.Since(cl.connected) > 5*time.Second {
		cl.wait = 50 * time.Millisecond
	}
	var last error
	for attempt := 0; ; attempt++ {
		if attempt > 0 || cl.redials.Load() > 0 {
			time.Sleep(cl.wait/2 + time.Duration(rand.Int64N(int64(cl.wait/2)+1)))
			cl.wait = min(2*cl.wait, 2*time.Second)
		}
		cl.mu.Lock()
		closing := cl.closing
		cl.mu.Unlock()
		if closing {
			return false
		}
		if time.Since(start) > time.Minute {
			fmt.Fprintf(os.Stderr, "%s: could not reconnect in a minute: %v\n", cl.name, last)
			return false
		}
		d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 16384, WriteBufferSize: 16384}
		u := cl.url
		if cl.alt != nil && attempt > 0 {
			u = cl.alt()
		}
		ws, _, err := d.Dial(u, nil)
		if err != nil {
			last = err
			continue
		}
		cl.mu.Lock()
		if cl.closing {
			cl.mu.Unlock()
			ws.Close()
			return false
		}
		cl.ws = ws
		var have map[string][]string
		if cl.id != "" && cl.known != nil {
			have = map[string][]string{cl.id: cl.known}
		}
		pending := cl.pending
		cl.mu.Unlock()
		cl.send(&wire.Hello{Header: wire.Header{Kind: wire.KindHello}, V: wire.Version, Have: have})
		if pending != nil {
			cl.send(pending)
		}
		cl.connected = time.Now()
		cl.redials.Add(1)
		cl.srv.reconnects.Add(1)
		return true
	}
}

func (cl *client) read() {
	defer close(cl.done)
	for {
		cl.mu.Lock()
		ws := cl.ws
		cl.mu.Unlock()
		_, data, err := ws.ReadMessage()
		if err != nil {
			ws.Close()
			if cl.noRedial.Load() || !cl.redial() {
				return
			}
			continue
		}
		now := time.Now()
		cl.bytes.Add(int64(len(data)))
		cl.srv.frames.Add(1)
		cl.srv.bytes.Add(int64(len(data)))
		m, err := wire.DecodeServerFrame(data, wire.Binary)
		if err != nil {
			fmt.Fprintln(os.Stderr, "decode:", err)
			return
		}
		switch f := m.(type) {
		case *wire.Error:
			fmt.Fprintf(os.Stderr, "%s: server error %s: %s\n", cl.name, f.Reason, f.Message)
		case *wire.Reply:
			var reset *crdt.Doc
			if f.Reset && len(f.Doc) > 0 {
				if reset, err = crdt.Load(f.Doc, nil, crdt.Options{}); err != nil {
					fmt.Fprintln(os.Stderr, "load:", err)
					return
				}
			}
			cl.mu.Lock()
			if cl.pending != nil && cl.pending.RID == f.RID {
				cl.pending = nil
			}
			if reset != nil {
				// A refused edit comes back with the server's document:
				// the replica's own change is dropped with it.
				cl.doc = reset
				cl.noteKnown(f.Heads)
			}
			cl.mu.Unlock()
			cl.replies <- f
		case *wire.Doc:
			d, err := crdt.Load(f.Doc, nil, crdt.Options{})
			if err != nil {
				fmt.Fprintln(os.Stderr, "load:", err)
				return
			}
			cl.mu.Lock()
			cl.takeDoc(d, f.ID, f.Heads)
			cl.mu.Unlock()
			cl.readyOne.Do(func() { close(cl.ready) })
		case *wire.Changes:
			cl.mu.Lock()
			if cl.doc == nil {
				cl.mu.Unlock()
				continue
			}
			_, err := cl.doc.ApplyChanges(f.Changes)
			if err == nil {
				cl.noteKnown(f.Heads)
			}
			cl.mu.Unlock()
			if err != nil {
				// Changes the replica cannot apply (they build on what it
				// lacks): join again, as the page does, and the server
				// sends what is missing, or the whole document.
				fmt.Fprintf(os.Stderr, "%s: apply: %v; joining again\n", cl.name, err)
				ws.Close()
				continue
			}
			cl.applied.Add(1)
			if cl.seen != nil {
				cl.seen(cl, strings.Join(f.Heads, ","), now)
			}
			cl.readyOne.Do(func() { close(cl.ready) })
		}
	}
}

// takeDoc takes a decision's whole document from the server. One that
// holds the heads the replica knows the server to have is the same
// history, caught up: the replica's own change not yet accepted is merged
// in. One the replica already holds entirely is older news. Any other is
// a rebased history, which replaces the replica's document (merging would
// bring the history the rebase dropped back); the edit in flight against
// the old one is then refused as stale and made again (write). The caller
// holds cl.mu.
func (cl *client) takeDoc(d *crdt.Doc, id string, heads []string) {
	if cl.doc != nil && cl.id == id {
		if h, err := crdt.ParseHeads(strings.Join(heads, ",")); err == nil && cl.doc.Has(h) {
			return
		}
		if k, err := crdt.ParseHeads(strings.Join(cl.known, ",")); err == nil && len(k) > 0 && d.Has(k) {
			d.Merge(cl.doc)
		}
	}
	cl.doc, cl.id = d, id
	cl.noteKnown(heads)
}

// noteKnown records heads the server sent as heads the replica holds, for
// the hello of a redial. The caller holds cl.mu.
func (cl *client) noteKnown(heads []string) {
	if h, err := crdt.ParseHeads(strings.Join(heads, ",")); err == nil && len(h) > 0 && cl.doc.Has(h) {
		cl.known = heads
	}
}

// cellOf is the cell write i sets.
func cellOf(i int) marks.Cell {
	return marks.Cell{Option: fmt.Sprintf("o%d", i%10), Criterion: fmt.Sprintf("c%d", (i/10)%5)}
}

// mark sets one cell and sends the edit; it returns the heads after the
// change (the key other clients see it under) without waiting.
func (cl *client) mark(i int) (string, error) {
	cl.mu.Lock()
	before := cl.doc.Heads()
	cell := cellOf(i)
	err := cl.doc.SetMark("q1", cell.Option, cell.Criterion, marks.All[i%3])
	if err == nil && cl.doc.Heads().Equal(before) {
		// Setting the value a cell already holds is no change at all.
		err = cl.doc.SetMark("q1", cell.Option, cell.Criterion, marks.All[(i+1)%3])
	}
	var ch []byte
	var after crdt.Heads
	if err == nil {
		ch, err = cl.doc.ChangesSince(before)
		after = cl.doc.Heads()
	}
	var e *wire.Edit
	if err == nil {
		e = &wire.Edit{Header: wire.Header{Kind: wire.KindEdit, RID: after.String()[:16]}, ID: cl.id, Changes: ch}
		cl.pending = e
	}
	cl.mu.Unlock()
	if err != nil {
		return "", err
	}
	return after.String(), cl.send(e)
}

// write sets one cell (mark) and waits for the server to accept it,
// making it again on the new history when it was refused as stale because
// the server rebased the decision meanwhile. It returns the heads the
// accepted write is known by.
func (cl *client) write(i int, timeout time.Duration) (string, error) {
	for {
		key, err := cl.mark(i)
		if err != nil {
			return "", err
		}
		r, err := cl.reply(timeout)
		if r != nil && r.Reason == question.Stale {
			continue
		}
		return key, err
	}
}

func (cl *client) reply(timeout time.Duration) (*wire.Reply, error) {
	select {
	case r := <-cl.replies:
		if !r.OK {
			return r, fmt.Errorf("%s refused: %s %s", r.Kind, r.Reason, r.Message)
		}
		return r, nil
	case <-cl.done:
		return nil, fmt.Errorf("%s: connection closed", cl.name)
	case <-time.After(timeout):
		return nil, fmt.Errorf("%s: no reply in %v", cl.name, timeout)
	}
}

// draft reads the replica's current draft (empty when it cannot be read).
func (cl *client) draft() crdt.Draft {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.doc == nil {
		return crdt.Draft{}
	}
	d, _ := cl.doc.Draft()
	return d
}

func (cl *client) heads() string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.doc == nil {
		return ""
	}
	return cl.doc.Heads().String()
}

func (cl *client) close() {
	cl.mu.Lock()
	cl.closing = true
	cl.ws.Close()
	cl.mu.Unlock()
	<-cl.done
}

// setup creates the decision on a fresh server.
func setup(c *child) (string, error) {
	cl, err := dialClient(c, "setup", nil, nil)
	if err != nil {
		return "", err
	}
	defer cl.close()
	q := question.Question{Text: "Which storage?"}
	for i := range 10 {
		q.Options = append(q.Options, question.Option{ID: fmt.Sprintf("o%d", i), Label: fmt.Sprintf("Option %d", i)})
	}
	for i := range 5 {
		q.Criteria = append(q.Criteria, question.Criterion{ID: fmt.Sprintf("c%d", i), Label: fmt.Sprintf("Criterion %d", i)})
	}
	if err := cl.send(&wire.Create{Header: wire.Header{Kind: wire.KindCreate, RID: "c"}, Cards: []wire.Card{{Key: "load", Definition: question.Definition{Questions: []question.Question{q}}}}}); err != nil {
		return "", err
	}
	r, err := cl.reply(10 * time.Second)
	if err != nil {
		return "", err
	}
	return r.Records[0].ID, nil
}

func connectAll(c *child, n int, seen func(*client, string, time.Time)) ([]*client, error) {
	out := make([]*client, n)
	for i := range out {
		cl, err := dialClient(c, fmt.Sprintf("m%d", i), nil, seen)
		if err != nil {
			return nil, err
		}
		out[i] = cl
	}
	for _, cl := range out {
		select {
		case <-cl.ready:
		case <-time.After(30 * time.Second):
			return nil, fmt.Errorf("%s got no document", cl.name)
		}
	}
	return out, nil
}

// redialled returns how many of cs reconnected after a drop, and how
// many redials they made in all.
func redialled(cs []*client) (clients, redials int64) {
	for _, c := range cs {
		if n := c.redials.Load(); n > 0 {
			clients++
			redials += n
		}
	}
	return clients, redials
}

// release runs the collector twice after closing a run's clients: their
// replicas' automerge memory is C memory freed by finalizers, which a
// small Go heap would otherwise leave for a long time (hundreds of
// replicas are gigabytes).
func release() {
	runtime.GC()
	runtime.GC()
}

func closeAll(cs []*client) {
	for _, c := range cs {
		c.close()
	}
}
