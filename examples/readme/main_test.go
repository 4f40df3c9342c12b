package main

import (
	"bytes"
	"os"
	"testing"
)

// Example runs the README's program as it is written.
func Example() {
	main()
	// Output:
	// settled by ana
	// choices: [bolt]
	// marks: bolt/no-server:yes pg/no-server:no
}

// TestREADMEShowsThisProgram: the Go block of the README's "Use it"
// section is this package's main.go, byte for byte, so the README cannot
// drift from the program Example runs.
func TestREADMEShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	program, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	block, err := useItBlock(readme)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(block, program) {
		t.Fatalf("README.md's \"Use it\" Go block differs from examples/readme/main.go; copy main.go into the block\n--- README\n%s\n--- main.go\n%s", block, program)
	}
}

func TestUseItBlock(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		ok             bool
	}{
		{"the first go block of the section", "x\n## Use it\n\n```\ngo get\n```\n\n```go\npackage main\n```\n\n```go\nother\n```\n## Next\n", "package main\n", true},
		{"no section", "## Try it\n```go\npackage main\n```\n", "", false},
		{"no go block in the section", "## Use it\n```\ngo get\n```\n## Next\n```go\npackage main\n```\n", "", false},
		{"unclosed block", "## Use it\n```go\npackage main\n", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := useItBlock([]byte(tc.in))
			if (err == nil) != tc.ok || string(got) != tc.want {
				t.Fatalf("useItBlock = %q, %v; want %q, ok %v", got, err, tc.want, tc.ok)
			}
		})
	}
}
