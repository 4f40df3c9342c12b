package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/sync/replica"
	"github.com/accord-crdt/accord/sync/wire"
)

// W5, many documents at human rates (the side-by-side harness's W5): D
// documents with M members each, every member one sync/replica client
// writing one mark a second, jittered, for T seconds, all documents at
// once, on a fresh server. Fan-out latency of a write is the time from
// its making until the last other member of its document shows it.
//
// Member k of a document writes only its own cells (those whose index
// i, option i%10 and criterion i/10, has i%M == k), in turn, and write n
// sets its cell to marks.All[(n/L)%3], L being the member's count of
// cells. So consecutive writes to a cell always change it, and an
// observer that has seen write n-L sees write n once the cell holds
// anything else than write n-L's value: the draft alone says which of a
// member's writes a replica holds, across rebases too (a rebased
// document holds the same values under new change hashes). It is wrong
// only when an observer falls 2L writes behind, which then shows as
// latency.
//
// The members live in driver processes (this binary with -drive -w5),
// member k of document d in process (d×M+k) mod P, so that a document's
// members sit in different processes, as members sit on different
// machines, and their clocks are one machine's. A driver talks to the
// run over standard input and output, a line per message:
//
//	driver: ready               its members are connected and hold their decisions
//	run:    go S                write from S (ns, the shared clock) for T seconds
//	driver: seen N              its members have observed N (write, member) pairs so far
//	driver: made N F            its members made N writes (F failed); sent once T is over
//	run:    stop                the run is over (or standard input closes)
//	driver: w D K T...          member K of document D made its writes at T... (ns)
//	driver: s D K O T...        member O of document D first showed K's writes at T...
//	driver: done P R C X L M    peak memory (MB), edits refused, reconnects, events dropped,
//	                            and its lateness p99 and max (ns)
//	driver: error E             it failed (its standard error says more)

// w5PerProc is how many members a driver process holds by default. At
// one write a second each member applies M-1 changes a second: 200
// members of 5 are 800 applies and 200 edits a second in a process, far
// fewer than a throughput driver's 64 writers make, so its one finalizer
// goroutine (procs.go) keeps up with automerge's memory. More processes
// would not buy CPU on a small machine, only more runtimes to schedule.
const w5PerProc = 200

// w5Drain bounds how long a run waits, after its writers stopped, for
// every write to reach every other member.
const w5Drain = 60 * time.Second

// epoch anchors stamp.
var epoch = time.Now()

// stamp is the time now in ns on a clock every process on the machine
// shares: the wall clock when the process started, advanced by the
// monotonic clock, so that a step of the wall clock during a run does
// not move it.
func stamp() int64 { return epoch.UnixNano() + int64(time.Since(epoch)) }

// w5Cells returns the cells member k of m writes, as (option, criterion).
func w5Cells(k, m int) []marks.Cell {
	var out []marks.Cell
	for i := k; i < 50; i += m {
		out = append(out, marks.Cell{Option: fmt.Sprintf("o%d", i%10), Criterion: fmt.Sprintf("c%d", i/10)})
	}
	return out
}

// w5Value is the value write n of a member with l cells sets; "" before
// the first write (a cell never marked).
func w5Value(n, l int) marks.Mark {
	if n < 0 {
		return ""
	}
	return marks.All[(n/l)%3]
}

// w5Doc names document d of a W5 run.
func w5Doc(d int) string { return fmt.Sprintf("w5-%d", d) }

// w5Config is a W5 run's shape.
type w5Config struct {
	Docs, Members int
	Seconds       time.Duration // how long the members write
	Procs         int           // driver processes; 0: one per w5PerProc members, at least 2
}

func (c w5Config) procs() int {
	if c.Procs > 0 {
		return min(c.Procs, c.Docs*c.Members)
	}
	return max(2, (c.Docs*c.Members+w5PerProc-1)/w5PerProc)
}

