package replica

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// Client is a member's connection to one document's decisions, with a
// local replica of each decision's CRDT document. Every exported method is
// safe for concurrent use.
type Client struct {
	opts   Options
	url    string
	log    *slog.Logger
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	done   chan struct{} // closed when run has returned
	once   sync.Once

	out  chan *request // requests waiting for the writer
	kick chan struct{} // capacity 1: local changes wait to be pushed
	// presenceKick (capacity 1): a presence state may be due (presence.go).
	presenceKick chan struct{}
	events       chan Event
	dropped      atomic.Uint64
	rid          atomic.Uint64

	mu       sync.Mutex
	closed   bool
	reps     map[string]*replica
	toPush   map[string]bool // decisions whose local changes may be pushable
	records  map[string]*question.Record
	order    []string // record ids, the server's order first
	sess     *session // nil while disconnected
	member   string
	readOnly bool
	changed  chan struct{} // closed and replaced whenever waiters should look again
	presence presenceOut
	// others holds the other connections' presence, by connection; self
	// is this connection's id, as the server named it.
	others map[string]wire.Presence
	self   string
	// now is the clock typing bursts are timed by (time.Now).
	now func() time.Time
}

// replica is one decision's local document and what the server is known
// to have accepted of it. Guarded by Client.mu.
type replica struct {
	doc *crdt.Doc
	// accepted are heads the server holds and the replica holds too: the
	// last accepted revision. Edits carry the changes since them; a hello
	// lists them. nil when unknown.
	accepted crdt.Heads
	// durable are heads the server is known to have stored: those of the
	// latest reply to this replica's own edit (sent after the commit) or
	// of the latest whole document received. accepted may run ahead of
	// them: other members' edits reach the replica before their commit
	// (early fan-out), so a server that crashed, or a cluster node that
	// took over, may never have stored them. Only a document lacking the
	// durable heads is a rebase (see isRebased). nil when unknown.
	durable  crdt.Heads
	inflight string     // rid of the edit awaiting its reply, "" if none
	sent     crdt.Heads // the replica's heads when that edit was made
	seq      uint64     // local changes made by this process
	// sentSeq is seq when the edit in flight was made. stored counts the
	// local changes the server is known to have stored: those of a reply
	// to this replica's own edit (sent after the commit) or held by a
	// whole document received. Accepted heads are not enough: another
	// holder's copy of a local change may come back as early changes
	// that the owner never commits. Flush waits for stored to reach seq.
	sentSeq uint64
	stored  uint64
	// held is the refusal of an edit refused without reset; the changes
	// wait for a new local change or connection.
	held error
	// orphan is the rid of the edit that was in flight when a rebase
	// replaced the document: its reply concerns the old history.
	orphan string
	// file is what Options.Dir holds of the replica.
	file fileState
	// rebases counts the rebased documents the replica took: one taken
	// after a reply holds that reply's effect, whatever its history.
	rebases uint64
	// undo is the member's undo and redo stacks (undo.go).
	undo undoLog
	// reset is the refusal that last reset the replica, until a Flush
	// reports it; droppedAt is seq at that reset.
	reset     error
	droppedAt uint64
}

// session is one connection, from its welcome until it fails. Its maps
// are guarded by Client.mu.
type session struct {
	conn    Conn
	msgType int
	pending map[string]*request // requests written and awaiting replies
	known   map[string]bool     // decisions the server has named on this connection
	synced  map[string]bool     // decisions caught up on this connection
	quit    chan struct{}       // closed when the connection is over
}

type request struct {
	ctx   context.Context
	rid   string
	data  []byte
	reply chan result // capacity 1
}

type result struct {
	reply *wire.Reply
	err   error
	// rebases is the decision's replica's rebase count when the reply
	// arrived (see waitHeads).
	rebases uint64
}

