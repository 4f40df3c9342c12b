package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/accord-crdt/accord/persist"
)

// The layout:
//
//	docs/                      bucket
//	  <document id>/           bucket, one per document
//	    records/               <decision id> -> encoded record
//	    drafts/
//	      <decision id>/       bucket, one per decision
//	        snapshot           -> CRDT snapshot (absent until the first)
//	        <uint64 BE>        -> chunk, keyed by sequence number
//	    projections/           <decision id> -> card projection
//	    answers/               <decision id> -> decision_answers row
//	    audit/                 (only once a row is written)
//	      <decision id>/       bucket, one per decision
//	        <uint64 BE>        -> audit row, keyed by sequence number
//
// Chunk keys are big-endian sequence numbers from the decision bucket's
// NextSequence, so they iterate in commit order. A snapshot deletes the
// decision bucket and creates it afresh, which drops every chunk at once.
// Audit rows are keyed the same way in a bucket of their own, which
// nothing but DeleteDocument ever removes; LoadDocument does not read it.
var (
	bucketDocs        = []byte("docs")
	bucketRecords     = []byte("records")
	bucketDrafts      = []byte("drafts")
	bucketProjections = []byte("projections")
	bucketAnswers     = []byte("answers")
	bucketAudit       = []byte("audit")
	keySnapshot       = []byte("snapshot")

	docSubBuckets = [][]byte{bucketRecords, bucketDrafts, bucketProjections, bucketAnswers}
)

// path joins bucket names as CorruptError reports them.
func path(parent string, name []byte) string {
	if parent == "" {
		return string(name)
	}
	return parent + "/" + string(name)
}

func corrupt(bucket string, key []byte, err error) *persist.CorruptError {
	return &persist.CorruptError{Bucket: bucket, Key: string(key), Err: err}
}

// has reports whether b holds key, as a value or a bucket.
func has(b *bolt.Bucket, key []byte) bool {
	k, _ := b.Cursor().Seek(key)
	return k != nil && bytes.Equal(k, key)
}

// child returns the sub-bucket of parent (at parentPath) named name, nil if
// there is none, or a CorruptError if name holds a value.
func child(parent *bolt.Bucket, parentPath string, name []byte) (*bolt.Bucket, error) {
	if b := parent.Bucket(name); b != nil {
		return b, nil
	}
	if has(parent, name) {
		return nil, corrupt(parentPath, name, ErrNotBucket)
	}
	return nil, nil
}

// isBucket reports whether the entry a cursor returned with a nil value is
// a bucket. bbolt returns a nil value for buckets; an empty value may also
// come back nil within a write transaction.
func isBucket(b *bolt.Bucket, k, v []byte) bool {
	return v == nil && b.Bucket(k) != nil
}

// clone copies a value out of bbolt's memory map. The copy is never nil.
func clone(v []byte) []byte {
	return append(make([]byte, 0, len(v)), v...)
}

func emptyDocument() *persist.StoredDocument {
	return &persist.StoredDocument{
		Records:     make(map[string][]byte),
		Drafts:      make(map[string]persist.StoredDraft),
		Projections: make(map[string][]byte),
		Answers:     make(map[string][]byte),
	}
}

// loadDocument reads doc within tx. It never panics: a structure that does
// not match the layout gives a *persist.CorruptError.
func loadDocument(tx *bolt.Tx, doc string) (out *persist.StoredDocument, err error) {
	docPath := path(string(bucketDocs), []byte(doc))
	defer recoverCorrupt(docPath, &err)

	out = emptyDocument()
	docs := tx.Bucket(bucketDocs)
	if docs == nil || doc == "" {
		return out, nil
	}
	d, err := child(docs, string(bucketDocs), []byte(doc))
	if d == nil || err != nil {
		return out, err
	}
	for _, v := range []struct {
		name []byte
		dst  map[string][]byte
	}{
		{bucketRecords, out.Records},
		{bucketProjections, out.Projections},
		{bucketAnswers, out.Answers},
	} {
		if err := loadValues(d, docPath, v.name, v.dst); err != nil {
			return nil, err
		}
	}
	if err := loadDrafts(d, docPath, out.Drafts); err != nil {
		return nil, err
	}
	return out, nil
}

func loadValues(d *bolt.Bucket, docPath string, name []byte, dst map[string][]byte) error {
	b, err := child(d, docPath, name)
	if b == nil || err != nil {
		return err
	}
	bp := path(docPath, name)
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if isBucket(b, k, v) {
			return corrupt(bp, k, ErrNotValue)
		}
		dst[string(k)] = clone(v)
	}
	return nil
}

func loadDrafts(d *bolt.Bucket, docPath string, dst map[string]persist.StoredDraft) error {
	drafts, err := child(d, docPath, bucketDrafts)
	if drafts == nil || err != nil {
		return err
	}
	draftsPath := path(docPath, bucketDrafts)
	c := drafts.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if !isBucket(drafts, k, v) {
			return corrupt(draftsPath, k, ErrNotBucket)
		}
		sd, err := loadDraft(drafts.Bucket(k), path(draftsPath, k))
		if err != nil {
			return err
		}
		dst[string(k)] = sd
	}
	return nil
}

