package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
)

// Undo and redo of the member's own edits (docs/PROTOCOL.md, "Undo").
// Each replica keeps an undoLog: the member's edit groups made through
// this client, newest last, and the groups undone, waiting for a redo. An
// undo is an ordinary local edit (or, for a why, a question:why request);
// the server sees nothing else.

// UndoGroup describes one edit group of the member's. Kind is "mark",
// "choice", "text" or "why". Cell is a mark's "option/criterion" key, a
// multiple choice's option id, and empty otherwise. From and To are the
// value before and after the group: a mark (empty for none); a single
// choice's option (empty for none); a multiple choice's option "chosen"
// or empty; a why; for text, From is what the typing burst deleted and To
// what it inserted.
type UndoGroup struct {
	Kind     string `json:"kind"`
	Question string `json:"question"`
	Cell     string `json:"cell"`
	From     string `json:"from"`
	To       string `json:"to"`
}

// UndoResult is what an Undo or Redo did. Done is false when the group was
// skipped: its value no longer held what the group left there, so it was
// left alone. By names who set the value as it now is, when the client
// knows (the member themselves when Done).
type UndoResult struct {
	Group UndoGroup `json:"group"`
	Done  bool      `json:"done"`
	By    string    `json:"by"`
}

// UndoState is what Undo and Redo would take next (nil for nothing), and
// Cleared what emptied both stacks last, until the next group is made:
// "save", "discard", "reopen", "rebase", "reset", or empty.
type UndoState struct {
	Undo    *UndoGroup `json:"undo"`
	Redo    *UndoGroup `json:"redo"`
	Cleared string     `json:"cleared"`
}

// ErrNothingToUndo is returned by Undo when the decision has no group to
// undo; ErrNothingToRedo by Redo when none waits to be redone.
var (
	ErrNothingToUndo = errors.New("replica: nothing to undo")
	ErrNothingToRedo = errors.New("replica: nothing to redo")
)

// Group kinds and the reasons the stacks were emptied.
const (
	groupMark   = "mark"
	groupChoice = "choice"
	groupText   = "text"
	groupWhy    = "why"

	clearSave    = "save"
	clearDiscard = "discard"
	clearReopen  = "reopen"
	clearRebase  = "rebase"
	clearReset   = "reset"
)

const (
	// maxUndo is how many groups each stack keeps; older ones are
	// forgotten.
	maxUndo = 100
	// burstPause ends a typing burst: an edit this long after the one
	// before starts a new group.
	burstPause = time.Second
)

// Undo reverts the member's newest edit group of the decision not yet
// undone (docs/PROTOCOL.md, "Undo"). A mark, choice or why goes back to
// the value before the group, provided it still holds the value the group
// set; otherwise the group is skipped (Done false, By naming who set the
// value now when known) and leaves the stack, and the next Undo takes the
// group below it. A typing burst is undone on the characters themselves:
// those it inserted are deleted, those it deleted inserted again where
// they were, and what others typed since stays. An undo of a mark, choice
// or text is applied to the replica before Undo returns, connected or
// not, and sent like any local edit; a why's waits for the server's reply
// (ctx bounds that wait). ErrNothingToUndo when there is no group.
func (c *Client) Undo(ctx context.Context, id string) (UndoResult, error) {
	return c.undoRedo(ctx, id, false)
}

// Redo re-applies the group most recently undone, by the same rules in the
// other direction. Any new edit group of the member's empties the redo
// stack. ErrNothingToRedo when there is no group.
func (c *Client) Redo(ctx context.Context, id string) (UndoResult, error) {
	return c.undoRedo(ctx, id, true)
}

// UndoState returns what Undo and Redo would take next for the decision,
// and why the stacks are empty when they were emptied.
func (c *Client) UndoState(id string) UndoState {
	c.mu.Lock()
	defer c.mu.Unlock()
	rep := c.reps[id]
	if rep == nil {
		return UndoState{}
	}
	c.undoObserve(id)
	return rep.undo.state(c.clock())
}