// w5Result is what a W5 run measured.
type w5Result struct {
	w5Config
	procs                 int
	planned, made, failed int
	seenAll               int // writes every other member showed
	finished              bool
	drain                 time.Duration // from the end of the writing until every write was seen (or the limit)
	p50, p99, max         time.Duration
	serverCPU             time.Duration // over the writing and the drain
	phase                 time.Duration // the writing and the drain
	rssBefore, rssConn    float64       // MB: before the documents were opened, 1 s after the last connection
	rssAfter, peakRSS     float64       // MB: after the run, and the server's peak (VmHWM)
	// fileAfter is how much of rssAfter maps files (bbolt's mmap of its
	// database, mostly; RssFile), in MB.
	fileAfter           float64
	clientCPU           time.Duration // the driver processes', over the writing and the drain
	pairs               int64         // (write, other member) pairs observed
	clientPeakMB        float64       // the driver processes' peaks, summed
	refused, reconnects int64
	dropped             int64 // events the drivers' clients dropped (their readers fell behind)
	loadStart, loadEnd  [3]float64
	connect             time.Duration // opening every connection
	// late99 and lateMax are the worst driver's p99 and most of how late
	// a goroutine sleeping 10 ms at a time woke (lateness).
	late99, lateMax time.Duration
}

// w5Runs runs W5 for each document count, each on a fresh server, and
// prints the figures.
func w5Runs(docCounts []int, members int, seconds time.Duration, procs int) error {
	root, err := os.MkdirTemp("", "accord-load-w5-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	fmt.Println("| figure | result |")
	fmt.Println("|---|---|")
	for _, d := range docCounts {
		res, err := w5Run(filepath.Join(root, strconv.Itoa(d)), w5Config{Docs: d, Members: members, Seconds: seconds, Procs: procs})
		if err != nil {
			return err
		}
		for _, row := range res.rows() {
			fmt.Println(row)
		}
	}
	return nil
}

// w5Run makes one W5 run on a fresh server child in dir.
func w5Run(dir string, cfg w5Config) (w5Result, error) {
	res := w5Result{w5Config: cfg, procs: cfg.procs()}
	if cfg.Members < 2 || cfg.Members > 50 {
		return res, fmt.Errorf("w5: %d members a document; 2 to 50 (each writes cells of its own, of 50)", cfg.Members)
	}
	srv, err := startChild(dir)
	if err != nil {
		return res, err
	}
	defer srv.stop(syscall.SIGTERM)
	time.Sleep(200 * time.Millisecond)
	res.rssBefore = srv.rssMB()
	for d := range cfg.Docs {
		srv.doc = w5Doc(d)
		if _, err := setup(srv); err != nil {
			return res, err
		}
	}
	srv.doc = ""

	connStart := time.Now()
	ds := make([]*driver, 0, res.procs)
	defer func() {
		for _, d := range ds {
			d.in.Close()
			d.cmd.Process.Signal(syscall.SIGTERM)
			d.cmd.Wait()
		}
	}()
	for p := range res.procs {
		d, err := startDriverArgs("-drive", "-addr", srv.addr, "-w5", strconv.Itoa(cfg.Docs),
			"-w5-members", strconv.Itoa(cfg.Members), "-w5-seconds", strconv.Itoa(int(cfg.Seconds/time.Second)),
			"-first", strconv.Itoa(p), "-procs", strconv.Itoa(res.procs))
		if err != nil {
			return res, err
		}
		ds = append(ds, d)
	}
	for i, d := range ds {
		if l, err := d.next(5 * time.Minute); err != nil || l != "ready" {
			return res, fmt.Errorf("w5 driver %d: %q %v", i, l, err)
		}
	}
	res.connect = time.Since(connStart)
	time.Sleep(time.Second)
	res.rssConn = srv.rssMB()

	msgs, over := merged(ds)
	defer close(over)
	if err := res.timed(srv, ds, msgs); err != nil {
		return res, err
	}
	res.rssAfter = srv.rssMB()
	res.fileAfter = statusMB(fmt.Sprintf("/proc/%d/status", srv.cmd.Process.Pid), "RssFile:")
	res.peakRSS = statusMB(fmt.Sprintf("/proc/%d/status", srv.cmd.Process.Pid), "VmHWM:")
	for _, d := range ds {
		fmt.Fprintln(d.in, "stop")
	}
	writes, shown, err := res.collect(ds, msgs)
	if err != nil {
		return res, err
	}
	res.figures(writes, shown)
	return res, nil
}

// exit says how a driver that ended (line "ended") ended.
func (d *driver) exit(line string) string {
	if line != "ended" {
		return ""
	}
	if err := d.cmd.Wait(); err != nil {
		return " (" + err.Error() + ")"
	}
	return " (exit status 0)"
}

// driverLine is a line of a driver's output; "ended" when it ended.
type driverLine struct {
	from int
	line string
}

// merged returns the drivers' output lines on one channel, until over is
// closed.
func merged(ds []*driver) (<-chan driverLine, chan struct{}) {
	msgs := make(chan driverLine)
	over := make(chan struct{})
	for i, d := range ds {
		go func() {
			for l := range d.lines {
				select {
				case msgs <- driverLine{i, l}:
				case <-over:
					return
				}
			}
			select {
			case msgs <- driverLine{i, "ended"}:
			case <-over:
			}
		}()
	}
	return msgs, over
}

// timed runs the timed phase: from a shared start until every write made
// was seen by every other member, or the drain limit after the writing.
// It measures the server's and the drivers' CPU over it.
func (res *w5Result) timed(srv *child, ds []*driver, msgs <-chan driverLine) error {
	res.loadStart = loadAvg()
	cpu0, _ := srv.usage()
	client0 := make([]time.Duration, len(ds))
	for i, d := range ds {
		client0[i] = procCPU(d.cmd.Process.Pid)
	}
	const lead = 100 * time.Millisecond // for the go to reach every driver
	start := stamp() + int64(lead)
	phaseStart := time.Now().Add(lead)
	for _, d := range ds {
		fmt.Fprintln(d.in, "go", start)
	}
	seen := make([]int64, len(ds))
	madeBy := make([]int, len(ds))
	reported := 0
	limit := time.After(lead + res.Seconds + w5Drain)
	for !res.finished {
		var m driverLine
		select {
		case m = <-msgs:
		case <-limit:
		}
		if m.line == "" {
			break
		}
		verb, arg, _ := strings.Cut(m.line, " ")
		switch verb {
		case "seen":
			seen[m.from], _ = strconv.ParseInt(arg, 10, 64)
		case "made":
			var n, f int
			fmt.Sscan(arg, &n, &f)
			madeBy[m.from] = n
			res.failed += f
			reported++
		case "error", "ended":
			return fmt.Errorf("w5 driver %d: %s%s", m.from, m.line, ds[m.from].exit(m.line))
		}
		if reported == len(ds) {
			var pairs int64
			made := 0
			for i := range ds {
				pairs += seen[i]
				made += madeBy[i]
			}
			res.finished = pairs == int64(made*(res.Members-1))
		}
	}
	end := time.Now()
	cpu1, _ := srv.usage()
	for i, d := range ds {
		res.clientCPU += procCPU(d.cmd.Process.Pid) - client0[i]
	}
	res.loadEnd = loadAvg()
	res.serverCPU = cpu1 - cpu0
	res.phase = end.Sub(phaseStart)
	res.drain = max(0, end.Sub(phaseStart.Add(res.Seconds)))
	return nil
}

// collect reads what the drivers recorded, after their stop: the times
// of each member's writes, by (document, member), and when each other
// member first showed them, by (document, writer, observer).
func (res *w5Result) collect(ds []*driver, msgs <-chan driverLine) (writes map[[2]int][]int64, shown map[[3]int][]int64, err error) {
	writes, shown = map[[2]int][]int64{}, map[[3]int][]int64{}
	finished := map[int]bool{} // drivers that sent "done": their end is expected
	for done := 0; done < len(ds); {
		m := <-msgs
		verb, arg, _ := strings.Cut(m.line, " ")
		switch verb {
		case "w", "s":
			f := strings.Fields(arg)
			ids := 2
			if verb == "s" {
				ids = 3
			}
			if len(f) < ids {
				return nil, nil, fmt.Errorf("w5 driver %d: %q", m.from, m.line)
			}
			var key [3]int
			for i := range ids {
				key[i], _ = strconv.Atoi(f[i])
			}
			ts := make([]int64, 0, len(f)-ids)
			for _, s := range f[ids:] {
				t, _ := strconv.ParseInt(s, 10, 64)
				ts = append(ts, t)
			}
			if verb == "w" {
				writes[[2]int{key[0], key[1]}] = ts
			} else {
				shown[key] = ts
			}
		case "done":
			var peak float64
			var refused, reconnects, dropped int64
			var late99, lateMax time.Duration
			fmt.Sscan(arg, &peak, &refused, &reconnects, &dropped, &late99, &lateMax)
			res.clientPeakMB += peak
			res.refused += refused
			res.reconnects += reconnects
			res.dropped += dropped
			res.late99, res.lateMax = max(res.late99, late99), max(res.lateMax, lateMax)
			finished[m.from] = true
			done++
		case "ended":
			if finished[m.from] {
				continue // it said all it had to, then exited
			}
			return nil, nil, fmt.Errorf("w5 driver %d: %s%s", m.from, m.line, ds[m.from].exit(m.line))
		case "error":
			return nil, nil, fmt.Errorf("w5 driver %d: %s%s", m.from, m.line, ds[m.from].exit(m.line))
		}
	}
	return writes, shown, nil
}

// figures computes the fan-out latency of every write that every other
// member of its document showed: from its making until the last of them
// showed it.
func (res *w5Result) figures(writes map[[2]int][]int64, shown map[[3]int][]int64) {
	var lat []time.Duration
	for key, ts := range writes {
		d, k := key[0], key[1]
		res.made += len(ts)
		for n, t0 := range ts {
			last, all := t0, true
			for o := range res.Members {
				if o == k {
					continue
				}
				s := shown[[3]int{d, k, o}]
				if n >= len(s) {
					all = false
					break
				}
				last = max(last, s[n])
			}
			if all {
				res.seenAll++
				lat = append(lat, time.Duration(last-t0))
			}
		}
	}
	for _, s := range shown {
		res.pairs += int64(len(s))
	}
	res.planned = res.Docs * res.Members * int(res.Seconds/time.Second)
	res.p50, res.p99, res.max = pct(lat, .5), pct(lat, .99), pct(lat, 1)
}

// rows renders the run's figures as Markdown table rows.
func (r w5Result) rows() []string {
	conns := r.Docs * r.Members
	status := fmt.Sprintf("all seen %s after the writing stopped", ms(r.drain))
	if !r.finished {
		status = fmt.Sprintf("NOT ALL SEEN within %s of the writing", w5Drain)
	}
	perWrite := func(d time.Duration) string {
		if r.made == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000/float64(r.made))
	}
	perChange := "–"
	if r.pairs > 0 {
		perChange = fmt.Sprintf("%.0f µs", float64(r.clientCPU.Microseconds())/float64(r.pairs))
	}
	head := fmt.Sprintf("W5, %d documents × %d members (%d connections), %.0f s", r.Docs, r.Members, conns, r.Seconds.Seconds())
	return []string{
		fmt.Sprintf("| %s: fan-out p50 / p99 / max | %s / %s / %s |", head, ms(r.p50), ms(r.p99), ms(r.max)),
		fmt.Sprintf("| %s: writes seen by every other member / planned | %d / %d (%d made, %d failed; %s; %d edits refused, %d reconnects) |",
			head, r.seenAll, r.planned, r.made, r.failed, status, r.refused, r.reconnects),
		fmt.Sprintf("| %s: server CPU per write | %s (%.2f s over %s of writing and drain) |", head, perWrite(r.serverCPU), r.serverCPU.Seconds(), ms(r.phase)),
		fmt.Sprintf("| %s: server RSS peak; growth per open document, per connection | %.1f MB; %.1f KB, %.1f KB (%.1f MB before opening the documents, %.1f MB with all connected, %.1f MB after the run, %.1f MB of it mapped files) |",
			head, r.peakRSS, (r.rssConn-r.rssBefore)*1024/float64(r.Docs), (r.rssConn-r.rssBefore)*1024/float64(conns), r.rssBefore, r.rssConn, r.rssAfter, r.fileAfter),
		fmt.Sprintf("| %s: client CPU per received change | %s (%.2f s in %d driver processes; their peak %.0f MB; a driver's goroutine woke late by %s p99, %s max; connecting took %s; %d events dropped) |",
			head, perChange, r.clientCPU.Seconds(), r.procs, r.clientPeakMB, ms(r.late99), ms(r.lateMax), ms(r.connect), r.dropped),
		fmt.Sprintf("| %s: load average (1 / 5 / 15 min) at start; end | %.2f / %.2f / %.2f; %.2f / %.2f / %.2f |",
			head, r.loadStart[0], r.loadStart[1], r.loadStart[2], r.loadEnd[0], r.loadEnd[1], r.loadEnd[2]),
	}
}

