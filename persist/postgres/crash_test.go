package postgres_test

// Crash safety against a real server. TestCrashKill runs its own test
// binary as a child (TestCrashChild, which acts only when crashEnv is
// set): the child commits to four documents from four goroutines, and
// prints a line once a Commit returned nil. The parent SIGKILLs it
// mid-stream, three times over, each child going on where the last one
// died; then every acknowledged Write must be in the database, and each
// Write is there whole or not at all.
//
//	READY        the store is open; the commits start
//	A <g> <i>    writer g's commit i returned nil
//	BAD <msg>    the child failed

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/pgtest"
	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/persist"
	"github.com/accord-crdt/accord/persist/postgres"
)

// crashEnv holds the child's crashConfig as JSON; it is set only in the
// child processes of TestCrashKill.
const crashEnv = "ACCORD_POSTGRES_CRASH_CHILD"

type crashConfig struct {
	URL   string
	Cycle int
}

const crashWriters = 4

// crashWrite is writer g's commit i of cycle c: a record, a chunk and an
// audit row, each named after the commit, and the writer's last projection.
func crashWrite(c, i int) *persist.Write {
	k := fmt.Sprintf("c%d-%d", c, i)
	return &persist.Write{
		Records:     []persist.Put{{Key: k, Value: []byte(k)}},
		Drafts:      []persist.DraftPut{{Decision: "d", Chunk: []byte(k)}},
		Projections: []persist.Put{{Key: "last", Value: []byte(k)}},
		Audit:       []persist.Put{{Key: "d", Value: []byte(k)}},
	}
}

// TestCrashChild is the child process of TestCrashKill; without crashEnv
// it does nothing.
func TestCrashChild(t *testing.T) {
	raw := os.Getenv(crashEnv)
	if raw == "" {
		return
	}
	emit := func(format string, args ...any) { fmt.Fprintf(os.Stdout, format+"\n", args...) }
	var cfg crashConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		emit("BAD config: %v", err)
		return
	}
	ctx := context.Background()
	s, err := postgres.Open(ctx, cfg.URL, nil)
	if err != nil {
		emit("BAD open: %v", err)
		return
	}
	for g := range crashWriters {
		if _, err := s.LoadDocument(ctx, fmt.Sprintf("doc-%d", g)); err != nil {
			emit("BAD load: %v", err)
			return
		}
	}
	emit("READY")
	var wg sync.WaitGroup
	for g := range crashWriters {
		wg.Go(func() {
			for i := 0; ; i++ {
				if err := s.Commit(ctx, fmt.Sprintf("doc-%d", g), crashWrite(cfg.Cycle, i)); err != nil {
					emit("BAD commit: %v", err)
					return
				}
				emit("A %d %d", g, i)
			}
		})
	}
	wg.Wait() // until killed
}

func TestCrashKill(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).Database(t)
	acked := make([]map[string]bool, crashWriters)
	for g := range acked {
		acked[g] = make(map[string]bool)
	}
	const cycles = 3
	for c := range cycles {
		raw, _ := json.Marshal(crashConfig{URL: url, Cycle: c})
		child := testutil.RunChild(t, "TestCrashChild", []string{crashEnv + "=" + string(raw)},
			time.Duration(200+150*c)*time.Millisecond, fmt.Sprintf("cycle %d", c))
		if !child.Killed {
			t.Fatalf("cycle %d: the child was not killed; its output:\n%s\n%s", c, strings.Join(child.Lines, "\n"), child.Stderr)
		}
		n := 0
		for _, line := range child.Lines {
			f := strings.Fields(line)
			switch {
			case len(f) > 0 && f[0] == "BAD":
				t.Fatalf("cycle %d: %s", c, line)
			case len(f) == 3 && f[0] == "A":
				g, _ := strconv.Atoi(f[1])
				acked[g][fmt.Sprintf("c%d-%s", c, f[2])] = true
				n++
			}
		}
		if n == 0 {
			t.Fatalf("cycle %d: no commit acknowledged before the kill", c)
		}
		t.Logf("cycle %d: %d commits acknowledged before SIGKILL", c, n)
	}

	s := open(t, url, postgres.DefaultSchema)
	for g := range crashWriters {
		doc := fmt.Sprintf("doc-%d", g)
		d := mustLoad(t, s, doc)
		for k := range acked[g] {
			if string(d.Records[k]) != k {
				t.Errorf("%s: acknowledged record %s lost", doc, k)
			}
		}
		// Whole or nothing: every Write that landed, acknowledged or not,
		// has its record, its chunk and its audit row.
		chunks := d.Drafts["d"].Chunks
		rows, err := s.ReadAudit(context.Background(), doc, "d", 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(chunks) != len(d.Records) || len(rows) != len(d.Records) {
			t.Errorf("%s: %d records, %d chunks, %d audit rows: a Write landed in part", doc, len(d.Records), len(chunks), len(rows))
		}
		for i, c := range chunks {
			if _, ok := d.Records[string(c)]; !ok || string(rows[i].Value) != string(c) {
				t.Errorf("%s: chunk %d %q without its record or audit row", doc, i, c)
			}
		}
		if len(d.Records) < len(acked[g]) || len(d.Records) > len(acked[g])+cycles {
			t.Errorf("%s: %d records for %d acknowledged commits", doc, len(d.Records), len(acked[g]))
		}
	}
}
