// Command server is Accord's example collaboration server: the sync
// protocol over WebSocket at /sync, decisions stored in bbolt under a
// local folder.
//
// Its settings come from flags and ACCORD_* environment variables; -h
// lists them all (environment, below).
//
// POST /admin/backup answers a consistent copy of the bbolt file, taken
// while the server serves (docs/OPERATIONS.md: backup and restore). Without
// ACCORD_ADMIN_TOKEN the endpoint does not exist.
//
// At start it prints a sign-in link per demo member (signin.go): ana and
// ben write, rita only reads. On a loopback address (or with
// ACCORD_DEMO_LINKS=1) the page at / offers the same links to someone not
// signed in; elsewhere it says to ask the operator for one. A deterministic demo Planner (no network, no model) opens
// decisions, asks a question and acts on the answers people save. A demo
// research host runs research and investigations (a deterministic fake
// that takes a few seconds; Ana has a paired machine, Ben none), and demo
// personas answer when asked (research.go, personas.go).
package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/accord-crdt/accord/crdt"
	"github.com/accord-crdt/accord/persist/boltstore"
)

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// environment is what -h says of the ACCORD_* variables, after the
// flags. TestUsageListsEveryVariable holds it to every variable the
// server reads.
const environment = `
Environment (a flag, where there is one, wins):
  ACCORD_ADDR  (-addr)  listen address, default 127.0.0.1:8080
  ACCORD_DATA  (-data)  data folder, default ./data
  ACCORD_LOG   (-log)   log level: debug, info, warn, error (default info)
  ACCORD_ADMIN_TOKEN    enables POST /admin/backup, GET /admin/audit and
                        /admin/rotate-session-key for a bearer of this token
  ACCORD_MCP_TOKEN      bearer token of the MCP endpoint /mcp (default: the one kept in
                        DATA/mcp.token, made on first start and printed)
  ACCORD_MCP_DOCS       limits that token to these documents (comma-separated)
  ACCORD_MCP_PROGRESS   how often a waiting MCP call (await_answers, ask) sends progress
                        when its request asks for it (default 15s)
  ACCORD_SESSION_KEY    hex key signing sign-in links and sessions instead of DATA/session.key
                        (a cluster's nodes share the cluster's; one set here must match it)
  ACCORD_DEMO_LINKS     1 lists the demo members' sign-in links on the page to anyone, as
                        it does anyway when the server listens on a loopback address
  ACCORD_SYNC_LIMITS    off turns off the sync server's rates per connection and its cap on
                        connections per member (load tools only)
  ACCORD_TRUST_MEMBER_PARAM  1 takes the member from ?member= of requests without a
                        session: anyone is anyone (load tools on your own machine only)
  ACCORD_UNSAFE_NOSYNC  1 commits without fsync: a crash can lose acknowledged work
                        (for measuring what durability costs, never for use)
  ACCORD_POSTGRES_URL   keep decisions in this PostgreSQL database (postgres://user@host/db)
                        instead of bbolt under DATA; servers may share it (store.go)
  ACCORD_PERSONAS             0 turns off the demo personas (demo:lily, demo:omar)
  ACCORD_RESEARCH_DELAY       how long demo research takes (default 4s)
  ACCORD_INVESTIGATION_DELAY  how long a demo investigation takes (default 6s)
  ACCORD_PERSONA_DELAY        how soon an asked persona answers (default 3s)
  ACCORD_NATS  (-nats)  NATS URLs: join a cluster sharing decisions in JetStream
                        instead of bbolt (cluster.go, docs/OPERATIONS.md)
  ACCORD_NODE  (-node)  this node's name in the cluster (default host:port)
  ACCORD_NODE_URL  (-node-url)  where the other nodes reach this one
  ACCORD_NATS_REPLICAS  (-nats-replicas)  JetStream replicas (default 3; 1 for one NATS server)
  ACCORD_LEASE_TTL  (-lease-ttl)  how long a document's lease outlives its node
`

func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprintf(out, "Usage: %s [flags]\n\nFlags:\n", filepath.Base(os.Args[0]))
	flag.PrintDefaults()
	fmt.Fprint(out, environment)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", env("ACCORD_ADDR", "127.0.0.1:8080"), "listen address")
	data := flag.String("data", env("ACCORD_DATA", "./data"), "data folder (bbolt file inside)")
	level := flag.String("log", env("ACCORD_LOG", "info"), "log level")
	clustered := clusterFlags()
	flag.Usage = usage
	flag.Parse()
	// automerge's core allocates from every thread that runs a cgo call;
	// two arenas keep freed memory reusable instead of spread over many.
	if os.Getenv("MALLOC_ARENA_MAX") == "" {
		crdt.LimitAllocatorArenas(2)
	}

	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("log level %q: %w", *level, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	demo := demoFromEnv(*data)
	demo.Cluster = *clustered
	return serveDemo(ctx, ln, demo, log, os.Stdout)
}

// serve runs the server on ln with its data in the folder data until ctx
// ends, then shuts down gracefully: the Planner's work stops, the sync
// server commits everything it acknowledged, and the store is closed. The
// browser tests run it in-process, and restart it on the same folder.
func serve(ctx context.Context, ln net.Listener, data string, log *slog.Logger, out io.Writer) error {
	return serveDemo(ctx, ln, demoFromEnv(data), log, out)
}

