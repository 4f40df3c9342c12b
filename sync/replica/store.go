package replica

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/question"
)

// savedReplica is one decision's file in Options.Dir.
type savedReplica struct {
	V        int              `json:"v"`
	ID       string           `json:"id"`
	Accepted []string         `json:"accepted,omitempty"`
	Doc      []byte           `json:"doc"`
	Record   *question.Record `json:"record,omitempty"`
}

const (
	persistFileVersion = 1
	filePrefix         = "d-"
	fileSuffix         = ".json"
	tempSuffix         = ".tmp"
)

// fileName is hex so that any decision id is a safe file name.
func fileName(id string) string { return filePrefix + hex.EncodeToString([]byte(id)) + fileSuffix }

// save writes a decision's replica, accepted heads and record to Dir:
// a temporary file, synced, renamed over the old one. The caller holds
// c.mu; nothing is written once the client is closed.
func (c *Client) save(id string) error {
	if c.opts.Dir == "" || c.closed {
		return nil
	}
	rep := c.reps[id]
	if rep == nil {
		return nil
	}
	snap, err := rep.doc.Snapshot()
	if err != nil {
		return fmt.Errorf("replica: save %s: %w", id, err)
	}
	sr := savedReplica{V: persistFileVersion, ID: id, Accepted: wireHeads(rep.accepted), Doc: snap}
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
	return nil
}

// saveLogged saves after an applied frame, where the only thing to do
// with a failure is to report it.
func (c *Client) saveLogged(id string) {
	if err := c.save(id); err != nil {
		c.log.Error("cannot save the replica", "id", id, "err", err)
	}
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
	accepted, err := parseWireHeads(sr.Accepted)
	if err != nil || !doc.Has(accepted) {
		accepted = nil // unknown: the server sends the whole document
	}
	c.reps[sr.ID] = &replica{doc: doc, accepted: accepted}
	if sr.Record != nil && sr.Record.ID == sr.ID {
		c.adoptRecord(*sr.Record)
	}
	return nil
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