func loadDraft(b *bolt.Bucket, bp string) (persist.StoredDraft, error) {
	var sd persist.StoredDraft
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if isBucket(b, k, v) {
			return sd, corrupt(bp, k, ErrNotValue)
		}
		switch {
		case bytes.Equal(k, keySnapshot):
			sd.Snapshot = clone(v)
		case len(k) == 8:
			sd.Chunks = append(sd.Chunks, clone(v))
		default:
			return sd, corrupt(bp, k, ErrChunkKey)
		}
	}
	return sd, nil
}

// loadDocuments lists the document ids in tx, sorted (bbolt keeps keys in
// byte order, which is Go's string order).
func loadDocuments(tx *bolt.Tx) (ids []string, err error) {
	defer recoverCorrupt(string(bucketDocs), &err)
	docs := tx.Bucket(bucketDocs)
	if docs == nil {
		return []string{}, nil
	}
	ids = []string{}
	c := docs.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if !isBucket(docs, k, v) {
			return nil, corrupt(string(bucketDocs), k, ErrNotBucket)
		}
		ids = append(ids, string(k))
	}
	return ids, nil
}

// recoverCorrupt turns a panic inside bbolt (which it raises on some damaged
// pages) into a CorruptError for the bucket being read.
func recoverCorrupt(bucket string, err *error) {
	if p := recover(); p != nil {
		*err = &persist.CorruptError{Bucket: bucket, Err: fmt.Errorf("boltstore: bbolt panicked: %v", p)}
	}
}

