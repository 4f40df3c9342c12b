package docblock

import (
	"fmt"
	"slices"
	"testing"
)

func TestBlocks(t *testing.T) {
	md := "# T\n\n```sh\n# a comment\nmake run\n```\n\n1. A step:\n\n   ```\n   go run ./server \\\n     -addr x\n   ```\n````text\n```\n````\n"
	got, err := Blocks([]byte(md))
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{Info: "sh", Line: 3, End: 6, Body: "# a comment\nmake run\n", First: "make run"},
		{Info: "", Line: 10, End: 13, Body: "go run ./server \\\n  -addr x\n", First: "go run ./server \\"},
		{Info: "text", Line: 14, End: 16, Body: "```\n", First: "```"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Blocks = %+v\nwant %+v", got, want)
	}
	if _, err := Blocks([]byte("```sh\nmake\n")); err == nil {
		t.Fatal("an unclosed block is not an error")
	}
	if c := Commands(want[1].Body); len(c) != 1 || c[0] != "go run ./server    -addr x" {
		t.Fatalf("Commands = %q", c)
	}
}

func TestWords(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`A=1 go run ./server -addr 127.0.0.1:8081 # a comment`, `["A=1" "go" "run" "./server" "-addr" "127.0.0.1:8081"]`},
		{`curl -H "Authorization: Bearer $T" 'http://h/a?x=$Y'`, `["curl" "-H" "Authorization: Bearer $T" "http://h/a?x=$$Y"]`},
		{`echo a#b`, `["echo" "a#b"]`},
		{`T=$(openssl rand -hex 32) make run`, `["T=$(openssl rand -hex 32)" "make" "run"]`},
		{`curl -o "accord-$(date -u +%Y).db" x`, `["curl" "-o" "accord-$(date -u +%Y).db" "x"]`},
	} {
		w, err := Words(tc.in)
		if err != nil || fmt.Sprintf("%q", w) != tc.want {
			t.Errorf("Words(%s) = %q, %v; want %s", tc.in, w, err, tc.want)
		}
	}
	if _, err := Words(`echo "open`); err == nil {
		t.Error("an open quote is not an error")
	}
	if _, err := Words(`echo $(date`); err == nil {
		t.Error("an open $( is not an error")
	}
}
