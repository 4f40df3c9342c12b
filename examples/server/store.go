package main

// Keeping decisions in PostgreSQL: with ACCORD_POSTGRES_URL set, the
// server keeps its decisions in that database (persist/postgres, schema
// "accord", created on first start) instead of the bbolt file under
// -data; the demo's plan and Chat stay in plan.db under -data. Several
// servers may share the database: each document's commits are fenced on
// the revision its server loaded, so a server that another one overtook on
// a document can no longer write it, while sending each document's
// clients to one server is the host's routing (docs/SCALING.md). Backups
// are PostgreSQL's own (docs/OPERATIONS.md).

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"

	"github.com/accord-crdt/accord/persist/postgres"
)

// openPostgres opens the PostgreSQL store at url for a server alone (not
// in a NATS cluster).
func openPostgres(ctx context.Context, url string, demo demoOptions, log *slog.Logger) (*nodeStore, error) {
	if demo.Cluster.NATS != "" {
		return nil, errors.New("ACCORD_POSTGRES_URL and -nats (ACCORD_NATS) both name a store: choose one")
	}
	s, err := postgres.Open(ctx, url, &postgres.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	log.Info("decisions kept in PostgreSQL", "schema", postgres.DefaultSchema)
	return &nodeStore{Store: pgStore{Store: s, dir: demo.Dir}}, nil
}

// pgStore is the PostgreSQL store of a server whose data folder keeps the
// rest: the plan's store (keepPlan) opens plan.db beside Path.
type pgStore struct {
	*postgres.Store
	dir string
}

// Path is a name in the data folder; no file of that name is made.
func (s pgStore) Path() string { return filepath.Join(s.dir, "postgres") }

// pgBackup answers POST /admin/backup of a server on PostgreSQL: the
// database is backed up with PostgreSQL's tools.
func pgBackup() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "this server keeps its decisions in PostgreSQL: back up the database with pg_dump or a base backup (docs/OPERATIONS.md)", http.StatusNotFound)
	})
}
