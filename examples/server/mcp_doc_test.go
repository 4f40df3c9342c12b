package main

// docs/MCP.md's shell commands are run here as written: every ```sh block
// is read in order, its variables set to what the doc says they hold, and
// each curl command sent as the same HTTP request to a test server in
// place of 127.0.0.1:8080. A command the server would refuse (a stale
// ?member=, a route that needs a token sent without one) fails the test.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/accord-crdt/accord/examples/internal/docblock"
)

// docHost is the address the docs' commands name.
const docHost = "127.0.0.1:8080"

// docLine is one line of a doc's shell block: an assignment of name
// (whose value the doc only describes) or a command's words.
type docLine struct {
	assign string
	words  []string
}

// shellBlocks returns the lines of every ```sh block of md, in order,
// with comments dropped, lines continued by a trailing backslash joined,
// and each split into words as the shell does. $NAME and ${NAME} are
// kept for expand; single quotes keep a $ as it is.
func shellBlocks(md []byte) ([]docLine, error) {
	blocks, err := docblock.Blocks(md)
	if err != nil {
		return nil, err
	}
	var out []docLine
	for _, b := range blocks {
		if b.Info != "sh" {
			continue
		}
		for _, line := range docblock.Commands(b.Body) {
			words, err := docblock.Words(line)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", line, err)
			}
			switch {
			case len(words) == 0:
			case len(words) == 1 && assignment.MatchString(words[0]):
				name, _, _ := strings.Cut(words[0], "=")
				out = append(out, docLine{assign: name})
			default:
				out = append(out, docLine{words: words})
			}
		}
	}
	return out, nil
}

var (
	assignment = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)
	variable   = regexp.MustCompile(`\$(?:\{([A-Z_][A-Z0-9_]*)\}|([A-Z_][A-Z0-9_]*))`)
)

// expand replaces $NAME and ${NAME} in word with vars, failing on a
// name the doc never assigned.
func expand(word string, vars map[string]string) (string, error) {
	var err error
	out := variable.ReplaceAllStringFunc(strings.ReplaceAll(word, "$$", "\x00"), func(m string) string {
		sub := variable.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		v, ok := vars[name]
		if !ok && err == nil {
			err = fmt.Errorf("$%s is used before the doc says what it holds", name)
		}
		return v
	})
	return strings.ReplaceAll(out, "\x00", "$"), err
}

// curlRequest builds the request a curl command sends. It knows the
// flags the docs use (-X, -H, -d and the quiet -f, -s, -S) and refuses
// any other, so that a doc cannot hold a command this test does not run.
func curlRequest(words []string, vars map[string]string) (*http.Request, error) {
	if len(words) == 0 || words[0] != "curl" {
		return nil, fmt.Errorf("%q is not a curl command", strings.Join(words, " "))
	}
	method, target, body := "", "", ""
	header := http.Header{}
	for i := 1; i < len(words); i++ {
		w, err := expand(words[i], vars)
		if err != nil {
			return nil, err
		}
		arg := func() (string, error) {
			if i+1 >= len(words) {
				return "", fmt.Errorf("%s needs a value", w)
			}
			i++
			return expand(words[i], vars)
		}
		switch {
		case w == "-X" || w == "--request":
			if method, err = arg(); err != nil {
				return nil, err
			}
		case w == "-H" || w == "--header":
			h, err := arg()
			if err != nil {
				return nil, err
			}
			k, v, ok := strings.Cut(h, ":")
			if !ok {
				return nil, fmt.Errorf("header %q has no colon", h)
			}
			header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		case w == "-d" || w == "--data":
			if body, err = arg(); err != nil {
				return nil, err
			}
		case strings.HasPrefix(w, "-") && strings.Trim(w[1:], "fsS") == "" && len(w) > 1:
		case strings.HasPrefix(w, "-"):
			return nil, fmt.Errorf("curl flag %s is not one this test runs", w)
		case target == "":
			target = w
		default:
			return nil, fmt.Errorf("a second URL %q", w)
		}
	}
	if target == "" {
		return nil, errors.New("curl names no URL")
	}
	if method == "" {
		method = http.MethodGet
		if body != "" {
			method = http.MethodPost
		}
	}
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != "" && header.Get("Content-Type") == "" {
		header.Set("Content-Type", "application/x-www-form-urlencoded") // as curl -d sends
	}
	req.Header = header
	return req, nil
}