func (c *Client) undoRedo(ctx context.Context, id string, redo bool) (UndoResult, error) {
	c.mu.Lock()
	if c.closed || c.ctx.Err() != nil {
		c.mu.Unlock()
		return UndoResult{}, ErrClosed
	}
	if c.readOnly {
		c.mu.Unlock()
		return UndoResult{}, refusal(question.Forbidden, "%s may read but not edit", c.member)
	}
	rep := c.reps[id]
	if rep == nil {
		rec := c.records[id]
		c.mu.Unlock()
		if rec == nil {
			return UndoResult{}, refusal(question.NotFound, "no decision %q", id)
		}
		return UndoResult{}, ErrNoReplica
	}
	c.undoObserve(id)
	if top := rep.undo.top(redo); top != nil && top.group.Kind != groupWhy {
		if rec := c.records[id]; rec != nil && rec.Status != question.Open {
			c.mu.Unlock()
			return UndoResult{}, refusal(question.Resolved, "the decision is %s; reopen it to change the answer", rec.Status)
		}
	}
	res, changed, why, err := rep.undo.step(rep.doc, redo, c.member)
	var serr error
	if changed {
		serr = c.localChange(id, rep)
	} else {
		serr = c.save(id)
	}
	if err != nil || why == nil {
		c.mu.Unlock()
		if err != nil {
			return res, fmt.Errorf("replica: %s: %w", id, err)
		}
		return res, serr
	}
	// A why: the server decides, against the why the member saw.
	want, set := why.group.To, why.group.From
	if redo {
		want, set = set, want
	}
	epoch := rep.undo.epoch
	rec := c.records[id]
	if rec == nil || rec.Why != want {
		if rec != nil {
			res.By = rec.WhyBy
		}
		c.mu.Unlock()
		return res, nil
	}
	c.mu.Unlock()
	_, _, err = c.setWhy(ctx, id, set, want)
	c.mu.Lock()
	defer c.mu.Unlock()
	rep = c.reps[id]
	switch {
	case err == nil:
		res.Done, res.By = true, c.member
		rep.undo.settleWhy(why, redo, epoch, true)
	case errors.Is(err, question.ErrStale):
		if rec := c.records[id]; rec != nil {
			res.By = rec.WhyBy
		}
		err = nil
	default:
		rep.undo.settleWhy(why, redo, epoch, false) // not decided: it waits on its stack again
	}
	c.saveLogged(id)
	return res, err
}

// localChange accounts for a change made to a replica's document here: it
// is saved and pushed. An error from saving to Dir is returned, but the
// change stays applied and is still sent. The caller holds c.mu.
func (c *Client) localChange(id string, rep *replica) error {
	rep.seq++
	rep.held = nil
	err := c.save(id)
	c.notify()
	c.push(id)
	return err
}

// undoObserve lets a replica's undo log see its record's status and
// generation, and the document's: leaving open, or a new generation,
// empties the stacks. The caller holds c.mu.
func (c *Client) undoObserve(id string) {
	rep := c.reps[id]
	if rep == nil {
		return
	}
	var st question.Status
	var gen uint64
	if rec := c.records[id]; rec != nil {
		st, gen = rec.Status, rec.Generation
	}
	rep.undo.observe(st, max(gen, rep.doc.Generation()))
}

// undoWhy records a why the member set as a group. The caller holds c.mu.
func (c *Client) undoWhy(id string, from string, rec question.Record) {
	if rep := c.reps[id]; rep != nil && rec.Why != from {
		c.undoObserve(id)
		rep.undo.push(&undoEntry{group: UndoGroup{Kind: groupWhy, From: from, To: rec.Why}, gen: rec.Generation})
		c.saveLogged(id)
	}
}

// clock is the time bursts are measured by.
func (c *Client) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// undoLog is one decision's undo and redo stacks. It works on the
// replica's crdt.Doc alone, so the rules are tested without a connection.
// Guarded by Client.mu.
type undoLog struct {
	undo, redo []*undoEntry // newest last
	cleared    string
	// burst is the typing burst the top undo group is, while another
	// edit may still join it.
	burst *burst
	// status and generation the decision was last seen at ("" and 0 when
	// unknown).
	status question.Status
	gen    uint64
	// setters are the members who last set each mark and choice, as the
	// changes received named them (and this member's own edits).
	setters map[cellRef]setter
	// epoch counts the clears: a why decided after one is not put back.
	epoch uint64
	// dirty says the stacks changed since they were written to Dir;
	// topDirty that only the top undo group did (an open burst's).
	dirty, topDirty bool
}

// undoEntry is one group on a stack.
type undoEntry struct {
	group UndoGroup
	gen   uint64
	// text, for a text group, is the edit that reverts it on the undo
	// stack and that makes it again on the redo stack.
	text *undoText
}

type cellRef struct {
	gen           uint64
	q, kind, cell string
}

type setter struct{ by, value string }

// localEdit is one draft edit of the member's.
type localEdit struct {
	kind                 string // groupMark, groupChoice or groupText
	q, option, criterion string
	mark                 marks.Mark
	on                   bool
	pos, del             int
	ins                  string
	// whole says ins is the whole new text (SetText).
	whole bool
}