// Dial starts a client of the document at url (the server's WebSocket
// URL with ?doc=<id>). It restores any replicas saved in opts.Dir, dials,
// and waits, bounded by ctx, for the server's welcome and then for the
// document (or catch-up changes) of every decision the welcome names, so
// that those decisions are ready to edit when Dial returns. If ctx ends
// first, Dial closes the client and returns the error. With
// opts.Background set it returns at once and connects in the background
// (Flush with no ids then waits for the same). From then on the client
// keeps the connection up, redialling with backoff, until Close.
func Dial(ctx context.Context, url string, opts Options) (*Client, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	c := &Client{
		opts:         opts,
		url:          url,
		log:          opts.Logger,
		done:         make(chan struct{}),
		out:          make(chan *request, requestQueue),
		kick:         make(chan struct{}, 1),
		presenceKick: make(chan struct{}, 1),
		others:       map[string]wire.Presence{},
		events:       make(chan Event, opts.EventBuffer),
		reps:         map[string]*replica{},
		toPush:       map[string]bool{},
		records:      map[string]*question.Record{},
		changed:      make(chan struct{}),
		now:          time.Now,
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if err := c.restore(); err != nil {
		c.cancel()
		return nil, err
	}
	var s *session
	var welcomed []string
	if !opts.Background {
		conn, w, err := c.connect(ctx)
		if err != nil {
			c.cancel()
			return nil, err
		}
		s = c.begin(conn, w)
		for _, r := range w.Records {
			welcomed = append(welcomed, r.ID)
		}
	}
	go c.run(s)
	if len(welcomed) > 0 {
		if err := c.waitDocs(ctx, welcomed); err != nil {
			c.Close()
			return nil, fmt.Errorf("replica: waiting for the decisions' documents: %w", err)
		}
	}
	return c, nil
}

// waitDocs waits, bounded by ctx, until every listed decision's document
// has arrived and been caught up on the current connection. A connection
// lost meanwhile is redialled by run; the wait goes on across it.
func (c *Client) waitDocs(ctx context.Context, ids []string) error {
	return c.waitUntil(ctx, func() bool {
		if c.sess == nil {
			return false
		}
		for _, id := range ids {
			if c.reps[id] == nil || !c.sess.synced[id] {
				return false
			}
		}
		return true
	})
}

// waitUntil waits, bounded by ctx, until ready (called with c.mu held)
// reports true; it looks again whenever the client notifies a change.
func (c *Client) waitUntil(ctx context.Context, ready func() bool) error {
	for {
		c.mu.Lock()
		ok := ready()
		wait := c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.ctx.Done():
			return ErrClosed
		}
	}
}

// Close stops the client: it closes the connection, fails waiting
// requests with ErrClosed, waits for its goroutines to end and closes the
// Events channel. The replicas stay readable.
func (c *Client) Close() error {
	c.once.Do(c.cancel)
	<-c.done
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return nil
}

// Events returns the channel of events. It is buffered
// (Options.EventBuffer); when the reader falls behind, the oldest events
// are dropped (see Dropped). It is closed by Close.
func (c *Client) Events() <-chan Event { return c.events }

// Dropped returns how many events were dropped because Events was full.
func (c *Client) Dropped() uint64 { return c.dropped.Load() }

// Member returns who the server says the client is, and whether they may
// write. Both are zero before the first welcome.
func (c *Client) Member() (login string, write bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.member, c.member != "" && !c.readOnly
}

// Connected reports whether the client is connected and welcomed.
func (c *Client) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess != nil
}

func (c *Client) newRID() string { return strconv.FormatUint(c.rid.Add(1), 36) }

// notify wakes every waiter on c.changed. The caller holds c.mu.
func (c *Client) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// push marks a decision for the writer to look at (it may have local
// changes to send) and wakes the writer. Only marked decisions are looked
// at, so a frame for one decision costs nothing for the others. The
// caller holds c.mu.
func (c *Client) push(id string) {
	c.toPush[id] = true
	c.kickWriter()
}

// kickWriter asks the writer to push local changes.
func (c *Client) kickWriter() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}
