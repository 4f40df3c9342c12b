package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// child is the server process.
type child struct {
	cmd  *exec.Cmd
	addr string
	dir  string
	// doc is the document clients dialled from now on join.
	doc string
	// reconnects counts the redials of its clients that the server had
	// dropped (as slow consumers, mostly).
	reconnects atomic.Int64
	// frames and bytes count what its clients received.
	frames, bytes atomic.Int64
}

func startChild(dir string) (*child, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	return startChildAt(addr, dir)
}

// startChildAt starts the server on addr and dir (a restart keeps both).
func startChildAt(addr, dir string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-serve", "-addr", addr, "-data", dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, addr: addr, dir: dir}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			return c, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	return nil, fmt.Errorf("server did not start on %s", addr)
}

// url is where member joins the child's current document (plan-1 unless
// a run set doc).
func (c *child) url(member string) string {
	doc := c.doc
	if doc == "" {
		doc = "plan-1"
	}
	return "ws://" + c.addr + "/sync?doc=" + doc + "&member=" + member
}

// peakMB reads this process's peak resident memory (its clients').
func peakMB() float64 {
	return statusMB("/proc/self/status", "VmHWM:")
}

// rssMB reads the child's resident memory.
func (c *child) rssMB() float64 {
	return statusMB(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid), "VmRSS:")
}

// usage reads the child's CPU time so far (user and system) and its count
// of write system calls (/proc/<pid>/io syscw: write, writev, sendmsg and
// the like), or zeros where /proc does not tell.
func (c *child) usage() (cpu time.Duration, writes int64) {
	pid := c.cmd.Process.Pid
	cpu = procCPU(pid)
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "syscw: "); ok {
				writes, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return cpu, writes
}

// procCPU reads a process's CPU time so far (user and system), or zero
// where /proc does not tell.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command's closing parenthesis; utime and stime
	// are the 12th and 13th of them, in USER_HZ (100 a second).
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 {
		if f := strings.Fields(string(b[i+1:])); len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			s, _ := strconv.ParseInt(f[12], 10, 64)
			return time.Duration(u+s) * 10 * time.Millisecond
		}
	}
	return 0
}

func statusMB(path, field string) float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field) {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return -1
}

func (c *child) stop(sig syscall.Signal) {
	c.cmd.Process.Signal(sig)
	c.cmd.Wait()
}
