package loopback_test

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/accord-crdt/accord/sync/loopback"
)

func TestOrderAndTypes(t *testing.T) {
	a, b := loopback.Pipe()
	defer a.Close()
	defer b.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 { // more than the buffer: the writer waits for the reader
			if err := a.WriteMessage(1+i%2, []byte(fmt.Sprint(i))); err != nil {
				t.Errorf("write %d: %v", i, err)
				return
			}
		}
	}()
	for i := range 200 {
		typ, p, err := b.ReadMessage()
		if err != nil || typ != 1+i%2 || string(p) != fmt.Sprint(i) {
			t.Fatalf("read %d: type %d %q %v", i, typ, p, err)
		}
	}
	wg.Wait()
}

func TestWriteCopies(t *testing.T) {
	a, b := loopback.Pipe()
	buf := []byte("abc")
	if err := a.WriteMessage(2, buf); err != nil {
		t.Fatal(err)
	}
	buf[0] = 'x'
	if _, p, _ := b.ReadMessage(); string(p) != "abc" {
		t.Fatalf("read %q, want the bytes as written", p)
	}
}

func TestClosePropagates(t *testing.T) {
	a, b := loopback.Pipe()
	for _, s := range []string{"one", "two"} {
		if err := a.WriteMessage(2, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	for _, want := range []string{"one", "two"} {
		if _, p, err := b.ReadMessage(); err != nil || string(p) != want {
			t.Fatalf("buffered read: %q %v, want %q", p, err, want)
		}
	}
	if _, _, err := b.ReadMessage(); err != io.EOF {
		t.Fatalf("read after peer close: %v, want io.EOF", err)
	}
	if err := b.WriteMessage(2, nil); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("write after peer close: %v", err)
	}
	if _, _, err := a.ReadMessage(); !errors.Is(err, loopback.ErrClosed) {
		t.Fatalf("read on closed end: %v", err)
	}
	if err := a.WriteMessage(2, nil); !errors.Is(err, loopback.ErrClosed) {
		t.Fatalf("write on closed end: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestCloseWakesBlocked(t *testing.T) {
	a, b := loopback.NewPipe(0)
	readErr := make(chan error, 1)
	go func() {
		_, _, err := b.ReadMessage()
		readErr <- err
	}()
	writeErr := make(chan error, 1)
	c, d := loopback.NewPipe(0)
	go func() { writeErr <- c.WriteMessage(2, []byte("never read")) }()

	b.Close()
	d.Close()
	for _, ch := range []chan error{readErr, writeErr} {
		select {
		case err := <-ch:
			if err == nil {
				t.Fatal("blocked call returned no error after close")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("close did not wake a blocked call")
		}
	}
	a.Close()
	c.Close()
}
