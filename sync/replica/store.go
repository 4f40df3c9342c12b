package replica

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/question"
)

// Each decision's replica is kept in Dir as a snapshot file and a change
// log after it. The snapshot (d-<hex id>.json) holds the whole document,
// the accepted heads and the record; the log (d-<hex id>.<generation>.log)
// holds one JSON line per save since: the changes made or applied since
// the line before, the accepted heads, and the record when it changed.
// So a save costs what changed, not the document's history: applying a
// frame appends its changes. The next save writes a new snapshot naming
// the next generation (and removes the old log) once the log holds at
// least minLogBytes and its lines have taken as long to write as the last
// snapshot did, or once it holds maxLogBytes. A snapshot's cost grows
// with the history, so it is spread over as many appends as it costs:
// a save costs at most about two appends on average, whatever the
// history's length.

// savedReplica is one decision's snapshot file in Options.Dir.
type savedReplica struct {
	V        int              `json:"v"`
	ID       string           `json:"id"`
	Accepted []string         `json:"accepted,omitempty"`
	Doc      []byte           `json:"doc"`
	Record   *question.Record `json:"record,omitempty"`
	// Log is the generation of the change log that follows the snapshot;
	// 0 (files written before logs) means none.
	Log uint64 `json:"log,omitempty"`
	// Undo is the member's undo and redo stacks (undo.go).
	Undo *savedUndo `json:"undo,omitempty"`
}

// logEntry is one line of a change log.
type logEntry struct {
	Changes  []byte           `json:"c,omitempty"`
	Accepted []string         `json:"a"`
	Record   *question.Record `json:"r,omitempty"`
	// Undo is the undo and redo stacks when they changed, or UndoTop
	// their top undo group when only that did.
	Undo    *savedUndo  `json:"u,omitempty"`
	UndoTop *savedGroup `json:"ut,omitempty"`
}

// fileState is what the files in Dir hold of one replica. Guarded by
// Client.mu.
type fileState struct {
	// saved are the document heads the files hold; nil makes the next
	// save write a snapshot.
	saved    crdt.Heads
	accepted []string // the accepted heads the files hold
	recDirty bool     // the record changed since it was written
	gen      uint64   // the log generation after the snapshot
	logSize  int
	// snapCost is how long the last snapshot took to write, logCost how
	// long the lines after it have taken.
	snapCost, logCost time.Duration
	// batch holds the changes of a frame just applied on top of saved:
	// the next line's changes, without asking the document for them.
	batch []byte
}

const (
	persistFileVersion = 1
	filePrefix         = "d-"
	fileSuffix         = ".json"
	logSuffix          = ".log"
	tempSuffix         = ".tmp"
	// minLogBytes is the least a log grows to before a new snapshot, and
	// maxLogBytes the most.
	minLogBytes = 64 << 10
	maxLogBytes = 16 << 20
)

// fileName is hex so that any decision id is a safe file name.
func fileName(id string) string { return filePrefix + hex.EncodeToString([]byte(id)) + fileSuffix }

func logName(id string, gen uint64) string {
	return filePrefix + hex.EncodeToString([]byte(id)) + "." + strconv.FormatUint(gen, 10) + logSuffix
}

