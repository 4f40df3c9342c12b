// Package porcupinetest checks a test's history of operations for
// linearizability with porcupine and, when the check fails, keeps the
// history's visualization in a file that the failure names.
package porcupinetest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Check checks the history ops against model with porcupine, searching
// for at most budget, and fails t unless porcupine finds a
// linearization. The two ways to fail are told apart:
//
//   - Illegal: no order of the operations explains their outcomes; the
//     system broke what model promises.
//   - Unknown: the search did not end within budget; nothing was found
//     wrong, and nothing proven either (the history is too large or its
//     operations overlap too much for the budget).
//
// Either way the history and the longest linearizations found are written
// as porcupine's visualization (an HTML page) to a file that outlives the
// test, whose path the failure names: under the test's artifact directory
// with go test -artifacts (-outputdir sets where), otherwise in a fresh
// directory under os.TempDir. what names the history in the messages.
// Check returns how long the check took, for the test's log.
func Check(t testing.TB, what string, model porcupine.Model, ops []porcupine.Operation, budget time.Duration) time.Duration {
	t.Helper()
	took, failure := Verdict(t, what, model, ops, budget)
	if failure != "" {
		t.Fatal(failure)
	}
	return took
}

// Verdict is Check without failing t, for a test that adds its own
// account of the history to the failure: it returns how long the check
// took and, unless the history is linearizable, the failure's message,
// which names the visualization's file.
func Verdict(t testing.TB, what string, model porcupine.Model, ops []porcupine.Operation, budget time.Duration) (time.Duration, string) {
	t.Helper()
	return verdict(what, model, ops, budget, func() (string, error) { return artifactDir(t) })
}

// verdict is Verdict writing the visualization into the directory dir
// makes.
func verdict(what string, model porcupine.Model, ops []porcupine.Operation, budget time.Duration, dir func() (string, error)) (time.Duration, string) {
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
