package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/accord-crdt/accord/persist"
)

// Store is a persist.Store in one JetStream stream. It is safe for
// concurrent use, and several Stores (in several processes) may share one
// stream: each Write is atomic on the server, and CommitAt lets writers of
// one document exclude each other.
type Store struct {
	nc     *nats.Conn
	js     natsjs.JetStream
	stream natsjs.Stream
	l      layout
	o      Options
	log    *slog.Logger

	// mu is held for reading by every call in flight and for writing by
	// Close, which so waits for them and then fails every later call.
	mu     sync.RWMutex
	closed bool

	// inflight bounds the Writes this Store has open on the server, which
	// limits open atomic batches per stream.
	inflight chan struct{}
}

var _ persist.Store = (*Store)(nil)

// Open creates the stream (or updates its replicas) and returns a Store on
// it. The caller keeps nc and closes it after the Store. opts may be nil.
func Open(ctx context.Context, nc *nats.Conn, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	o.setDefaults()
	if nc == nil {
		return nil, errors.New("jetstream: Open needs a NATS connection")
	}
	js, err := natsjs.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: open %s: %w", o.Stream, err)
	}
	s := &Store{
		nc:       nc,
		js:       js,
		l:        layout{prefix: strings.ToLower(o.Stream)},
		o:        o,
		log:      o.Logger,
		inflight: make(chan struct{}, o.MaxInflight),
	}
	cfg := natsjs.StreamConfig{
		Name:        o.Stream,
		Description: "Accord documents (persist/jetstream)",
		Subjects:    []string{s.l.prefix + ".>"},
		Storage:     o.storage(),
		Replicas:    o.Replicas,
		Retention:   natsjs.LimitsPolicy,
		Discard:     natsjs.DiscardOld,
		// The stream is its own materialized view: a subject's last
		// message is its value (see layout.go).
		MaxMsgsPerSubject:  1,
		MaxMsgs:            -1,
		MaxBytes:           -1,
		MaxAge:             0,
		AllowAtomicPublish: true,
		DenyDelete:         true,
	}
	octx, cancel := s.opContext(ctx)
	defer cancel()
	st, err := js.CreateOrUpdateStream(octx, cfg)
	if err != nil {
		return nil, fmt.Errorf("jetstream: open stream %s (replicas %d): %w", o.Stream, o.Replicas, err)
	}
	s.stream = st
	if err := waitLeader(octx, st); err != nil {
		return nil, fmt.Errorf("jetstream: open stream %s (replicas %d): %w", o.Stream, o.Replicas, err)
	}
	s.log.Debug("jetstream: opened", "stream", o.Stream, "replicas", o.Replicas, "storage", o.storage().String())
	return s, nil
}

// waitLeader waits until a replicated stream has elected its leader: a
// stream just created answers "no response from stream" to the commits
// sent before, which Open's caller would take for a failed commit.
func waitLeader(ctx context.Context, st natsjs.Stream) error {
	for {
		info := st.CachedInfo()
		if info.Config.Replicas <= 1 || (info.Cluster != nil && info.Cluster.Leader != "") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no stream leader elected: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
		if _, err := st.Info(ctx); err != nil && ctx.Err() == nil {
			continue // asked while electing: ask again
		}
	}
}

// opContext bounds one round trip by Options.Timeout, inside ctx.
func (s *Store) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.o.Timeout)
}

// Stream returns the name of the stream.
func (s *Store) Stream() string { return s.o.Stream }

func (s *Store) enter() error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return persist.ErrClosed
	}
	return nil
}

func (s *Store) leave() { s.mu.RUnlock() }

// LoadDocument returns everything stored for doc, as of one Write: it never
// shows part of one.
func (s *Store) LoadDocument(ctx context.Context, doc string) (*persist.StoredDocument, error) {
	d, _, err := s.LoadDocumentHead(ctx, doc)
	return d, err
}

// LoadDocumentHead is LoadDocument that also returns the document's head as
// of the returned state: the stream sequence of its last Write, or 0 for a
// document never written (or deleted). Pass it to CommitAt.
func (s *Store) LoadDocumentHead(ctx context.Context, doc string) (*persist.StoredDocument, uint64, error) {
	if err := s.enter(); err != nil {
		return nil, 0, err
	}
	defer s.leave()
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	// A read can find a Write torn only while the server applies it on a
	// replicated stream, or while DeleteDocument purges the document: it
	// starts again, a few times, then reports the problem.
	var err error
	for attempt := range 8 {
		var d *persist.StoredDocument
		var head uint64
		d, head, err = s.loadOnce(ctx, doc)
		if !errors.Is(err, errTorn) {
			return d, head, err
		}
		s.log.Debug("jetstream: load saw a Write in progress; reading again", "doc", doc, "attempt", attempt)
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 5 * time.Millisecond):
		}
	}
	return nil, 0, fmt.Errorf("jetstream: load %q: %w", doc, err)
}