// save records a decision's replica, accepted heads and record in Dir:
// a line appended to its log, or a new snapshot when there is none yet or
// the log has grown as large as the snapshot. The caller holds c.mu;
// nothing is written once the client is closed.
func (c *Client) save(id string) error {
	if c.opts.Dir == "" || c.closed {
		return nil
	}
	rep := c.reps[id]
	if rep == nil {
		return nil
	}
	f := &rep.file
	batch := f.batch
	f.batch = nil
	if f.saved == nil || f.logSize >= maxLogBytes || f.logSize >= minLogBytes && f.logCost >= f.snapCost {
		return c.snapshot(id, rep)
	}
	start := time.Now()
	heads := rep.doc.Heads()
	accepted := wireHeads(rep.accepted)
	undo, top := rep.undo.changes()
	if heads.Equal(f.saved) && slices.Equal(accepted, f.accepted) && !f.recDirty && undo == nil && top == nil {
		return nil
	}
	e := logEntry{Accepted: accepted, Undo: undo, UndoTop: top}
	if !heads.Equal(f.saved) {
		e.Changes = batch
		if e.Changes == nil {
			ch, err := rep.doc.ChangesSince(f.saved)
			if err != nil {
				return c.snapshot(id, rep)
			}
			e.Changes = ch
		}
	}
	if f.recDirty {
		e.Record = c.records[id]
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("replica: save %s: %w", id, err)
	}
	b = append(b, '\n')
	if err := appendSynced(filepath.Join(c.opts.Dir, logName(id, f.gen)), b); err != nil {
		// The log may end in a torn line now; a snapshot starts afresh.
		f.saved = nil
		if serr := c.snapshot(id, rep); serr != nil {
			return fmt.Errorf("replica: save %s: %w", id, errors.Join(err, serr))
		}
		return nil
	}
	f.saved, f.accepted, f.recDirty = heads, accepted, false
	rep.undo.written()
	f.logSize += len(b)
	f.logCost += time.Since(start)
	return nil
}

// snapshot writes the whole replica as a new snapshot naming the next log
// generation, then removes the old log. The caller holds c.mu.
func (c *Client) snapshot(id string, rep *replica) error {
	f := &rep.file
	start := time.Now()
	snap, err := rep.doc.Snapshot()
	if err != nil {
		return fmt.Errorf("replica: save %s: %w", id, err)
	}
	heads := rep.doc.Heads()
	sr := savedReplica{V: persistFileVersion, ID: id, Accepted: wireHeads(rep.accepted), Doc: snap, Log: f.gen + 1, Undo: rep.undo.saved()}
	if rec := c.records[id]; rec != nil {
		sr.Record = rec
	}
	b, err := json.Marshal(sr)
	if err != nil {
		return fmt.Errorf("replica: save %s: %w", id, err)
	}
	if err := writeAtomic(c.opts.Dir, fileName(id), b); err != nil {
		return fmt.Errorf("replica: save %s: %w", id, err)
	}
	if f.gen > 0 {
		os.Remove(filepath.Join(c.opts.Dir, logName(id, f.gen))) // its lines are in the snapshot
	}
	f.saved, f.accepted, f.recDirty = heads, sr.Accepted, false
	rep.undo.written()
	f.gen, f.logSize = sr.Log, 0
	f.snapCost, f.logCost = time.Since(start), 0
	return nil
}

// saveLogged saves after an applied frame, where the only thing to do
// with a failure is to report it.
func (c *Client) saveLogged(id string) {
	if err := c.save(id); err != nil {
		c.log.Error("cannot save the replica", "id", id, "err", err)
	}
}

// appendSynced appends b to the file at path and syncs it.
func appendSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeAtomic(dir, name string, b []byte) error {
	f, err := os.CreateTemp(dir, "."+name+"-*"+tempSuffix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // make the rename durable where the platform allows
		d.Close()
	}
	return nil
}

// restore loads every saved replica from Dir, before any goroutine runs.
// A file that cannot be read is logged and left alone.
func (c *Client) restore() error {
	if c.opts.Dir == "" {
		return nil
	}
	if err := os.MkdirAll(c.opts.Dir, 0o700); err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	entries, err := os.ReadDir(c.opts.Dir)
	if err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "."+filePrefix) && strings.HasSuffix(name, tempSuffix) {
			os.Remove(filepath.Join(c.opts.Dir, name)) // left by a crash before its rename
			continue
		}
		if e.IsDir() || !strings.HasPrefix(name, filePrefix) || !strings.HasSuffix(name, fileSuffix) {
			continue
		}
		if err := c.restoreFile(filepath.Join(c.opts.Dir, name)); err != nil {
			c.log.Error("cannot restore a saved replica", "file", name, "err", err)
		}
	}
	return nil
}

