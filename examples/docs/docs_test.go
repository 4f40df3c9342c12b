//go:build linux

package docs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/accord-crdt/accord/examples/internal/docblock"
	"github.com/accord-crdt/accord/examples/internal/signintest"
	"github.com/accord-crdt/accord/persist/boltstore"
)

// root is the repository, from this package's folder.
const root = "../.."

// covered are the docs whose shell blocks another test runs.
var covered = map[string]string{
	"docs/MCP.md": "examples/server's TestMCPDocCommands",
}

// runs are the shell blocks this test runs, in this order, each named by
// its doc and the start of its first command.
var runs = []runSpec{
	{
		file: "README.md", first: "make run", dir: ".",
		check: checkMakeRun,
	},
	{
		file: "docs/OPERATIONS.md", first: "export ACCORD_ADMIN_TOKEN=", dir: ".",
		check: checkBackup,
	},
	{
		// "stop the server and compact it": the data the backup block's
		// server left, in the folder the doc says.
		file: "docs/OPERATIONS.md", first: "go run go.etcd.io/bbolt/cmd/bbolt@v1.5.0 compact", dir: "examples/server",
		keepData: true, check: checkCompact,
	},
	{
		file: "docs/OPERATIONS.md", first: "nats-server -js -sd /var/lib/nats", dir: "examples",
		needs: "nats-server",
		// The doc's folders are machine-wide; fresh ones in their place
		// (the doc says any writable folder works).
		paths: []string{"/var/lib/nats", "nats", "/tmp/a", "a", "/tmp/b", "b"},
		check: checkCluster,
	},
	{
		file: "docs/OPERATIONS.md", first: "pg_dump --format=custom --schema=accord", needs: "pg_dump",
		setup: setupPgDump, check: checkPgDump, // postgres_test.go
	},
	{
		file: "docs/OPERATIONS.md", first: "pg_restore --clean --if-exists", needs: "pg_restore",
		setup: setupPgRestore, check: checkPgRestore,
	},
	{
		// From a benchmark harness's folder: one of its own here.
		file: "docs/BENCHMARKS.md", first: `JSSRC="$ACCORD_SRC/sync/js/src"`,
		setup: func(t *testing.T, w *work, dir string) []string {
			if err := os.MkdirAll(filepath.Join(dir, "bench/targets/accord"), 0o755); err != nil {
				t.Fatal(err)
			}
			return []string{"ACCORD_SRC=" + w.repo}
		},
		check: checkBenchCopy,
	},
}

// notRun are the shell blocks this test does not run, with the reason,
// which the doc must say next to the block.
var notRun = []struct{ file, first, why string }{
	{"README.md", "make test", "it is the suite itself"},
	{"README.md", "go get github.com/accord-crdt/accord", "fetches the published module"},
	{"docs/OPERATIONS.md", "go run ./server -addr 0.0.0.0:8080 -node-url http://m1:8080", "needs a machine per node"},
	{"docs/SCALING.md", "nats-server -js -cluster", "needs a machine per node"},
}

type runSpec struct {
	file, first string
	// dir is the folder of the working copy the doc says to run the
	// block from; "" is a folder of its own.
	dir string
	// paths pairs the machine-wide paths the block names with the
	// names of fresh folders the test puts in their place.
	paths []string
	// keepData runs the block on the data the block before left, which
	// it works on; the others start on a fresh data folder.
	keepData bool
	needs    string // a program the block runs
	setup    func(t *testing.T, w *work, dir string) (env []string)
	check    func(t *testing.T, w *work, r *blockRun)
}

// docBlock is a fenced block of one of the docs.
type docBlock struct {
	file string
	docblock.Block
	text []string // the doc's lines
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d", b.file, b.Line) }

// readDocs returns the fenced blocks of README.md and docs/*.md, failing
// on a block without an info string.
func readDocs(t *testing.T) []docBlock {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var out []docBlock
	for _, path := range files {
		md, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, path)
		blocks, err := docblock.Blocks(md)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		lines := strings.Split(string(md), "\n")
		for _, b := range blocks {
			if b.Info == "" {
				t.Errorf("%s:%d: a block with no info string: say what it is (sh for commands a reader runs, text for output, go, json, …)", name, b.Line)
			}
			out = append(out, docBlock{file: name, Block: b, text: lines})
		}
	}
	return out
}

