package cluster_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// checkBudget bounds each porcupine check of the failover and fault
// tests' histories.
const checkBudget = 60 * time.Second

// checkLinearizable checks the history ops against model with porcupine,
// searching for at most budget, and fails t unless porcupine finds a
// linearization. The two ways to fail are told apart:
//
//   - Illegal: no order of the operations explains their outcomes; the
//     cluster broke what model promises.
//   - Unknown: the search did not end within budget; nothing was found
//     wrong, and nothing proven either (the history is too large or its
//     operations overlap too much for the budget).
//
// Either way the history and the longest linearizations found are written
// as porcupine's visualization (an HTML page) to a file that outlives the
// test, whose path the failure names: under the test's artifact directory
// with go test -artifacts (-outputdir sets where), otherwise in a fresh
// directory under os.TempDir. what names the history in the messages. It
// returns how long the check took, for the test's log.
func checkLinearizable(t testing.TB, what string, model porcupine.Model, ops []porcupine.Operation, budget time.Duration) time.Duration {
	t.Helper()
	took, failure := linearizability(what, model, ops, budget, func() (string, error) { return artifactDir(t) })
	if failure != "" {
		t.Fatal(failure)
	}
	return took
}

// linearizability is checkLinearizable's check: it returns how long the
// check took and, unless the history is linearizable, the failure's
// message, having written the visualization into the directory dir
// makes.
func linearizability(what string, model porcupine.Model, ops []porcupine.Operation, budget time.Duration, dir func() (string, error)) (time.Duration, string) {
	start := time.Now()
	res := porcupine.CheckOperationsTimeout(model, ops, budget)
	took := time.Since(start)
	if res == porcupine.Ok {
		return took, ""
	}
	// Checked again, recording what the visualization shows: the check
	// that stops at the first failure is the faster one, so it goes first.
	_, info := porcupine.CheckOperationsVerbose(model, ops, budget)
	where := "no visualization: "
	if d, err := dir(); err != nil {
		where += err.Error()
	} else if path := filepath.Join(d, "porcupine-"+fileSafe(what)+".html"); porcupine.VisualizePath(model, info, path) != nil {
		where += "cannot write " + path
	} else {
		where = "history and longest linearizations: " + path
	}
	if res == porcupine.Illegal {
		return took, fmt.Sprintf("%s: not linearizable (porcupine: Illegal, %d operations, checked in %v): no order of the operations explains their outcomes; %s",
			what, len(ops), took.Round(time.Millisecond), where)
	}
	return took, fmt.Sprintf("%s: linearizability unknown (porcupine: %v): the check ran out of its %v budget on %d operations, so nothing was found wrong and nothing proven; %s",
		what, res, budget, len(ops), where)
}

// artifactDir is a directory for t's output files that outlives t: t's
// artifact directory when go test runs with -artifacts, otherwise a new
// directory under os.TempDir (t.TempDir and, without -artifacts,
// t.ArtifactDir are removed when the test ends).
func artifactDir(t testing.TB) (string, error) {
	if f := flag.Lookup("test.artifacts"); f != nil && f.Value.String() == "true" {
		return t.ArtifactDir(), nil
	}
	return os.MkdirTemp("", "accord-"+fileSafe(t.Name())+"-")
}

// fileSafe is s with every rune but letters, digits, '-' and '.' made '_'.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, s)
}

// TestLinearizabilityTellsIllegalFromUnknown: a history no order explains
// is reported Illegal, a check that runs out of its budget Unknown, and
// either failure names a file holding the visualization.
func TestLinearizabilityTellsIllegalFromUnknown(t *testing.T) {
	dir := func() (string, error) { return t.TempDir(), nil }
	twice := []porcupine.Operation{
		{ClientId: 0, Input: linIn{Kind: "submit"}, Call: 0, Output: linOut{OK: true, Gen: 1}, Return: 10},
		{ClientId: 1, Input: linIn{Kind: "submit"}, Call: 5, Output: linOut{OK: true, Gen: 1}, Return: 15},
	}
	// A model whose every step waits for the check's end: the search
	// never finishes within any budget.
	stuck := linModel
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
		{"illegal", linModel, "not linearizable (porcupine: Illegal"},
		{"unknown", stuck, "linearizability unknown (porcupine: Unknown)"},
	} {
		_, msg := linearizability(tc.name, tc.model, twice, 100*time.Millisecond, dir)
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
	if _, msg := linearizability("legal", linModel, twice[:1], time.Second, dir); msg != "" {
		t.Errorf("a linearizable history: %q", msg)
	}
}
