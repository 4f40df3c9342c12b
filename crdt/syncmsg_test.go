package crdt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/automerge/automerge-go"
)

// syncMsgEdit commits one change setting key to val.
func syncMsgEdit(tb testing.TB, d *automerge.Doc, key string, val any) {
	tb.Helper()
	if err := d.RootMap().Set(key, val); err != nil {
		tb.Fatal(err)
	}
	if _, err := d.Commit("edit"); err != nil {
		tb.Fatal(err)
	}
}

// syncMsgExchange runs sync rounds between two peers until neither has
// anything to send. Every message goes through ParseSyncMessage and Encode
// on its way, as it will in production; the test fails unless each parses,
// re-encodes to the same bytes and is accepted by automerge. It returns the
// messages sent.
func syncMsgExchange(tb testing.TB, sa, sb *automerge.SyncState) [][]byte {
	tb.Helper()
	var sent [][]byte
	deliver := func(from, to *automerge.SyncState) bool {
		msg, ok := from.GenerateMessage()
		if !ok {
			return false
		}
		raw := msg.Bytes()
		m, err := ParseSyncMessage(raw)
		if err != nil {
			tb.Fatalf("real message %x refused: %v", raw, err)
		}
		enc := m.Encode()
		if !bytes.Equal(enc, raw) {
			tb.Fatalf("Encode(Parse(b)) != b\n b: %x\nre: %x", raw, enc)
		}
		switch err := checkSyncChanges(to.Doc, m.Changes); {
		case errors.Is(err, ErrMissingDeps):
			// A Bloom filter false positive (1% per change) made the
			// sender skip a change the receiver lacks. Production
			// refuses this; here it is delivered anyway so that the
			// session carries on to test the parser.
		case err != nil:
			tb.Fatalf("real changes refused: %v", err)
		}
		if _, err := to.ReceiveMessage(enc); err != nil {
			tb.Fatalf("automerge refused re-encoded message: %v", err)
		}
		sent = append(sent, raw)
		return true
	}
	for range 20 {
		ab := deliver(sa, sb)
		ba := deliver(sb, sa)
		if !ab && !ba {
			return sent
		}
	}
	tb.Fatal("sync did not settle in 20 rounds")
	return nil
}

// syncMsgScenario is a real sync session between two documents.
type syncMsgScenario struct {
	name string
	run  func(tb testing.TB, a, b *automerge.Doc) [][]byte
}

var syncMsgScenarios = []syncMsgScenario{
	{"empty docs", func(tb testing.TB, a, b *automerge.Doc) [][]byte {
		return syncMsgExchange(tb, automerge.NewSyncState(a), automerge.NewSyncState(b))
	}},
	{"one side has changes", func(tb testing.TB, a, b *automerge.Doc) [][]byte {
		for i := range 3 {
			syncMsgEdit(tb, a, fmt.Sprint("k", i), i)
		}
		return syncMsgExchange(tb, automerge.NewSyncState(a), automerge.NewSyncState(b))
	}},
	{"concurrent changes", func(tb testing.TB, a, b *automerge.Doc) [][]byte {
		for i := range 5 {
			syncMsgEdit(tb, a, "x", i)
			syncMsgEdit(tb, b, "y", fmt.Sprint("v", i))
		}
		return syncMsgExchange(tb, automerge.NewSyncState(a), automerge.NewSyncState(b))
	}},
	{"many changes", func(tb testing.TB, a, b *automerge.Doc) [][]byte {
		for i := range 300 {
			syncMsgEdit(tb, a, fmt.Sprint("a", i%7), i)
		}
		for i := range 40 {
			syncMsgEdit(tb, b, "b", strings.Repeat("z", i))
		}
		return syncMsgExchange(tb, automerge.NewSyncState(a), automerge.NewSyncState(b))
	}},
	{"resync after new changes", func(tb testing.TB, a, b *automerge.Doc) [][]byte {
		syncMsgEdit(tb, a, "x", 1)
		sa, sb := automerge.NewSyncState(a), automerge.NewSyncState(b)
		sent := syncMsgExchange(tb, sa, sb)
		syncMsgEdit(tb, a, "x", 2)
		syncMsgEdit(tb, b, "y", 3)
		return append(sent, syncMsgExchange(tb, sa, sb)...)
	}},
	{"peer forgot sync state", func(tb testing.TB, a, b *automerge.Doc) [][]byte {
		syncMsgEdit(tb, a, "x", 1)
		sa := automerge.NewSyncState(a)
		sent := syncMsgExchange(tb, sa, automerge.NewSyncState(b))
		syncMsgEdit(tb, a, "x", 2)
		return append(sent, syncMsgExchange(tb, sa, automerge.NewSyncState(b))...)
	}},
	{"text and large change", func(tb testing.TB, a, b *automerge.Doc) [][]byte {
		txt := automerge.NewText(strings.Repeat("lorem ipsum ", 2000))
		if err := a.RootMap().Set("t", txt); err != nil {
			tb.Fatal(err)
		}
		if _, err := a.Commit("text"); err != nil {
			tb.Fatal(err)
		}
		return syncMsgExchange(tb, automerge.NewSyncState(a), automerge.NewSyncState(b))
	}},
}

