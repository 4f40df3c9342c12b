package server

// What each connection is sent of a committed group, and in which order:
// held frames, coalesced changes, and the early fan-out of draft edits.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/accord-crdt/accord/sync/wire"
)

// outgoing is a frame waiting for its group's commit.
type outgoing struct {
	to     *conn // nil: every connection joined by then except `except`
	except *conn
	joins  uint64 // for a broadcast: the joins decided before it
	msg    *encoded
	// reply is set for replies, so a failed commit can turn them into
	// refusals.
	reply *wire.Reply
	// early marks an accepted draft edit's changes, which may leave
	// before the group's commit.
	early bool
}

// fanout is what each connection is sent of a group, in order.
type fanout map[*conn][]outFrame

// outFrame is one frame of a fan-out: an outgoing frame, or the changes
// of one decision coalesced from several.
type outFrame struct {
	h     *outgoing   // when parts is empty
	parts []*outgoing // coalesced changes, in order
	sent  bool
}

// fanOut orders a group's frames per connection. Each connection gets
// them in the order they were decided, except that the accepted changes
// of one decision are coalesced into one question:changes frame, at the
// place of the first, as long as no other frame about that decision goes
// to that connection in between: a replica applies them in one call, and
// nothing about the decision (a reply, an event, its document) changes
// its place relative to them. A frame about no decision in particular
// ends every run.
func (d *document) fanOut(held []outgoing) fanout {
	out := fanout{}
	open := map[*conn]map[string]int{} // a conn's runs: decision → frame index
	add := func(c *conn, h *outgoing) {
		if ch, ok := h.msg.msg.(*wire.Changes); ok {
			if k, ok := open[c][ch.ID]; ok {
				out[c][k].parts = append(out[c][k].parts, h)
				return
			}
			if open[c] == nil {
				open[c] = map[string]int{}
			}
			open[c][ch.ID] = len(out[c])
			out[c] = append(out[c], outFrame{parts: []*outgoing{h}})
			return
		}
		ids, all := decisionsIn(h.msg.msg)
		if all {
			clear(open[c])
		}
		for _, id := range ids {
			delete(open[c], id)
		}
		out[c] = append(out[c], outFrame{h: h})
	}
	for i := range held {
		h := &held[i]
		if h.to != nil {
			add(h.to, h)
			continue
		}
		ch, _ := h.msg.msg.(*wire.Changes)
		for c, joined := range d.conns {
			if c == h.except || joined > h.joins {
				continue
			}
			if ch != nil && d.joining[c].pending(ch.ID) {
				// The join frame of this decision, built later from the
				// accepted state, carries these changes; sent now they would
				// reach a replica that has not loaded the decision.
				continue
			}
			add(c, h)
		}
	}
	return out
}

// sendEarly sends, before the group's commit, each connection's runs of
// accepted draft edits that no unsent frame about the same decision
// precedes in its fan-out, and returns the connections it sent to. A reply,
// an event or an authority's change of the decision ahead of them keeps
// them for after the commit, so the order of a decision's frames never
// changes; frames about other decisions do not hold them.
func (d *document) sendEarly(out fanout) map[*conn]bool {
	var early map[*conn]bool
	for c, frames := range out {
		for k, ok := range earlyFrames(frames) {
			if !ok {
				continue
			}
			d.sendTo(c, d.encodedFrame(&frames[k]))
			frames[k].sent = true
			if early == nil {
				early = map[*conn]bool{}
			}
			early[c] = true
		}
	}
	return early
}

// message is the frame it is about (the first, when coalesced).
func (it *outFrame) message() wire.Message {
	if it.h != nil {
		return it.h.msg.msg
	}
	return it.parts[0].msg.msg
}

