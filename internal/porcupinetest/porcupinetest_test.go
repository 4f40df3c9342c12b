package porcupinetest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// counter is the model of a counter whose every increment returns the
// count after it.
var counter = porcupine.Model{
	Init: func() any { return 0 },
	Step: func(st, in, out any) (bool, any) {
		n := st.(int) + 1
		return out.(int) == n, n
	},
	DescribeOperation: func(in, out any) string { return fmt.Sprintf("inc → %d", out) },
}

// TestVerdictTellsIllegalFromUnknown: a history no order explains is
// reported Illegal, a check that runs out of its budget Unknown, and
// either failure names a file holding the visualization.
func TestVerdictTellsIllegalFromUnknown(t *testing.T) {
	dir := func() (string, error) { return t.TempDir(), nil }
	// Two overlapping increments that both saw the count go to 1.
	twice := []porcupine.Operation{
		{ClientId: 0, Input: "inc", Call: 0, Output: 1, Return: 10},
		{ClientId: 1, Input: "inc", Call: 5, Output: 1, Return: 15},
	}
	// A model whose every step waits for the check's end: the search
	// never finishes within any budget.
	stuck := counter
	stuck.Step = nil
	stuck.StepContext = func(ctx context.Context, st, in, out any) (bool, any) {
		<-ctx.Done()
		return false, st
	}
	for _, tc := range []struct {
		name  string
		model porcupine.Model
		want  string
	}{
		{"illegal", counter, "not linearizable (porcupine: Illegal"},
		{"unknown", stuck, "linearizability unknown (porcupine: Unknown)"},
	} {
		_, msg := verdict(tc.name, tc.model, twice, 100*time.Millisecond, dir)
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %q, want it to say %q", tc.name, msg, tc.want)
			continue
		}
		_, path, ok := strings.Cut(msg, "history and longest linearizations: ")
		if !ok {
			t.Errorf("%s: %q names no visualization", tc.name, msg)
			continue
		}
		if page, err := os.ReadFile(path); err != nil || !strings.Contains(string(page), "<html") {
			t.Errorf("%s: the visualization at %s: %d bytes, %v", tc.name, path, len(page), err)
		}
	}
	legal := []porcupine.Operation{
		{ClientId: 0, Input: "inc", Call: 0, Output: 1, Return: 10},
		{ClientId: 1, Input: "inc", Call: 5, Output: 2, Return: 15},
	}
	if _, msg := verdict("legal", counter, legal, time.Second, dir); msg != "" {
		t.Errorf("a linearizable history: %q", msg)
	}
}

// TestCheckPassesALinearizableHistory: Check lets a linearizable history
// through without failing its test.
func TestCheckPassesALinearizableHistory(t *testing.T) {
	Check(t, "one increment", counter, []porcupine.Operation{{ClientId: 0, Input: "inc", Call: 0, Output: 1, Return: 1}}, time.Second)
}

// TestFileSafe: a test's name with subtests and spaces makes one path
// element.
func TestFileSafe(t *testing.T) {
	if got, want := fileSafe("TestX/cycle 3: a→b.html"), "TestX_cycle_3__a_b.html"; got != want {
		t.Errorf("fileSafe = %q, want %q", got, want)
	}
}
