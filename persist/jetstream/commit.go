package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/accord-crdt/accord/persist"
)

// Commit makes w durable for doc, atomically: it returns nil only after the
// stream's leader and a quorum of its replicas stored the whole Write (one
// atomic batch). ctx is checked before the Write is sent; once sent, Commit
// waits up to Options.Timeout for the outcome rather than give up on a
// Write that may still land. A timeout leaves the outcome unknown; the
// error says so, and the document's Head tells later.
func (s *Store) Commit(ctx context.Context, doc string, w *persist.Write) error {
	_, err := s.commit(ctx, doc, w, nil)
	return err
}

// CommitAt is Commit on condition that doc's head is still head (as read by
// LoadDocumentHead, Head or a previous CommitAt; 0 for a document with no
// Write): the stream checks it when it applies the batch, so of two writers
// that read the same head only the first succeeds, and the second gets
// ErrConflict with nothing applied. It returns the new head. An empty Write
// checks nothing and returns head.
func (s *Store) CommitAt(ctx context.Context, doc string, w *persist.Write, head uint64) (uint64, error) {
	return s.commit(ctx, doc, w, &head)
}

type outMsg struct {
	subject string
	data    []byte
	del     bool
}

func (s *Store) commit(ctx context.Context, doc string, w *persist.Write, expect *uint64) (uint64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	if err := persist.CheckWrite(doc, w, limits); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if w.Empty() {
		if expect != nil {
			return *expect, nil
		}
		return 0, nil
	}
	msgs, snapshots := s.messages(doc, w)
	if len(msgs) > s.o.MaxBatch {
		return 0, fmt.Errorf("jetstream: write to %q takes %d messages, limit %d: %w", doc, len(msgs), s.o.MaxBatch, ErrTooLarge)
	}
	limit := s.nc.MaxPayload()
	for _, m := range msgs {
		// Headers take well under 256 bytes.
		if size := int64(len(m.subject) + len(m.data) + 256); size > limit {
			return 0, fmt.Errorf("jetstream: write to %q: a value of %d bytes, server max_payload %d: %w", doc, len(m.data), limit, ErrTooLarge)
		}
	}

	select {
	case s.inflight <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-s.inflight }()

	// From here on the Write may land, so the caller's cancellation no
	// longer applies: wait for the outcome.
	octx, cancel := s.opContext(context.WithoutCancel(ctx))
	defer cancel()
	ack, err := s.publish(octx, msgs, expect)
	if err != nil {
		var apiErr *natsjs.APIError
		switch {
		case errors.As(err, &apiErr) && (apiErr.ErrorCode == natsjs.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == natsjs.JSErrCodeStreamWrongLastSequenceConstant):
			return 0, fmt.Errorf("jetstream: commit to %q at head %d: %w", doc, *expect, ErrConflict)
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
			s.log.Error("jetstream: commit outcome unknown", "doc", doc, "err", err)
			return 0, fmt.Errorf("jetstream: commit to %q: no ack within %v: %w: %w", doc, s.o.Timeout, persist.ErrOutcomeUnknown, err)
		default:
			s.log.Warn("jetstream: commit failed", "doc", doc, "err", err)
			return 0, fmt.Errorf("jetstream: commit to %q: %w", doc, err)
		}
	}
	// The batch took consecutive sequences ending at the head's.
	first := ack.Sequence - uint64(len(msgs)-1)
	for decision, i := range snapshots {
		s.purgeDeadChunks(octx, doc, decision, first+uint64(i))
	}
	return ack.Sequence, nil
}

// messages turns w into the batch's messages, in order. Puts of one key
// collapse to the last (the stream keeps one message per subject anyway);
// a decision's drafts collapse to its last snapshot and the chunks after it.
// snapshots maps each decision given a snapshot to its message's index.
func (s *Store) messages(doc string, w *persist.Write) ([]outMsg, map[string]int) {
	var msgs []outMsg
	puts := func(kind string, ps []persist.Put, answers bool) {
		at := make(map[string]int, len(ps))
		for _, p := range ps {
			m := outMsg{subject: s.l.key(doc, kind, p.Key), data: p.Value, del: answers && p.Value == nil}
			if i, ok := at[p.Key]; ok {
				msgs[i] = m
				continue
			}
			at[p.Key] = len(msgs)
			msgs = append(msgs, m)
		}
	}
	puts(kindRecord, w.Records, false)
	puts(kindProjection, w.Projections, false)
	puts(kindAnswer, w.Answers, true)

	type draft struct {
		snapshot []byte
		has      bool
		chunks   [][]byte
	}
	var order []string
	drafts := make(map[string]*draft)
	for _, dp := range w.Drafts {
		d := drafts[dp.Decision]
		if d == nil {
			d = &draft{}
			drafts[dp.Decision] = d
			order = append(order, dp.Decision)
		}
		if dp.Snapshot {
			*d = draft{snapshot: dp.Chunk, has: true}
		} else {
			d.chunks = append(d.chunks, dp.Chunk)
		}
	}
	snapshots := make(map[string]int)
	for _, dec := range order {
		d := drafts[dec]
		if d.has {
			snapshots[dec] = len(msgs)
			msgs = append(msgs, outMsg{subject: s.l.key(doc, kindSnapshot, dec), data: d.snapshot})
		}
		for _, c := range d.chunks {
			msgs = append(msgs, outMsg{subject: s.l.chunk(doc, dec, nuid.Next()), data: c})
		}
	}
	for _, p := range w.Audit {
		msgs = append(msgs, outMsg{subject: s.l.audit(doc, p.Key, nuid.Next()), data: p.Value})
	}
	msgs = append(msgs, outMsg{subject: s.l.head(doc)})
	return msgs, snapshots
}