var errTorn = errors.New("jetstream: read ended inside a Write")

func newDocument() *persist.StoredDocument {
	return &persist.StoredDocument{
		Records:     make(map[string][]byte),
		Drafts:      make(map[string]persist.StoredDraft),
		Projections: make(map[string][]byte),
		Answers:     make(map[string][]byte),
	}
}

// loadOnce reads every message of doc in stream order, folding them into
// the document. A message superseded while the read runs is replaced by
// one further on, which the read then reaches, so the fold, stopped at a
// head message with nothing behind it, is the state after the last Write
// it saw whole.
//
// The leader is asked for the document's head first, and the read goes on
// until it has passed that head: the state returned includes every Write
// acknowledged before the load began, wherever it was committed. A single
// replica stream is read through an ephemeral consumer, which streams. On
// a replicated stream such a consumer sits on any replica, and a replica
// that lags or catches up from a snapshot can show a Write in part; so
// every message is asked from the leader instead (Get with next_by_subj),
// several spans of the stream at once (loadLeader).
//
// Each request has its own Options.Timeout, not the load as a whole: a
// document's load takes a round trip per message on a replicated stream,
// and a large one must not fail for being large (ctx bounds the whole).
func (s *Store) loadOnce(ctx context.Context, doc string) (*persist.StoredDocument, uint64, error) {
	d := newDocument()
	hctx, cancel := s.opContext(ctx)
	want, err := s.lastHead(hctx, doc)
	cancel()
	if err != nil || want == 0 {
		return d, 0, err
	}
	if s.o.Replicas == 1 {
		octx, cancel := s.opContext(ctx)
		defer cancel()
		return s.loadConsumer(octx, doc, d, want)
	}
	return s.loadLeader(ctx, doc, d, want)
}

// loadLeader folds doc's messages into d, asking the leader for each.
// The messages up to want (which were all stored when the load began) are
// read by loadRanges, several requests at a time; the fold applies them
// in stream order, then the read goes on one message at a time from want,
// until it has passed the last head: a value superseded meanwhile is
// replaced by one stored after want, which that read reaches.
func (s *Store) loadLeader(ctx context.Context, doc string, d *persist.StoredDocument, want uint64) (*persist.StoredDocument, uint64, error) {
	filter := s.l.docFilter(doc)
	msgs, err := s.loadRanges(ctx, doc, filter, want)
	if err != nil {
		return nil, 0, err
	}
	var head uint64
	for _, m := range msgs {
		isHead, err := s.fold(d, doc, m.Subject, m.Header, m.Data)
		if err != nil {
			return nil, 0, err
		}
		if isHead {
			head = m.Sequence
		}
	}
	for seq := want + 1; ; {
		gctx, cancel := s.opContext(ctx)
		m, err := s.stream.GetMsg(gctx, seq, natsjs.WithGetMsgSubject(filter))
		cancel()
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			if head >= want && head == seq-1 {
				return d, head, nil
			}
			return nil, 0, errTorn
		}
		if err != nil {
			return nil, 0, fmt.Errorf("jetstream: load %q: get: %w", doc, err)
		}
		isHead, err := s.fold(d, doc, m.Subject, m.Header, m.Data)
		if err != nil {
			return nil, 0, err
		}
		if isHead {
			head = m.Sequence
		}
		seq = m.Sequence + 1
	}
}

// Reading a document from a replicated stream's leader: sequences 1 to
// the head are cut into loadSpans spans, read loadReaders at a time.
const (
	loadSpans   = 64
	loadReaders = 16
)

