package main

import (
	"context"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/accord-crdt/accord/examples/internal/logbuf"
	"github.com/accord-crdt/accord/internal/natstest"
)

// TestPagesSayWhatToTryOnceServing runs the three page nodes as `go run
// ./cluster` does: what to try next is printed only after every node has
// printed its page and links, and every node prints the same MCP token,
// the cluster's.
func TestPagesSayWhatToTryOnceServing(t *testing.T) {
	nats := natstest.RunCluster(t, 3)
	t.Chdir("..") // runPages builds ./server from the examples folder
	var addrs []string
	for range nodes {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, l.Addr().String())
		l.Close()
	}
	var out logbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	o := pagesOptions{Data: t.TempDir(), NATS: nats.URLs(), Level: "warn", Addrs: addrs, Out: &out}
	if raceEnabled {
		o.BuildFlags = []string{"-race"}
	}
	go func() { done <- runPages(ctx, o) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runPages: %v", err)
		}
	}()
	const next = "Open two of the pages above"
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(out.String(), next) {
		select {
		case err := <-done:
			t.Fatalf("runPages ended: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q after 3 minutes:\n%s", next, out.String())
		}
	}
	printed := out.String()
	said := strings.Index(printed, next)
	for _, addr := range addrs {
		if i := strings.Index(printed, "Accord is serving on http://"+addr+"/"); i < 0 || i > said {
			t.Errorf("the node on %s printed its page after what to try (at %d, said at %d):\n%s", addr, i, said, printed)
		}
	}
	tokens := map[string]bool{}
	for _, m := range regexp.MustCompile(`Authorization: Bearer (\S+)"`).FindAllStringSubmatch(printed, -1) {
		tokens[m[1]] = true
	}
	if len(tokens) != 1 || strings.Count(printed, "MCP (streamable HTTP)") != nodes {
		t.Errorf("the nodes printed MCP tokens %v, want one for all three:\n%s", tokens, printed)
	}
}
