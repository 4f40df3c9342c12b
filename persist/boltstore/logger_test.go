package boltstore_test

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/accord-crdt/accord/persist/boltstore"
)

// TestStartupLogIsClean opens a store with a logger at debug level: bbolt's
// own startup line, which prints its options, must come out formatted.
func TestStartupLogIsClean(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	path := filepath.Join(t.TempDir(), "accord.db")
	for range 2 { // creating the file, then opening it again
		s, err := boltstore.Open(path, &boltstore.Options{Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	out := buf.String()
	if !strings.Contains(out, "with options") || !strings.Contains(out, "Logger: 0x") {
		t.Fatalf("no startup line with the options in the log:\n%s", out)
	}
	if strings.Contains(out, "%!") {
		t.Fatalf("the log has a formatting error:\n%s", out)
	}
}
