package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/accord-crdt/accord/persist"
)

// Store is a persist.Store in a PostgreSQL database. It is safe for
// concurrent use, and several Stores, in several processes, may share one
// database: every Write is one transaction, conditional on the revision
// of the document this Store last loaded or committed (see the package
// documentation).
type Store struct {
	pool   *pgxpool.Pool
	q      queries
	o      Options
	log    *slog.Logger
	schema string

	// mu is held for reading by every call in flight and for writing by
	// Close, which so waits for them and then fails every later call.
	mu     sync.RWMutex
	closed bool

	docsMu sync.Mutex
	docs   map[string]*docState
}

// docState is what a Store knows of one document's revision.
type docState struct {
	// lock is held (a token in it) while the document is loaded,
	// committed or deleted through this Store, so that the revision
	// known is the one of the state the Store last handed out or wrote.
	lock chan struct{}

	// Set and read with lock held:
	known bool  // rev is the document's revision as of this Store's last call
	rev   int64 // 0: the document has no row (never written, or deleted)
	stale bool  // commits are refused until the document is loaded again
}

var _ persist.Store = (*Store)(nil)

// Open connects to the database at url (a PostgreSQL URL or key=value
// string, as pgx takes it), brings the store's schema to this build's
// version, and returns the Store. opts may be nil.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	o.setDefaults()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	switch {
	case o.MaxConns > 0:
		cfg.MaxConns = o.MaxConns
	case !strings.Contains(url, "pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns
	}
	octx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(octx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	where := fmt.Sprintf("%s@%s:%d/%s", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	from, err := migrate(octx, pool, o.Schema)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open %s, schema %q: %w", where, o.Schema, err)
	}
	if from < len(migrations) {
		o.Logger.Info("postgres: schema migrated", "db", where, "schema", o.Schema, "from", from, "to", len(migrations))
	}
	s := &Store{
		pool:   pool,
		q:      newQueries(o.Schema),
		o:      o,
		log:    o.Logger,
		schema: o.Schema,
		docs:   make(map[string]*docState),
	}
	s.log.Debug("postgres: opened", "db", where, "schema", o.Schema, "max_conns", cfg.MaxConns)
	return s, nil
}

func (s *Store) enter() error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return persist.ErrClosed
	}
	return nil
}

func (s *Store) leave() { s.mu.RUnlock() }

// doc locks doc's state, waiting no longer than ctx allows.
func (s *Store) doc(ctx context.Context, doc string) (*docState, error) {
	s.docsMu.Lock()
	d := s.docs[doc]
	if d == nil {
		d = &docState{lock: make(chan struct{}, 1)}
		s.docs[doc] = d
	}
	s.docsMu.Unlock()
	select {
	case d.lock <- struct{}{}:
		return d, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (d *docState) unlock() { <-d.lock }

// opContext bounds one call's round trips by Options.Timeout, inside ctx.
func (s *Store) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.o.Timeout)
}

func newDocument() *persist.StoredDocument {
	return &persist.StoredDocument{
		Records:     make(map[string][]byte),
		Drafts:      make(map[string]persist.StoredDraft),
		Projections: make(map[string][]byte),
		Answers:     make(map[string][]byte),
	}
}

// LoadDocument returns everything stored for doc, read by one statement,
// so as of one Write, and remembers its revision: the next Commit of doc
// through this Store applies only on top of it. A stored value that does
// not match its checksum gives a *persist.CorruptError naming it; other
// documents load as ever.
func (s *Store) LoadDocument(ctx context.Context, doc string) (*persist.StoredDocument, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := s.doc(ctx, doc)
	if err != nil {
		return nil, err
	}
	defer st.unlock()
	out, rev, err := s.load(ctx, doc)
	if err != nil {
		return nil, err
	}
	st.known, st.rev, st.stale = true, rev, false
	return out, nil
}

type chunkRow struct {
	seq   int64
	value []byte
}