// edit applies e to d and records the group it makes. It reports whether
// d changed.
func (l *undoLog) edit(d *crdt.Doc, e localEdit, now time.Time, member string) (bool, error) {
	gen := d.Generation()
	l.noteGen(gen)
	if e.kind == groupText {
		return l.editText(d, e, now)
	}
	g := UndoGroup{Kind: e.kind, Question: e.q}
	heads := d.Heads()
	switch e.kind {
	case groupMark:
		was, err := d.MarkOf(e.q, e.option, e.criterion)
		if err != nil {
			return false, err
		}
		if err := d.SetMark(e.q, e.option, e.criterion, e.mark); err != nil {
			return false, err
		}
		g.Cell, g.From, g.To = marks.Key(e.option, e.criterion), string(was), string(e.mark)
	case groupChoice:
		chosen, multiple, err := d.Chosen(e.q)
		if err != nil {
			return false, err
		}
		if err := d.Choose(e.q, e.option, e.on); err != nil {
			return false, err
		}
		if multiple {
			g.Cell, g.From, g.To = e.option, chosenValue(slices.Contains(chosen, e.option)), chosenValue(e.on)
		} else {
			g.From = first(chosen)
			switch {
			case e.on:
				g.To = e.option
			case g.From == e.option:
				g.To = ""
			default:
				g.To = g.From
			}
		}
	default:
		return false, fmt.Errorf("unknown edit %q", e.kind)
	}
	if d.Heads().Equal(heads) {
		return false, nil
	}
	if g.From != g.To {
		l.noteSetter(cellRef{gen, g.Question, g.Kind, g.Cell}, member, g.To)
		l.push(&undoEntry{group: g, gen: gen})
	}
	return true, nil
}

func chosenValue(on bool) string {
	if on {
		return question.ChoiceChosen
	}
	return ""
}

// push makes e the newest group: the redo stack empties.
func (l *undoLog) push(e *undoEntry) {
	l.burst = nil
	l.undo = bounded(append(l.undo, e))
	l.redo = nil
	l.cleared = ""
	l.dirty = true
}

func bounded(s []*undoEntry) []*undoEntry {
	if n := len(s) - maxUndo; n > 0 {
		return slices.Delete(s, 0, n)
	}
	return s
}

// clear empties both stacks, saying why.
func (l *undoLog) clear(reason string) {
	l.undo, l.redo, l.burst = nil, nil, nil
	l.cleared = reason
	l.epoch++
	l.dirty = true
}

// observe notes the decision's status and generation: a new generation,
// or the record leaving open (a save or a discard), empties the stacks.
// An empty status is unknown.
func (l *undoLog) observe(st question.Status, gen uint64) {
	switch {
	case l.gen != 0 && gen > l.gen:
		l.clear(clearReopen)
	case l.status != "" && st == question.Discarded && l.status != question.Discarded:
		l.clear(clearDiscard)
	case l.status == question.Open && st == question.Settled:
		l.clear(clearSave)
	}
	if gen > l.gen {
		l.gen, l.setters, l.dirty = gen, nil, true
	}
	if st != "" && st != l.status {
		l.status, l.dirty = st, true
	}
}

// noteGen notes the generation an edit is made in.
func (l *undoLog) noteGen(gen uint64) { l.observe("", gen) }

func (l *undoLog) noteSetter(ref cellRef, by, value string) {
	if l.setters == nil {
		l.setters = map[cellRef]setter{}
	}
	l.setters[ref] = setter{by: by, value: value}
}

// noteCells notes who set the values the accepted edits of ms changed.
func (l *undoLog) noteCells(cells []question.CellProvenance) {
	for _, cell := range cells {
		if cell.Kind == question.CellMark || cell.Kind == question.CellChoice {
			l.noteSetter(cellRef{cell.Generation, cell.Question, string(cell.Kind), cell.Cell}, cell.By, cell.Value)
		}
	}
}

// setterOf names who set g's value to now, if the log knows.
func (l *undoLog) setterOf(e *undoEntry, now string) string {
	s, ok := l.setters[cellRef{e.gen, e.group.Question, e.group.Kind, e.group.Cell}]
	if ok && s.value == now {
		return s.by
	}
	return ""
}

// top returns the group Undo (or Redo) would take, nil if none.
func (l *undoLog) top(redo bool) *undoEntry {
	s := l.undo
	if redo {
		s = l.redo
	}
	if len(s) == 0 {
		return nil
	}
	return s[len(s)-1]
}

func (l *undoLog) state(now time.Time) UndoState {
	l.current("", now)
	st := UndoState{Cleared: l.cleared}
	if e := l.top(false); e != nil {
		g := e.group
		st.Undo = &g
	}
	if e := l.top(true); e != nil {
		g := e.group
		st.Redo = &g
	}
	return st
}

