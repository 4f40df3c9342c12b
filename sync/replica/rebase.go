package replica

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
)

// A rebased document is an accepted document (a question:doc, or the Doc
// of a reset reply) whose history does not contain the replica's accepted
// heads: the server replaced the decision's history with a new one
// holding the same state (a compaction). Its changes and the replica's
// share no ancestry, so merging the two would duplicate every question's
// draft structure. The replica instead takes the rebased document as it
// is and makes its own not-yet-accepted draft values again on it, as
// fresh local edits (carry).

// isRebased reports whether srv is a rebased document for rep: it lacks
// heads the server is known to have stored (rep.durable, else the
// accepted heads). A document that lacks only changes the replica
// received before their commit (early fan-out) is the same history with
// a lost tail, after a server crash or a cluster failover: it is merged,
// and the replica offers those changes again, rather than carrying their
// values over as fresh edits, which would apply a written answer's
// splices twice once their authors offer the originals. With no heads
// known the replica cannot tell; such a document is merged as before,
// which is right whenever it shares the replica's history.
func isRebased(rep *replica, srv *crdt.Doc) bool {
	known := rep.durable
	if len(known) == 0 {
		known = rep.accepted
	}
	return len(known) > 0 && !srv.Has(known)
}

// rebase replaces rep's document with srv, a rebased document the server
// has accepted up to accepted, and carries the replica's unaccepted draft
// values over to it. An edit in flight was made against the old history:
// the server refuses it as stale, and its reply then changes nothing here
// (see editReply). The caller holds c.mu.
func (c *Client) rebase(id string, rep *replica, srv *crdt.Doc, accepted crdt.Heads) {
	old, base := rep.doc, carryBase(rep.doc, rep.accepted, srv)
	rep.doc, rep.accepted, rep.durable, rep.held = srv, accepted, accepted, nil
	rep.rebases++
	rep.undo.clear(clearRebase)
	rep.file.saved = nil // the log holds the old history: a snapshot next
	if rep.inflight != "" {
		rep.orphan = rep.inflight
	}
	rep.stored = rep.seq // what carries over is made anew below
	n, err := carry(old, base, srv)
	if err != nil {
		c.log.Error("cannot carry local edits over to the rebased document; they are dropped", "id", id, "err", err)
		return
	}
	if n > 0 {
		rep.seq++
	}
	c.log.Info("decision's document rebased", "id", id, "carried", n)
}

// carry makes on to the draft values old holds beyond its accepted heads
// base, as fresh changes of to's actor, and returns how many it made. Only
// the values of the current generation carry: if to has moved to another
// generation, or old's edits were made on an earlier one, nothing does.
// What carries is the replica's net intent: each value is compared with
// old as of base (what the replica edited from), so a value the replica
// did not change keeps whatever to holds (docs/PROTOCOL.md, Rebase):
//   - a mark cell the replica set (or cleared) is set so again;
//   - in a multiple choice, an option the replica selected or deselected
//     is chosen so again;
//   - in a single choice, an option the replica selected is chosen again,
//     which replaces to's choice; if the replica only deselected its
//     accepted choice, that option is deselected where to still holds it,
//     and another option chosen in to stays chosen;
//   - a written answer gets the splice that turned the accepted text into
//     the replica's text, applied where that span sits in to's text (if
//     to's text no longer keeps the span's surroundings, the replica's text
//     replaces it by the smallest splice).
//
// Values to's definition no longer has a place for are skipped.
func carry(old *crdt.Doc, base crdt.Heads, to *crdt.Doc) (int, error) {
	if old.Heads().Equal(base) {
		return 0, nil
	}
	at, err := old.ForkAt(base, "")
	if err != nil {
		return 0, fmt.Errorf("the accepted revision: %w", err)
	}
	was, err := at.Draft()
	if err != nil {
		return 0, err
	}
	now, err := old.Draft()
	if err != nil {
		return 0, err
	}
	st, err := to.State()
	if err != nil {
		return 0, err
	}
	cur := st.Drafts[st.Generation]
	if now.Generation != was.Generation || cur.Generation != now.Generation {
		return 0, nil
	}
	n := 0
	var errs []error
	apply := func(err error) {
		switch {
		case err == nil:
			n++
		case errors.Is(err, crdt.ErrInvalid), errors.Is(err, crdt.ErrNoQuestion), errors.Is(err, crdt.ErrWrongKind):
			// the rebased definition has no such cell, option or question
		default:
			errs = append(errs, err)
		}
	}
	for _, q := range slices.Sorted(maps.Keys(now.Questions)) {
		local, accepted := now.Questions[q], was.Questions[q]
		for _, k := range slices.Sorted(maps.Keys(local.Marks)) {
			m, before := local.Marks[k], accepted.Marks[k]
			if m == before {
				continue
			}
			cell, err := marks.ParseKey(k)
			if err != nil {
				continue
			}
			apply(to.SetMark(q, cell.Option, cell.Criterion, m))
		}
		if shape := st.Questions[q]; shape != nil && !shape.Written && !shape.Multiple {
			mine, seen, theirs := first(local.Choices), first(accepted.Choices), first(cur.Questions[q].Choices)
			switch {
			case mine == seen:
			case mine != "":
				apply(to.Choose(q, mine, true))
			case theirs == seen:
				apply(to.Choose(q, seen, false))
			}
		} else {
			for _, o := range accepted.Choices {
				if !slices.Contains(local.Choices, o) {
					apply(to.Choose(q, o, false))
				}
			}
			for _, o := range local.Choices {
				if !slices.Contains(accepted.Choices, o) {
					apply(to.Choose(q, o, true))
				}
			}
		}
		// A target that already reads as the replica's text (its edit
		// reached the server before the rebase) needs nothing.
		if local.Text != accepted.Text && local.Text != cur.Questions[q].Text {
			pos, del, ins := respliced(accepted.Text, local.Text, cur.Questions[q].Text)
			apply(to.SpliceText(q, pos, del, ins))
		}
	}
	return n, errors.Join(errs...)
}

