// Command server is the Accord server the package's Node tests run
// against: sync/server on a bbolt store in -data, listening on -addr, with
// the member taken from a bearer token that is simply their login (ana
// and ben write, rita reads; eve is forbidden, anyone else unauthorized;
// a document named missing-… does not exist). It prints
// "listening <addr>" once it accepts connections, then what it serves (to
// standard error), and stops on SIGTERM or Ctrl-C. Started in the
// background (`&`, standard input closed or detached) it keeps running.
// With -exit-with-stdin, which the package's tests set, it also stops when
// its standard input closes, so that a test that dies takes it along.
// -presence-silence shortens how long a connection's presence stands
// without a frame, for the test of silent connections.
//
// For the reconnect tests, POST /close?doc=D closes D's connections with
// 1012 as a document handed to another node does (Server.CloseDocument),
// and POST /fail-commit?doc=D makes D's next commit fail, after which the
// server closes D's connections with 1013.
package main

import (
	"context"
	"errors"
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
	"sync"
	"syscall"
	"time"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/boltstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/server"
)

var writers = map[string]bool{"ana": true, "ben": true, "rita": false}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	data := flag.String("data", "", "folder of the bbolt store (required)")
	silence := flag.Duration("presence-silence", 0, "how long a connection's presence stands without a frame (0: the server's default, 30 s)")
	exitWithStdin := flag.Bool("exit-with-stdin", false, "also stop when standard input closes (the tests set it, so a test that dies takes the server along)")
	flag.Parse()
	if *data == "" {
		log.Fatal("-data is required")
	}
	if err := os.MkdirAll(*data, 0o755); err != nil {
		log.Fatal(err)
	}
	bolt, err := boltstore.Open(filepath.Join(*data, "accord.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	store := &failing{Store: bolt, docs: map[string]bool{}}
	srv, err := server.New(server.Options{
		Store:           store,
		PresenceSilence: *silence,
		Authorize: func(r *http.Request, doc string) (question.Member, error) {
			login := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			if login == "eve" {
				return question.Member{}, errors.New("eve may not open this document")
			}
			write, ok := writers[login]
			if !ok {
				return question.Member{}, server.ErrUnauthorized
			}
			if strings.HasPrefix(doc, "missing-") {
				return question.Member{}, server.ErrUnknownDocument
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
	mux.HandleFunc("POST /close", func(w http.ResponseWriter, r *http.Request) {
		srv.CloseDocument(r.URL.Query().Get("doc"))
	})
	mux.HandleFunc("POST /fail-commit", func(w http.ResponseWriter, r *http.Request) {
		store.failNext(r.URL.Query().Get("doc"))
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	fmt.Printf("listening %s\n", ln.Addr())
	stops := "SIGTERM or Ctrl-C"
	if *exitWithStdin {
		stops += ", or when standard input closes"
	}
	fmt.Fprintf(os.Stderr, "accord test server: sync at ws://%s/sync?doc=NAME, data in %s\n"+
		"  members by bearer token (the token is the login): ana and ben write, rita reads, anyone else is refused\n"+
		"  stops on %s\n", ln.Addr(), *data, stops)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	if *exitWithStdin {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop <- syscall.SIGTERM
		}()
	}
	<-stop
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
	_ = hs.Shutdown(ctx)
	_ = store.Close()
}

// failing is the store whose next commit of a document fails when asked.
type failing struct {
	persist.Store
	mu   sync.Mutex
	docs map[string]bool
}

func (s *failing) failNext(doc string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.docs[doc] = true
}

func (s *failing) Commit(ctx context.Context, doc string, w *persist.Write) error {
	s.mu.Lock()
	fail := s.docs[doc]
	delete(s.docs, doc)
	s.mu.Unlock()
	if fail {
		return errors.New("commit failed on request")
	}
	return s.Store.Commit(ctx, doc, w)
}
