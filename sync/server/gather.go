package server

import "time"

// Gathering a group while several connections edit together.
//
// A document commits a group as soon as the one before it is durable.
// With one editor that is the fastest reply, and groups stay small at no
// cost. With several editors each small group costs every replica a frame
// to apply, and the server a commit and a frame per connection; a
// replica's apply costs mostly per call, so fewer, larger groups are much
// cheaper for all of them. So while two or more connections have edited
// recently, a group of draft edits waits up to Options.GroupWait, from
// its first edit, for the others to join it: it ends early once every
// recent editor has an edit in it, or when it reaches MaxGroup. Anything
// else in the group (a save, a join, a host's Do, a rebase) ends the wait
// at once. Only the replies and the broadcast wait: the edits are decided
// (and refused or accepted) as they arrive, in order.
//
// A group waits only while another edit is expected within the wait: the
// document's accepted edits have lately come less than GroupWait apart.
// People editing at human rates, a few edits a second across the
// document, are never kept waiting for an edit that would not come in
// time; a burst of many editors is gathered.

// recentEditor is how long after its last edit a connection still counts
// as one of the document's editors.
const recentEditor = time.Second

// gathering is what the document knows of the group it is forming.
type gathering struct {
	start   time.Time      // when its first op was decided; zero: no group
	editors map[*conn]bool // connections with an accepted edit in it
	other   bool           // it holds something besides accepted draft edits
	timer   *time.Timer    // armed while the group waits
	// lastEdit is when the document's last draft edit was accepted, and
	// gap the moving average of the time between its accepted edits
	// (zero: fewer than two seen). Both outlive the group.
	lastEdit time.Time
	gap      time.Duration
	waiting  bool // the forming group has waited (counted in Stats.GatherWaits)
}

// gapWeight is the weight of the newest interval in gathering.gap: an
// average over the last few edits, so one quick pair in a slow stream
// does not start a wait, and a burst is seen within a few edits.
const gapWeight = 2

// noteArrival records an accepted draft edit's time in the document's
// edit rate.
func (g *gathering) noteArrival(now time.Time) {
	if !g.lastEdit.IsZero() {
		s := max(now.Sub(g.lastEdit), time.Nanosecond)
		if g.gap == 0 {
			g.gap = s
		} else {
			g.gap += (s - g.gap) / gapWeight
		}
	}
	g.lastEdit = now
}

// expectsEdit reports whether another draft edit is expected within
// groupWait: the document's edits have lately come closer together.
func (g *gathering) expectsEdit(groupWait time.Duration) bool {
	return g.gap > 0 && g.gap < groupWait
}

// noteOp records an op decided into the forming group.
func (g *gathering) noteOp(now time.Time) {
	if g.start.IsZero() {
		g.start = now
	}
}

// noteEdit records c's accepted draft edit in the forming group.
func (d *document) noteEdit(c *conn, now time.Time) {
	d.gather.editors[c] = true
	d.gather.noteArrival(now)
	d.recent[c] = now
}

// wait reports how much longer the forming group waits for more edits;
// zero or less: commit it now.
func (d *document) wait(now time.Time) time.Duration {
	g := &d.gather
	if d.s.opts.GroupWait <= 0 || g.other || g.start.IsZero() || d.pendingOps() >= d.s.opts.MaxGroup {
		return 0
	}
	editors := 0
	for c, t := range d.recent {
		if now.Sub(t) > recentEditor || c.closed() {
			delete(d.recent, c)
			continue
		}
		editors++
	}
	if editors < 2 || len(g.editors) >= editors || !g.expectsEdit(d.s.opts.GroupWait) {
		return 0
	}
	return g.start.Add(d.s.opts.GroupWait).Sub(now)
}

// commitGathered starts the next commit unless the forming group is
// still gathering, in which case the gather timer fires for it later.
func (d *document) commitGathered() {
	if d.committing != nil || len(d.pending) == 0 {
		return
	}
	if w := d.wait(time.Now()); w > 0 {
		if !d.gather.waiting {
			d.gather.waiting = true
			d.s.stats.gatherWaits.Add(1)
		}
		if d.gather.timer == nil {
			d.gather.timer = time.NewTimer(w)
		} else {
			d.gather.timer.Reset(w)
		}
		return
	}
	d.commitNext()
}

// gatherFired is the gather timer's channel (nil before the first
// gather; a stopped timer's channel never fires).
func (d *document) gatherFired() <-chan time.Time {
	if d.gather.timer == nil {
		return nil
	}
	return d.gather.timer.C
}

// endGather forgets the forming group: it starts committing, or was
// answered at once.
func (d *document) endGather() {
	if d.gather.timer != nil {
		d.gather.timer.Stop()
	}
	clear(d.gather.editors)
	d.gather.start, d.gather.other, d.gather.waiting = time.Time{}, false, false
}

// pendingOps counts the ops of the groups waiting for a commit.
func (d *document) pendingOps() int {
	ops := 0
	for _, st := range d.pending {
		ops += st.ops
	}
	return ops
}