// carryBase returns the heads of old that srv, a rebased document, is
// known to hold: the accepted heads, and the changes the server had
// accepted before it rebased though the replica never heard so (a reply
// lost with its connection), which the rebase's clock names. Carried from
// there, those changes are not made a second time.
func carryBase(old *crdt.Doc, accepted crdt.Heads, srv *crdt.Doc) crdt.Heads {
	covered := old.Covered(srv.RebaseClock())
	if len(covered) == 0 {
		return accepted
	}
	base := slices.Concat(accepted, covered)
	slices.SortFunc(base, func(a, b crdt.ChangeHash) int { return bytes.Compare(a[:], b[:]) })
	return slices.Compact(base)
}

// first returns a single choice's option, "" for none.
func first(choices []string) string {
	if len(choices) == 0 {
		return ""
	}
	return choices[0]
}

// respliced returns the splice of target that makes there the change the
// smallest splice from accepted to local makes. target is accepted as
// others have edited it since (often accepted itself): the replica's span
// moves past each of their edits before it, and every edit of theirs
// elsewhere stays; only where theirs changed the same span does the
// replica's text win, over both changes' extent. Two insertions at one
// point: the replica's goes after theirs, as the page's carry-over places
// it. Positions count code points, as crdt.SpliceText's do.
func respliced(accepted, local, target string) (pos, del int, ins string) {
	a, l, t := []rune(accepted), []rune(local), []rune(target)
	p, s := span(a, l) // the replica replaced a[p:end] with l[p:len(l)-s]
	end := len(a) - s
	from, to, shift, grow := p, end, 0, 0
	for _, h := range edits(a, t, maxTheirEdits) {
		hEnd := h.at + h.del
		// An insertion at the replica's start goes before it, even when the
		// replica's is one at the same point; one at its end goes after it.
		switch {
		case hEnd <= p:
			shift += len(h.ins) - h.del
		case h.at >= end:
			// after the replica's span, as are all that follow
		default:
			from, to = min(from, h.at), max(to, hEnd)
			grow += len(h.ins) - h.del
		}
	}
	text := slices.Concat(a[from:p], l[p:len(l)-s], a[end:to])
	return from + shift, to - from + grow, string(text)
}

// maxTheirEdits bounds the insertions and deletions between the accepted
// text and the target that respliced places one by one; past it, their
// edits count as one span.
const maxTheirEdits = 512

// textEdit replaces a[at:at+del] by ins, in a's positions.
type textEdit struct {
	at, del int
	ins     []rune
}

// edits returns the edits turning a into b, in order, found by Myers'
// O(ND) difference algorithm between their common prefix and suffix; when
// they are more than limit insertions and deletions apart, the one edit
// between prefix and suffix.
func edits(a, b []rune, limit int) (out []textEdit) {
	p, s := span(a, b)
	x0, y0 := a[p:len(a)-s], b[p:len(b)-s]
	n, m := len(x0), len(y0)
	if n+m == 0 {
		return nil
	}
	off := limit + 1
	v := make([]int, 2*limit+3)
	var trace [][]int
	found := false
	for d := 0; d <= limit && !found; d++ {
		trace = append(trace, slices.Clone(v))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && x0[x] == y0[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = true
				break
			}
		}
	}
	if !found {
		return []textEdit{{at: p, del: n, ins: y0}}
	}
	// Walk back from the end; each step deletes x0[x] or inserts y0[y] at x.
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		tv, k := trace[d], x-y
		pk := k - 1
		if k == -d || (k != d && tv[off+k-1] < tv[off+k+1]) {
			pk = k + 1
		}
		px := tv[off+pk]
		py := px - pk
		for x > px && y > py {
			x, y = x-1, y-1
		}
		last := len(out) - 1
		switch {
		case x == px && last >= 0 && out[last].at == px:
			out[last].ins = slices.Insert(out[last].ins, 0, y0[py])
		case x == px:
			out = append(out, textEdit{at: px, ins: []rune{y0[py]}})
		case last >= 0 && out[last].at == px+1:
			out[last].at, out[last].del = px, out[last].del+1
		default:
			out = append(out, textEdit{at: px, del: 1})
		}
		x, y = px, py
	}
	slices.Reverse(out)
	for i := range out {
		out[i].at += p
	}
	return out
}

// span returns the lengths of the longest common prefix of a and b and of
// their longest common suffix in what is left.
func span(a, b []rune) (prefix, suffix int) {
	for prefix < len(a) && prefix < len(b) && a[prefix] == b[prefix] {
		prefix++
	}
	for suffix < len(a)-prefix && suffix < len(b)-prefix && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
		suffix++
	}
	return prefix, suffix
}