// step undoes (redo: redoes) the top group on d. A why group is only taken
// off its stack and returned: the caller asks the server, then calls
// settleWhy. changed reports whether d changed.
func (l *undoLog) step(d *crdt.Doc, redo bool, member string) (res UndoResult, changed bool, why *undoEntry, err error) {
	l.burst = nil
	from, to, none := &l.undo, &l.redo, ErrNothingToUndo
	if redo {
		from, to, none = to, from, ErrNothingToRedo
	}
	if len(*from) == 0 {
		return res, false, nil, none
	}
	e := (*from)[len(*from)-1]
	*from = (*from)[:len(*from)-1]
	l.dirty = true
	res.Group = e.group
	if e.group.Kind == groupWhy {
		return res, false, e, nil
	}
	if gen := d.Generation(); gen != e.gen {
		// The document moved on to another generation unnoticed.
		l.observe("", gen)
		l.clear(clearReopen)
		return UndoResult{}, false, nil, none
	}
	if e.group.Kind == groupText {
		changed, opposite, err := l.applyText(d, e)
		if err != nil {
			return res, changed, nil, err
		}
		e.text = opposite
		*to = bounded(append(*to, e))
		res.Done, res.By = true, member
		return res, changed, nil, nil
	}
	want, set := e.group.To, e.group.From
	if redo {
		want, set = set, want
	}
	now, err := valueOf(d, e.group)
	if err != nil {
		return res, false, nil, err
	}
	if now != want {
		res.By = l.setterOf(e, now)
		return res, false, nil, nil
	}
	heads := d.Heads()
	if err := setValue(d, e.group, now, set); err != nil {
		return res, false, nil, err
	}
	l.noteSetter(cellRef{e.gen, e.group.Question, e.group.Kind, e.group.Cell}, member, set)
	*to = bounded(append(*to, e))
	res.Done, res.By = true, member
	return res, !d.Heads().Equal(heads), nil, nil
}

// settleWhy files a why group once the server decided its undo (redo):
// done, it waits on the other stack; not decided, on its own again. A
// group of stacks emptied meanwhile is dropped.
func (l *undoLog) settleWhy(e *undoEntry, redo bool, epoch uint64, done bool) {
	if l.epoch != epoch {
		return
	}
	if done == redo {
		l.undo = bounded(append(l.undo, e))
	} else {
		l.redo = bounded(append(l.redo, e))
	}
	l.dirty = true
}

// valueOf reads a mark or choice group's value in d's current draft.
func valueOf(d *crdt.Doc, g UndoGroup) (string, error) {
	if g.Kind == groupMark {
		cell, err := marks.ParseKey(g.Cell)
		if err != nil {
			return "", err
		}
		m, err := d.MarkOf(g.Question, cell.Option, cell.Criterion)
		return string(m), err
	}
	chosen, _, err := d.Chosen(g.Question)
	if err != nil {
		return "", err
	}
	if g.Cell == "" {
		return first(chosen), nil
	}
	return chosenValue(slices.Contains(chosen, g.Cell)), nil
}

// setValue sets a mark or choice group's value from now to set.
func setValue(d *crdt.Doc, g UndoGroup, now, set string) error {
	switch {
	case g.Kind == groupMark:
		cell, err := marks.ParseKey(g.Cell)
		if err != nil {
			return err
		}
		return d.SetMark(g.Question, cell.Option, cell.Criterion, marks.Mark(set))
	case g.Cell != "":
		return d.Choose(g.Question, g.Cell, set == question.ChoiceChosen)
	case set == "":
		return d.Choose(g.Question, now, false)
	default:
		return d.Choose(g.Question, set, true)
	}
}

// With Options.Dir the stacks are kept with the decision's replica: whole
// in its snapshot, and in each line of its change log that follows a
// change to them (store.go), so they cost no write of their own, and a
// log cut short by a crash restores them as of its last whole line. While
// a typing burst goes on, a line carries its group alone.

// savedUndo is a replica's stacks as stored.
type savedUndo struct {
	Status  question.Status `json:"status,omitempty"`
	Gen     uint64          `json:"gen,omitempty"`
	Cleared string          `json:"cleared,omitempty"`
	Undo    []savedGroup    `json:"undo,omitempty"`
	Redo    []savedGroup    `json:"redo,omitempty"`
}

type savedGroup struct {
	UndoGroup
	Gen   uint64           `json:"gen"`
	At    []string         `json:"at,omitempty"`
	Del   [][2]int         `json:"del,omitempty"` // runs: position, length
	Ins   []savedInsertion `json:"ins,omitempty"`
	Orig  *savedChars      `json:"orig,omitempty"`
	Extra []savedChars     `json:"extra,omitempty"`
}

