package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Schema. Every table is in the store's own schema ({s} below); ids and
// keys are bytea, since they may hold any bytes, and bytea orders as Go
// strings do.
//
//	documents(doc, revision)             one row per document with a Write
//	items(doc, kind, key, value, sum)    records, projections, answers, snapshots
//	chunks(doc, decision, seq, value, sum)  CRDT chunks, in seq order
//	audit(doc, decision, seq, value, sum)   audit rows, in seq order
//
// A document's revision changes with every Write: a new value of the
// revisions sequence, never reused, so a revision read before a delete
// never matches the document written afresh. advance is the fence: every
// Write starts with it, which moves the revision, on condition that it is
// still the one the writer knows (or unconditionally, for a writer that
// knows none), and otherwise raises SQLSTATE AC409, which aborts the
// Write's transaction. It also locks the document's row until the
// transaction ends, so the Writes of one document run one after the
// other, and the identity values of their chunks and audit rows grow in
// commit order. Every value carries a CRC-32C of its place and bytes
// (sum), checked when it is read.

// migrations[i] takes the schema from version i to i+1, in one
// transaction with the version's row in schema_version. They only go
// forward: a migration that shipped is never changed; a new one follows
// it.
var migrations = []string{
	`CREATE SEQUENCE {s}.revisions;

CREATE TABLE {s}.documents (
	doc      bytea PRIMARY KEY,
	revision bigint NOT NULL
);

CREATE TABLE {s}.items (
	doc   bytea NOT NULL,
	kind  text NOT NULL CHECK (kind IN ('record', 'projection', 'answer', 'snapshot')),
	key   bytea NOT NULL,
	value bytea NOT NULL,
	sum   integer NOT NULL,
	PRIMARY KEY (doc, kind, key)
);

CREATE TABLE {s}.chunks (
	doc      bytea NOT NULL,
	decision bytea NOT NULL,
	seq      bigint GENERATED ALWAYS AS IDENTITY,
	value    bytea NOT NULL,
	sum      integer NOT NULL,
	PRIMARY KEY (doc, decision, seq)
);

CREATE TABLE {s}.audit (
	doc      bytea NOT NULL,
	decision bytea NOT NULL,
	seq      bigint GENERATED ALWAYS AS IDENTITY,
	value    bytea NOT NULL,
	sum      integer NOT NULL,
	PRIMARY KEY (doc, decision, seq)
);

CREATE FUNCTION {s}.advance(p_doc bytea, p_expected bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	r bigint;
BEGIN
	IF p_expected IS NULL THEN
		INSERT INTO {s}.documents AS d (doc, revision)
		VALUES (p_doc, nextval('{s}.revisions'))
		ON CONFLICT (doc) DO UPDATE SET revision = nextval('{s}.revisions')
		RETURNING d.revision INTO r;
	ELSIF p_expected = 0 THEN
		INSERT INTO {s}.documents (doc, revision)
		VALUES (p_doc, nextval('{s}.revisions'))
		ON CONFLICT (doc) DO NOTHING
		RETURNING revision INTO r;
	ELSE
		UPDATE {s}.documents SET revision = nextval('{s}.revisions')
		WHERE doc = p_doc AND revision = p_expected
		RETURNING revision INTO r;
	END IF;
	IF r IS NULL THEN
		RAISE EXCEPTION 'the document changed since revision % was read', p_expected
			USING ERRCODE = 'AC409';
	END IF;
	RETURN r;
END
$$;`,
}

// sqlConflict is advance's SQLSTATE for a document whose revision moved.
const sqlConflict = "AC409"

// queries are the statements of one schema.
type queries struct {
	advance, dropChunks, putItems, dropAnswers, addChunks, addAudit string
	load, audit, documents                                          string
	deleteDoc                                                       []string
}

