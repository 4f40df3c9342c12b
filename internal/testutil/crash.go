package testutil

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A crash test runs its own test binary as a child (RunChildConfig),
// which does the work under test (ChildMain) and is killed with SIGKILL,
// by the parent at a random moment or by itself at a named point
// (KillSelf). What the child has made durable outside its store, such as
// the notices or turns a Chat accepted, it appends to a Journal, which
// the parent reads after each death.

// RunChildConfig is RunChild for a child configured by cfg: cfg travels
// as JSON in the environment variable env, which ChildMain reads.
func RunChildConfig(t testing.TB, test, env string, cfg any, killAfter time.Duration, label string) Child {
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return RunChild(t, test, []string{env + "=" + string(raw)}, killAfter, label)
}

// ChildMain is the body of a crash test's child test. Without env set it
// does nothing, so the child test passes in an ordinary run; with env set
// (RunChildConfig) it decodes cfg from it and runs run. A configuration
// that does not decode, and an error run returns, are printed as a line
// "BAD ..." for the parent (Child.Bad).
func ChildMain(env string, cfg any, run func() error) {
	raw := os.Getenv(env)
	if raw == "" {
		return
	}
	if err := json.Unmarshal([]byte(raw), cfg); err != nil {
		fmt.Printf("BAD config: %v\n", err)
		return
	}
	if err := run(); err != nil {
		fmt.Printf("BAD %v\n", err)
	}
}

// KillSelf ends the child where it stands: it prints "KILL point" for
// the parent, then sends itself SIGKILL, so nothing after the point runs.
func KillSelf(point string) {
	fmt.Printf("KILL %s\n", point)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL is not handled; the process ends here
}

// Bad returns the lines in which the child reported a failure (ChildMain).
func (c Child) Bad() []string {
	var out []string
	for _, l := range c.Lines {
		if strings.HasPrefix(l, "BAD") {
			out = append(out, l)
		}
	}
	return out
}

// Tail returns the child's last n lines, one a line, for a failure
// message.
func (c Child) Tail(n int) string {
	return strings.Join(c.Lines[max(0, len(c.Lines)-n):], "\n")
}

// Journal is a file of lines that outlives a killed process: each line
// is appended with fsync, so a line Append returned for is there after a
// SIGKILL, and a line torn by one (the process died mid-write) is dropped
// when the journal is opened again.
type Journal struct {
	f *os.File
}

// OpenJournal opens the journal at path for appending, making it if it
// does not exist, and returns its lines; a torn last line is cut off.
func OpenJournal(path string) (*Journal, []string, error) {
	lines, size, err := readJournal(path)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, nil, err
	}
	if _, err := f.Seek(size, 0); err != nil {
		f.Close()
		return nil, nil, err
	}
	return &Journal{f: f}, lines, nil
}

// Append writes line (which holds no newline) and syncs it to disk.
func (j *Journal) Append(line string) error {
	if strings.Contains(line, "\n") {
		return errors.New("testutil: a journal line holds a newline")
	}
	if _, err := j.f.WriteString(line + "\n"); err != nil {
		return err
	}
	return j.f.Sync()
}

// Close closes the journal's file.
func (j *Journal) Close() error { return j.f.Close() }

// ReadJournal returns the complete lines of the journal at path, none if
// it does not exist.
func ReadJournal(path string) ([]string, error) {
	lines, _, err := readJournal(path)
	return lines, err
}

// readJournal returns the complete lines and the size they take.
func readJournal(path string) ([]string, int64, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	end := bytes.LastIndexByte(raw, '\n') + 1
	var lines []string
	for _, l := range strings.Split(string(raw[:end]), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines, int64(end), nil
}
