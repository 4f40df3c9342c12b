// Command server is the Accord server the package's Node tests run
// against: sync/server on a bbolt store in -data, listening on -addr, with
// the member taken from a bearer token that is simply their login (ana
// and ben write, rita reads; anyone else is refused). It prints
// "listening <addr>" once it accepts connections and stops on SIGTERM or
// when its standard input closes (so a test that dies takes it along).
// -presence-silence shortens how long a connection's presence stands
// without a frame, for the test of silent connections.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/server"
)

var writers = map[string]bool{"ana": true, "ben": true, "rita": false}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	data := flag.String("data", "", "folder of the bbolt store (required)")
	silence := flag.Duration("presence-silence", 0, "how long a connection's presence stands without a frame (0: the server's default, 30 s)")
	flag.Parse()
	if *data == "" {
		log.Fatal("-data is required")
	}
	if err := os.MkdirAll(*data, 0o755); err != nil {
		log.Fatal(err)
	}
	store, err := boltstore.Open(filepath.Join(*data, "accord.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Options{
		Store:           store,
		PresenceSilence: *silence,
		Authorize: func(r *http.Request, doc string) (question.Member, error) {
			login := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			write, ok := writers[login]
			if !ok {
				return question.Member{}, server.ErrUnauthorized
			}
			return question.Member{Login: login, Write: write}, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/sync", srv)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	fmt.Printf("listening %s\n", ln.Addr())

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop <- syscall.SIGTERM
	}()
	<-stop
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	_ = hs.Shutdown(ctx)
	_ = store.Close()
}
