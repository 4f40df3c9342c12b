package memhost

import (
	"context"
	"slices"
	"sync"

	"github.com/accord-crdt/accord/question/planner"
)

// Chat is an in-memory Chat. Accepted turns count as running until Finish.
// It is safe for concurrent use.
type Chat struct {
	mu       sync.Mutex
	notices  map[string][]planner.Notice
	turns    map[string][]planner.Turn
	accepted map[string]map[string]bool
	running  map[string]map[string]bool
	before   func(doc string, t planner.Turn) error
	after    func(doc string, t planner.Turn) error
	onTurn   func(doc string, t planner.Turn)
	changed  func(doc string)
	waits    map[string]chan struct{} // closed at the next accept or finish
	persist  func(doc string, st ChatState) error
}

// NewChat returns an empty Chat.
func NewChat() *Chat {
	return &Chat{notices: map[string][]planner.Notice{}, turns: map[string][]planner.Turn{},
		accepted: map[string]map[string]bool{}, running: map[string]map[string]bool{}, waits: map[string]chan struct{}{}}
}

// wake closes doc's change channel; c.mu is held.
func (c *Chat) wake(doc string) {
	if ch, ok := c.waits[doc]; ok {
		close(ch)
		delete(c.waits, doc)
	}
}

// Changed returns a channel that is closed when the next turn of doc is
// accepted or a running one finishes.
func (c *Chat) Changed(doc string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.waits[doc]
	if !ok {
		ch = make(chan struct{})
		c.waits[doc] = ch
	}
	return ch
}

// Pending returns the accepted turns of doc that have not finished, oldest
// first: what a remote Planner still has to run.
func (c *Chat) Pending(doc string) []planner.Turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []planner.Turn
	for _, t := range c.turns[doc] {
		if c.running[doc][t.ID] {
			out = append(out, t)
		}
	}
	return out
}

// Post implements planner.Chat.
func (c *Chat) Post(ctx context.Context, doc string, n planner.Notice) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.accepted[doc][n.ID] {
		return nil
	}
	st := c.state(doc)
	c.mark(doc, n.ID)
	c.notices[doc] = append(c.notices[doc], n)
	return c.save(doc, st)
}

func (c *Chat) mark(doc, id string) {
	if c.accepted[doc] == nil {
		c.accepted[doc] = map[string]bool{}
	}
	c.accepted[doc][id] = true
}

// Accept implements planner.Chat: the turn's notice is posted and the
// turn runs (OnTurn) until Finish, once per id.
func (c *Chat) Accept(ctx context.Context, doc string, t planner.Turn) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	before, after, onTurn := c.before, c.after, c.onTurn
	c.mu.Unlock()
	if before != nil {
		if err := before(doc, t); err != nil {
			return err
		}
	}
	c.mu.Lock()
	fresh := !c.accepted[doc][t.ID]
	if fresh {
		st := c.state(doc)
		c.mark(doc, t.ID)
		c.notices[doc] = append(c.notices[doc], planner.Notice{ID: t.ID, Text: t.Notice})
		c.turns[doc] = append(c.turns[doc], t)
		if c.running[doc] == nil {
			c.running[doc] = map[string]bool{}
		}
		c.running[doc][t.ID] = true
		if err := c.save(doc, st); err != nil {
			c.mu.Unlock()
			return err
		}
		c.wake(doc)
	}
	c.mu.Unlock()
	if fresh && onTurn != nil {
		onTurn(doc, t)
	}
	if after != nil {
		return after(doc, t)
	}
	return nil
}

// Accepted implements planner.Chat.
func (c *Chat) Accepted(ctx context.Context, doc, id string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.accepted[doc][id], nil
}

// Notices returns the document's Chat notices, oldest first.
func (c *Chat) Notices(doc string) []planner.Notice {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.notices[doc])
}

// Turns returns the turns Chat accepted, oldest first.
func (c *Chat) Turns(doc string) []planner.Turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.turns[doc])
}

// Running returns how many accepted turns have not finished.
func (c *Chat) Running(doc string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.running[doc])
}

// Finish ends a running turn; the Chat is free again once none runs. It
// returns false if the turn was not running (or persisting its end failed).
func (c *Chat) Finish(doc, id string) bool {
	c.mu.Lock()
	ok := c.running[doc][id]
	if ok {
		st := c.state(doc)
		delete(c.running[doc], id)
		if err := c.save(doc, st); err != nil {
			ok = false // still running: it ends when a Finish is kept
		} else {
			c.wake(doc)
		}
	}
	changed := c.changed
	c.mu.Unlock()
	if ok && changed != nil {
		changed(doc)
	}
	return ok
}

// FinishAll ends every running turn of doc.
func (c *Chat) FinishAll(doc string) {
	c.mu.Lock()
	ids := make([]string, 0, len(c.running[doc]))
	for id := range c.running[doc] {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.Finish(doc, id)
	}
}

// OnTurn sets fn to run when a turn is accepted (once per id); a host
// starts the Planner turn there.
func (c *Chat) OnTurn(fn func(doc string, t planner.Turn)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onTurn = fn
}

// SetBeforeAccept installs a fault hook: fn runs before Accept records
// anything, and an error it returns is Accept's, with nothing accepted.
func (c *Chat) SetBeforeAccept(fn func(doc string, t planner.Turn) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.before = fn
}

// SetAfterAccept installs a fault hook: fn runs after Accept recorded the
// turn, and an error it returns is Accept's although the turn was
// accepted, as when a reply is lost.
func (c *Chat) SetAfterAccept(fn func(doc string, t planner.Turn) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.after = fn
}