// loadRanges returns doc's messages with sequences up to want, in stream
// order. Each span is read from its start, one message after the other
// (Get with next_by_subj, from the leader), and the spans are read
// concurrently: a load costs about a round trip per loadReaders messages
// instead of one per message.
func (s *Store) loadRanges(ctx context.Context, doc, filter string, want uint64) ([]*natsjs.RawStreamMsg, error) {
	spans := min(uint64(loadSpans), want)
	width := (want + spans - 1) / spans
	found := make([][]*natsjs.RawStreamMsg, spans)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		emu   sync.Mutex
		first error
		next  = make(chan uint64)
	)
	for range min(loadReaders, int(spans)) {
		wg.Go(func() {
			for i := range next {
				from, to := 1+i*width, min((i+1)*width, want)
				for seq := from; seq <= to; {
					gctx, gcancel := s.opContext(rctx)
					m, err := s.stream.GetMsg(gctx, seq, natsjs.WithGetMsgSubject(filter))
					gcancel()
					if errors.Is(err, natsjs.ErrMsgNotFound) {
						break
					}
					if err != nil {
						emu.Lock()
						if first == nil {
							first = fmt.Errorf("jetstream: load %q: get: %w", doc, err)
						}
						emu.Unlock()
						cancel()
						break
					}
					if m.Sequence > to {
						break // the next span's
					}
					found[i] = append(found[i], m)
					seq = m.Sequence + 1
				}
			}
		})
	}
	for i := range spans {
		select {
		case next <- i:
		case <-rctx.Done():
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("jetstream: load %q: %w", doc, err)
	}
	var out []*natsjs.RawStreamMsg
	for _, ms := range found {
		out = append(out, ms...)
	}
	return out, nil
}

// loadConsumer folds doc's messages into d through an ephemeral consumer,
// until it has passed the head want.
func (s *Store) loadConsumer(ctx context.Context, doc string, d *persist.StoredDocument, want uint64) (*persist.StoredDocument, uint64, error) {
	cons, err := s.stream.CreateConsumer(ctx, natsjs.ConsumerConfig{
		FilterSubject:     s.l.docFilter(doc),
		DeliverPolicy:     natsjs.DeliverAllPolicy,
		AckPolicy:         natsjs.AckNonePolicy,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: time.Minute,
	})
	if err != nil {
		return nil, 0, fmt.Errorf("jetstream: load %q: consumer: %w", doc, err)
	}
	name := cons.CachedInfo().Name
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.Timeout)
		defer cancel()
		if err := s.stream.DeleteConsumer(dctx, name); err != nil && !errors.Is(err, natsjs.ErrConsumerNotFound) {
			s.log.Debug("jetstream: delete load consumer", "consumer", name, "err", err)
		}
	}()
	var head uint64
	idle := 0
	for {
		n := 0
		batch, err := cons.FetchNoWait(512)
		if err == nil {
			for m := range batch.Messages() {
				n++
				meta, err := m.Metadata()
				if err != nil {
					return nil, 0, fmt.Errorf("jetstream: load %q: %w", doc, err)
				}
				isHead, err := s.fold(d, doc, m.Subject(), m.Headers(), m.Data())
				if err != nil {
					return nil, 0, err
				}
				if isHead {
					head = meta.Sequence.Stream
				}
				if meta.NumPending == 0 && isHead && head >= want {
					// NumPending is counted as the consumer learns of new
					// messages, a moment late: a Write stored meanwhile
					// may have replaced a value this read had not reached
					// yet. Done only if the leader's head is still here.
					now, err := s.lastHead(ctx, doc)
					if err != nil {
						return nil, 0, err
					}
					if now == head {
						return d, head, nil
					}
					want = now
				}
			}
			err = batch.Error()
		}
		// A consumer just created on a replica may not answer yet.
		if err != nil && !errors.Is(err, natsjs.ErrNoMessages) && !errors.Is(err, nats.ErrNoResponders) {
			return nil, 0, fmt.Errorf("jetstream: load %q: fetch: %w", doc, err)
		}
		if n > 0 {
			idle = 0
			continue
		}
		// Nothing more on this replica yet: it lags, a Write is being
		// applied, or the document is being deleted.
		if idle++; idle > 20 {
			return nil, 0, errTorn
		}
		select {
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("jetstream: load %q: %w", doc, ctx.Err())
		case <-time.After(time.Duration(idle) * time.Millisecond):
		}
	}
}

// lastHead asks the stream's leader for doc's head.
func (s *Store) lastHead(ctx context.Context, doc string) (uint64, error) {
	m, err := s.stream.GetLastMsgForSubject(ctx, s.l.head(doc))
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("jetstream: head of %q: %w", doc, err)
	}
	return m.Sequence, nil
}

