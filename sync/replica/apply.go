package replica

import (
	"errors"
	"fmt"
	"strings"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

// handleAll handles frames in order, a decision's consecutive
// question:changes frames together: what they hold is one batch (within
// crdt.MaxChangesBytes), applied in one call, with the last frame's heads.
func (c *Client) handleAll(s *session, ms []wire.Message) error {
	for i := 0; i < len(ms); {
		j := i + 1
		if first, ok := ms[i].(*wire.Changes); ok {
			size := len(first.Changes)
			for ; j < len(ms); j++ {
				next, ok := ms[j].(*wire.Changes)
				if !ok || next.ID != first.ID || size+len(next.Changes) > crdt.MaxChangesBytes {
					break
				}
				size += len(next.Changes)
			}
		}
		var err error
		if j-i == 1 {
			err = c.handle(s, ms[i])
		} else {
			run := make([]*wire.Changes, 0, j-i)
			for _, m := range ms[i:j] {
				run = append(run, m.(*wire.Changes))
			}
			c.mu.Lock()
			err = c.applyChanges(s, run...)
			c.mu.Unlock()
		}
		if err != nil {
			return err
		}
		i = j
	}
	return nil
}

// handle applies one frame from the server.
func (c *Client) handle(s *session, m wire.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m := m.(type) {
	case *wire.Reply:
		c.applyReply(s, m)
	case *wire.Doc:
		c.applyDoc(s, m)
	case *wire.Changes:
		return c.applyChanges(s, m)
	case *wire.Event:
		c.applyEvent(s, m)
	case *wire.Presence:
		c.applyPresence(m)
	case *wire.Error:
		err := fmt.Errorf("replica: server error: %s: %s", m.Reason, m.Message)
		c.log.Warn("server reported an error", "reason", m.Reason, "message", m.Message)
		if r := s.pending[m.RID]; m.RID != "" && r != nil {
			delete(s.pending, m.RID)
			r.reply <- result{err: err}
		}
		c.emit(Event{Kind: wire.KindError, Err: err})
	default:
		c.log.Debug("ignoring a frame", "kind", m.FrameKind())
	}
	return nil
}

// applyDoc takes in a whole accepted document. Of the same history as the
// replica, it is merged, keeping local changes not yet accepted; a
// rebased one (see rebase.go) replaces the replica's document, and the
// local draft values not yet accepted are made again on it.
func (c *Client) applyDoc(s *session, m *wire.Doc) {
	saved := m.Doc
	if m.Deflated {
		var err error
		if saved, err = wire.InflateDoc(m.Doc, crdt.MaxDocumentBytes); err != nil {
			c.log.Error("cannot inflate a decision's document", "id", m.ID, "err", err)
			return
		}
	}
	srv, err := crdt.Load(saved, nil, crdt.Options{})
	if err != nil {
		c.log.Error("cannot load a decision's document", "id", m.ID, "err", err)
		return
	}
	accepted := srv.Heads()
	if h, err := parseWireHeads(m.Heads); err == nil && len(h) > 0 && srv.Has(h) {
		accepted = h
	}
	rep := c.reps[m.ID]
	switch {
	case rep == nil:
		c.reps[m.ID] = &replica{doc: srv, accepted: accepted, durable: accepted}
	case isRebased(rep, srv):
		c.rebase(m.ID, rep, srv, accepted)
	default:
		w := rep.undo.watchText(rep.doc, c.clock())
		if err := rep.doc.Merge(srv); err != nil {
			c.log.Error("cannot merge the accepted document; local changes are dropped", "id", m.ID, "err", err)
			rep.doc = srv
			rep.undo.clear(clearReset)
		}
		rep.undo.settleText(rep.doc, w)
		rep.accepted, rep.durable = accepted, accepted
		if rep.doc.Heads().Equal(accepted) {
			rep.stored = rep.seq // the stored document holds them all
		}
	}
	s.known[m.ID], s.synced[m.ID] = true, true
	c.undoObserve(m.ID)
	c.saveLogged(m.ID)
	c.notify()
	c.push(m.ID)
	c.emit(c.eventFor(wire.KindDoc, m.ID, ""))
}

// applyChanges applies accepted changes: the frames ms, all of one
// decision, as one batch, with the last frame's heads. Changes that do
// not apply mean the replica missed something; the connection is ended
// so that the reconnect's hello catches the replica up.
func (c *Client) applyChanges(s *session, ms ...*wire.Changes) error {
	last := ms[len(ms)-1]
	id := last.ID
	rep := c.reps[id]
	if rep == nil {
		c.log.Warn("changes for a decision without a replica", "id", id)
		return errResync
	}
	batch := last.Changes
	if len(ms) > 1 {
		batch = nil
		for _, m := range ms {
			batch = append(batch, m.Changes...)
		}
	}
	var before crdt.Heads
	if c.opts.Dir != "" {
		before = rep.doc.Heads()
	}
	w := rep.undo.watchText(rep.doc, c.clock())
	fresh, err := rep.doc.ApplyChanges(batch)
	if err != nil {
		c.log.Warn("accepted changes do not apply", "id", id, "err", err)
		return fmt.Errorf("%w: %v", errResync, err)
	}
	rep.undo.settleText(rep.doc, w)
	for _, m := range ms {
		rep.undo.noteCells(m.Cells)
	}
	c.undoObserve(id)
	if len(fresh) > 0 && before != nil && before.Equal(rep.file.saved) {
		rep.file.batch = batch // the log line needs nothing else
	}
	if h, err := parseWireHeads(last.Heads); err == nil && rep.doc.Has(h) {
		rep.accepted = h
	}
	first := !s.synced[id]
	s.known[id], s.synced[id] = true, true
	c.saveLogged(id)
	c.notify()
	if first || c.toPush[id] || !rep.doc.Heads().Equal(rep.accepted) || rep.stored < rep.seq {
		c.push(id) // local changes wait to go
	}
	for _, m := range ms {
		c.emit(c.eventFor(wire.KindChanges, id, m.By))
	}
	c.noticeOverwrites(id, ms)
	return nil
}

// noticeOverwrites reports each value this member had set that another
// member's accepted edit replaced, once: the cells travel only with the
// change as it is accepted, never with a catch-up.
func (c *Client) noticeOverwrites(id string, ms []*wire.Changes) {
	if c.member == "" {
		return
	}
	for _, m := range ms {
		for i := range m.Cells {
			cell := m.Cells[i]
			if strings.EqualFold(cell.WasBy, c.member) && !strings.EqualFold(cell.By, c.member) {
				e := c.eventFor(KindOverwritten, id, cell.By)
				e.Cell = &cell
				c.emit(e)
			}
		}
	}
}

func (c *Client) applyEvent(s *session, m *wire.Event) {
	if m.Record != nil {
		c.adoptRecord(*m.Record)
	}
	if m.Definition != nil {
		c.adoptDefinition(m.ID, *m.Definition)
	}
	if m.Kind == wire.KindCreated {
		s.known[m.ID] = true
	}
	c.undoObserve(m.ID)
	c.saveLogged(m.ID)
	c.notify()
	e := c.eventFor(m.Kind, m.ID, m.By)
	e.Answer, e.Question, e.Option, e.Criterion = m.Answer, m.Question, m.Option, m.Criterion
	c.emit(e)
}

func (c *Client) applyReply(s *session, m *wire.Reply) {
	if m.Kind == wire.KindEdit {
		if rep := c.reps[m.ID]; rep != nil && rep.inflight == m.RID && m.RID != "" {
			c.editReply(m.ID, rep, m)
		} else {
			c.log.Warn("reply to an edit not in flight", "id", m.ID, "rid", m.RID)
		}
		return
	}
	if m.OK {
		if m.Record != nil {
			c.adoptRecord(*m.Record)
		}
		for _, r := range m.Records {
			c.adoptRecord(r)
			s.known[r.ID] = true
		}
		for _, res := range m.Results {
			if res.Record != nil {
				c.adoptRecord(*res.Record)
			}
		}
		if m.Definition != nil {
			c.adoptDefinition(m.ID, *m.Definition)
		}
		c.undoObserve(m.ID)
		for _, r := range m.Records {
			c.undoObserve(r.ID)
		}
		for _, res := range m.Results {
			if res.Record != nil {
				c.undoObserve(res.Record.ID)
				c.saveLogged(res.Record.ID)
			}
		}
		if m.ID != "" {
			c.saveLogged(m.ID)
		}
		c.notify()
	}
	if r := s.pending[m.RID]; r != nil {
		delete(s.pending, m.RID)
		res := result{reply: m}
		if rep := c.reps[m.ID]; rep != nil {
			res.rebases = rep.rebases
		}
		r.reply <- res
	}
}

// editReply settles the edit in flight: accepted, its changes become the
// accepted heads; refused with reset, the replica returns to the accepted
// document the reply carries (refused as stale with a rebased document,
// it takes that document and carries its values over instead); refused
// otherwise, the changes are kept and wait for the next local change or
// connection.
func (c *Client) editReply(id string, rep *replica, m *wire.Reply) {
	sent, sentSeq := rep.sent, rep.sentSeq
	orphan := rep.orphan == m.RID
	rep.inflight, rep.sent, rep.orphan = "", nil, ""
	defer func() {
		c.saveLogged(id)
		c.notify()
		c.push(id)
	}()
	if orphan {
		c.orphanReply(id, rep, m)
		return
	}
	if m.OK {
		if h, err := parseWireHeads(m.Heads); err == nil && len(h) > 0 && rep.doc.Has(h) {
			rep.accepted = h
		} else {
			rep.accepted = sent
		}
		rep.durable = rep.accepted
		rep.stored = max(rep.stored, sentSeq)
		return
	}
	ref := &question.Refusal{Reason: m.Reason, Message: m.Message, Reset: m.Reset}
	c.log.Info("edit refused", "id", id, "reason", m.Reason, "message", m.Message, "reset", m.Reset)
	if m.Reset && m.Reason == question.Stale {
		// An edit made against a history the server has since rebased:
		// the reset carries the rebased document, and the local values
		// carry over to it instead of being dropped.
		if srv, err := crdt.Load(m.Doc, nil, crdt.Options{}); err == nil && len(m.Doc) > 0 && isRebased(rep, srv) {
			c.rebase(id, rep, srv, srv.Heads())
			c.emit(c.eventFor(wire.KindDoc, id, ""))
			return
		}
	}
	if m.Reset {
		if err := c.reset(rep, m.Doc); err != nil {
			c.log.Error("cannot reset the replica", "id", id, "err", err)
		}
		rep.reset, rep.droppedAt = ref, rep.seq
	} else {
		rep.held = ref
	}
	e := c.eventFor(KindEditRefused, id, "")
	e.Err = ref
	c.emit(e)
}

// orphanReply settles the reply to an edit made against a history the
// replica has left by a rebase since; its local values were carried over
// to the rebased document already, so the reply drops nothing. A reset
// carrying a document rebased again carries them over again; one of the
// replica's current history is merged, like a question:doc.
func (c *Client) orphanReply(id string, rep *replica, m *wire.Reply) {
	if m.OK {
		// The server accepted it before its rebase; the rebased document
		// holds it already.
		c.log.Warn("an edit of the old history was accepted after the rebase", "id", id, "rid", m.RID)
		return
	}
	c.log.Info("edit of the old history refused after a rebase", "id", id, "reason", m.Reason)
	if !m.Reset || len(m.Doc) == 0 {
		return
	}
	srv, err := crdt.Load(m.Doc, nil, crdt.Options{})
	if err != nil {
		c.log.Error("cannot load the reset's document", "id", id, "err", err)
		return
	}
	if isRebased(rep, srv) {
		c.rebase(id, rep, srv, srv.Heads())
		c.emit(c.eventFor(wire.KindDoc, id, ""))
		return
	}
	w := rep.undo.watchText(rep.doc, c.clock())
	if err := rep.doc.Merge(srv); err != nil {
		c.log.Error("cannot merge the reset's document", "id", id, "err", err)
		return
	}
	rep.undo.settleText(rep.doc, w)
	rep.accepted, rep.durable = srv.Heads(), srv.Heads()
}

// reset returns a replica to the accepted document: the one the refusal
// carries, or else the replica as of its accepted heads. The new replica
// writes as a fresh actor, so nothing it writes can collide with the
// dropped changes.
func (c *Client) reset(rep *replica, doc []byte) error {
	var d *crdt.Doc
	var err error
	if len(doc) > 0 {
		d, err = crdt.Load(doc, nil, crdt.Options{})
	}
	fromServer := d != nil
	if d == nil {
		if len(rep.accepted) == 0 {
			return errors.Join(err, errors.New("no accepted heads to return to"))
		}
		if d, err = rep.doc.ForkAt(rep.accepted, ""); err != nil {
			return err
		}
	}
	rep.doc, rep.accepted, rep.held = d, d.Heads(), nil
	rep.stored = rep.seq // the local changes are dropped
	rep.undo.clear(clearReset)
	if fromServer {
		rep.durable = rep.accepted
	}
	rep.file.saved = nil // the log holds the dropped changes: a snapshot next
	return nil
}
