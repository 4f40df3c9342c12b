package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/accord-crdt/accord/persist"
)

// Kinds of the items table.
const (
	kindRecord     = "record"
	kindProjection = "projection"
	kindAnswer     = "answer"
	kindSnapshot   = "snapshot"
)

// Commit makes w durable for doc, atomically: one transaction, whose
// statements go to the server in one round trip, and Commit returns nil
// only once the server reported it committed.
//
// The Write applies only if doc's revision is still the one this Store
// last loaded, committed or deleted (a document this Store has not met
// yet is written whatever its revision). If another writer committed to
// doc since, Commit returns an error wrapping persist.ErrConflict and
// applies nothing; so does every later Commit of doc until LoadDocument
// reads it again.
//
// ctx is checked before the Write is sent; once sent, Commit waits up to
// Options.Timeout for the outcome rather than give up on a Write that may
// still land. When the connection is lost before the outcome is known,
// the error wraps persist.ErrOutcomeUnknown, and doc's commits are refused
// until it is loaded again, which tells. Any other error means nothing was
// applied.
func (s *Store) Commit(ctx context.Context, doc string, w *persist.Write) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := persist.CheckWrite(doc, w, limits); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if w.Empty() {
		return nil
	}
	p, err := newPlan(doc, w)
	if err != nil {
		return err
	}
	st, err := s.doc(ctx, doc)
	if err != nil {
		return err
	}
	defer st.unlock()
	if st.stale {
		return fmt.Errorf("postgres: commit to %q: its last commit failed or was fenced; load it again first: %w", doc, persist.ErrConflict)
	}
	var expected any // NULL: unconditional
	if st.known {
		expected = st.rev
	}
	rev, err := s.send(ctx, doc, p, expected)
	if err == nil {
		st.known, st.rev = true, rev
		return nil
	}
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == sqlConflict:
		st.known, st.stale = false, true
		s.log.Warn("postgres: commit fenced: another writer committed to the document", "doc", doc, "revision", expected)
		return fmt.Errorf("postgres: commit to %q at revision %v: another writer committed first: %w", doc, expected, persist.ErrConflict)
	case outcomeKnown(err):
		s.log.Warn("postgres: commit failed; nothing applied", "doc", doc, "err", err)
		if ce := s.corrupt("commit", doc, err); ce != nil {
			return ce
		}
		return fmt.Errorf("postgres: commit to %q failed, nothing applied: %w", doc, err)
	default:
		st.known, st.stale = false, true
		s.log.Error("postgres: commit outcome unknown", "doc", doc, "err", err)
		return fmt.Errorf("postgres: commit to %q: sent, but no outcome came (connection lost, or no answer within %v): %w: %w", doc, s.o.Timeout, persist.ErrOutcomeUnknown, err)
	}
}

// send runs p as one transaction and returns the document's new revision.
func (s *Store) send(ctx context.Context, doc string, p *plan, expected any) (int64, error) {
	id := []byte(doc)
	b := &pgx.Batch{}
	b.Queue(s.q.advance, id, expected)
	if len(p.snapshots) > 0 {
		b.Queue(s.q.dropChunks, id, p.snapshots)
	}
	if len(p.itemKinds) > 0 {
		b.Queue(s.q.putItems, id, p.itemKinds, p.itemKeys, p.itemValues, p.itemSums)
	}
	if len(p.dropAnswers) > 0 {
		b.Queue(s.q.dropAnswers, id, p.dropAnswers)
	}
	if len(p.chunkDecisions) > 0 {
		b.Queue(s.q.addChunks, id, p.chunkDecisions, p.chunkValues, p.chunkSums)
	}
	if len(p.auditDecisions) > 0 {
		b.Queue(s.q.addAudit, id, p.auditDecisions, p.auditValues, p.auditSums)
	}
	var rev int64
	err := s.run(ctx, b, func(r pgx.Row) error { return r.Scan(&rev) })
	return rev, err
}

// run sends b as one implicit transaction (a pgx batch: its statements and
// one Sync, so the server commits them together or none) and reads every
// result, the first through first if it is not nil. It returns nil only
// once the server answered after its commit. Its errors are *runError.
func (s *Store) run(ctx context.Context, b *pgx.Batch, first func(pgx.Row) error) error {
	actx, cancel := s.opContext(ctx)
	conn, err := s.pool.Acquire(actx)
	cancel()
	if err != nil {
		return &runError{phase: beforeSend, err: err}
	}
	defer conn.Release()
	// From here on the transaction may commit, so the caller's
	// cancellation no longer applies: wait for the outcome.
	octx, cancel := s.opContext(context.WithoutCancel(ctx))
	defer cancel()
	br := conn.SendBatch(octx, b)
	for i := range b.Len() {
		if i == 0 && first != nil {
			err = first(br.QueryRow())
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			_ = br.Close()
			return &runError{phase: inStatements, err: err}
		}
	}
	// Close reads up to the server's ReadyForQuery, which follows the
	// commit: only then is the transaction known to be committed.
	if err := br.Close(); err != nil {
		return &runError{phase: atCommit, err: err}
	}
	return nil
}

// Phases of a transaction's run, for telling whether a failed one may
// have committed.
const (
	beforeSend   = iota // no connection: nothing sent
	inStatements        // a statement's result did not come
	atCommit            // every statement ran; the commit's answer did not come
)