// fold applies one stored message to d and reports whether it was a head.
func (s *Store) fold(d *persist.StoredDocument, doc, subject string, h nats.Header, data []byte) (bool, error) {
	kind, key, err := s.l.parse(doc, subject)
	if err != nil {
		return false, err
	}
	v := bytes.Clone(data)
	if v == nil {
		v = []byte{}
	}
	switch kind {
	case kindRecord:
		d.Records[key] = v
	case kindProjection:
		d.Projections[key] = v
	case kindAnswer:
		if h.Get(hdrOp) == opDelete {
			delete(d.Answers, key)
		} else {
			d.Answers[key] = v
		}
	case kindSnapshot:
		// Every chunk read so far has a lower sequence: it is dead.
		d.Drafts[key] = persist.StoredDraft{Snapshot: v}
	case kindChunk:
		dr := d.Drafts[key]
		dr.Chunks = append(dr.Chunks, v)
		d.Drafts[key] = dr
	case kindHead:
		return h.Get(hdrEnd) != "", nil
	}
	return false, nil
}

// ReadAudit returns up to limit rows of decision's audit log after
// position after (a stream sequence), each asked from the stream's leader
// in turn, so a row committed before the call is always among them.
func (s *Store) ReadAudit(ctx context.Context, doc, decision string, after uint64, limit int) ([]persist.AuditRow, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if doc == "" || decision == "" || limit <= 0 {
		return nil, nil
	}
	filter := s.l.auditFilter(doc, decision) + ".*"
	var rows []persist.AuditRow
	for seq := after + 1; len(rows) < limit; {
		gctx, cancel := s.opContext(ctx)
		m, err := s.stream.GetMsg(gctx, seq, natsjs.WithGetMsgSubject(filter))
		cancel()
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("jetstream: audit of %q in %q: get: %w", decision, doc, err)
		}
		v := bytes.Clone(m.Data)
		if v == nil {
			v = []byte{}
		}
		rows = append(rows, persist.AuditRow{Seq: m.Sequence, Value: v})
		seq = m.Sequence + 1
	}
	return rows, nil
}

// Head returns the stream sequence of doc's last Write, or 0 if it has none.
func (s *Store) Head(ctx context.Context, doc string) (uint64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	if doc == "" {
		return 0, persist.ErrEmptyKey
	}
	octx, cancel := s.opContext(ctx)
	defer cancel()
	return s.lastHead(octx, doc)
}

// Documents returns the ids of every document with a Write, sorted.
func (s *Store) Documents(ctx context.Context) ([]string, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	octx, cancel := s.opContext(ctx)
	defer cancel()
	info, err := s.stream.Info(octx, natsjs.WithSubjectFilter(s.l.headsFilter()))
	if err != nil {
		return nil, fmt.Errorf("jetstream: documents: %w", err)
	}
	ids := make([]string, 0, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		id, err := s.l.docOfHead(subj)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// DeleteDocument removes every value of doc: a purge of its audit logs,
// then one of its other subjects, each applied atomically on every
// replica. Deleting a document
// never written succeeds and changes nothing.
func (s *Store) DeleteDocument(ctx context.Context, doc string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if doc == "" {
		return persist.ErrEmptyKey
	}
	if len(doc) > MaxKeySize {
		return fmt.Errorf("jetstream: document id of %d bytes, limit %d: %w", len(doc), MaxKeySize, ErrKeyTooLong)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	octx, cancel := s.opContext(ctx)
	defer cancel()
	// The audit logs go first: a delete cut short between the two purges
	// leaves a document without its logs, never logs without their
	// document for a later document of the same id to inherit.
	if err := s.stream.Purge(octx, natsjs.WithPurgeSubject(s.l.auditFilter(doc, "")+".>")); err != nil {
		return fmt.Errorf("jetstream: delete %q: audit logs: %w", doc, err)
	}
	if err := s.stream.Purge(octx, natsjs.WithPurgeSubject(s.l.docFilter(doc))); err != nil {
		return fmt.Errorf("jetstream: delete %q: %w", doc, err)
	}
	s.log.Info("jetstream: document deleted", "doc", doc)
	return nil
}

// Close waits for the calls in flight, then fails every later call with
// persist.ErrClosed. Commits that returned nil stay in the stream. It does
// not close the NATS connection, which the caller owns.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return persist.ErrClosed
	}
	s.closed = true
	s.log.Debug("jetstream: closed", "stream", s.o.Stream)
	return nil
}