func (s *Store) load(ctx context.Context, doc string) (*persist.StoredDocument, int64, error) {
	octx, cancel := s.opContext(ctx)
	defer cancel()
	rows, err := s.pool.Query(octx, s.q.load, []byte(doc))
	if err != nil {
		return nil, 0, s.fail("load", doc, err)
	}
	defer rows.Close()
	out := newDocument()
	chunks := make(map[string][]chunkRow)
	var rev int64
	for rows.Next() {
		var (
			kind       string
			key, value []byte
			sum        int32
			n          int64
		)
		if err := rows.Scan(&kind, &key, &value, &sum, &n); err != nil {
			return nil, 0, s.fail("load", doc, err)
		}
		if kind == "revision" {
			rev = n
			continue
		}
		if value == nil {
			value = []byte{}
		}
		table := "items"
		if kind == "chunk" {
			table = "chunks"
		}
		if checksum(doc, kind, key, value) != sum {
			return nil, 0, s.damaged(table, doc, kind, key, n)
		}
		k := string(key)
		switch kind {
		case kindRecord:
			out.Records[k] = value
		case kindProjection:
			out.Projections[k] = value
		case kindAnswer:
			out.Answers[k] = value
		case kindSnapshot:
			d := out.Drafts[k]
			d.Snapshot = value
			out.Drafts[k] = d
		case "chunk":
			chunks[k] = append(chunks[k], chunkRow{seq: n, value: value})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, s.fail("load", doc, err)
	}
	for k, cs := range chunks {
		slices.SortFunc(cs, func(a, b chunkRow) int { return compare(a.seq, b.seq) })
		d := out.Drafts[k]
		d.Chunks = make([][]byte, len(cs))
		for i, c := range cs {
			d.Chunks[i] = c.value
		}
		out.Drafts[k] = d
	}
	return out, rev, nil
}

func compare(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// damaged is the error for a value that does not match its checksum.
func (s *Store) damaged(table, doc, kind string, key []byte, seq int64) error {
	k := kind + "/" + string(key)
	if kind == "chunk" || kind == "audit" {
		k = fmt.Sprintf("%s/%d", key, seq)
	}
	err := &persist.CorruptError{Bucket: s.schema + "." + table + "/" + doc, Key: k, Err: ErrChecksum}
	s.log.Error("postgres: a stored value is damaged; restore it from a backup", "doc", doc, "err", err)
	return err
}

// fail words the error of a call about doc. PostgreSQL's own reports of
// damaged data (SQLSTATE XX001, XX002) become a *persist.CorruptError
// naming the schema.
func (s *Store) fail(op, doc string, err error) error {
	if ce := s.corrupt(op, doc, err); ce != nil {
		return ce
	}
	if doc == "" {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	return fmt.Errorf("postgres: %s %q: %w", op, doc, err)
}

// corrupt returns a *persist.CorruptError if err is PostgreSQL's report
// of damaged data, else nil.
func (s *Store) corrupt(op, doc string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "XX001" || pgErr.Code == "XX002") {
		s.log.Error("postgres: the database reports damaged data", "op", op, "doc", doc, "err", err)
		return &persist.CorruptError{Bucket: s.schema, Err: err}
	}
	return nil
}

// Documents returns the ids of every document a non-empty Write was
// committed to, sorted.
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
	rows, err := s.pool.Query(octx, s.q.documents)
	if err != nil {
		return nil, s.fail("documents", "", err)
	}
	ids, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var id []byte
		err := r.Scan(&id)
		return string(id), err
	})
	if err != nil {
		return nil, s.fail("documents", "", err)
	}
	return ids, nil
}

// ReadAudit returns up to limit rows of decision's audit log after
// position after.
func (s *Store) ReadAudit(ctx context.Context, doc, decision string, after uint64, limit int) ([]persist.AuditRow, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if doc == "" || decision == "" || limit <= 0 || after >= math.MaxInt64 {
		return nil, nil
	}
	octx, cancel := s.opContext(ctx)
	defer cancel()
	rows, err := s.pool.Query(octx, s.q.audit, []byte(doc), []byte(decision), int64(after), limit)
	if err != nil {
		return nil, s.fail("audit of", doc, err)
	}
	defer rows.Close()
	var out []persist.AuditRow
	for rows.Next() {
		var (
			seq   int64
			value []byte
			sum   int32
		)
		if err := rows.Scan(&seq, &value, &sum); err != nil {
			return nil, s.fail("audit of", doc, err)
		}
		if value == nil {
			value = []byte{}
		}
		if checksum(doc, "audit", []byte(decision), value) != sum {
			return nil, s.damaged("audit", doc, "audit", []byte(decision), seq)
		}
		out = append(out, persist.AuditRow{Seq: uint64(seq), Value: value})
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("audit of", doc, err)
	}
	return out, nil
}

// DeleteDocument removes every row of doc, its audit logs included, in
// one transaction. Afterwards this Store knows doc as never written: its
// next Commit applies only if no other writer wrote doc meanwhile.
func (s *Store) DeleteDocument(ctx context.Context, doc string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := persist.CheckWrite(doc, nil, limits); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	st, err := s.doc(ctx, doc)
	if err != nil {
		return err
	}
	defer st.unlock()
	b := &pgx.Batch{}
	for _, q := range s.q.deleteDoc {
		b.Queue(q, []byte(doc))
	}
	if err := s.run(ctx, b, nil); err != nil {
		if !outcomeKnown(err) {
			// Deleted or not: the next Commit waits for a load.
			st.known, st.stale = false, true
		}
		return s.fail("delete", doc, err)
	}
	st.known, st.rev, st.stale = true, 0, false
	s.log.Info("postgres: document deleted", "doc", doc)
	return nil
}

// Close waits for the calls in flight, then closes the pool's
// connections. Commits that returned nil stay committed. Afterwards every
// method, Close included, returns persist.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return persist.ErrClosed
	}
	s.closed = true
	s.pool.Close()
	s.log.Debug("postgres: closed", "schema", s.schema)
	return nil
}