// syncMsgCorpus returns every message of every scenario.
func syncMsgCorpus(tb testing.TB) [][]byte {
	var all [][]byte
	for _, sc := range syncMsgScenarios {
		all = append(all, sc.run(tb, automerge.New(), automerge.New())...)
	}
	return all
}

func TestSyncMessageRealSessions(t *testing.T) {
	for _, sc := range syncMsgScenarios {
		t.Run(sc.name, func(t *testing.T) {
			a, b := automerge.New(), automerge.New()
			msgs := sc.run(t, a, b)
			if len(msgs) == 0 {
				t.Fatal("no messages exchanged")
			}
			if !slices.Equal(a.Heads(), b.Heads()) {
				t.Fatalf("peers did not converge: %v vs %v", a.Heads(), b.Heads())
			}
			for _, raw := range msgs {
				m, err := ParseSyncMessage(raw)
				if err != nil {
					t.Fatal(err)
				}
				if m.Capabilities != nil {
					t.Fatalf("automerge 0.5 wrote a capabilities section: %x", raw)
				}
			}
		})
	}
}

// syncMsgBase returns a real message carrying heads, a non-empty Bloom
// filter and a change, for crafting variants of.
func syncMsgBase(t *testing.T) *SyncMessage {
	t.Helper()
	for _, raw := range syncMsgCorpus(t) {
		m, err := ParseSyncMessage(raw)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Heads) > 0 && len(m.Have) > 0 && len(m.Have[0].Bloom) > 0 && len(m.Changes) > 0 {
			return m
		}
	}
	t.Fatal("no real message with heads, a Bloom filter and changes")
	return nil
}

// Newer automerge appends a capability list to its 0x42 messages;
// automerge 0.5 must still accept it, and it must survive the round trip.
func TestSyncMessageCapabilities(t *testing.T) {
	base := syncMsgBase(t).Encode()
	for _, caps := range [][]byte{{}, {1, 2}, {1, 2, 0x7f}} {
		raw := appendSyncBytes(bytes.Clone(base), caps)
		m, err := ParseSyncMessage(raw)
		if err != nil {
			t.Fatalf("caps %x: %v", caps, err)
		}
		if m.Capabilities == nil || !bytes.Equal(m.Capabilities, caps) {
			t.Fatalf("caps %x parsed as %x", caps, m.Capabilities)
		}
		enc := m.Encode()
		if !bytes.Equal(enc, raw) {
			t.Fatalf("caps %x: round trip changed bytes", caps)
		}
		ss := automerge.NewSyncState(automerge.New())
		if _, err := ss.ReceiveMessage(enc); err != nil {
			t.Fatalf("caps %x: automerge refused: %v", caps, err)
		}
		ss.GenerateMessage()
	}
}

