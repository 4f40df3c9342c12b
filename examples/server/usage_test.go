package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestUsageListsEveryVariable: -h lists every ACCORD_* variable the
// server reads, so an operator finds them all without the source.
func TestUsageListsEveryVariable(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	read := regexp.MustCompile(`(?:Getenv|env)\("(ACCORD_[A-Z_]+)"`)
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range read.FindAllStringSubmatch(string(src), -1) {
			seen[m[1]] = true
		}
	}
	if len(seen) < 10 {
		t.Fatalf("found only %d variables read; the pattern no longer matches how the server reads them", len(seen))
	}
	for v := range seen {
		if !regexp.MustCompile(`(?m)^  ` + v + `\b`).MatchString(environment) {
			t.Errorf("-h does not list %s", v)
		}
	}
}
