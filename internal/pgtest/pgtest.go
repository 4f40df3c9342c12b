// Package pgtest runs throwaway PostgreSQL servers for tests: initdb into a
// new temporary directory, then pg_ctl start on a free loopback port.
// PostgreSQL refuses to run as root, so a test run as root runs the
// server as the postgres user (or nobody). Tests skip, saying why, when
// the server's binaries are not installed (Debian's postgresql package;
// .ci/run installs it).
//
// A test package shares one server (Shared) and takes a fresh database
// per test (Server.Database); a test that stops or restarts its server
// runs its own (New). TestMain hands the package to Main, which stops the
// shared server at the end:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// Each server is watched by a small process of its own that stops it and
// removes its directory as soon as the test binary ends, however it ends
// (a panic, a timeout, SIGKILL): no server outlives its tests.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BinEnv names a directory holding initdb and pg_ctl, instead of the
// newest /usr/lib/postgresql/*/bin.
const BinEnv = "ACCORD_PG_BIN"

// ErrNotInstalled is returned by Start when initdb and pg_ctl are not found.
var ErrNotInstalled = errors.New("pgtest: PostgreSQL's initdb and pg_ctl not found " +
	"(apt-get install postgresql, or set " + BinEnv + " to their directory)")

// Options configure a server. The zero value is a server for tests of
// what a client is told: fsync off.
type Options struct {
	// Durable keeps fsync and full page writes on, as in service, for
	// benchmarks that measure what a commit costs. Without it a commit is
	// still acknowledged only once the server committed it, but a crash of
	// the machine could lose it: tests crash the client, never the server.
	Durable bool
}

// Server is a running PostgreSQL server of a test.
type Server struct {
	bin   string // directory of initdb, pg_ctl
	dir   string // the server's own directory: data/ and server.log
	port  int
	cred  *syscall.Credential // who runs the server; nil: this process's user
	watch *os.File            // closing it stops the server (see watch)

	mu      sync.Mutex
	stopped bool
}

// Start initializes and starts a server. Stop it with Stop.
func Start(opts Options) (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin}
	if os.Geteuid() == 0 {
		if s.cred, err = serverUser(); err != nil {
			return nil, err
		}
	}
	if s.dir, err = os.MkdirTemp(tempRoot(s.cred), "accord-pgtest-"); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			_ = os.RemoveAll(s.dir)
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	if err := s.startWatch(); err != nil {
		_ = os.RemoveAll(s.dir)
		return nil, err
	}
	if err := s.initdb(opts); err != nil {
		_ = s.Stop()
		return nil, err
	}
	// A port free a moment ago may be taken by the time the server
	// binds it: try a few.
	for attempt := 0; ; attempt++ {
		if s.port, err = freePort(); err == nil {
			if err = s.setPort(); err == nil {
				err = s.pgctl("start", "-l", s.logPath())
			}
		}
		if err == nil || attempt == 2 {
			break
		}
	}
	if err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// New starts a server of t's own, stopped when t ends, and skips t when