// publish sends msgs as one atomic batch and returns the commit's ack. The
// messages before the last go without a reply (the server checks the
// batch's sequence numbers at the commit, so a lost one fails the whole
// batch); the last commits it and waits for the quorum ack.
func (s *Store) publish(ctx context.Context, msgs []outMsg, expect *uint64) (*natsjs.PubAck, error) {
	for wait := 2 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		ack, err := s.publishOnce(ctx, msgs, expect)
		var apiErr *natsjs.APIError
		busy := errors.As(err, &apiErr) && apiErr.Code == 429
		// No responders: the stream's leader is not reachable yet (just
		// created or elected, its interest not yet propagated to this
		// server). The commit reached no stream, and any of the batch's
		// earlier messages that did form an uncommitted batch, which the
		// server discards: sending the whole batch again, under a new id,
		// cannot apply it twice.
		unreached := errors.Is(err, natsjs.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)
		// Incomplete: the leader got the commit but not every message
		// before it. Those go without a reply, so one sent while the
		// stream's interest was still reaching this server (an R3 stream
		// just created or given a new leader) is dropped silently. The
		// server applies nothing of an incomplete batch, so sending it
		// again under a new id is safe.
		incomplete := errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeIncompleteBatch
		if !busy && !unreached && !incomplete {
			return ack, err
		}
		// Too many open batches on the stream (other nodes write too),
		// nobody answered, or part of the batch was lost.
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

func (s *Store) publishOnce(ctx context.Context, msgs []outMsg, expect *uint64) (*natsjs.PubAck, error) {
	id := nuid.Next()
	for i, m := range msgs {
		nm := &nats.Msg{Subject: m.subject, Data: m.data, Header: nats.Header{}}
		nm.Header.Set(hdrBatchID, id)
		nm.Header.Set(hdrBatchSeq, strconv.Itoa(i+1))
		if m.del {
			nm.Header.Set(hdrOp, opDelete)
		}
		if i < len(msgs)-1 {
			if err := s.nc.PublishMsg(nm); err != nil {
				return nil, err
			}
			continue
		}
		nm.Header.Set(hdrBatchCommit, "1")
		nm.Header.Set(hdrEnd, "1")
		var opts []natsjs.PublishOpt
		if expect != nil {
			opts = append(opts, natsjs.WithExpectLastSequencePerSubject(*expect))
		}
		// A retry on "no responders" would resend the commit alone, which
		// the server refuses as an incomplete batch: the whole batch is
		// retried instead (by the caller's next Commit).
		opts = append(opts, natsjs.WithRetryAttempts(0))
		return s.awaitAck(ctx, func(ctx context.Context) (*natsjs.PubAck, error) { return s.js.PublishMsg(ctx, nm, opts...) })
	}
	panic("unreachable: a batch ends with its head")
}

// errCodeIncompleteBatch is the server's error code for a batch whose
// commit arrived without all the messages before it
// (JSAtomicPublishIncompleteBatchErr); nats.go has no constant for it.
const errCodeIncompleteBatch natsjs.ErrorCode = 10176

// errAckLost is the cause of a wait for an ack cut short because the
// connection was lost and made again meanwhile.
var errAckLost = errors.New("the connection to NATS was lost while the ack was awaited")

// awaitAck runs publish, but gives up as soon as the connection is lost
// and made again: an ack the server sent meanwhile went to the old
// connection and will never come, so waiting out the timeout would only
// hold the document up. The outcome is then unknown, as after a timeout.
func (s *Store) awaitAck(ctx context.Context, publish func(context.Context) (*natsjs.PubAck, error)) (*natsjs.PubAck, error) {
	before := s.nc.Stats().Reconnects
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(25 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if s.nc.Stats().Reconnects != before {
					cancel(errAckLost)
					return
				}
			}
		}
	}()
	ack, err := publish(ctx)
	if err != nil && errors.Is(context.Cause(ctx), errAckLost) {
		return nil, fmt.Errorf("%w: %w", errAckLost, nats.ErrTimeout)
	}
	return ack, err
}

// purgeDeadChunks drops decision's chunks below its snapshot at seq. Loads
// skip them anyway; this only bounds the stream's size.
func (s *Store) purgeDeadChunks(ctx context.Context, doc, decision string, seq uint64) {
	err := s.stream.Purge(ctx,
		natsjs.WithPurgeSubject(s.l.key(doc, kindChunk, decision)+".>"),
		natsjs.WithPurgeSequence(seq))
	if err != nil {
		s.log.Warn("jetstream: purge of chunks under a snapshot failed; they stay until the next snapshot", "doc", doc, "decision", decision, "err", err)
	}
}

// limits are the layout's, for persist.CheckWrite.
var limits = persist.Limits{Name: "jetstream", MaxKey: MaxKeySize, ErrKey: ErrKeyTooLong}