type runError struct {
	phase int
	err   error
}

func (e *runError) Error() string {
	if e.phase == beforeSend {
		return "connect: " + e.err.Error()
	}
	return e.err.Error()
}

func (e *runError) Unwrap() error { return e.err }

// outcomeKnown reports whether a failed transaction is known to have
// applied nothing: nothing was sent; or the server reported an error in
// place of a statement's result, so its statements never all ran and the
// commit, which comes after them, never came; or it reported an ERROR
// for the commit itself. A connection lost meanwhile, or a FATAL in place
// of the commit's answer (a fast shutdown can end a session between its
// commit and its reply), leaves the outcome unknown.
func outcomeKnown(err error) bool {
	var re *runError
	if !errors.As(err, &re) {
		return false
	}
	var pgErr *pgconn.PgError
	switch {
	case re.phase == beforeSend || pgconn.SafeToRetry(re.err):
		return true
	case !errors.As(re.err, &pgErr):
		return false
	case re.phase == inStatements:
		return true
	}
	sev := pgErr.SeverityUnlocalized
	if sev == "" {
		sev = pgErr.Severity
	}
	return sev == "ERROR"
}

// plan is a Write as the statements' arrays: puts of one key collapse to
// the last, a decision's drafts to its last snapshot and the chunks after
// it, and values are never nil (a nil element would be NULL).
type plan struct {
	itemKinds   []string
	itemKeys    [][]byte
	itemValues  [][]byte
	itemSums    []int32
	dropAnswers [][]byte

	snapshots      [][]byte // decisions whose chunks a snapshot drops
	chunkDecisions [][]byte
	chunkValues    [][]byte
	chunkSums      []int32

	auditDecisions [][]byte
	auditValues    [][]byte
	auditSums      []int32
}

func newPlan(doc string, w *persist.Write) (*plan, error) {
	var size int64
	for _, ps := range [][]persist.Put{w.Records, w.Projections, w.Answers, w.Audit} {
		for _, put := range ps {
			size += int64(len(put.Key) + len(put.Value))
		}
	}
	for _, dp := range w.Drafts {
		size += int64(len(dp.Decision) + len(dp.Chunk))
	}
	if size > MaxWriteSize {
		return nil, fmt.Errorf("postgres: write to %q of %d bytes, limit %d: %w", doc, size, MaxWriteSize, ErrTooLarge)
	}
	p := &plan{}
	item := func(kind string, key string, v []byte) {
		p.itemKinds = append(p.itemKinds, kind)
		p.itemKeys = append(p.itemKeys, []byte(key))
		p.itemValues = append(p.itemValues, nonNil(v))
		p.itemSums = append(p.itemSums, checksum(doc, kind, []byte(key), v))
	}
	puts := func(kind string, ps []persist.Put) {
		last := make(map[string]int, len(ps))
		for i, put := range ps {
			last[put.Key] = i
		}
		for i, put := range ps {
			if last[put.Key] != i {
				continue
			}
			if kind == kindAnswer && put.Value == nil {
				p.dropAnswers = append(p.dropAnswers, []byte(put.Key))
				continue
			}
			item(kind, put.Key, put.Value)
		}
	}
	puts(kindRecord, w.Records)
	puts(kindProjection, w.Projections)
	puts(kindAnswer, w.Answers)

	// A decision's last snapshot, and where in w.Drafts it is.
	lastSnap := make(map[string]int)
	for i, dp := range w.Drafts {
		if dp.Snapshot {
			lastSnap[dp.Decision] = i
		}
	}
	for i, dp := range w.Drafts {
		at, snapped := lastSnap[dp.Decision]
		switch {
		case snapped && i < at:
			// Dropped by the snapshot after it.
		case snapped && i == at:
			p.snapshots = append(p.snapshots, []byte(dp.Decision))
			item(kindSnapshot, dp.Decision, dp.Chunk)
		default:
			p.chunkDecisions = append(p.chunkDecisions, []byte(dp.Decision))
			p.chunkValues = append(p.chunkValues, nonNil(dp.Chunk))
			p.chunkSums = append(p.chunkSums, checksum(doc, "chunk", []byte(dp.Decision), dp.Chunk))
		}
	}
	for _, a := range w.Audit {
		p.auditDecisions = append(p.auditDecisions, []byte(a.Key))
		p.auditValues = append(p.auditValues, nonNil(a.Value))
		p.auditSums = append(p.auditSums, checksum(doc, "audit", []byte(a.Key), a.Value))
	}
	return p, nil
}

func nonNil(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum is the CRC-32C of a value and its place (document, kind, key),
// so that a value changed, or moved to another row, is told from a good
// one.
func checksum(doc, kind string, key, value []byte) int32 {
	var buf [binary.MaxVarintLen64]byte
	h := crc32.New(castagnoli)
	for _, part := range [][]byte{[]byte(doc), []byte(kind), key} {
		_, _ = h.Write(binary.AppendUvarint(buf[:0], uint64(len(part))))
		_, _ = h.Write(part)
	}
	_, _ = h.Write(value)
	return int32(h.Sum32())
}

// limits are the store's, for persist.CheckWrite.
var limits = persist.Limits{Name: "postgres", MaxKey: MaxKeySize, MaxValue: MaxValueSize, ErrKey: ErrKeyTooLong, ErrValue: ErrTooLarge}