// apply applies w to doc within tx. It computes everything from w and what
// tx holds and touches no other state, so running it again in a fresh
// transaction after a rollback gives the same result.
func apply(tx *bolt.Tx, doc string, w *persist.Write) (err error) {
	docPath := path(string(bucketDocs), []byte(doc))
	defer recoverCorrupt(docPath, &err)

	docs, err := tx.CreateBucketIfNotExists(bucketDocs)
	if err != nil {
		return fmt.Errorf("boltstore: create bucket %q: %w", bucketDocs, err)
	}
	d, err := createBucket(docs, string(bucketDocs), []byte(doc))
	if err != nil {
		return err
	}
	var subs [4]*bolt.Bucket
	for i, name := range docSubBuckets {
		if subs[i], err = createBucket(d, docPath, name); err != nil {
			return err
		}
	}
	records, drafts, projections, answers := subs[0], subs[1], subs[2], subs[3]

	if err := putValues(records, path(docPath, bucketRecords), w.Records, false); err != nil {
		return err
	}
	if err := putValues(projections, path(docPath, bucketProjections), w.Projections, false); err != nil {
		return err
	}
	if err := putValues(answers, path(docPath, bucketAnswers), w.Answers, true); err != nil {
		return err
	}
	draftsPath := path(docPath, bucketDrafts)
	for _, dp := range w.Drafts {
		if err := putDraft(drafts, draftsPath, dp); err != nil {
			return err
		}
	}
	if len(w.Audit) > 0 {
		audit, err := createBucket(d, docPath, bucketAudit)
		if err != nil {
			return err
		}
		auditPath := path(docPath, bucketAudit)
		for _, p := range w.Audit {
			k := []byte(p.Key)
			b, err := createBucket(audit, auditPath, k)
			if err != nil {
				return err
			}
			if err := appendSequenced(b, path(auditPath, k), p.Value); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendSequenced puts v in b under the bucket's next sequence number,
// big-endian, so that b's keys iterate in the order of the appends.
func appendSequenced(b *bolt.Bucket, bp string, v []byte) error {
	// Keys only grow: a full page is never written into again, so pages
	// split full, not at bbolt's default half (which doubled the file an
	// audit log or a draft's chunks take).
	b.FillPercent = 1
	seq, err := b.NextSequence()
	if err != nil {
		return fmt.Errorf("boltstore: bucket %q: next sequence: %w", bp, err)
	}
	var key [8]byte
	binary.BigEndian.PutUint64(key[:], seq)
	if err := b.Put(key[:], nonNil(v)); err != nil {
		return keyError(bp, key[:], err, ErrNotValue)
	}
	return nil
}

// auditPath is the path of doc's audit bucket, as errors name it.
func auditPath(doc string) string {
	return path(path(string(bucketDocs), []byte(doc)), bucketAudit)
}

// auditBucket returns doc's audit bucket in tx, nil when it has none, and
// its path.
func auditBucket(tx *bolt.Tx, doc string) (*bolt.Bucket, string, error) {
	docPath := path(string(bucketDocs), []byte(doc))
	ap := auditPath(doc)
	docs := tx.Bucket(bucketDocs)
	if docs == nil {
		return nil, ap, nil
	}
	d, err := child(docs, string(bucketDocs), []byte(doc))
	if d == nil || err != nil {
		return nil, ap, err
	}
	audit, err := child(d, docPath, bucketAudit)
	return audit, ap, err
}

// auditRowError is the damage at key k, value v of the audit log b (at
// bp), or nil.
func auditRowError(b *bolt.Bucket, bp string, k, v []byte) error {
	switch {
	case isBucket(b, k, v):
		return corrupt(bp, k, ErrNotValue)
	case len(k) != 8:
		return corrupt(bp, k, ErrAuditKey)
	}
	return nil
}

// checkAudit walks doc's audit logs against the layout, reading no value.
func checkAudit(tx *bolt.Tx, doc string) (err error) {
	defer recoverCorrupt(auditPath(doc), &err)
	audit, auditPath, err := auditBucket(tx, doc)
	if audit == nil || err != nil {
		return err
	}
	c := audit.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if !isBucket(audit, k, v) {
			return corrupt(auditPath, k, ErrNotBucket)
		}
		b, bp := audit.Bucket(k), path(auditPath, k)
		rc := b.Cursor()
		for rk, rv := rc.First(); rk != nil; rk, rv = rc.Next() {
			if err := auditRowError(b, bp, rk, rv); err != nil {
				return err
			}
		}
	}
	return nil
}

// readAudit returns up to limit rows of decision's audit log after
// position after, within tx.
func readAudit(tx *bolt.Tx, doc, decision string, after uint64, limit int) (rows []persist.AuditRow, err error) {
	defer recoverCorrupt(auditPath(doc), &err)
	audit, auditPath, err := auditBucket(tx, doc)
	if audit == nil || err != nil {
		return nil, err
	}
	b, err := child(audit, auditPath, []byte(decision))
	if b == nil || err != nil {
		return nil, err
	}
	bp := path(auditPath, []byte(decision))
	var from [8]byte
	binary.BigEndian.PutUint64(from[:], after+1)
	c := b.Cursor()
	for k, v := c.Seek(from[:]); k != nil && len(rows) < limit; k, v = c.Next() {
		if err := auditRowError(b, bp, k, v); err != nil {
			return nil, err
		}
		rows = append(rows, persist.AuditRow{Seq: binary.BigEndian.Uint64(k), Value: clone(v)})
	}
	return rows, nil
}

func createBucket(parent *bolt.Bucket, parentPath string, name []byte) (*bolt.Bucket, error) {
	b, err := parent.CreateBucketIfNotExists(name)
	if err != nil {
		return nil, keyError(parentPath, name, err, ErrNotBucket)
	}
	return b, nil
}

// keyError wraps an error bbolt returned for key in bucket bp. An
// incompatible value means the layout is wrong there.
func keyError(bp string, key []byte, err, layoutErr error) error {
	if errors.Is(err, berrors.ErrIncompatibleValue) {
		return corrupt(bp, key, layoutErr)
	}
	return fmt.Errorf("boltstore: bucket %q key %q: %w", bp, key, err)
}

func putValues(b *bolt.Bucket, bp string, puts []persist.Put, nilDeletes bool) error {
	for _, p := range puts {
		k := []byte(p.Key)
		var err error
		if p.Value == nil && nilDeletes {
			err = b.Delete(k)
		} else {
			err = b.Put(k, nonNil(p.Value))
		}
		if err != nil {
			return keyError(bp, k, err, ErrNotValue)
		}
	}
	return nil
}

func putDraft(drafts *bolt.Bucket, draftsPath string, dp persist.DraftPut) error {
	k := []byte(dp.Decision)
	bp := path(draftsPath, k)
	if dp.Snapshot {
		// Delete only what exists: bbolt logs a missing bucket as an error.
		switch {
		case drafts.Bucket(k) != nil:
			if err := drafts.DeleteBucket(k); err != nil {
				// The bucket exists, so failing to walk it (bbolt
				// words that "bucket not found", unwrapped) is damage.
				return corrupt(bp, nil, err)
			}
		case drafts.Get(k) != nil:
			return corrupt(draftsPath, k, ErrNotBucket)
		}
		b, err := drafts.CreateBucket(k)
		if err != nil {
			return keyError(draftsPath, k, err, ErrNotBucket)
		}
		if err := b.Put(keySnapshot, nonNil(dp.Chunk)); err != nil {
			return keyError(bp, keySnapshot, err, ErrNotValue)
		}
		return nil
	}
	b, err := createBucket(drafts, draftsPath, k)
	if err != nil {
		return err
	}
	// Sequence numbers start at 1: the 8-byte key "snapshot" would be
	// the 8.3e18th chunk, which no draft reaches.
	return appendSequenced(b, bp, dp.Chunk)
}

// nonNil stores a nil value as an empty one; bbolt keeps the slice it is
// given until the transaction commits, and a nil there reads back like a
// bucket within the transaction.
func nonNil(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}