// serveDemo is serve with the demo's research and personas configured
// (the browser tests shorten their delays).
func serveDemo(ctx context.Context, ln net.Listener, demo demoOptions, log *slog.Logger, out io.Writer) error {
	data := demo.Dir
	defer ln.Close()
	demo.DemoLinks = demo.DemoLinks || loopback(ln.Addr())
	store, err := openStore(ctx, demo, ln, log) // bbolt, PostgreSQL (store.go) or the cluster's stream (cluster.go)
	if err != nil {
		return err
	}
	defer store.close()

	if store.host != nil { // a cluster's nodes share the session key and MCP token
		if err := store.host.shareSecrets(ctx, &demo, log); err != nil {
			return err
		}
	}
	app, err := newApp(store.forApp(), log, demo)
	if err != nil {
		return err
	}
	defer app.closePlan()
	mux := http.NewServeMux()
	mux.Handle("/admin/backup", store.backup(os.Getenv("ACCORD_ADMIN_TOKEN"), log))
	mux.Handle("/admin/audit", app.auditHandler(os.Getenv("ACCORD_ADMIN_TOKEN")))
	mux.Handle("/", app.handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := app.withMCP(hs, ln.Addr().String(), log, out); err != nil {
		return err
	}
	if hs.Handler, err = store.route(ctx, app, hs.Handler, log); err != nil {
		return err
	}
	hs.Handler = app.refusingMCP(hs.Handler, log)       // mcp.go
	hs.Handler = app.sessions.sameSite(log, hs.Handler) // signin.go
	sweepCtx, stopSweep := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		app.sessions.sweepLoop(sweepCtx, app)
	}()
	defer func() { stopSweep(); <-swept }() // before the plan and the store close

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	addr := ln.Addr().String()
	log.Info("accord server listening", "url", "http://"+addr+"/", "data", data)
	fmt.Fprintf(out, "Accord is serving on http://%s/ (data in %s)\n", addr, data)
	fmt.Fprintln(out, "Open a link to sign in as a demo member (each works for 30 days):")
	for _, p := range personas {
		role := "writes"
		if !p.Write {
			role = "reads only"
		}
		fmt.Fprintf(out, "  %s (%s): %s\n", p.Name, role, app.sessions.invite("http://"+addr, p))
	}
	if !demo.DemoLinks {
		fmt.Fprintln(out, "The page does not list these links, since the server is reachable beyond this machine: hand them out yourself (ACCORD_DEMO_LINKS=1 lists them).")
	}

	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	case <-ctx.Done():
	}
	log.Info("shutting down")
	if demo.crashOnStop {
		store.cut() // as if killed: no handoff, no last commit reaches NATS
	} else if err := store.handOff(); err != nil {
		log.Warn("handoff", "err", err)
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := app.shutdown(shutCtx); err != nil {
		log.Error("shutdown", "err", err)
	}
	return hs.Shutdown(shutCtx)
}

// handler is everything the server serves: the sync protocol and the API
// (app.routes), and the web page at /.
func (a *app) handler() http.Handler {
	mux := http.NewServeMux()
	a.routes(mux)
	a.sessions.routes(mux, a, os.Getenv("ACCORD_ADMIN_TOKEN"))
	mux.Handle("/", webHandler())
	return mux
}

// backupHandler serves POST /admin/backup to a bearer of token: a hot copy
// of the store's file. The copy is first written to a temporary file (fast,
// so bbolt's read transaction, which keeps freed pages from being reused,
// stays short whatever the client's speed), then sent with its length, so
// a client can tell a cut-off download from a whole one.
// Without a token the endpoint is disabled: every request gets 404.
func backupHandler(store *boltstore.Store, token string, log *slog.Logger) http.Handler {
	if token != "" {
		log.Info("admin backup endpoint enabled", "path", "/admin/backup")
	}
	return adminOnly(token, "backups", http.MethodPost, func(w http.ResponseWriter, r *http.Request) {
		dir, err := os.MkdirTemp("", "accord-backup-")
		if err != nil {
			log.Error("backup", "err", err)
			http.Error(w, "cannot take a backup", http.StatusInternalServerError)
			return
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "accord.db")
		n, err := store.BackupFile(r.Context(), path)
		if err != nil {
			log.Error("backup", "err", err)
			http.Error(w, "cannot take a backup", http.StatusInternalServerError)
			return
		}
		f, err := os.Open(path)
		if err != nil {
			log.Error("backup", "err", err)
			http.Error(w, "cannot take a backup", http.StatusInternalServerError)
			return
		}
		defer f.Close()
		name := "accord-" + time.Now().UTC().Format("20060102T150405Z") + ".db"
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
		w.Header().Set("Content-Length", fmt.Sprint(n))
		w.Header().Set("Cache-Control", "no-store")
		if _, err := io.Copy(w, f); err != nil {
			log.Warn("backup: sending the copy", "err", err)
			return
		}
		log.Info("backup sent", "bytes", n, "remote", r.RemoteAddr)
	})
}

// adminOnly serves h, for method only, to a bearer of the admin token
// (ACCORD_ADMIN_TOKEN). Without a token the endpoint is disabled: every
// request gets 404, saying what it would serve.
func adminOnly(token, what, method string, h http.HandlerFunc) http.Handler {
	if token == "" {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, what+" over HTTP are disabled: start the server with ACCORD_ADMIN_TOKEN set", http.StatusNotFound)
		})
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="accord-admin"`)
			http.Error(w, "a bearer token (ACCORD_ADMIN_TOKEN) is required", http.StatusUnauthorized)
			return
		}
		if r.Method != method {
			w.Header().Set("Allow", method)
			http.Error(w, method+" only", http.StatusMethodNotAllowed)
			return
		}
		h(w, r)
	})
}