func TestSyncMessageDoesNotAliasInput(t *testing.T) {
	raw := syncMsgBase(t).Encode()
	m, err := ParseSyncMessage(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := m.Encode()
	clear(raw)
	if !bytes.Equal(m.Encode(), want) {
		t.Fatal("parsed message changed when the input buffer was reused")
	}
}

// syncMsgUv is a LEB128 integer.
func syncMsgUv(v uint64) []byte { return binary.AppendUvarint(nil, v) }

func syncMsgCat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestSyncMessageRefusesMalformed(t *testing.T) {
	base := syncMsgBase(t)
	valid := base.Encode()
	bloom := base.Have[0].Bloom
	change := base.Changes[0]
	hash := make([]byte, 32)

	// craft re-encodes base after edit; Encode writes whatever it is given,
	// which makes it a convenient way to build bad messages.
	craft := func(edit func(m *SyncMessage)) []byte {
		m := *base
		m.Have = slices.Clone(base.Have)
		m.Changes = slices.Clone(base.Changes)
		edit(&m)
		return m.Encode()
	}
	withBloom := func(b []byte) []byte {
		return craft(func(m *SyncMessage) { m.Have[0].Bloom = b })
	}
	withChange := func(c []byte) []byte {
		return craft(func(m *SyncMessage) { m.Changes[0] = c })
	}
	// A change chunk header with the given type and declared body length.
	chunk := func(typ byte, declared uint64, body int) []byte {
		return syncMsgCat(syncChangeMagic, []byte{1, 2, 3, 4, typ}, syncMsgUv(declared), make([]byte, body))
	}

	tests := []struct {
		name string
		in   []byte
		want string // part of the error text
	}{
		{"empty", nil, "empty message"},
		{"wrong type byte", append([]byte{0x41}, valid[1:]...), "message type 0x41"},
		{"v2 message type", append([]byte{0x43}, valid[1:]...), "0x43"},
		{"too large", make([]byte, MaxSyncMessageBytes+1), "limit"},

		{"truncated in heads", valid[:10], "only"},
		{"truncated before need", []byte{0x42, 0}, "need: truncated"},
		{"truncated before changes", []byte{0x42, 0, 0, 0}, "changes: truncated"},
		{"truncated integer", []byte{0x42, 0x80}, "heads: truncated"},
		{"trailing byte after empty capabilities", syncMsgCat(valid, []byte{0, 0}), "1 trailing bytes"},
		{"trailing after capabilities", syncMsgCat(valid, []byte{2, 1, 2, 0xff}), "1 trailing bytes"},
		{"garbage after changes", syncMsgCat(valid, []byte{0xff, 0xff}), "capabilities"},

		{"non-minimal integer", syncMsgCat([]byte{0x42, 0x81, 0}, hash, []byte{0, 0, 0}), "non-minimal"},
		{"integer overflow", syncMsgCat([]byte{0x42}, bytes.Repeat([]byte{0xff}, 10), []byte{1}), "overflows"},
		{"heads count over limit", syncMsgCat([]byte{0x42}, syncMsgUv(MaxHashes+1)), "heads: 4097 exceeds limit 4096"},
		{"heads count beyond input", syncMsgCat([]byte{0x42}, syncMsgUv(100), hash), "only 32 left"},
		{"need count huge", syncMsgCat([]byte{0x42, 0}, syncMsgUv(1<<62)), "need:"},
		{"have count over limit", []byte{0x42, 0, 0, MaxHaves + 1}, "have: 65 exceeds limit 64"},
		{"have count beyond input", []byte{0x42, 0, 0, 3, 0, 0}, "have:"},
		{"last_sync over limit", syncMsgCat([]byte{0x42, 0, 0, 1}, syncMsgUv(MaxHashes+1)), "have[0].last_sync"},
		{"bloom length beyond input", []byte{0x42, 0, 0, 1, 0, 5, 1}, "have[0].bloom length"},
		{"changes count over limit", syncMsgCat([]byte{0x42, 0, 0, 0}, syncMsgUv(MaxChanges+1)), "changes: 100001 exceeds"},
		{"changes count beyond input", []byte{0x42, 0, 0, 0, 5, 0}, "changes:"},
		{"capabilities over limit", syncMsgCat(valid, syncMsgUv(MaxCapabilities+1)), "capabilities: 17 exceeds"},

		// Bloom filters: the crash-prone field.
		{"bloom zero bits per entry", withBloom([]byte{1, 0, 7}), "0 bits per entry, want 10"},
		{"bloom zero bits many entries", withBloom([]byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0, 7}), "entries"},
		{"bloom huge probe count", withBloom(syncMsgCat([]byte{1, 10}, syncMsgUv(0xffffffff), []byte{0, 0})), "probes: 4294967295 exceeds limit 7"},
		{"bloom too few probes", withBloom([]byte{1, 10, 1, 0, 0}), "1 probes, want 7"},
		{"bloom more bits per entry", withBloom([]byte{1, 11, 7, 0, 0}), "bits per entry: 11 exceeds"},
		{"bloom huge entry count", withBloom(syncMsgCat(syncMsgUv(0xffffffff), []byte{10, 7})), "entries: 4294967295 exceeds"},
		{"bloom entries over limit", withBloom(syncMsgCat(syncMsgUv(MaxBloomEntries+1), []byte{10, 7})), "exceeds limit"},
		{"bloom entries beyond bits", withBloom([]byte{100, 10, 7, 0, 0}), "100 entries need 125"},
		{"bloom bits short", withBloom(bloom[:len(bloom)-1]), "bytes of bits"},
		{"bloom bits trailing", withBloom(append(bytes.Clone(bloom), 0)), "bytes of bits"},
		{"bloom zero entries with header", withBloom([]byte{0, 10, 7}), "zero entries"},
		{"bloom truncated header", withBloom([]byte{1, 10}), "probes: truncated"},
		{"bloom non-minimal entries", withBloom([]byte{0x81, 0, 10, 7, 0, 0}), "non-minimal"},

		// Changes: only the chunk header is checked here.
		{"change too short", withChange(change[:5]), "shorter than a chunk header"},
		{"change bad magic", withChange(append([]byte{0x85, 0x6f, 0x4a, 0x84}, change[4:]...)), "magic"},
		{"change compressed chunk", withChange(chunk(2, 4, 4)), "chunk type 2"},
		{"change document chunk", withChange(chunk(0, 4, 4)), "chunk type 0"},
		{"change body shorter than declared", withChange(chunk(1, 5, 4)), "declares a 5-byte body, 4 bytes follow"},
		{"change body longer than declared", withChange(chunk(1, 3, 4)), "declares a 3-byte body"},
		{"two changes in one entry", withChange(syncMsgCat(change, change)), "declares"},
		{"change over size limit", craft(func(m *SyncMessage) {
			m.Changes[0] = chunk(1, MaxChangeBytes+1, MaxChangeBytes+1)
		}), "exceeds limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseSyncMessage(tt.in)
			if err == nil {
				t.Fatalf("accepted: %+v", m)
			}
			if !errors.Is(err, ErrMalformedSync) {
				t.Fatalf("error %v does not wrap ErrMalformedSync", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

// Every proper prefix of a real message is refused.
func TestSyncMessageRefusesEveryTruncation(t *testing.T) {
	for _, raw := range syncMsgCorpus(t) {
		step := 1
		if len(raw) > 4096 {
			step = 61 // every prefix of a large message takes quadratic time
		}
		for n := 0; n < len(raw); n += step {
			if _, err := ParseSyncMessage(raw[:n]); !errors.Is(err, ErrMalformedSync) {
				t.Fatalf("prefix %d of %x: err = %v", n, raw, err)
			}
		}
	}
}

// syncMsgCrashEnv selects, in a re-executed test binary, which unguarded
// message to hand straight to automerge.
const syncMsgCrashEnv = "CRDT_SYNCMSG_UNGUARDED"

// syncMsgBomb is a message automerge 0.5 accepts and then dies on, with the
// document it is delivered to.
type syncMsgBomb struct {
	doc   *automerge.Doc
	msg   []byte
	abort string // what the dying process prints
}

// syncMsgBombs builds the known process-killing messages. Their broken
// parts are made by hand: the parser refuses to produce them.
func syncMsgBombs(tb testing.TB) map[string]syncMsgBomb {
	tb.Helper()
	withBloom := func(bloom []byte) []byte {
		return syncMsgCat([]byte{0x42, 0, 0, 1, 0}, syncMsgUv(uint64(len(bloom))), bloom, []byte{0})
	}
	target := automerge.New()
	syncMsgEdit(tb, target, "k", 1)

	// A change whose actor was rewritten: a new actor's first change
	// claiming seq 2, with its dependency present. Every byte is fixed
	// (actor and timestamp) so that each process builds the same message.
	noTime := &time.Time{}
	src := automerge.New()
	actor := bytes.Repeat([]byte{0xaa}, 16)
	if err := src.SetActorID(fmt.Sprintf("%x", actor)); err != nil {
		tb.Fatal(err)
	}
	for i := range 2 {
		if err := src.RootMap().Set("x", i); err != nil {
			tb.Fatal(err)
		}
		if _, err := src.Commit("", automerge.CommitOptions{Time: noTime}); err != nil {
			tb.Fatal(err)
		}
	}
	chs, err := src.Changes()
	if err != nil {
		tb.Fatal(err)
	}
	gapTarget := automerge.New()
	if err := gapTarget.Apply(chs[0]); err != nil {
		tb.Fatal(err)
	}
	forged := bytes.Replace(chs[1].Save(), actor, bytes.Repeat([]byte{0xbb}, 16), 1)
	// Naming it as the sender's head makes the receiver compute changes
	// since it, which is where the forged seq is used as an index.
	gap := &SyncMessage{
		Heads:   []ChangeHash{sha256.Sum256(forged[8:])},
		Changes: [][]byte{forged},
	}

	return map[string]syncMsgBomb{
		// Found by FuzzSyncMessage: an op whose pred names actor index 123
		// in a change that names one actor; applying it indexes out of
		// bounds.
		"actor-index": {automerge.New(), syncMsgFuzzInput(tb, "bb9ba798b926f077"), "index out of bounds"},
		// One entry, zero bits per entry: no bits, so probing divides by zero.
		"zero-bits": {target, withBloom([]byte{1, 0, 7}), "divisor of zero"},
		// 2^32-1 probes: a 16 GiB allocation on the first probe.
		"huge-probes": {target, withBloom(syncMsgCat([]byte{1, 10}, syncMsgUv(0xffffffff), []byte{0, 0})),
			"memory allocation of 17179869180 bytes failed"},
		// Well-formed, so only CheckSyncChanges can catch it.
		"seq-gap": {gapTarget, gap.Encode(), "out of range for slice"},
	}
}

// syncMsgFuzzInput reads an input of FuzzSyncMessage's regression corpus.
func syncMsgFuzzInput(tb testing.TB, name string) []byte {
	tb.Helper()
	raw, err := os.ReadFile("testdata/fuzz/FuzzSyncMessage/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	_, lit, ok := strings.Cut(strings.TrimSpace(string(raw)), "\n[]byte(")
	if !ok {
		tb.Fatalf("%s: not a single []byte fuzz input", name)
	}
	b, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return []byte(b)
}

// syncMsgRefuse returns the error the guard gives msg on its way to doc.
func syncMsgRefuse(doc *automerge.Doc, msg []byte) error {
	m, err := ParseSyncMessage(msg)
	if err != nil {
		return err
	}
	return checkSyncChanges(doc, m.Changes)
}

// TestSyncMessageGuardIsNeeded shows why the guard exists: each message
// below kills a process that hands it to automerge directly (run in a child
// process), and the guard refuses it.
func TestSyncMessageGuardIsNeeded(t *testing.T) {
	bombs := syncMsgBombs(t)
	if which := os.Getenv(syncMsgCrashEnv); which != "" {
		if which == "huge-probes" {
			// Make the 16 GiB allocation fail at once instead of letting
			// overcommit hand it out and the probe loop fill it.
			lim := &syscall.Rlimit{Cur: 4 << 30, Max: 4 << 30}
			if err := syscall.Setrlimit(syscall.RLIMIT_AS, lim); err != nil {
				t.Fatal(err)
			}
		}
		b := bombs[which]
		ss := automerge.NewSyncState(b.doc)
		_, err := ss.ReceiveMessage(b.msg)
		if err == nil {
			ss.GenerateMessage()
		}
		fmt.Printf("automerge survived %s, err=%v\n", which, err)
		return
	}

	for name, b := range bombs {
		t.Run(name, func(t *testing.T) {
			if err := syncMsgRefuse(b.doc, b.msg); !errors.Is(err, ErrMalformedSync) {
				t.Fatalf("guard let the message through: err = %v", err)
			}
			// RLIMIT_AS is what keeps the huge-probes child small; only
			// Linux enforces it for mmap.
			if name == "huge-probes" && runtime.GOOS != "linux" {
				t.Skip("needs RLIMIT_AS")
			}
			if testing.Short() {
				t.Skip("skipping child process in -short mode")
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSyncMessageGuardIsNeeded$", "-test.count=1")
			cmd.Env = append(os.Environ(), syncMsgCrashEnv+"="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("unguarded automerge survived; the guard may be obsolete:\n%s", out)
			}
			if !strings.Contains(string(out), b.abort) {
				t.Fatalf("child failed (%v) without %q:\n%.2000s", err, b.abort, out)
			}
		})
	}
}

// syncMsgChain returns n changes to key made one after another by one
// actor, and their hashes.
func syncMsgChain(tb testing.TB, actor, key string, n int) ([][]byte, []ChangeHash) {
	tb.Helper()
	d := automerge.New()
	if err := d.SetActorID(actor); err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		syncMsgEdit(tb, d, key, i)
	}
	chs, err := d.Changes()
	if err != nil {
		tb.Fatal(err)
	}
	raw := make([][]byte, len(chs))
	hashes := make([]ChangeHash, len(chs))
	for i, c := range chs {
		raw[i], hashes[i] = c.Save(), ChangeHash(c.Hash())
	}
	return raw, hashes
}

// syncMsgDocWith returns a document holding changes.
func syncMsgDocWith(tb testing.TB, changes [][]byte) *automerge.Doc {
	tb.Helper()
	d := automerge.New()
	if len(changes) > 0 {
		if err := d.LoadIncremental(bytes.Join(changes, nil)); err != nil {
			tb.Fatal(err)
		}
	}
	return d
}

func TestCheckSyncChanges(t *testing.T) {
	a, ah := syncMsgChain(t, "aaaa", "k", 3)
	other, _ := syncMsgChain(t, "aaaa", "other", 1) // another first change of actor aaaa
	long, _ := syncMsgChain(t, "cccc", "k", MaxOutOfOrderChanges+2)
	slices.Reverse(long)
	gap := syncMsgBombs(t)["seq-gap"]
	gapMsg, err := ParseSyncMessage(gap.msg)
	if err != nil {
		t.Fatal(err)
	}
	truncated := syncMsgCat(syncChangeMagic, []byte{0, 0, 0, 0, 1, 1, 5}) // 5 deps, no bytes

	tests := []struct {
		name    string
		doc     *automerge.Doc
		changes [][]byte
		heads   []ChangeHash // sent with the changes, if accepted
		want    error
	}{
		{"none", automerge.New(), nil, nil, nil},
		{"in order", automerge.New(), a, ah[2:], nil},
		{"some already held", syncMsgDocWith(t, a[:2]), a, ah[2:], nil},
		{"all already held", syncMsgDocWith(t, a), a, ah[2:], nil},
		{"out of order", automerge.New(), [][]byte{a[2], a[0], a[1]}, ah[2:], nil},
		{"repeated change", automerge.New(), [][]byte{a[0], a[0], a[1]}, ah[1:2], nil},
		{"missing dependency", automerge.New(), a[1:], nil, ErrMissingDeps},
		{"seq already used", syncMsgDocWith(t, a[:1]), other, nil, ErrMalformedSync},
		{"two changes claim one seq", automerge.New(), [][]byte{a[0], other[0]}, nil, ErrMalformedSync},
		{"seq gap", gap.doc, gapMsg.Changes, nil, ErrMalformedSync},
		{"too many out of order", automerge.New(), long, nil, ErrMalformedSync},
		{"truncated change header", automerge.New(), [][]byte{truncated}, nil, ErrMalformedSync},
		{"not a change", automerge.New(), [][]byte{[]byte("hello")}, nil, ErrMalformedSync},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkSyncChanges(tt.doc, tt.changes)
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				// What the check passes, automerge must take without
				// harm, including computing changes since the new heads.
				msg := &SyncMessage{Heads: tt.heads, Changes: tt.changes}
				ss := automerge.NewSyncState(tt.doc)
				if _, err := ss.ReceiveMessage(msg.Encode()); err != nil {
					t.Fatal(err)
				}
				ss.GenerateMessage()
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestSyncMessageLimitsWrapErrTooLarge(t *testing.T) {
	for _, in := range [][]byte{
		make([]byte, MaxSyncMessageBytes+1),
		syncMsgCat([]byte{0x42}, syncMsgUv(MaxHashes+1)),
		syncMsgCat([]byte{0x42, 0, 0, 0}, syncMsgUv(MaxChanges+1)),
		syncMsgCat([]byte{0x42, 0, 0, 1, 0, 5}, syncMsgUv(MaxBloomEntries+1), []byte{10, 7}),
	} {
		_, err := ParseSyncMessage(in)
		if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrMalformedSync) {
			t.Errorf("%.20x: err = %v, want ErrTooLarge and ErrMalformedSync", in, err)
		}
	}
}

func TestCheckSyncActorColumn(t *testing.T) {
	tests := []struct {
		name string
		col  []byte
		ok   bool
	}{
		{"empty", nil, true},
		{"run of a valid index", []byte{5, 1}, true},
		{"run of an invalid index", []byte{5, 2}, false},
		{"literal values", []byte{0x7e, 0, 1}, true}, // -2: two literals
		{"invalid literal", []byte{0x7e, 1, 2}, false},
		{"nulls", []byte{0, 100}, true},
		{"huge literal count, no data", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f}, false},
		{"truncated run", []byte{3}, false},
		{"truncated value", []byte{1, 0x80}, false},
	}
	for _, tt := range tests {
		err := checkSyncActorColumn("col", tt.col, 2)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err = %v", tt.name, err)
		}
		if err != nil && !errors.Is(err, ErrMalformedSync) {
			t.Errorf("%s: %v does not wrap ErrMalformedSync", tt.name, err)
		}
	}
}