// earlyFrames reports which frames of one connection's fan-out may
// leave before the commit: runs of draft edits' changes of a decision
// that no other frame about that decision precedes.
func earlyFrames(frames []outFrame) []bool {
	ok := make([]bool, len(frames))
	blocked := map[string]bool{}
	all := false
	for k, it := range frames {
		if len(it.parts) > 0 && !all && !blocked[it.parts[0].msg.msg.(*wire.Changes).ID] && allEarly(it.parts) {
			ok[k] = true
			continue
		}
		ids, any := decisionsIn(it.message())
		all = all || any
		for _, id := range ids {
			blocked[id] = true
		}
	}
	return ok
}

func allEarly(parts []*outgoing) bool {
	for _, h := range parts {
		if !h.early {
			return false
		}
	}
	return true
}

// sendRest sends what sendEarly did not. Frames and coalesced frames are
// encoded once per format and shared by the connections that get the
// same ones.
func (d *document) sendRest(out fanout) {
	for c, frames := range out {
		for k := range frames {
			if it := &frames[k]; !it.sent {
				d.sendTo(c, d.encodedFrame(it))
			}
		}
	}
	d.coalesced = nil
}

// encodedFrame returns the encoded frame of it; a coalesced one is
// built once for every connection whose frame has the same parts.
func (d *document) encodedFrame(it *outFrame) *encoded {
	switch len(it.parts) {
	case 0:
		return it.h.msg
	case 1:
		return it.parts[0].msg
	}
	if d.coalesced == nil {
		d.coalesced = map[string]*encoded{}
	}
	key := partsKey(it.parts)
	e := d.coalesced[key]
	if e == nil {
		e = &encoded{msg: coalesce(it.parts)}
		d.coalesced[key] = e
	}
	return e
}

func partsKey(parts []*outgoing) string {
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&b, "%p,", p)
	}
	return b.String()
}

// coalesce makes one question:changes frame of several of one decision.
func coalesce(parts []*outgoing) *wire.Changes {
	first := parts[0].msg.msg.(*wire.Changes)
	out := &wire.Changes{Header: first.Header, ID: first.ID}
	for _, h := range parts {
		ch := h.msg.msg.(*wire.Changes)
		out.Changes = append(out.Changes, ch.Changes...)
		out.Cells = append(out.Cells, ch.Cells...)
		out.Heads, out.By = ch.Heads, ch.By
		if ch.By != "" && !slices.Contains(out.ByAll, ch.By) {
			out.ByAll = append(out.ByAll, ch.By)
		}
	}
	return out
}

// decisionsIn lists the decisions a frame is about; all reports a frame
// about no decision in particular, which ends every run of changes.
func decisionsIn(m wire.Message) (ids []string, all bool) {
	switch m := m.(type) {
	case *wire.Reply:
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
		for _, r := range m.Records {
			ids = append(ids, r.ID)
		}
		for _, r := range m.Results {
			ids = append(ids, r.ID)
		}
		return ids, len(ids) == 0
	case *wire.Event:
		return []string{m.ID}, false
	case *wire.Doc:
		return []string{m.ID}, false
	case *wire.Changes:
		return []string{m.ID}, false
	case *wire.Sync:
		return []string{m.ID}, false
	}
	return nil, true
}

func (d *document) sendTo(c *conn, e *encoded) {
	f, err := e.frame(c.format)
	if err != nil {
		d.s.opts.Logger.Error("encode", "kind", e.msg.FrameKind(), "err", err)
		return
	}
	c.send(f)
}

func (d *document) hold(h outgoing) { d.held = append(d.held, h) }

func (d *document) replyTo(c *conn, r *wire.Reply) {
	if !r.OK {
		d.s.refused(string(r.Reason))
	}
	d.hold(outgoing{to: c, msg: &encoded{msg: r}, reply: r})
}

func (d *document) broadcast(except *conn, m wire.Message) {
	d.hold(outgoing{except: except, msg: &encoded{msg: m}, joins: d.joins})
}

// broadcastEdit announces an accepted draft edit's changes to every
// other connection; they may leave before the group's commit (commitNext).
func (d *document) broadcastEdit(except *conn, m *wire.Changes) {
	d.hold(outgoing{except: except, msg: &encoded{msg: m}, joins: d.joins, early: true})
}