// near is the doc's text around b, its lines joined by single blanks.
func (b docBlock) near() string {
	from, to := max(b.Line-8, 0), min(b.End+8, len(b.text))
	return strings.Join(strings.Fields(strings.Join(b.text[from:to], " ")), " ")
}

// TestDocBlocksAreRunOrSaid: every ```sh block of README.md and docs/*.md
// is run by a test, or is listed in notRun with a reason its doc says
// beside it; every fenced block says what it holds.
func TestDocBlocksAreRunOrSaid(t *testing.T) {
	matched := map[string]int{}
	for _, b := range readDocs(t) {
		if b.Info != "sh" {
			continue
		}
		if _, ok := covered[b.file]; ok {
			continue
		}
		var hits []string
		for i, r := range runs {
			if r.file == b.file && strings.HasPrefix(b.First, r.first) {
				hits = append(hits, "run "+r.first)
				matched[fmt.Sprint("run", i)]++
			}
		}
		for i, n := range notRun {
			if n.file == b.file && strings.HasPrefix(b.First, n.first) {
				hits = append(hits, "not run "+n.first)
				matched[fmt.Sprint("not", i)]++
				if !strings.Contains(b.near(), n.why) {
					t.Errorf("%s: the block is not run because it %q, but the doc does not say so beside it", b, n.why)
				}
			}
		}
		switch len(hits) {
		case 0:
			t.Errorf("%s: a sh block this test neither runs nor lists as not run (first command %q): add it to runs, or to notRun with the reason, said in the doc too", b, b.First)
		case 1:
		default:
			t.Errorf("%s: the block matches more than one entry: %q", b, hits)
		}
	}
	for i, r := range runs {
		if matched[fmt.Sprint("run", i)] == 0 {
			t.Errorf("runs names a block of %s starting %q that the doc no longer has", r.file, r.first)
		}
	}
	for i, n := range notRun {
		if matched[fmt.Sprint("not", i)] == 0 {
			t.Errorf("notRun names a block of %s starting %q that the doc no longer has", n.file, n.first)
		}
	}
}

// TestDocBlocksRun runs the blocks of runs with bash, in a working copy
// of the repository, twice in a row on the same data: a command that
// starts a server is started in the background, and the block goes on
// once the server serves (its /healthz, or NATS's port); the others must
// exit 0. Then the block's check runs, and the servers are stopped with
// SIGTERM, as Ctrl-C in their terminals would.
func TestDocBlocksRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the docs' commands build and start servers")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	// Servers outlive the script that started them, and the go run and
	// make between: as their subreaper this test can wait for them.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
	}
	blocks := readDocs(t)
	start := time.Now()
	w := newWork(t)
	t.Logf("working copy and its build: %v", time.Since(start).Round(time.Millisecond))

	for _, spec := range runs {
		i := slices.IndexFunc(blocks, func(b docBlock) bool {
			return b.Info == "sh" && b.file == spec.file && strings.HasPrefix(b.First, spec.first)
		})
		if i < 0 {
			t.Errorf("%s has no sh block starting %q (TestDocBlocksAreRunOrSaid says more)", spec.file, spec.first)
			continue
		}
		b := blocks[i]
		t.Run(fmt.Sprintf("%s:%d", filepath.Base(b.file), b.Line), func(t *testing.T) {
			began := time.Now()
			w.runBlock(t, spec, b)
			t.Logf("%s: %v", b, time.Since(began).Round(time.Millisecond))
		})
	}
	t.Logf("all: %v", time.Since(start).Round(time.Millisecond))
}

const prSetChildSubreaper = 36 // linux/prctl.h

// work is a working copy of the repository and the servers started in it.
type work struct {
	repo, tmp string
	env       []string
	live      []int // process groups of servers still running
}