type savedInsertion struct {
	Gap   int         `json:"gap"`
	Text  string      `json:"text"`
	After rune        `json:"after,omitempty"`
	Copy  *savedChars `json:"copy,omitempty"`
}

type savedChars struct {
	At  []string `json:"at"`
	Pos [][2]int `json:"pos"`
}

func savedOf(e *undoEntry) savedGroup {
	g := savedGroup{UndoGroup: e.group, Gen: e.gen}
	if t := e.text; t != nil {
		g.At, g.Del = wireHeads(t.At), runs(t.Del)
		for _, in := range t.Ins {
			si := savedInsertion{Gap: in.Gap, Text: in.Text, After: in.After}
			if in.Copy != nil {
				si.Copy = &savedChars{At: wireHeads(in.Copy.At), Pos: runs(in.Copy.Pos)}
			}
			g.Ins = append(g.Ins, si)
		}
		if len(t.Orig.Pos) > 0 {
			g.Orig = &savedChars{At: wireHeads(t.Orig.At), Pos: runs(t.Orig.Pos)}
		}
		for _, x := range t.Extra {
			g.Extra = append(g.Extra, savedChars{At: wireHeads(x.At), Pos: runs(x.Pos)})
		}
	}
	return g
}

func (s savedChars) chars() (chars, error) {
	at, err := parseWireHeads(s.At)
	if err != nil {
		return chars{}, err
	}
	pos, err := positions(s.Pos)
	return chars{At: at, Pos: pos}, err
}

// saved returns the stacks as stored.
func (l *undoLog) saved() *savedUndo {
	s := &savedUndo{Status: l.status, Gen: l.gen, Cleared: l.cleared}
	for _, e := range l.undo {
		s.Undo = append(s.Undo, savedOf(e))
	}
	for _, e := range l.redo {
		s.Redo = append(s.Redo, savedOf(e))
	}
	return s
}

// changes returns what a log line carries of the stacks: all of them, or
// only the top undo group (an open burst's), or nothing when they did not
// change since last written.
func (l *undoLog) changes() (all *savedUndo, top *savedGroup) {
	switch {
	case l.dirty:
		return l.saved(), nil
	case l.topDirty && len(l.undo) > 0:
		g := savedOf(l.undo[len(l.undo)-1])
		return nil, &g
	}
	return nil, nil
}

// written notes that the stacks are stored as they are.
func (l *undoLog) written() { l.dirty, l.topDirty = false, false }

// replay applies a log line's stacks to s.
func replayUndo(s *savedUndo, all *savedUndo, top *savedGroup) *savedUndo {
	switch {
	case all != nil:
		return all
	case top != nil && s != nil && len(s.Undo) > 0:
		s.Undo[len(s.Undo)-1] = *top
	}
	return s
}

// restoreUndo makes s a replica's stacks. A group that does not read
// drops them all.
func (l *undoLog) restore(s *savedUndo) error {
	if s == nil {
		return nil
	}
	out := undoLog{status: s.Status, gen: s.Gen, cleared: s.Cleared}
	for _, st := range []struct {
		from []savedGroup
		to   *[]*undoEntry
	}{{s.Undo, &out.undo}, {s.Redo, &out.redo}} {
		for _, g := range st.from {
			e := &undoEntry{group: g.UndoGroup, gen: g.Gen}
			switch g.Kind {
			case groupText:
				at, err := parseWireHeads(g.At)
				if err != nil {
					return err
				}
				del, err := positions(g.Del)
				if err != nil {
					return err
				}
				e.text = &undoText{At: at, Del: del}
				for _, si := range g.Ins {
					in := insertion{Gap: si.Gap, Text: si.Text, After: si.After}
					if si.Copy != nil {
						c, err := si.Copy.chars()
						if err != nil {
							return err
						}
						in.Copy = &c
					}
					e.text.Ins = append(e.text.Ins, in)
				}
				if g.Orig != nil {
					if e.text.Orig, err = g.Orig.chars(); err != nil {
						return err
					}
				}
				for _, x := range g.Extra {
					c, err := x.chars()
					if err != nil {
						return err
					}
					e.text.Extra = append(e.text.Extra, c)
				}
			case groupMark, groupChoice, groupWhy:
			default:
				return fmt.Errorf("unknown group %q", g.Kind)
			}
			*st.to = append(*st.to, e)
		}
	}
	out.undo, out.redo = bounded(out.undo), bounded(out.redo)
	*l = out
	return nil
}
