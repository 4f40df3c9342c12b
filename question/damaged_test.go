package question_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
)

// damageFixture is an authority over a real bbolt file, reopened at will.
type damageFixture struct {
	t     *testing.T
	path  string
	store *boltstore.Store
	a     *question.Authority
	log   bytes.Buffer
	now   time.Time
	n     int
}

func newDamageFixture(t *testing.T) *damageFixture {
	f := &damageFixture{t: t, path: filepath.Join(t.TempDir(), "accord.db"), now: time.Date(2026, 10, 19, 9, 0, 0, 0, time.UTC)}
	f.reopen()
	t.Cleanup(func() { f.store.Close() })
	return f
}

// reopen closes the store (if open) and opens the file and the authority
// afresh, as a restarted host would.
func (f *damageFixture) reopen() {
	f.t.Helper()
	if f.store != nil {
		f.store.Close()
	}
	s, err := boltstore.Open(f.path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.store = s
	f.log.Reset()
	a, err := question.NewAuthority(ctx, question.Options{
		Store: s, Doc: "plan-1",
		Now:    func() time.Time { f.now = f.now.Add(time.Second); return f.now },
		NewID:  func() string { f.n++; return fmt.Sprintf("id%d", f.n) },
		Logger: slog.New(slog.NewTextHandler(&f.log, nil)),
	})
	if err != nil {
		f.t.Fatalf("NewAuthority: %v", err)
	}
	f.a = a
}

func (f *damageFixture) create(key string, def question.Definition) question.Record {
	f.t.Helper()
	out, err := f.a.Create(ctx, ana, []question.CreateRequest{{Key: key, Origin: question.FromPlanner, Definition: def}})
	if err != nil {
		f.t.Fatal(err)
	}
	return out[0].Record
}

// choose edits a choice decision through a replica and saves it.
func (f *damageFixture) chooseAndSave(id, option string) question.Record {
	f.t.Helper()
	saved, err := f.a.Save(id)
	must(f.t, err)
	r, err := crdt.Load(saved, nil, crdt.Options{})
	must(f.t, err)
	h := r.Heads()
	must(f.t, r.Choose("q1", option, true))
	ch, err := r.ChangesSince(h)
	must(f.t, err)
	_, err = f.a.Edit(ctx, ana, id, ch)
	must(f.t, err)
	out, err := f.a.Submit(ctx, ana, []question.SubmitRequest{{ID: id, Heads: r.Heads()}})
	must(f.t, err)
	must(f.t, out[0].Err)
	return out[0].Record
}

// damageFile opens the bbolt file directly, as a disk or a bad copy would
// leave it, and applies damage to the document's buckets.
func (f *damageFixture) damageFile(damage func(doc *bolt.Bucket) error) {
	f.t.Helper()
	f.store.Close()
	f.store = nil
	db, err := bolt.Open(f.path, 0o600, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return damage(tx.Bucket([]byte("docs")).Bucket([]byte("plan-1")))
	}); err != nil {
		f.t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		f.t.Fatal(err)
	}
}

// storedBytes reads every value of the document straight from the file.
func storedBytes(t *testing.T, path string) map[string]string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]string{}
	var walk func(prefix string, b *bolt.Bucket)
	walk = func(prefix string, b *bolt.Bucket) {
		_ = b.ForEach(func(k, v []byte) error {
			if v == nil {
				walk(prefix+string(k)+"/", b.Bucket(k))
			} else {
				out[prefix+string(k)] = string(v)
			}
			return nil
		})
	}
	_ = db.View(func(tx *bolt.Tx) error {
		walk("", tx.Bucket([]byte("docs")).Bucket([]byte("plan-1")))
		return nil
	})
	return out
}