func newQueries(schema string) queries {
	q := func(sql string) string { return inSchema(sql, schema) }
	return queries{
		advance:    q(`SELECT {s}.advance($1, $2)`),
		dropChunks: q(`DELETE FROM {s}.chunks WHERE doc = $1 AND decision = ANY($2::bytea[])`),
		putItems: q(`INSERT INTO {s}.items (doc, kind, key, value, sum)
SELECT $1, u.kind, u.key, u.value, u.sum FROM unnest($2::text[], $3::bytea[], $4::bytea[], $5::integer[]) AS u(kind, key, value, sum)
ON CONFLICT (doc, kind, key) DO UPDATE SET value = excluded.value, sum = excluded.sum`),
		dropAnswers: q(`DELETE FROM {s}.items WHERE doc = $1 AND kind = 'answer' AND key = ANY($2::bytea[])`),
		addChunks: q(`INSERT INTO {s}.chunks (doc, decision, value, sum)
SELECT $1, u.decision, u.value, u.sum FROM unnest($2::bytea[], $3::bytea[], $4::integer[]) WITH ORDINALITY AS u(decision, value, sum, n)
ORDER BY u.n`),
		addAudit: q(`INSERT INTO {s}.audit (doc, decision, value, sum)
SELECT $1, u.decision, u.value, u.sum FROM unnest($2::bytea[], $3::bytea[], $4::integer[]) WITH ORDINALITY AS u(decision, value, sum, n)
ORDER BY u.n`),
		// One statement, so one snapshot: never part of a Write.
		load: q(`SELECT kind, key, value, sum, 0::bigint FROM {s}.items WHERE doc = $1
UNION ALL SELECT 'chunk', decision, value, sum, seq FROM {s}.chunks WHERE doc = $1
UNION ALL SELECT 'revision', NULL, NULL, 0, revision FROM {s}.documents WHERE doc = $1`),
		audit:     q(`SELECT seq, value, sum FROM {s}.audit WHERE doc = $1 AND decision = $2 AND seq > $3 ORDER BY seq LIMIT $4`),
		documents: q(`SELECT doc FROM {s}.documents ORDER BY doc`),
		// The document's row first: every transaction that writes a
		// document locks it first, so none waits on another in a cycle.
		deleteDoc: []string{
			q(`DELETE FROM {s}.documents WHERE doc = $1`),
			q(`DELETE FROM {s}.items WHERE doc = $1`),
			q(`DELETE FROM {s}.chunks WHERE doc = $1`),
			q(`DELETE FROM {s}.audit WHERE doc = $1`),
		},
	}
}

// inSchema puts the quoted schema name in place of {s}.
func inSchema(sql, schema string) string {
	return strings.ReplaceAll(sql, "{s}", pgx.Identifier{schema}.Sanitize())
}

// migrate brings schema to the last version of migrations, creating it if missing: in one
// transaction, under an advisory lock that other stores migrating the
// same schema wait for, so that of several servers starting together one
// migrates and the others find it done. It returns the version it found.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) (from int, err error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "accord/persist/postgres:"+schema); err != nil {
		return 0, fmt.Errorf("advisory lock: %w", err)
	}
	// CREATE ... IF NOT EXISTS would need the right to create even when
	// there is nothing to create: ask first.
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, inSchema("{s}.schema_version", schema)).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		var hasSchema bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&hasSchema); err != nil {
			return 0, err
		}
		if !hasSchema {
			if _, err := tx.Exec(ctx, inSchema(`CREATE SCHEMA {s}`, schema)); err != nil {
				return 0, err
			}
		}
		if _, err := tx.Exec(ctx, inSchema(`CREATE TABLE {s}.schema_version (
	version integer PRIMARY KEY,
	applied timestamptz NOT NULL DEFAULT now()
)`, schema)); err != nil {
			return 0, err
		}
	}
	if err := tx.QueryRow(ctx, inSchema(`SELECT coalesce(max(version), 0) FROM {s}.schema_version`, schema)).Scan(&from); err != nil {
		return 0, err
	}
	if from > len(migrations) {
		return from, fmt.Errorf("schema %q is at version %d, this build knows up to %d: %w", schema, from, len(migrations), ErrSchemaTooNew)
	}
	if from == len(migrations) {
		return from, nil
	}
	for v := from; v < len(migrations); v++ {
		// Without arguments pgx sends the simple protocol, which takes
		// several statements at once.
		if _, err := tx.Exec(ctx, inSchema(migrations[v], schema)); err != nil {
			return from, fmt.Errorf("migration to version %d: %w", v+1, err)
		}
		if _, err := tx.Exec(ctx, inSchema(`INSERT INTO {s}.schema_version (version) VALUES ($1)`, schema), v+1); err != nil {
			return from, fmt.Errorf("migration to version %d: %w", v+1, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return from, errors.Join(errors.New("commit of the migration"), err)
	}
	return from, nil
}
