package server

import (
	"bytes"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// sockWrite is one Write that reached the socket, with the write
// deadline it had.
type sockWrite struct {
	data     string
	deadline time.Time
}

// recordConn is a socket that records its writes; gate, if set, holds
// each Write until a value arrives, and fail, if set, fails them.
type recordConn struct {
	net.Conn // nil: only the methods below are called
	mu       sync.Mutex
	deadline time.Time
	writes   []sockWrite
	entered  chan struct{}
	gate     chan struct{}
	fail     error
}

func (r *recordConn) SetWriteDeadline(t time.Time) error {
	r.mu.Lock()
	r.deadline = t
	r.mu.Unlock()
	return nil
}

func (r *recordConn) Write(p []byte) (int, error) {
	if r.gate != nil {
		r.entered <- struct{}{}
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return 0, r.fail
	}
	r.writes = append(r.writes, sockWrite{string(p), r.deadline})
	return len(p), nil
}

func (r *recordConn) got() []sockWrite {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sockWrite(nil), r.writes...)
}

func mustWrite(t *testing.T, c *corkConn, s string) {
	t.Helper()
	if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
		t.Fatalf("Write(%q) = %d, %v", s, n, err)
	}
}

// TestCorkHoldsWritesUntilUncork: corked Writes reach the socket as one
// write, in order, when the pump uncorks, under the latest deadline set
// while corked (a pong's shorter one does not cut it); uncorked, each
// Write goes straight through under its own deadline.
func TestCorkHoldsWritesUntilUncork(t *testing.T) {
	sock := &recordConn{}
	c := &corkConn{Conn: sock, bufs: newCorkBufs()}
	now := time.Now()

	c.SetWriteDeadline(now.Add(time.Second))
	mustWrite(t, c, "handshake")
	c.cork()
	c.SetWriteDeadline(now.Add(10 * time.Second))
	mustWrite(t, c, "frame1")
	c.SetWriteDeadline(now.Add(time.Second)) // a pong from the read goroutine
	mustWrite(t, c, "pong")
	c.SetWriteDeadline(now.Add(11 * time.Second))
	mustWrite(t, c, "frame2")
	if err := c.flushFull(); err != nil {
		t.Fatal(err)
	}
	if got := sock.got(); len(got) != 1 {
		t.Fatalf("corked Writes reached the socket: %v", got)
	}
	if err := c.uncork(); err != nil {
		t.Fatal(err)
	}
	c.SetWriteDeadline(now.Add(2 * time.Second))
	mustWrite(t, c, "ping")
	want := []sockWrite{
		{"handshake", now.Add(time.Second)},
		{"frame1pongframe2", now.Add(11 * time.Second)},
		{"ping", now.Add(2 * time.Second)},
	}
	got := sock.got()
	if len(got) != len(want) {
		t.Fatalf("socket writes %v, want %v", got, want)
	}
	for i := range want {
		if got[i].data != want[i].data || !got[i].deadline.Equal(want[i].deadline) {
			t.Fatalf("socket write %d: %q by %v, want %q by %v", i, got[i].data, got[i].deadline, want[i].data, want[i].deadline)
		}
	}
}

// TestCorkSendsOnAtTheLimit: once corkLimit bytes are held, flushFull
// sends them (a frame larger than the limit too, in one write), and the
// rest waits for uncork.
func TestCorkSendsOnAtTheLimit(t *testing.T) {
	sock := &recordConn{}
	c := &corkConn{Conn: sock, bufs: newCorkBufs()}
	c.cork()
	small := strings.Repeat("s", corkLimit-1)
	mustWrite(t, c, small)
	if err := c.flushFull(); err != nil || len(sock.got()) != 0 {
		t.Fatalf("below the limit: %d writes, %v", len(sock.got()), err)
	}
	mustWrite(t, c, "tt")
	if err := c.flushFull(); err != nil || len(sock.got()) != 1 {
		t.Fatalf("at the limit: %d writes, %v", len(sock.got()), err)
	}
	large := strings.Repeat("L", 5*corkLimit)
	mustWrite(t, c, "h")
	mustWrite(t, c, large)
	if err := c.flushFull(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, c, "tail")
	if err := c.uncork(); err != nil {
		t.Fatal(err)
	}
	got := sock.got()
	want := []string{small + "tt", "h" + large, "tail"}
	if len(got) != len(want) {
		t.Fatalf("%d socket writes, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].data != want[i] {
			t.Fatalf("socket write %d is %d bytes, want %d", i, len(got[i].data), len(want[i]))
		}
	}
}

// TestCorkTakesWritesWhileItsSocketWriteBlocks: a pong written while the
// pump's socket write is blocked does not wait for it; it leaves right
// after, before the pump uncorks.
func TestCorkTakesWritesWhileItsSocketWriteBlocks(t *testing.T) {
	sock := &recordConn{entered: make(chan struct{}), gate: make(chan struct{})}
	c := &corkConn{Conn: sock, bufs: newCorkBufs()}
	// pass lets one socket write through, once it has begun.
	pass := func(what string) {
		t.Helper()
		select {
		case <-sock.entered:
			sock.gate <- struct{}{}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s never reached the socket", what)
		}
	}
	c.cork()
	mustWrite(t, c, "frames")
	done := make(chan error, 1)
	go func() { done <- c.uncork() }()
	select {
	case <-sock.entered: // the pump's socket write is blocked
	case <-time.After(5 * time.Second):
		t.Fatal("uncork wrote nothing")
	}
	mustWrite(t, c, "pong")
	sock.gate <- struct{}{}
	pass("the pong")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() { _, err := c.Write([]byte("after")); wrote <- err }() // uncorked: straight through
	pass("a Write after uncork")
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	for _, w := range sock.got() {
		all.WriteString(w.data + "|")
	}
	if all.String() != "frames|pong|after|" {
		t.Fatalf("socket writes %s", all.String())
	}
}

// TestCorkKeepsAFailedWrite: a socket write that timed out fails the
// uncork and every later Write with that error, and nothing more reaches
// the socket.
func TestCorkKeepsAFailedWrite(t *testing.T) {
	sock := &recordConn{fail: os.ErrDeadlineExceeded}
	c := &corkConn{Conn: sock, bufs: newCorkBufs()}
	c.cork()
	mustWrite(t, c, "frame")
	err := c.uncork()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("uncork: %v, want the timeout", err)
	}
	if _, err := c.Write([]byte("later")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a later Write: %v", err)
	}
	c.cork()
	if _, err := c.Write([]byte("corked")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a later corked Write: %v", err)
	}
	if err := c.uncork(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a later uncork: %v", err)
	}
	if got := sock.got(); len(got) != 0 {
		t.Fatalf("socket writes after the failure: %v", got)
	}
}