// PostgreSQL is not installed.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := Start(opts)
	if errors.Is(err, ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

var shared struct {
	once sync.Once
	s    *Server
	err  error
}

// Shared returns the test package's shared server, started on first use,
// and skips t when PostgreSQL is not installed. Main stops it.
func Shared(t testing.TB) *Server {
	t.Helper()
	shared.once.Do(func() { shared.s, shared.err = Start(Options{}) })
	if errors.Is(shared.err, ErrNotInstalled) {
		t.Skip(shared.err)
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.s
}

// Main runs the package's tests, stops the shared server if one started,
// and exits: call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if shared.s != nil {
		if err := shared.s.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// Port is the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// URL is the connection URL of database db as the superuser postgres.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

var databases atomic.Int64

// Database creates a new empty database, dropped when t ends, and returns
// its URL.
func (s *Server) Database(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test_%d_%d", os.Getpid(), databases.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.admin(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.mu.Lock()
		stopped := s.stopped
		s.mu.Unlock()
		if stopped {
			return
		}
		// FORCE ends the connections a test left open.
		if err := s.admin(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return s.URL(name)
}

// admin runs sql in the postgres database.
func (s *Server) admin(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return fmt.Errorf("pgtest: connect: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("pgtest: %s: %w", sql, err)
	}
	return nil
}

// Restart restarts the server with pg_ctl restart (a fast shutdown: the
// connections are ended, what was committed stays), on the same port.
func (s *Server) Restart() error {
	return s.pgctl("restart", "-m", "fast", "-l", s.logPath())
}

// Stop stops the server at once and removes its directory. Stopping it
// again does nothing.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	// The watcher stops the server and removes the directory when its
	// pipe closes; wait until it has.
	err := s.watch.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, statErr := os.Stat(s.dir); errors.Is(statErr, os.ErrNotExist) {
			return err
		}
		if time.Now().After(deadline) {
			return errors.Join(err, fmt.Errorf("pgtest: %s not removed after stopping the server", s.dir))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Log returns what the server logged so far, for a failing test's report.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logPath())
	return string(b)
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }
func (s *Server) logPath() string { return filepath.Join(s.dir, "server.log") }

// startWatch starts the process that stops the server and removes its
// directory once the write end of its stdin closes: at Stop, or when
// this process ends in any way, since the kernel closes the pipe then.
// It stops whichever server runs on the directory, so a restarted one
// too.
func (s *Server) startWatch() error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer r.Close()
	script := `read _ ; "$1" -D "$2" stop -m immediate -w >/dev/null 2>&1 ; rm -rf "$3"`
	cmd := s.command("/bin/sh", "-c", script, "pgtest-watch", filepath.Join(s.bin, "pg_ctl"), s.dataDir(), s.dir)
	cmd.Stdin = r
	// Its own process group: a ^C to the tests reaches it only through
	// the pipe, after the tests' own cleanup.
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("pgtest: start the watcher: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	s.watch = w
	return nil
}

func (s *Server) initdb(opts Options) error {
	out, err := s.command(filepath.Join(s.bin, "initdb"),
		"-D", s.dataDir(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	conf := []string{
		"listen_addresses = '127.0.0.1'",
		"unix_socket_directories = ''",
		"max_connections = 200",
		"shared_buffers = 32MB",
		"log_min_messages = warning",
		"log_min_error_statement = panic",
	}
	if !opts.Durable {
		conf = append(conf, "fsync = off", "full_page_writes = off")
	}
	return s.appendConf(conf...)
}

// setPort writes the server's port into its configuration, so that a
// restart keeps it.
func (s *Server) setPort() error {
	return s.appendConf("port = " + strconv.Itoa(s.port))
}

func (s *Server) appendConf(lines ...string) error {
	// The file is the server user's; this process may be root, or that
	// user itself.
	f, err := os.OpenFile(filepath.Join(s.dataDir(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	_, err = f.WriteString("\n" + strings.Join(lines, "\n") + "\n")
	return errors.Join(err, f.Close())
}

func (s *Server) pgctl(args ...string) error {
	args = append([]string{"-D", s.dataDir(), "-w", "-t", "120"}, args...)
	out, err := s.command(filepath.Join(s.bin, "pg_ctl"), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgtest: pg_ctl %s: %w\n%s\n%s", strings.Join(args, " "), err, out, s.Log())
	}
	return nil
}

// command runs as the server's user, in the server's directory (a user
// that cannot read the working directory makes initdb fail).
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

// findBin returns the directory of initdb and pg_ctl.
func findBin() (string, error) {
	has := func(dir string) bool {
		for _, f := range []string{"initdb", "pg_ctl", "postgres"} {
			if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv(BinEnv); dir != "" {
		if !has(dir) {
			return "", fmt.Errorf("%w in %s=%s", ErrNotInstalled, BinEnv, dir)
		}
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// The newest major version first.
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, dir := range dirs {
		if has(dir) {
			return dir, nil
		}
	}
	return "", ErrNotInstalled
}

// serverUser is the user a root test process runs the server as.
func serverUser() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errors.New("pgtest: running as root, and neither a postgres nor a nobody user exists to run the server as")
}

// tempRoot is where the server's directory goes: the temporary folder,
// unless the server runs as another user who could not reach it (a
// TMPDIR private to root), then /tmp.
func tempRoot(cred *syscall.Credential) string {
	dir := os.TempDir()
	if cred == nil {
		return dir
	}
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if d == filepath.Dir(d) {
			return dir
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: pick a port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
