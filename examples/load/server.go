package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/server"
)

// runServer is the child: the sync server on a bbolt file, every member a
// writer.
func runServer(addr, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	store, err := boltstore.Open(filepath.Join(dir, "accord.db"), nil)
	if err != nil {
		return err
	}
	defer store.Close()
	srv, err := server.New(server.Options{
		Store:  store,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Authorize: func(r *http.Request, doc string) (question.Member, error) {
			return question.Member{Login: r.URL.Query().Get("member"), Write: true}, nil
		},
		// The runs measure the server, not its abuse limits: a writer
		// sends as fast as its replies come back, and the memory run
		// opens 100 connections as one member.
		FrameRate: -1, ByteRate: -1, MaxMemberConnections: -1,
	})
	if err != nil {
		return err
	}
	if path := os.Getenv("ACCORD_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	hs := &http.Server{Addr: addr, Handler: srv}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		hs.Shutdown(sctx)
	}()
	if err := hs.ListenAndServe(); err != http.ErrServerClosed {
		return err
	}
	return nil
}