func (c *Client) restoreFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var sr savedReplica
	if err := json.Unmarshal(b, &sr); err != nil {
		return err
	}
	if sr.V != persistFileVersion {
		return fmt.Errorf("file version %d, want %d", sr.V, persistFileVersion)
	}
	if sr.ID == "" || filepath.Base(path) != fileName(sr.ID) {
		return errors.New("the file does not match its decision id")
	}
	doc, err := crdt.Load(sr.Doc, nil, crdt.Options{})
	if err != nil {
		return err
	}
	rep := &replica{doc: doc}
	rep.file.gen = sr.Log
	accepted, rec, undo := sr.Accepted, sr.Record, sr.Undo
	clean := true
	if sr.Log > 0 {
		clean = c.replayLog(sr.ID, rep, &accepted, &rec, &undo)
	}
	c.removeStaleLogs(sr.ID, sr.Log)
	if h, err := parseWireHeads(accepted); err == nil && doc.Has(h) {
		rep.accepted = h
	} // else unknown: the server sends the whole document
	if clean {
		rep.file.saved, rep.file.accepted = doc.Heads(), wireHeads(rep.accepted)
	}
	c.reps[sr.ID] = rep
	if rec != nil && rec.ID == sr.ID {
		c.adoptRecord(*rec)
	}
	if err := rep.undo.restore(undo); err != nil {
		c.log.Warn("the saved undo stacks do not read; they are dropped", "id", sr.ID, "err", err)
	}
	return nil
}

// replayLog applies a replica's log after its snapshot, line by line. It
// stops at a line that is torn (a crash in the middle of an append) or
// does not apply, and then reports false: the next save writes a new
// snapshot rather than appending after the damage.
func (c *Client) replayLog(id string, rep *replica, accepted *[]string, rec **question.Record, undo **savedUndo) bool {
	name := logName(id, rep.file.gen)
	b, err := os.ReadFile(filepath.Join(c.opts.Dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return true // the snapshot was written and nothing since
	}
	if err != nil {
		c.log.Error("cannot read a replica's log", "file", name, "err", err)
		return false
	}
	rep.file.logSize = len(b)
	for len(b) > 0 {
		line, rest, ok := bytes.Cut(b, []byte("\n"))
		var e logEntry
		if !ok || json.Unmarshal(line, &e) != nil {
			c.log.Warn("a replica's log ends in a torn line; it is ignored", "file", name)
			return false
		}
		if _, err := rep.doc.ApplyChanges(e.Changes); err != nil {
			c.log.Error("a replica's log holds changes that do not apply; the rest is ignored", "file", name, "err", err)
			return false
		}
		*accepted = e.Accepted
		if e.Record != nil {
			*rec = e.Record
		}
		*undo = replayUndo(*undo, e.Undo, e.UndoTop)
		b = rest
	}
	return true
}

// removeStaleLogs removes a decision's logs of other generations than
// gen: left by a crash between a snapshot and the old log's removal.
func (c *Client) removeStaleLogs(id string, gen uint64) {
	prefix := filePrefix + hex.EncodeToString([]byte(id)) + "."
	entries, err := os.ReadDir(c.opts.Dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, prefix) && strings.HasSuffix(name, logSuffix) && name != logName(id, gen) {
			os.Remove(filepath.Join(c.opts.Dir, name))
		}
	}
}

func wireHeads(h crdt.Heads) []string {
	if len(h) == 0 {
		return nil
	}
	out := make([]string, len(h))
	for i := range h {
		out[i] = h[i].String()
	}
	return out
}

func parseWireHeads(hs []string) (crdt.Heads, error) {
	return crdt.ParseHeads(strings.Join(hs, ","))
}