// loadAvg reads the machine's load average (1, 5 and 15 minutes).
func loadAvg() [3]float64 {
	var out [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return out
	}
	for i, f := range strings.Fields(string(b)) {
		if i < 3 {
			out[i], _ = strconv.ParseFloat(f, 64)
		}
	}
	return out
}

// w5Member is one member's client in a driver, and what it recorded.
type w5Member struct {
	doc, k int
	cl     *replica.Client
	id     string       // the decision
	cells  []marks.Cell // the cells it writes
	writes []int64      // when it made each write
	// shown[o] holds when this member first showed member o's writes,
	// in order (nil for itself).
	shown [][]int64
	// theirs[o] is member o's cells.
	theirs              [][]marks.Cell
	failed              int
	refused, reconnects atomic.Int64
}

// driveW5 runs a W5 driver: the members of docs documents of members
// each whose global index is proc modulo procs.
func driveW5(addr string, docs, members int, seconds time.Duration, proc, procs int) error {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	// Every second is enough at W5's rates (procs.go runs it every
	// 250 ms for writers that write flat out).
	go collectGarbage(ctx, time.Second, nil)
	if path := os.Getenv("LOAD_CPUPROFILE"); path != "" {
		if f, err := os.Create(fmt.Sprintf("%s.w5-%d", path, proc)); err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	srv := &child{addr: addr}
	var ms []*w5Member
	for g := proc; g < docs*members; g += procs {
		m := &w5Member{doc: g / members, k: g % members, cells: w5Cells(g%members, members)}
		m.shown = make([][]int64, members)
		for o := range members {
			m.theirs = append(m.theirs, w5Cells(o, members))
		}
		ms = append(ms, m)
	}
	// Connect one member at a time, so that the connect storm is not
	// what the server is measured on.
	for _, m := range ms {
		srv.doc = w5Doc(m.doc)
		dctx, cancel := context.WithTimeout(ctx, time.Minute)
		cl, err := replica.Dial(dctx, srv.url(fmt.Sprintf("d%dm%d", m.doc, m.k)), replica.Options{EventBuffer: 1024})
		cancel()
		if err != nil {
			return err
		}
		m.cl = cl
		recs := cl.Records()
		if len(recs) == 0 {
			return fmt.Errorf("member %d of %s sees no decision", m.k, srv.doc)
		}
		m.id = recs[0].ID
	}
	defer func() {
		for _, m := range ms {
			m.cl.Close()
		}
	}()

	var seen atomic.Int64
	var watching sync.WaitGroup
	for _, m := range ms {
		watching.Add(1)
		go func() {
			defer watching.Done()
			m.watch(&seen)
		}()
	}

	in := bufio.NewScanner(os.Stdin)
	fmt.Println("ready")
	if !in.Scan() {
		return fmt.Errorf("no go")
	}
	verb, arg, _ := strings.Cut(in.Text(), " ")
	start, err := strconv.ParseInt(arg, 10, 64)
	if verb != "go" || err != nil {
		return fmt.Errorf("no go: %q", in.Text())
	}
	stopped := make(chan struct{})
	go func() {
		for in.Scan() && in.Text() != "stop" {
		}
		close(stopped)
	}()
	var writing sync.WaitGroup
	for _, m := range ms {
		writing.Add(1)
		go func() {
			defer writing.Done()
			m.write(start, seconds)
		}()
	}
	wrote := make(chan struct{})
	go func() { writing.Wait(); close(wrote) }()
	lateStop, lateDone := make(chan struct{}), make(chan []time.Duration, 1)
	go func() { lateDone <- lateness(lateStop) }()

	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last int64 = -1
	for done := false; !done; {
		select {
		case <-wrote:
			made, failed := 0, 0
			for _, m := range ms {
				made += len(m.writes)
				failed += m.failed
			}
			fmt.Println("made", made, failed)
			wrote = nil
		case <-tick.C:
			if n := seen.Load(); n != last {
				last = n
				fmt.Println("seen", n)
			}
		case <-stopped:
			done = true
		}
	}
	close(lateStop)
	late := <-lateDone
	writing.Wait()
	var closing sync.WaitGroup
	for _, m := range ms {
		closing.Add(1)
		go func() { defer closing.Done(); m.cl.Close() }()
	}
	closing.Wait()
	watching.Wait()
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	var refused, reconnects, dropped int64
	for _, m := range ms {
		fmt.Fprintf(out, "w %d %d%s\n", m.doc, m.k, times(m.writes))
		for o, s := range m.shown {
			if o != m.k {
				fmt.Fprintf(out, "s %d %d %d%s\n", m.doc, o, m.k, times(s))
			}
		}
		refused += m.refused.Load()
		reconnects += m.reconnects.Load()
		dropped += int64(m.cl.Dropped())
	}
	fmt.Fprintf(out, "done %.0f %d %d %d %d %d\n", peakMB(), refused, reconnects, dropped, pct(late, .99), pct(late, 1))
	return out.Flush()
}

// times renders ts as " t1 t2 ...".
func times(ts []int64) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(t, 10))
	}
	return b.String()
}

