// Package testutil holds helpers shared by the project's tests.
package testutil

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Child is what a re-executed test binary reported before it ended.
type Child struct {
	// Lines are its standard output, line by line.
	Lines []string
	// Killed is true when SIGKILL ended it.
	Killed bool
	// Stderr is its standard error.
	Stderr string
}

// RunChild re-executes the running test binary with only the test named
// test (an exact name) and env added to the environment: the crash-test
// pattern, in which the child acts only when it sees its variable. Once
// the child prints a line "READY", RunChild waits killAfter and SIGKILLs it;
// with killAfter <= 0 it lets the child end by itself. A child that does
// not start, or does not end, within 30 s is killed and reported as a test
// error naming label.
func RunChild(t testing.TB, test string, env []string, killAfter time.Duration, label string) Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		lines []string
		ready = make(chan struct{})
		eof   = make(chan struct{})
	)
	go func() {
		defer close(eof)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		once := sync.OnceFunc(func() { close(ready) })
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			if sc.Text() == "READY" {
				once()
			}
		}
	}()
	const patience = 30 * time.Second
	select {
	case <-ready:
		if killAfter > 0 {
			time.Sleep(killAfter)
			_ = cmd.Process.Kill()
		}
	case <-eof:
	case <-time.After(patience):
		_ = cmd.Process.Kill()
		t.Errorf("%s: the child did not start within %v", label, patience)
	}
	select {
	case <-eof:
	case <-time.After(patience):
		_ = cmd.Process.Kill()
		t.Errorf("%s: the child did not end within %v", label, patience)
		<-eof
	}
	_ = cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	mu.Lock()
	defer mu.Unlock()
	return Child{Lines: lines, Killed: ws.Signaled() && ws.Signal() == syscall.SIGKILL, Stderr: stderr.String()}
}
