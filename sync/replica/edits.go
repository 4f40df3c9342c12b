package replica

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// SetMark sets one cell of a choice question's criteria matrix in the
// decision's shared draft; marks.Cleared clears it. Like every edit it
// applies to the local replica at once, connected or not, and is sent to
// the server when it can be.
func (c *Client) SetMark(id, q, option, criterion string, m marks.Mark) error {
	return c.edit(id, localEdit{kind: groupMark, q: q, option: option, criterion: criterion, mark: m})
}

// Choose selects (on) or deselects an option of a choice question.
func (c *Client) Choose(id, q, option string, on bool) error {
	return c.edit(id, localEdit{kind: groupChoice, q: q, option: option, on: on})
}

// SpliceText edits a written answer: delete del characters (code points)
// at pos, then insert ins.
func (c *Client) SpliceText(id, q string, pos, del int, ins string) error {
	return c.edit(id, localEdit{kind: groupText, q: q, pos: pos, del: del, ins: ins})
}

// SetText replaces a written answer with s by the smallest splice.
func (c *Client) SetText(id, q, s string) error {
	return c.edit(id, localEdit{kind: groupText, q: q, ins: s, whole: true})
}

// edit applies a local change to a replica, recording it for Undo, saves
// it and wakes the writer. An error from saving to Dir is returned, but
// the change stays applied and is still sent.
func (c *Client) edit(id string, e localEdit) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.ctx.Err() != nil {
		return ErrClosed
	}
	if c.readOnly {
		return refusal(question.Forbidden, "%s may read but not edit", c.member)
	}
	rec := c.records[id]
	if rec != nil && rec.Status != question.Open {
		return refusal(question.Resolved, "the decision is %s; reopen it to change the answer", rec.Status)
	}
	rep := c.reps[id]
	if rep == nil {
		if rec == nil {
			return refusal(question.NotFound, "no decision %q", id)
		}
		return ErrNoReplica
	}
	changed, err := rep.undo.edit(rep.doc, e, c.clock(), c.member)
	if err != nil {
		return fmt.Errorf("replica: %s: %w", id, err)
	}
	if !changed {
		return nil
	}
	return c.localChange(id, rep)
}

// Flush waits, bounded by ctx, until the listed decisions (every decision
// the server knows, when none is listed) are caught up on a live
// connection and every local change of theirs is accepted and stored:
// acknowledged by the reply to an edit of this replica's (which the
// server sends after its commit) or held by a whole document the server
// sent. Changes the replica hears back only as another member's early
// changes do not count, since the server that sent them may not have
// committed them (it sends the same changes again, to learn that).
//
// If a refused edit reset one of them since its latest local change
// before the call, or during the call, Flush returns that refusal (a
// *question.Refusal with Reset set; the replica is at the accepted
// draft). Each such refusal is returned once. If an edit was refused
// without reset, Flush returns the refusal while the refused changes are
// unsent.
func (c *Client) Flush(ctx context.Context, ids ...string) error {
	c.mu.Lock()
	start := map[string]uint64{}
	for id, rep := range c.reps {
		start[id] = rep.seq
	}
	c.mu.Unlock()
	for {
		c.mu.Lock()
		done, err := c.flushed(ids, start)
		wait := c.changed
		c.mu.Unlock()
		if done || err != nil {
			return err
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

// flushed reports whether Flush is done. The caller holds c.mu.
func (c *Client) flushed(ids []string, start map[string]uint64) (bool, error) {
	if c.closed {
		return false, ErrClosed
	}
	check := ids
	if len(ids) == 0 {
		check = slices.Collect(maps.Keys(c.reps))
	}
	for _, id := range check {
		if rep := c.reps[id]; rep != nil && rep.reset != nil && rep.droppedAt >= start[id] {
			err := rep.reset
			rep.reset = nil
			return false, err
		}
	}
	s := c.sess
	if s == nil {
		return false, nil
	}
	if len(ids) == 0 {
		ids = slices.Collect(maps.Keys(s.known))
	}
	for _, id := range ids {
		rep := c.reps[id]
		if !s.known[id] {
			return false, refusal(question.NotFound, "the server has no decision %q", id)
		}
		if rep == nil || !s.synced[id] || rep.inflight != "" {
			return false, nil
		}
		if !rep.doc.Heads().Equal(rep.accepted) || rep.stored < rep.seq {
			if rep.held != nil {
				return false, rep.held
			}
			c.push(id) // accepted but not known stored: confirmed by an edit
			return false, nil
		}
	}
	return true, nil
}

// pushEdits sends, for every marked (see push) caught-up decision with
// local changes and no edit in flight, one edit carrying every change
// since the accepted heads. Later changes wait for that edit's reply,
// which marks the decision again. A decision that cannot be pushed yet
// (not caught up, an edit in flight, changes held) stays marked.
func (c *Client) pushEdits(s *session) error {
	var frames [][]byte
	c.mu.Lock()
	for id := range c.toPush {
		rep := c.reps[id]
		if rep == nil {
			delete(c.toPush, id)
			continue
		}
		if !s.synced[id] || rep.inflight != "" || rep.held != nil {
			continue
		}
		heads := rep.doc.Heads()
		since := rep.accepted
		if heads.Equal(rep.accepted) {
			if rep.stored >= rep.seq {
				delete(c.toPush, id)
				continue
			}
			// Local changes the server has only as someone else's early
			// changes: send them again, so that the reply, which waits
			// for the commit, says they are stored.
			since = rep.durable
		}
		delete(c.toPush, id)
		changes, err := rep.doc.ChangesSince(since)
		if err != nil {
			c.log.Error("cannot encode local changes; sending the whole history", "id", id, "err", err)
			rep.accepted = nil
			if changes, err = rep.doc.ChangesSince(nil); err != nil {
				continue
			}
		}
		if len(changes) == 0 {
			rep.accepted = heads
			if since.Equal(rep.durable) {
				rep.stored = rep.seq
			}
			continue
		}
		rid := c.newRID()
		b, err := wire.Encode(&wire.Edit{Header: wire.Header{Kind: wire.KindEdit, RID: rid}, ID: id, Changes: changes}, c.opts.Format)
		if err != nil {
			c.log.Error("cannot encode an edit", "id", id, "err", err)
			continue
		}
		rep.inflight, rep.sent, rep.sentSeq = rid, heads, rep.seq
		frames = append(frames, b)
	}
	if len(frames) > 0 {
		c.notify()
	}
	c.mu.Unlock()
	for _, b := range frames {
		if err := s.conn.WriteMessage(s.msgType, b); err != nil {
			return err
		}
	}
	return nil
}