func TestShellBlocks(t *testing.T) {
	md := "text `curl not this`\n```sh\nTOKEN=v1.x…   # what it holds\ncurl -fsS -X POST \\\n  -H \"Authorization: Bearer $TOKEN\" 'http://h/a?b=1&c=$D' # done\n\n```\n```json\n{}\n```\n```sh\ncurl -H \"X: ${TOKEN}\" http://h/b\n```\n"
	got, err := shellBlocks([]byte(md))
	if err != nil {
		t.Fatal(err)
	}
	want := []docLine{
		{assign: "TOKEN"},
		{words: []string{"curl", "-fsS", "-X", "POST", "-H", "Authorization: Bearer $TOKEN", "http://h/a?b=1&c=$$D"}},
		{words: []string{"curl", "-H", "X: ${TOKEN}", "http://h/b"}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("shellBlocks = %q\nwant %q", got, want)
	}
}

func TestCurlRequest(t *testing.T) {
	vars := map[string]string{"TOKEN": "tok"}
	for _, tc := range []struct {
		cmd                    string
		method, url, auth, err string
	}{
		{`curl -fsS -X POST -H "Authorization: Bearer $TOKEN" http://h/a`, "POST", "http://h/a", "Bearer tok", ""},
		{`curl -H "Authorization: Bearer ${TOKEN}" 'http://h/p?doc=plan-1'`, "GET", "http://h/p?doc=plan-1", "Bearer tok", ""},
		{`curl 'http://h/a?x=$TOKEN'`, "GET", "http://h/a?x=$TOKEN", "", ""},
		{`curl -d '{}' http://h/a`, "POST", "http://h/a", "", ""},
		{`curl -H "Authorization: Bearer $OTHER" http://h/a`, "", "", "", "$OTHER is used before"},
		{`curl -k http://h/a`, "", "", "", "-k is not one"},
		{`curl -fsS`, "", "", "", "names no URL"},
		{`wget http://h/a`, "", "", "", "not a curl command"},
	} {
		words, err := docblock.Words(tc.cmd)
		if err != nil {
			t.Fatal(err)
		}
		req, err := curlRequest(words, vars)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error with %q", tc.cmd, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.cmd, err)
			continue
		}
		if req.Method != tc.method || req.URL.String() != tc.url || req.Header.Get("Authorization") != tc.auth {
			t.Errorf("%s: %s %s (Authorization %q), want %s %s (%q)", tc.cmd, req.Method, req.URL, req.Header.Get("Authorization"), tc.method, tc.url, tc.auth)
		}
	}
}

// TestMCPDocCommands runs docs/MCP.md's shell commands, in order, against
// a server started as the doc's reader starts it. $TOKEN is what the doc
// says: the invite= value of Ana's sign-in link, as the server printed it
// at start. Every command must be answered 200 with JSON, as curl -f
// needs; the doc must keep a command for each route it shows a script
// using.
func TestMCPDocCommands(t *testing.T) {
	md, err := os.ReadFile("../../docs/MCP.md")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := shellBlocks(md)
	if err != nil {
		t.Fatalf("docs/MCP.md: %v", err)
	}
	s, out := startListening(t, "127.0.0.1:0")
	m := regexp.MustCompile(`Ana \(writes\): http://\S+/signin\?invite=(\S+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("the server printed no link for Ana:\n%s", out)
	}
	known := map[string]string{"TOKEN": m[1]}

	vars := map[string]string{}
	var ran []string
	for _, l := range lines {
		if l.assign != "" {
			v, ok := known[l.assign]
			if !ok {
				t.Fatalf("docs/MCP.md sets $%s, which this test does not know how to fill in", l.assign)
			}
			vars[l.assign] = v
			continue
		}
		cmd := strings.Join(l.words, " ")
		req, err := curlRequest(l.words, vars)
		if err != nil {
			t.Fatalf("docs/MCP.md: %s: %v", cmd, err)
		}
		if req.URL.Host != docHost {
			t.Fatalf("docs/MCP.md: %s: names %s, want the example's %s", cmd, req.URL.Host, docHost)
		}
		req.URL.Host = s.addr
		res, err := plainTransport.RoundTrip(req)
		if err != nil {
			t.Fatalf("docs/MCP.md: %s: %v", cmd, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !json.Valid(b) {
			t.Fatalf("docs/MCP.md: %s: answered %d %s, want 200 with JSON", cmd, res.StatusCode, b)
		}
		ran = append(ran, req.Method+" "+req.URL.Path)
	}
	for _, want := range []string{"POST /api/demo/start", "POST /api/demo/rewrite", "GET /api/plan"} {
		if !slices.Contains(ran, want) {
			t.Errorf("docs/MCP.md has no command for %s (ran %v)", want, ran)
		}
	}
}

// TestDocsNameNoMemberParam: the server never takes the member from
// ?member= (TestMemberComesFromTheSession), so the docs a reader follows
// to reach the page and its routes must not tell them to.
func TestDocsNameNoMemberParam(t *testing.T) {
	for _, path := range []string{"../../docs/MCP.md", "web/README.md"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "member=") {
				t.Errorf("%s:%d names the member in the URL, which the server ignores: %s", path, i+1, line)
			}
		}
	}
}