// TestDamagedDecisionLeavesOthersWorking writes corrupted values for five
// decisions into a real bbolt file (a record that is not JSON, a record
// naming another id, a draft that is not automerge, a missing draft, an
// answer row that is not JSON), then restarts: the document opens, the
// five are reported and refused as unavailable, the others work, and the
// damaged bytes are never written over.
func TestDamagedDecisionLeavesOthersWorking(t *testing.T) {
	f := newDamageFixture(t)
	good := f.create("good", choiceDef())
	written := f.create("written", writtenDef())
	badJSON := f.create("bad-json", choiceDef())
	wrongID := f.create("wrong-id", choiceDef())
	badDraft := f.create("bad-draft", choiceDef())
	noDraft := f.create("no-draft", choiceDef())
	badRow := f.create("bad-row", choiceDef())
	f.chooseAndSave(badRow.ID, "email")

	f.damageFile(func(doc *bolt.Bucket) error {
		records, drafts, answers := doc.Bucket([]byte("records")), doc.Bucket([]byte("drafts")), doc.Bucket([]byte("answers"))
		if err := records.Put([]byte(badJSON.ID), []byte(`{"id": "`+badJSON.ID+`", "key": `)); err != nil {
			return err
		}
		var rec map[string]any
		if err := json.Unmarshal(records.Get([]byte(wrongID.ID)), &rec); err != nil {
			return err
		}
		rec["id"] = "someone-else"
		raw, _ := json.Marshal(rec)
		if err := records.Put([]byte(wrongID.ID), raw); err != nil {
			return err
		}
		if err := drafts.Bucket([]byte(badDraft.ID)).Put([]byte("snapshot"), []byte("\x85\x6f\x4a\x83 not an automerge document")); err != nil {
			return err
		}
		if err := drafts.DeleteBucket([]byte(noDraft.ID)); err != nil {
			return err
		}
		return answers.Put([]byte(badRow.ID), []byte("{truncated"))
	})
	before := storedBytes(t, f.path)
	f.reopen() // must not fail

	damagedIDs := map[string]string{badJSON.ID: "records", wrongID.ID: "records", badDraft.ID: "drafts", noDraft.ID: "drafts", badRow.ID: "answers"}
	dam := f.a.Damaged()
	if len(dam) != len(damagedIDs) {
		t.Fatalf("Damaged() = %v, want the %d damaged decisions", dam, len(damagedIDs))
	}
	for id, bucket := range damagedIDs {
		err := dam[id]
		var de *question.DamagedError
		var ce *persist.CorruptError
		if !errors.As(err, &de) || de.Doc != "plan-1" || de.Decision != id {
			t.Errorf("Damaged()[%s] = %v, want a *DamagedError naming plan-1 and %s", id, err, id)
			continue
		}
		if !errors.Is(err, persist.ErrCorrupt) || !errors.As(err, &ce) || ce.Key != id || ce.Bucket != "docs/plan-1/"+bucket {
			t.Errorf("Damaged()[%s] = %v, want a CorruptError at docs/plan-1/%s key %s", id, err, bucket, id)
		}
		if log := f.log.String(); !strings.Contains(log, "doc=plan-1 decision="+id) {
			t.Errorf("no log line names plan-1 and %s:\n%s", id, log)
		}
	}

	// The others are there and work.
	var ids []string
	for _, r := range f.a.Records() {
		ids = append(ids, r.ID)
	}
	if want := []string{good.ID, written.ID}; strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("Records() = %v, want %v", ids, want)
	}
	settled := f.chooseAndSave(good.ID, "sms")
	if settled.Status != question.Settled {
		t.Fatalf("save of a healthy decision: %+v", settled)
	}
	if _, err := f.a.Create(ctx, ana, []question.CreateRequest{{Key: "new", Definition: choiceDef()}}); err != nil {
		t.Fatalf("Create beside damaged decisions: %v", err)
	}

	// Every way of reaching a damaged one is refused as unavailable.
	for id := range damagedIDs {
		if _, ok := f.a.Record(id); ok {
			t.Errorf("Record(%s) found a damaged decision", id)
		}
		_, _, err := f.a.Draft(id)
		mustReason(t, err, question.Unavailable)
		_, err = f.a.Save(id)
		mustReason(t, err, question.Unavailable)
		_, err = f.a.ChangesSince(id, nil)
		mustReason(t, err, question.Unavailable)
		_, err = f.a.NewSession(id)
		mustReason(t, err, question.Unavailable)
		_, err = f.a.Edit(ctx, ana, id, nil)
		mustReason(t, err, question.Unavailable)
		out, err := f.a.Submit(ctx, ana, []question.SubmitRequest{{ID: id}})
		must(t, err)
		mustReason(t, out[0].Err, question.Unavailable)
		_, err = f.a.Discard(ctx, ana, id)
		mustReason(t, err, question.Unavailable)
		_, err = f.a.Reopen(ctx, ana, id, 0)
		mustReason(t, err, question.Unavailable)
		_, err = f.a.AppendOption(ctx, ana, question.AppendRequest{ID: id, Question: "q1", Key: "k", Label: "Carrier pigeon"})
		mustReason(t, err, question.Unavailable)
		_, err = f.a.SetWhy(ctx, ana, id, question.WhyRequest{Text: "It is cheap."})
		mustReason(t, err, question.Unavailable)
		_, err = f.a.Await(id)
		mustReason(t, err, question.Unavailable)
	}
	// A readable record's stable key is still taken.
	_, err := f.a.Create(ctx, ana, []question.CreateRequest{{Key: "bad-draft", Definition: choiceDef()}})
	mustReason(t, err, question.Unavailable)

	// Nothing above wrote over the damaged bytes, and a restart finds the
	// same: the healthy save kept, the damaged still reported.
	f.store.Close() // storedBytes needs the file's lock
	after := storedBytes(t, f.path)
	for k, v := range before {
		for id := range damagedIDs {
			if strings.Contains(k, id) && after[k] != v {
				t.Errorf("%s was written over", k)
			}
		}
	}
	f.reopen()
	if rec, ok := f.a.Record(good.ID); !ok || rec.Status != question.Settled {
		t.Fatalf("after restart the healthy save is gone: %+v", rec)
	}
	if len(f.a.Damaged()) != len(damagedIDs) {
		t.Fatalf("after restart Damaged() = %v", f.a.Damaged())
	}
}
