package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/jetstream"
)

// Two writers that loaded the same state: the first CommitAt wins, the
// second is refused and applies nothing, and loads again.
func ExampleStore_CommitAt() {
	// An embedded JetStream server; in service, a NATS cluster's URLs.
	dir, err := os.MkdirTemp("", "accord-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		panic(err)
	}
	go srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		panic("nats-server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	ctx := context.Background()
	s, err := jetstream.Open(ctx, nc, &jetstream.Options{Stream: "EXAMPLE", Memory: true})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	_, head, _ := s.LoadDocumentHead(ctx, "plan-1") // both writers read head 0
	save := func(by string) *persist.Write {
		return &persist.Write{Records: []persist.Put{{Key: "q1", Value: []byte("settled by " + by)}}}
	}
	_, err = s.CommitAt(ctx, "plan-1", save("ana"), head)
	fmt.Println("ana:", err)
	_, err = s.CommitAt(ctx, "plan-1", save("ben"), head)
	fmt.Println("ben conflict:", errors.Is(err, jetstream.ErrConflict), errors.Is(err, persist.ErrConflict))

	d, head, _ := s.LoadDocumentHead(ctx, "plan-1")
	fmt.Printf("%s (head %d)\n", d.Records["q1"], head)
	// Output:
	// ana: <nil>
	// ben conflict: true true
	// settled by ana (head 2)
}