// newWork copies the repository (its sources, without .git, node_modules
// and data folders) to a temporary folder and builds the example server
// there with go run, so that the docs' go run and make run find it built.
func newWork(t *testing.T) *work {
	tmp := t.TempDir()
	w := &work{repo: filepath.Join(tmp, "repo"), tmp: tmp}
	if err := copyTree(root, w.repo); err != nil {
		t.Fatal(err)
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "ACCORD_") || name == "MAKEFLAGS" || name == "MAKELEVEL" || name == "MFLAGS" {
			continue // a reader's shell has none of the suite's
		}
		w.env = append(w.env, kv)
	}
	t.Cleanup(func() {
		for _, g := range slices.Backward(slices.Clone(w.live)) {
			w.stop(t, g)
		}
	})
	warm := exec.Command("go", "run", "./server", "-h")
	warm.Dir = filepath.Join(w.repo, "examples")
	warm.Env = w.env
	if out, err := warm.CombinedOutput(); err != nil {
		t.Fatalf("go run ./server -h in the working copy: %v\n%s", err, out)
	}
	return w
}

func copyTree(from, to string) error {
	skip := map[string]bool{".git": true, "node_modules": true, "data": true, "screenshots": true}
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			if rel != "." && skip[d.Name()] {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		if !d.Type().IsRegular() || strings.HasSuffix(rel, ".test") || rel == filepath.Join("examples", "server", "server") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, info.Mode().Perm())
	})
}

// server is a command of a block that keeps running.
type server struct {
	kind string // "http": the example server, probed at /healthz; "tcp": NATS
	addr string // where the test reaches it
}

// blockRun is one run of a block.
type blockRun struct {
	n       int    // 1 or 2
	dir     string // where it ran
	logs    []string
	servers []server
}