// write makes the member's writes: the first at a random point of the
// first second after start, then each one second × (1 ± 0.5, uniform)
// after the one before, until seconds have passed. A write is due a
// second after the one actually made, so a late process makes fewer
// writes rather than catching up in bursts.
func (m *w5Member) write(start int64, seconds time.Duration) {
	const interval, jitter = float64(time.Second), 0.5
	end := start + int64(seconds)
	due := start + int64(interval*rand.Float64())
	for due < end {
		time.Sleep(time.Duration(due - stamp()))
		t0 := stamp()
		if t0 >= end {
			break
		}
		n := len(m.writes)
		cell := m.cells[n%len(m.cells)]
		if err := m.cl.SetMark(m.id, "q1", cell.Option, cell.Criterion, w5Value(n, len(m.cells))); err != nil {
			m.failed++
		} else {
			m.writes = append(m.writes, t0)
		}
		due = t0 + int64(interval*(1+jitter*(2*rand.Float64()-1)))
	}
	time.Sleep(time.Duration(end - stamp())) // made is reported when the writing is over
}

// watch reads the client's events until it is closed: after each change
// it records which of the other members' writes the replica now shows.
func (m *w5Member) watch(seen *atomic.Int64) {
	events := m.cl.Events()
	for e := range events {
		// One look at the draft for the events waiting together: a
		// replica read per change is a third of a driver's CPU.
		changed := m.note(e)
		for more := true; more; {
			select {
			case e, ok := <-events:
				if !ok {
					return
				}
				changed = m.note(e) || changed
			default:
				more = false
			}
		}
		if !changed {
			continue
		}
		now := stamp()
		d, _, err := m.cl.Draft(m.id)
		if err != nil {
			continue
		}
		cells := d.Questions["q1"].Marks
		for o, theirs := range m.theirs {
			if o == m.k {
				continue
			}
			l := len(theirs)
			for {
				n := len(m.shown[o])
				c := theirs[n%l]
				if got := cells[c.Key()]; got == w5Value(n-l, l) {
					break
				}
				m.shown[o] = append(m.shown[o], now)
				seen.Add(1)
			}
		}
	}
}

// note counts e and reports whether it changed the member's decision.
func (m *w5Member) note(e replica.Event) bool {
	switch e.Kind {
	case replica.KindReconnecting:
		m.reconnects.Add(1)
	case replica.KindEditRefused:
		m.refused.Add(1)
	}
	return e.ID == m.id && (e.Kind == wire.KindChanges || e.Kind == wire.KindDoc)
}

// lateness measures how late a goroutine that sleeps 10 ms at a time
// wakes, until stop is closed: how long the driver's goroutines wait
// for a CPU, which fan-out latency includes.
func lateness(stop <-chan struct{}) []time.Duration {
	const nap = 10 * time.Millisecond
	var late []time.Duration
	for {
		t := time.Now()
		select {
		case <-stop:
			return late
		case <-time.After(nap):
		}
		late = append(late, max(0, time.Since(t)-nap))
	}
}
