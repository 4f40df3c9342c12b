package cluster_test

import (
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"
)

// faultProxy is a TCP proxy between one node and one NATS server that
// injects the faults of a network: latency with jitter (never
// reordering), connections dropped (closed) or reset (RST), and a
// partition, during which nothing is forwarded either way (the bytes
// wait, as in a network that drops packets and TCP that retransmits
// them) until it heals.
type faultProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	conns   map[net.Conn]struct{} // both ends of every proxied connection
	latency time.Duration
	jitter  time.Duration
	healed  chan struct{} // closed while not partitioned
	rng     *rand.Rand
	closed  bool

	wg sync.WaitGroup
}

func newFaultProxy(t testing.TB, target string, seed uint64) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	healed := make(chan struct{})
	close(healed)
	p := &faultProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}, healed: healed, rng: rand.New(rand.NewPCG(seed, 1))}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *faultProxy) url() string { return "nats://" + p.ln.Addr().String() }

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			in.Close()
			out.Close()
			return
		}
		p.conns[in], p.conns[out] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

// chunk is bytes read, to be written no earlier than due.
type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies from one end to the other through a delay line: a reader
// stamps each chunk with when it may leave, a writer sends the chunks in
// order once due and while the proxy is not partitioned. Either end
// failing closes both.
func (p *faultProxy) pipe(from, to net.Conn) {
	defer p.wg.Done()
	line := make(chan chunk, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range line {
			if wait := time.Until(c.due); wait > 0 {
				time.Sleep(wait)
			}
			p.mu.Lock()
			healed := p.healed
			p.mu.Unlock()
			<-healed
			if _, err := to.Write(c.b); err != nil {
				break
			}
		}
		p.drop(from, to)
		for range line {
		}
	}()
	var last time.Time
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			p.mu.Lock()
			d := p.latency
			if p.jitter > 0 {
				d += time.Duration(p.rng.Int64N(int64(p.jitter)))
			}
			p.mu.Unlock()
			due := time.Now().Add(d)
			if due.Before(last) {
				due = last // jitter never reorders
			}
			last = due
			line <- chunk{b: append([]byte(nil), buf[:n]...), due: due}
		}
		if err != nil {
			if err != io.EOF {
				p.drop(from, to)
			}
			break
		}
	}
	close(line)
	<-done
}

// drop closes the two ends of a connection.
func (p *faultProxy) drop(a, b net.Conn) {
	p.mu.Lock()
	delete(p.conns, a)
	delete(p.conns, b)
	p.mu.Unlock()
	a.Close()
	b.Close()
}

// setLatency delays every chunk by latency plus up to jitter.
func (p *faultProxy) setLatency(latency, jitter time.Duration) {
	p.mu.Lock()
	p.latency, p.jitter = latency, jitter
	p.mu.Unlock()
}

// cut ends every connection: closed (FIN) or, with reset, reset (RST).
func (p *faultProxy) cut(reset bool) {
	p.mu.Lock()
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		if tc, ok := c.(*net.TCPConn); ok && reset {
			_ = tc.SetLinger(0)
		}
		c.Close()
	}
}

// partition stops forwarding until heal; connections stay open and new
// ones are accepted, as across a network that loses every packet.
func (p *faultProxy) partition() {
	p.mu.Lock()
	select {
	case <-p.healed:
		p.healed = make(chan struct{})
	default:
	}
	p.mu.Unlock()
}

func (p *faultProxy) heal() {
	p.mu.Lock()
	select {
	case <-p.healed:
	default:
		close(p.healed)
	}
	p.mu.Unlock()
}

func (p *faultProxy) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.ln.Close()
	p.heal()
	p.cut(false)
	p.wg.Wait()
}