// log returns the output of the block's i-th server.
func (r *blockRun) log(t *testing.T, i int) string {
	t.Helper()
	b, err := os.ReadFile(r.logs[i])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (w *work) runBlock(t *testing.T, spec runSpec, b docBlock) {
	if spec.needs != "" {
		if _, err := exec.LookPath(spec.needs); err != nil {
			t.Skipf("%s is not on PATH (apt-get install %s): %s is not run here", spec.needs, spec.needs, b)
		}
	}
	// A block that fails leaves its servers running: stop them before
	// the next block starts.
	mark := len(w.live)
	t.Cleanup(func() {
		for _, g := range slices.Backward(slices.Clone(w.live[min(mark, len(w.live)):])) {
			w.stop(t, g)
		}
	})
	blockTmp := t.TempDir()
	body := b.Body
	if len(spec.paths) > 0 {
		var pairs []string
		for i := 0; i < len(spec.paths); i += 2 {
			pairs = append(pairs, spec.paths[i], filepath.Join(blockTmp, spec.paths[i+1]))
		}
		body = strings.NewReplacer(pairs...).Replace(body)
	}
	dir := filepath.Join(w.repo, spec.dir)
	if spec.dir == "" {
		dir = filepath.Join(blockTmp, "cwd")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(w.repo, "examples", "server", "data") // where make run keeps it
	if spec.keepData {
		if _, err := os.Stat(filepath.Join(data, "accord.db")); err != nil {
			t.Skipf("%s works on the data the block before it left, and that block did not run: %v", b, err)
		}
	} else if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	env := w.env
	if spec.setup != nil {
		env = append(slices.Clone(env), spec.setup(t, w, dir)...)
	}
	script, servers, err := shellScript(body)
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	for _, s := range servers {
		if !free(s.addr) {
			t.Skipf("%s names %s, which something else on this machine holds: not run here", b, s.addr)
		}
	}

	for n := 1; n <= 2; n++ {
		r := &blockRun{n: n, dir: dir, servers: servers}
		logs := filepath.Join(blockTmp, fmt.Sprintf("run%d", n))
		if err := os.MkdirAll(logs, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range servers {
			r.logs = append(r.logs, filepath.Join(logs, fmt.Sprintf("server%d.log", i)))
		}
		began := time.Now()
		groups, out, err := w.runScript(strings.ReplaceAll(script, "@LOGS@", shellQuote(logs)), dir, env, logs)
		w.live = append(w.live, groups...)
		if err != nil {
			t.Fatalf("%s, run %d of 2 (in %s): %v\n%s", b, n, dir, err, out)
		}
		t.Logf("run %d: ran and served in %v", n, time.Since(began).Round(time.Millisecond))
		spec.check(t, w, r)
		for _, g := range slices.Backward(groups) {
			w.stop(t, g)
		}
		for i, s := range servers {
			if !free(s.addr) {
				t.Fatalf("%s, run %d: %s is still held after its server stopped", b, n, s.addr)
			}
			if out := r.log(t, i); s.kind == "http" && !strings.Contains(out, `msg="shutting down"`) {
				t.Fatalf("%s, run %d: the server on %s did not shut down on SIGTERM:\n%s", b, n, s.addr, out)
			}
		}
	}
}

// runScript runs script with bash in dir and returns the process groups
// of the servers it started, which go on running, and its output.
func (w *work) runScript(script, dir string, env []string, logs string) ([]int, string, error) {
	path := filepath.Join(logs, "block.sh")
	outPath := filepath.Join(logs, "block.out")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		return nil, "", err
	}
	out, err := os.Create(outPath)
	if err != nil {
		return nil, "", err
	}
	defer out.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", path)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	runErr := cmd.Run()
	var groups []int
	if b, err := os.ReadFile(filepath.Join(logs, "pids")); err == nil {
		for _, f := range strings.Fields(string(b)) {
			if g, err := strconv.Atoi(f); err == nil {
				groups = append(groups, g)
			}
		}
	}
	text, _ := os.ReadFile(outPath)
	return groups, string(text), runErr
}

// stop sends SIGTERM to a server's process group and waits for every
// process of it to end, reaping those that were left to this test.
func (w *work) stop(t *testing.T, group int) {
	if i := slices.Index(w.live, group); i >= 0 {
		w.live = slices.Delete(w.live, i, i+1)
	} else {
		return
	}
	syscall.Kill(-group, syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ws syscall.WaitStatus
		for {
			pid, err := syscall.Wait4(-group, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		if err := syscall.Kill(-group, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(-group, syscall.SIGKILL)
			t.Errorf("a server (process group %d) did not stop within 30 s of SIGTERM", group)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// free reports whether nothing listens on addr.
func free(addr string) bool {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// prelude starts every script: a command that fails fails the block, and
// __docs_wait waits until a server started in the background serves.
const prelude = `set -eo pipefail
__docs_wait() { # log kind addr pid
	local i status host=${3%:*} port=${3##*:}
	for ((i = 0; i < 1200; i++)); do
		if ! kill -0 "$4" 2>/dev/null; then
			printf 'docs: the server stopped before it served on %s; its output:\n' "$3" >&2
			cat "$1" >&2
			return 1
		fi
		if [[ $2 == tcp ]]; then
			(exec 3<>"/dev/tcp/$host/$port") 2>/dev/null && return 0
		else
			status=$( (exec 3<>"/dev/tcp/$host/$port" && printf 'GET /healthz HTTP/1.0\r\nHost: %s\r\n\r\n' "$3" >&3 && head -c 12 <&3) 2>/dev/null) || true
			[[ $status == "HTTP/1."?" 200" ]] && return 0
		fi
		sleep 0.1
	done
	printf 'docs: nothing served on %s within 120 s; its output:\n' "$3" >&2
	cat "$1" >&2
	return 1
}
`

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// shellScript turns a block into a bash script: its commands as written,
// each echoed first, except that a command starting a server (make run,
// go run ./server, nats-server) runs in the background with its output
// in @LOGS@/serverN.log, and the script goes on once it serves.
func shellScript(body string) (string, []server, error) {
	var sb strings.Builder
	sb.WriteString(prelude)
	var servers []server
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line += "\n" + lines[i]
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			sb.WriteString(line + "\n")
			continue
		}
		words, err := docblock.Words(strings.ReplaceAll(line, "\\\n", " "))
		if err != nil {
			return "", nil, fmt.Errorf("%q: %w", trimmed, err)
		}
		s, ok := serverOf(words)
		if !ok {
			fmt.Fprintf(&sb, "printf '%%s\\n' %s >&2\n%s\n", shellQuote("+ "+trimmed), line)
			continue
		}
		n := len(servers)
		servers = append(servers, s)
		fmt.Fprintf(&sb, "printf '%%s\\n' %s >&2\n", shellQuote("+ "+trimmed+"   (in the background, until it serves on "+s.addr+")"))
		// set -m: the server in a process group of its own, stopped as
		// one; the other commands stay in the script's, which a timeout
		// kills.
		fmt.Fprintf(&sb, "set -m\n{ %s\n} >@LOGS@/server%d.log 2>&1 &\nset +m\n", line, n)
		fmt.Fprintf(&sb, "echo $! >>@LOGS@/pids\n")
		fmt.Fprintf(&sb, "__docs_wait @LOGS@/server%d.log %s %s $!\n", n, s.kind, s.addr)
	}
	return sb.String(), servers, nil
}

// serverOf tells whether words start a server that keeps running, and
// where it serves.
func serverOf(words []string) (server, bool) {
	env := map[string]string{}
	for len(words) > 0 && assignment.MatchString(words[0]) {
		k, v, _ := strings.Cut(words[0], "=")
		env[k] = v
		words = words[1:]
	}
	flag := func(names ...string) string {
		for i, w := range words {
			for _, n := range names {
				if w == n && i+1 < len(words) {
					return words[i+1]
				}
				if v, ok := strings.CutPrefix(w, n+"="); ok {
					return v
				}
			}
		}
		return ""
	}
	local := func(addr string) string {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return addr
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		return net.JoinHostPort(host, port)
	}
	switch {
	case len(words) >= 2 && words[0] == "make" && words[1] == "run",
		len(words) >= 3 && words[0] == "go" && words[1] == "run" && (words[2] == "./server" || words[2] == "."):
		addr := firstOf(flag("-addr", "--addr"), env["ACCORD_ADDR"], "127.0.0.1:8080")
		return server{kind: "http", addr: local(addr)}, true
	case len(words) >= 1 && words[0] == "nats-server":
		return server{kind: "tcp", addr: local(net.JoinHostPort(firstOf(flag("-a", "--addr"), "127.0.0.1"), firstOf(flag("-p", "--port"), "4222")))}, true
	}
	return server{}, false
}

// firstOf is the first of vs that is not empty.
func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

var links = regexp.MustCompile(`(?m)^\s*(Ana|Ben|Rita) \((writes|reads only)\): (http://\S+/signin\?invite=\S+)$`)

// checkMakeRun: README's "Try it": make run listens on 127.0.0.1:8080,
// prints a link per demo member, which signs in, and keeps its data in
// examples/server/data.
func checkMakeRun(t *testing.T, w *work, r *blockRun) {
	out := r.log(t, 0)
	got := links.FindAllStringSubmatch(out, -1)
	if len(got) != 3 || got[0][1] != "Ana" || got[1][1] != "Ben" || got[2][1] != "Rita" || got[2][2] != "reads only" {
		t.Fatalf("make run printed %d links, want Ana's and Ben's (writes) and Rita's (reads only):\n%s", len(got), out)
	}
	for _, m := range got {
		if !strings.HasPrefix(m[3], "http://127.0.0.1:8080/") {
			t.Fatalf("%s's link %s is not on http://127.0.0.1:8080, where the README says the server listens", m[1], m[3])
		}
	}
	signintest.New(nil).SignIn(t, got[0][3])
	if _, err := os.Stat(filepath.Join(w.repo, "examples/server/data/accord.db")); err != nil {
		t.Fatalf("the data is not in examples/server/data, where the README says it is: %v", err)
	}
}

// checkBackup: OPERATIONS.md's backup: curl saved a whole bbolt file,
// which opens and passes the store's full check.
func checkBackup(t *testing.T, w *work, r *blockRun) {
	files, _ := filepath.Glob(filepath.Join(r.dir, "accord-*.db"))
	if len(files) == 0 {
		t.Fatalf("curl saved no accord-….db in %s", r.dir)
	}
	slices.Sort(files)
	verify(t, files[len(files)-1])
}

// checkCompact: the compacted file took the live file's place, and opens.
func checkCompact(t *testing.T, w *work, r *blockRun) {
	if _, err := os.Stat(filepath.Join(r.dir, "data/accord.compact.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("data/accord.compact.db is still there after mv: %v", err)
	}
	verify(t, filepath.Join(r.dir, "data/accord.db"))
}

func verify(t *testing.T, path string) {
	t.Helper()
	s, err := boltstore.Open(path, &boltstore.Options{Verify: true})
	if err != nil {
		t.Fatalf("%s does not open as a whole store: %v", path, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkCluster: OPERATIONS.md's one-NATS-server cluster: both nodes
// serve (the script waited for their /healthz), and a sign-in link that
// node a printed signs in on node b, since the nodes share the cluster's
// session key.
func checkCluster(t *testing.T, w *work, r *blockRun) {
	if len(r.servers) != 3 || r.servers[1].addr != "127.0.0.1:8081" || r.servers[2].addr != "127.0.0.1:8082" {
		t.Fatalf("servers %v: want NATS, then node a on 127.0.0.1:8081 and node b on 127.0.0.1:8082", r.servers)
	}
	out := r.log(t, 1)
	m := links.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("node a printed no sign-in link:\n%s", out)
	}
	onB := strings.Replace(m[3], "http://127.0.0.1:8081/", "http://127.0.0.1:8082/", 1)
	if onB == m[3] {
		t.Fatalf("node a's link %s is not on 127.0.0.1:8081", m[3])
	}
	signintest.New(nil).SignIn(t, onB)
}

// checkBenchCopy: the harness's folder holds the package's sources, with
// the ws import added after the msgpack one in client.js.
func checkBenchCopy(t *testing.T, w *work, r *blockRun) {
	src, _ := filepath.Glob(filepath.Join(w.repo, "sync/js/src/*.js"))
	for _, f := range src {
		if _, err := os.Stat(filepath.Join(r.dir, "bench/targets/accord", filepath.Base(f))); err != nil {
			t.Errorf("%s was not copied: %v", filepath.Base(f), err)
		}
	}
	b, err := os.ReadFile(filepath.Join(r.dir, "bench/targets/accord/client.js"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("import WebSocket from \"ws\";\n")) {
		t.Fatal(`client.js does not start with import WebSocket from "ws"`)
	}
	if orig, _ := os.ReadFile(filepath.Join(w.repo, "sync/js/src/client.js")); !bytes.HasSuffix(b, orig) {
		t.Fatal("client.js is not the package's client.js after the import")
	}
}

func TestShellScript(t *testing.T) {
	for _, tc := range []struct{ line, kind, addr string }{
		{"make run", "http", "127.0.0.1:8080"},
		{"ACCORD_ADDR=127.0.0.1:9000 make run   # a comment", "http", "127.0.0.1:9000"},
		{"go run ./server -addr 0.0.0.0:8081 -node a", "http", "127.0.0.1:8081"},
		{"go run ./server -addr=127.0.0.1:8082", "http", "127.0.0.1:8082"},
		{"nats-server -js -sd /tmp/x", "tcp", "127.0.0.1:4222"},
		{"nats-server -js -p 4333", "tcp", "127.0.0.1:4333"},
		{"ACCORD_ADMIN_TOKEN=$(openssl rand -hex 32) make run", "http", "127.0.0.1:8080"},
		{"go run ./load", "", ""},
		{"curl -fsS http://127.0.0.1:8080/healthz", "", ""},
	} {
		words, err := docblock.Words(tc.line)
		if err != nil {
			t.Fatal(err)
		}
		s, ok := serverOf(words)
		if ok != (tc.kind != "") || s.kind != tc.kind || s.addr != tc.addr {
			t.Errorf("serverOf(%s) = %+v, %v; want %s %s", tc.line, s, ok, tc.kind, tc.addr)
		}
	}
	script, servers, err := shellScript("export T=1\nmake run   # keeps running\n\ncurl -fsS \\\n  http://127.0.0.1:8080/x\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 1 {
		t.Fatalf("servers %v, want make run's", servers)
	}
	for _, want := range []string{
		"\nexport T=1\n",
		"set -m\n{ make run   # keeps running\n} >@LOGS@/server0.log 2>&1 &\nset +m\n",
		"__docs_wait @LOGS@/server0.log http 127.0.0.1:8080 $!\n",
		"\ncurl -fsS \\\n  http://127.0.0.1:8080/x\n",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("the script has no %q:\n%s", want, script)
		}
	}
}
