package crdt

// Automerge sync messages arrive from peers we do not control, and
// automerge-go 0.5 (Rust core automerge 0.5.0) aborts the whole process,
// with a Rust panic Go cannot recover, on some well-formed-looking inputs:
//
//   - a "have" Bloom filter that declares entries but zero bits per entry
//     decodes to an empty bit array; the next GenerateMessage probes it
//     modulo 8*len(bits) = 0 and panics with a division by zero;
//   - a Bloom filter's probe count is used as a Vec capacity on every probe,
//     so 0xffffffff probes asks for 16 GiB and aborts (and anything merely
//     large burns CPU for every change in the document);
//   - an op naming an actor index beyond the change's actor list panics
//     while the change is applied;
//   - a change whose sequence number skips ahead is applied, and every later
//     GenerateMessage on that document panics (see CheckSyncChanges).
//
// ParseSyncMessage therefore reads the whole message in Go and accepts only
// what real automerge peers write; CheckSyncChanges checks its changes
// against the receiving document; Encode turns the checked message back into
// bytes for automerge. Nothing from the network should reach automerge's
// ReceiveMessage (or Apply/LoadIncremental) without passing through them.
//
// Wire format of a sync message (automerge's sync.rs and sync/bloom.rs; all
// integers unsigned LEB128, which automerge requires to be minimally encoded):
//
//	message  = 0x42 hashes(heads) hashes(need) count *have count *change [caps]
//	hashes   = count *hash        ; hash: 32 bytes
//	have     = hashes(last_sync) len bloom
//	bloom    = "" / entries bits_per_entry probes bits
//	                              ; len(bits) = ceil(entries*bits_per_entry/8)
//	change   = len chunk          ; one change chunk, see parseSyncChange
//	caps     = count *byte        ; capability ids, 1 = v1, 2 = v2 messages
//
// Message versions. Automerge 0.5 knows only type 0x42 and, after the
// changes, ignores whatever follows (verified against automerge-go: garbage
// after the changes is accepted). Newer automerge releases, the ones that
// know type 0x43, use that gap to append the "caps" section to their 0x42
// messages, so we accept exactly that section, keep it, and re-emit it: 0.5
// skips it.
// Type 0x43 ("v2") is a different message whose change list is a single
// chunk holding many changes or a whole saved document. Automerge 0.5
// rejects 0x43 outright ("expected [66] but found 67"), and relabelling it
// 0x42 would be wrong, not just unsupported: 0.5's per-change parser reads
// the first change of a chunk and silently drops the rest. A newer peer only
// sends 0x43 to a peer that advertised capability 2, which automerge 0.5
// never does, so a 0x43 message here comes from a broken or hostile peer and
// is refused.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/automerge/automerge-go"
)

// ErrMalformedSync is wrapped by every error ParseSyncMessage returns, and
// by CheckSyncChanges' refusals other than missing dependencies.
var ErrMalformedSync = errors.New("crdt: malformed sync message")

// Bounds on an incoming sync message. Each is far above what a real peer
// sends for our documents and low enough that automerge's work and memory
// for one message stay small.
const (
	// MaxSyncMessageBytes caps a whole message. It is also the real bound on
	// memory: every other limit only rejects a message earlier.
	MaxSyncMessageBytes = 16 << 20

	// MaxHashes caps each hash list: heads, need, and every have's
	// last_sync. Real lists hold the few heads of a document.
	MaxHashes = 4096

	// MaxHaves caps the have list; automerge writes zero or one.
	MaxHaves = 64

	// MaxChanges caps the changes carried by one message.
	MaxChanges = 100_000

	// MaxChangeBytes caps one encoded change. A single change can carry a
	// large paste, so this only stops one change from taking the whole
	// message.
	MaxChangeBytes = 8 << 20

	// MaxCapabilities caps the capability list newer peers append; they
	// send two.
	MaxCapabilities = 16

	// MaxOutOfOrderChanges caps how many changes of one message may arrive
	// before their dependencies (see CheckSyncChanges). automerge sends
	// changes in history order except for explicitly requested ones, so
	// real messages have few, and automerge retries held-back changes with
	// a quadratic scan.
	MaxOutOfOrderChanges = 1024

	// MaxBloomEntries caps a Bloom filter's entry count. A have's filter
	// covers every change since the last sync, which on first contact is
	// the whole history, so no fixed multiple of MaxHashes is safe to
	// impose; this is the largest filter whose bits fit in a message.
	MaxBloomEntries = MaxSyncMessageBytes * 8 / syncBloomBitsPerEntry
)

const (
	syncMessageType   = 0x42 // the only type automerge 0.5 reads
	syncMessageTypeV2 = 0x43 // newer automerge's v2 message, refused

	// Every automerge and automerge JS release writes Bloom filters with
	// these parameters (a 1% false-positive rate). The format lets a
	// sender choose others, but zero bits crash automerge 0.5 and large
	// probe counts exhaust it, and no real peer varies them, so anything
	// else is refused rather than range-checked.
	syncBloomBitsPerEntry = 10
	syncBloomProbes       = 7

	syncHashLen = len(ChangeHash{})

	// A change chunk: magic, checksum, chunk type, LEB128 body length, body.
	syncChunkTypeChange = 1
	syncChunkHeaderMin  = 4 + 4 + 1 + 1
)

// syncChangeMagic opens every automerge chunk.
var syncChangeMagic = []byte{0x85, 0x6f, 0x4a, 0x83}

// SyncMessage is a parsed, bounds-checked automerge sync message.
type SyncMessage struct {
	// Heads are the sender's heads.
	Heads []ChangeHash
	// Need lists changes the sender asks for explicitly.
	Need []ChangeHash
	// Have summarises what the sender already has.
	Have []SyncHave
	// Changes are raw encoded changes, each a single change chunk of at
	// most MaxChangeBytes.
	Changes [][]byte
	// Capabilities is the capability list newer peers append (1 = v1,
	// 2 = v2 messages). Nil means the section was absent; automerge 0.5
	// ignores it, and it is kept so that Encode reproduces the input.
	Capabilities []byte
}

// SyncHave is one entry of a sync message's have list.
type SyncHave struct {
	// LastSync are the heads the sender last had in common with us.
	LastSync []ChangeHash
	// Bloom is the raw filter over the sender's changes since LastSync:
	// empty, or a header with automerge's fixed parameters followed by
	// exactly the bits it calls for.
	Bloom []byte
}

// ParseSyncMessage parses and bounds-checks a sync message received from a
// peer. It accepts exactly what automerge writes (see the comment at the top
// of this file) and returns an error wrapping ErrMalformedSync for anything
// else. The result does not alias b.
//
// Changes are checked to be single change chunks of plausible size whose
// ops name only the change's own actors (see parseSyncChange); beyond that,
// automerge's own change loader returns an error for a malformed body
// rather than crashing (FuzzSyncMessage checks that). What depends on the
// receiving document is left to CheckSyncChanges, which must also pass
// before the message is handed to automerge.
func ParseSyncMessage(b []byte) (*SyncMessage, error) {
	if len(b) > MaxSyncMessageBytes {
		return nil, syncTooLarge("message is %d bytes, limit %d", len(b), MaxSyncMessageBytes)
	}
	if len(b) == 0 {
		return nil, syncErr("empty message")
	}
	switch b[0] {
	case syncMessageType:
	case syncMessageTypeV2:
		return nil, syncErr("message type 0x43 (v2) is not supported by automerge 0.5")
	default:
		return nil, syncErr("message type 0x%02x, want 0x42", b[0])
	}
	// One copy up front lets every field below be a sub-slice of it.
	r := &syncReader{b: bytes.Clone(b), off: 1}
	m := &SyncMessage{}
	var err error
	if m.Heads, err = r.hashes("heads"); err != nil {
		return nil, err
	}
	if m.Need, err = r.hashes("need"); err != nil {
		return nil, err
	}
	if m.Have, err = r.haves(); err != nil {
		return nil, err
	}
	if m.Changes, err = r.changes(); err != nil {
		return nil, err
	}
	if r.off < len(r.b) {
		n, err := r.count("capabilities", MaxCapabilities, 1)
		if err != nil {
			return nil, err
		}
		m.Capabilities = r.take(n)
	}
	if rest := len(r.b) - r.off; rest > 0 {
		return nil, syncErr("%d trailing bytes at offset %d", rest, r.off)
	}
	return m, nil
}

// Encode returns m in the wire format automerge 0.5 reads. For any message
// ParseSyncMessage accepted, Encode returns exactly the parsed bytes.
func (m *SyncMessage) Encode() []byte {
	n := 1 + syncHashesSize(m.Heads) + syncHashesSize(m.Need) +
		syncUvarintSize(len(m.Have)) + syncUvarintSize(len(m.Changes))
	for _, h := range m.Have {
		n += syncHashesSize(h.LastSync) + syncUvarintSize(len(h.Bloom)) + len(h.Bloom)
	}
	for _, c := range m.Changes {
		n += syncUvarintSize(len(c)) + len(c)
	}
	if m.Capabilities != nil {
		n += syncUvarintSize(len(m.Capabilities)) + len(m.Capabilities)
	}

	out := make([]byte, 0, n)
	out = append(out, syncMessageType)
	out = appendSyncHashes(out, m.Heads)
	out = appendSyncHashes(out, m.Need)
	out = binary.AppendUvarint(out, uint64(len(m.Have)))
	for _, h := range m.Have {
		out = appendSyncHashes(out, h.LastSync)
		out = appendSyncBytes(out, h.Bloom)
	}
	out = binary.AppendUvarint(out, uint64(len(m.Changes)))
	for _, c := range m.Changes {
		out = appendSyncBytes(out, c)
	}
	if m.Capabilities != nil {
		out = appendSyncBytes(out, m.Capabilities)
	}
	return out
}

// syncReader walks a message, turning every problem into an error that
// names the field and the bound it broke.
type syncReader struct {
	b   []byte
	off int
}

func syncErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformedSync, fmt.Sprintf(format, args...))
}

// syncTooLarge reports a broken size limit; the error matches both
// ErrMalformedSync and ErrTooLarge.
func syncTooLarge(format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", ErrMalformedSync, ErrTooLarge, fmt.Sprintf(format, args...))
}

// uvarint reads one minimally encoded LEB128 integer no larger than max.
func (r *syncReader) uvarint(field string, max uint64) (uint64, error) {
	v, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		return 0, syncErr("%s: truncated at offset %d", field, r.off)
	case n < 0:
		return 0, syncErr("%s: integer overflows 64 bits at offset %d", field, r.off)
	case n != syncUvarintSize(v):
		// automerge rejects these too; refusing them keeps Encode exact.
		return 0, syncErr("%s: non-minimal integer encoding at offset %d", field, r.off)
	case v > max:
		return 0, syncErr("%s: %d exceeds limit %d", field, v, max)
	}
	r.off += n
	return v, nil
}

// count reads a length or element count no larger than max and also checks
// that the rest of the message could hold that many elements of at least
// minSize bytes, so no allocation is sized by an unchecked number.
func (r *syncReader) count(field string, max, minSize int) (int, error) {
	v, err := r.uvarint(field, math.MaxUint64)
	if err != nil {
		return 0, err
	}
	if v > uint64(max) {
		return 0, syncTooLarge("%s: %d exceeds limit %d", field, v, max)
	}
	n := int(v)
	if rest := len(r.b) - r.off; n*minSize > rest {
		return 0, syncErr("%s: %d needs at least %d bytes, only %d left", field, n, n*minSize, rest)
	}
	return n, nil
}

// take returns the next n bytes, capped so that appending to the result
// cannot overwrite what follows. The caller has checked n against the input.
func (r *syncReader) take(n int) []byte {
	s := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return s
}

// lengthPrefixed reads a LEB128 length and that many bytes.
func (r *syncReader) lengthPrefixed(field string) ([]byte, error) {
	n, err := r.count(field+" length", MaxSyncMessageBytes, 1)
	if err != nil {
		return nil, err
	}
	return r.take(n), nil
}

// svarint reads one signed LEB128 integer of at most 64 bits.
func (r *syncReader) svarint(field string) (int64, error) {
	var v int64
	for shift := 0; shift < 64; shift += 7 {
		if r.off >= len(r.b) {
			return 0, syncErr("%s: truncated at offset %d", field, r.off)
		}
		b := r.b[r.off]
		r.off++
		v |= int64(b&0x7f) << shift
		if b&0x80 == 0 {
			if shift+7 < 64 && b&0x40 != 0 {
				v |= -1 << (shift + 7) // sign-extend
			}
			return v, nil
		}
	}
	return 0, syncErr("%s: integer overflows 64 bits at offset %d", field, r.off)
}

func (r *syncReader) hashes(field string) ([]ChangeHash, error) {
	n, err := r.count(field, MaxHashes, syncHashLen)
	if err != nil {
		return nil, err
	}
	hs := make([]ChangeHash, n)
	for i := range hs {
		copy(hs[i][:], r.take(syncHashLen))
	}
	return hs, nil
}

func (r *syncReader) haves() ([]SyncHave, error) {
	// A have is at least two bytes: an empty last_sync and an empty filter.
	n, err := r.count("have", MaxHaves, 2)
	if err != nil {
		return nil, err
	}
	hs := make([]SyncHave, n)
	for i := range hs {
		field := fmt.Sprintf("have[%d]", i)
		if hs[i].LastSync, err = r.hashes(field + ".last_sync"); err != nil {
			return nil, err
		}
		size, err := r.count(field+".bloom length", MaxSyncMessageBytes, 1)
		if err != nil {
			return nil, err
		}
		hs[i].Bloom = r.take(size)
		if err := validateSyncBloom(field+".bloom", hs[i].Bloom); err != nil {
			return nil, err
		}
	}
	return hs, nil
}

// validateSyncBloom accepts an empty filter, which automerge writes when it
// has no changes to summarise, or a filter with automerge's fixed parameters
// and exactly the bits they call for. automerge 0.5 itself ignores bytes
// after the bits and reads a filter with zero entries but a header as empty;
// real peers write neither, so both are refused here.
func validateSyncBloom(field string, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	r := &syncReader{b: b}
	entries, err := r.uvarint(field+" entries", math.MaxUint64)
	if err != nil {
		return err
	}
	if entries > MaxBloomEntries {
		return syncTooLarge("%s entries: %d exceeds limit %d", field, entries, MaxBloomEntries)
	}
	if entries == 0 {
		return syncErr("%s: header with zero entries (automerge writes an empty filter)", field)
	}
	bits, err := r.uvarint(field+" bits per entry", syncBloomBitsPerEntry)
	if err != nil {
		return err
	}
	if bits != syncBloomBitsPerEntry {
		return syncErr("%s: %d bits per entry, want %d", field, bits, syncBloomBitsPerEntry)
	}
	probes, err := r.uvarint(field+" probes", syncBloomProbes)
	if err != nil {
		return err
	}
	if probes != syncBloomProbes {
		return syncErr("%s: %d probes, want %d", field, probes, syncBloomProbes)
	}
	want := (entries*syncBloomBitsPerEntry + 7) / 8
	if got := uint64(len(b) - r.off); got != want {
		return syncErr("%s: %d bytes of bits, %d entries need %d", field, got, entries, want)
	}
	return nil
}

func (r *syncReader) changes() ([][]byte, error) {
	n, err := r.count("changes", MaxChanges, 1+syncChunkHeaderMin)
	if err != nil {
		return nil, err
	}
	cs := make([][]byte, n)
	for i := range cs {
		field := fmt.Sprintf("changes[%d]", i)
		size, err := r.count(field+" length", MaxChangeBytes, 1)
		if err != nil {
			return nil, err
		}
		cs[i] = r.take(size)
		if _, err := parseSyncChange(field, cs[i]); err != nil {
			return nil, err
		}
	}
	return cs, nil
}

// syncChange is what the guard reads of one change.
type syncChange struct {
	deps  []ChangeHash
	actor []byte
	seq   uint64
}

// parseSyncChange checks one change chunk as far as automerge 0.5 does not
// itself before relying on it, and returns its dependencies, actor and
// sequence number. It is deliberately not a full change parser: malformed
// op columns make automerge's own loader return an error.
//
// The chunk header: magic bytes, a 4-byte checksum (left to automerge,
// which hashes the chunk anyway), the change chunk type, and a body length
// that fills the rest exactly. Only type 1 is accepted: automerge 0.5
// parses every chunk in a sync message as an uncompressed change whatever
// its type byte says, so a compressed change (type 2) or a document (type 0)
// could only fail there. A chunk followed by more bytes is refused because
// automerge 0.5 would load the first change and silently drop the rest.
//
// The body starts with deps, actor, seq, start op, time, message, the
// other actors and the column layout. Every value in an actor column is an
// index into [actor, other actors...] that automerge 0.5 uses unchecked when
// it applies the change ("index out of bounds: the len is 1 but the index
// is 123"), so those columns are decoded and checked; the rest is not.
func parseSyncChange(field string, c []byte) (syncChange, error) {
	var ch syncChange
	if len(c) < syncChunkHeaderMin {
		return ch, syncErr("%s: %d bytes, shorter than a chunk header", field, len(c))
	}
	if !bytes.Equal(c[:4], syncChangeMagic) {
		return ch, syncErr("%s: missing change magic bytes", field)
	}
	if c[8] != syncChunkTypeChange {
		return ch, syncErr("%s: chunk type %d, want %d (change)", field, c[8], syncChunkTypeChange)
	}
	r := &syncReader{b: c, off: 9}
	body, err := r.uvarint(field+" body length", MaxChangeBytes)
	if err != nil {
		return ch, err
	}
	if got := uint64(len(c) - r.off); got != body {
		return ch, syncErr("%s: chunk declares a %d-byte body, %d bytes follow", field, body, got)
	}

	n, err := r.count(field+" deps", MaxChangeBytes, syncHashLen)
	if err != nil {
		return ch, err
	}
	ch.deps = make([]ChangeHash, n)
	for i := range ch.deps {
		copy(ch.deps[i][:], r.take(syncHashLen))
	}
	if ch.actor, err = r.lengthPrefixed(field + " actor"); err != nil {
		return ch, err
	}
	if ch.seq, err = r.uvarint(field+" seq", math.MaxUint64); err != nil {
		return ch, err
	}
	if _, err = r.uvarint(field+" start op", math.MaxUint64); err != nil {
		return ch, err
	}
	if _, err = r.svarint(field + " time"); err != nil {
		return ch, err
	}
	if _, err = r.lengthPrefixed(field + " message"); err != nil {
		return ch, err
	}
	others, err := r.count(field+" other actors", MaxChangeBytes, 1)
	if err != nil {
		return ch, err
	}
	for range others {
		if _, err = r.lengthPrefixed(field + " other actor"); err != nil {
			return ch, err
		}
	}
	actors := uint64(1 + others)

	// Column layout: count, then (spec, length) pairs; the data follows in
	// the same order. A spec's low three bits are its type, 1 for actor
	// indices; bit 3 marks a deflated column, which 0.5 refuses in changes.
	cols, err := r.count(field+" columns", MaxChangeBytes, 2)
	if err != nil {
		return ch, err
	}
	specs := make([]uint64, cols)
	lens := make([]int, cols)
	for i := range cols {
		if specs[i], err = r.uvarint(field+" column spec", math.MaxUint32); err != nil {
			return ch, err
		}
		if lens[i], err = r.count(field+" column length", MaxChangeBytes, 1); err != nil {
			return ch, err
		}
	}
	for i := range cols {
		if lens[i] > len(c)-r.off {
			return ch, syncErr("%s: column data runs past the chunk", field)
		}
		data := r.take(lens[i])
		if specs[i]&0x8 != 0 {
			return ch, syncErr("%s: compressed column %#x", field, specs[i])
		}
		if specs[i]&0x7 == 1 {
			if err := checkSyncActorColumn(fmt.Sprintf("%s column %#x", field, specs[i]), data, actors); err != nil {
				return ch, err
			}
		}
	}
	return ch, nil
}

// checkSyncActorColumn checks that every value of an RLE-encoded actor
// column is below actors. The encoding is a series of runs, each opened by
// a signed LEB128 n: n > 0 repeats the next value n times, n < 0 is
// followed by -n literal values, and 0 by a count of nulls.
func checkSyncActorColumn(field string, col []byte, actors uint64) error {
	r := &syncReader{b: col}
	check := func() error {
		v, err := r.uvarint(field, math.MaxUint64)
		if err == nil && v >= actors {
			err = syncErr("%s: actor index %d, change names %d actors", field, v, actors)
		}
		return err
	}
	for r.off < len(col) {
		n, err := r.svarint(field)
		if err != nil {
			return err
		}
		switch {
		case n > 0:
			err = check()
		case n < 0:
			// Each value takes at least a byte, so this ends with the data.
			for k := int64(0); k > n && err == nil; k-- {
				err = check()
			}
		default:
			_, err = r.uvarint(field, math.MaxUint64)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// CheckSyncChanges checks changes (as in SyncMessage.Changes, or any list
// of single change chunks) against d, the document they are about to be
// applied to, for what no stateless parser can see. It returns an error
// wrapping ErrMalformedSync unless applying them leaves doc sound, or
// ErrMissingDeps for changes whose dependencies are missing.
//
// automerge 0.5 records each change under its actor with the sequence number
// the change claims, and later slices that actor's list of changes at that
// number when it computes changes since some heads (in GenerateMessage,
// SaveIncremental, ...). A change that skips sequence numbers, say an
// actor's first change claiming seq 3, is applied without complaint and then
// panics the process on the next GenerateMessage ("range start index 3 out
// of range for slice of length 1"), and on every one after: the document is
// poisoned. automerge only refuses a sequence number already used.
//
// So CheckSyncChanges replays automerge 0.5's apply order (message order
// for changes whose dependencies are present, then repeatedly the first
// held-back change that became ready, swap-removed from the queue as
// automerge does) and requires every change to carry exactly the next
// sequence number of its actor when it is applied. It also refuses changes
// whose dependencies are neither in doc nor in changes: automerge would park
// them and apply them in some later call without any sequence check. (Real
// peers send such changes after a Bloom filter false positive; refusing
// them trades that recovery path for soundness.) The replay assumes doc
// holds no parked changes, which is true if everything applied to it went
// through this check.
//
// It reads the hash and actor of every change in d (a few microseconds
// each), so call it only for messages that carry changes.
func (d *Doc) CheckSyncChanges(changes [][]byte) error {
	return checkSyncChanges(d.am, changes)
}

func checkSyncChanges(doc *automerge.Doc, changes [][]byte) error {
	if len(changes) == 0 {
		return nil
	}
	parsed, err := parseChangeList(changes)
	if err != nil {
		return err
	}
	have, err := doc.Changes()
	if err != nil {
		return fmt.Errorf("crdt: reading document changes: %w", err)
	}
	inDoc := make(map[ChangeHash]bool, len(have))
	count := make(map[string]uint64)
	for _, c := range have {
		inDoc[ChangeHash(c.Hash())] = true
		count[c.ActorID()]++
	}
	return replayChanges(parsed, func(h ChangeHash) bool { return inDoc[h] }, count)
}

// checkedChange is one change as the guard reads it.
type checkedChange struct {
	hash  ChangeHash
	deps  []ChangeHash
	actor string
	seq   uint64
}

// parseChangeList parses single change chunks with parseSyncChange.
func parseChangeList(changes [][]byte) ([]checkedChange, error) {
	parsed := make([]checkedChange, len(changes))
	for i, c := range changes {
		ch, err := parseSyncChange(fmt.Sprintf("changes[%d]", i), c)
		if err != nil {
			return nil, err
		}
		// A change's hash is SHA-256 over its chunk type, body length and
		// body, i.e. everything after the magic and checksum.
		parsed[i] = checkedChange{sha256.Sum256(c[8:]), ch.deps, hex.EncodeToString(ch.actor), ch.seq}
	}
	return parsed, nil
}

// replayChanges replays automerge 0.5's apply order over parsed changes,
// given which changes the document holds (inDoc) and how many changes of
// each actor it holds (count, updated in place), and refuses any change
// that would not carry exactly the next sequence number of its actor.
func replayChanges(parsed []checkedChange, inDoc func(ChangeHash) bool, count map[string]uint64) error {
	applied := make(map[ChangeHash]bool, len(parsed))
	isApplied := func(h ChangeHash) bool { return applied[h] || inDoc(h) }
	missingDep := func(c *checkedChange) (ChangeHash, bool) {
		for _, d := range c.deps {
			if !isApplied(d) {
				return d, true
			}
		}
		return ChangeHash{}, false
	}
	ready := func(c *checkedChange) bool {
		_, missing := missingDep(c)
		return !missing
	}
	apply := func(i int) error {
		c := &parsed[i]
		if c.seq != count[c.actor]+1 {
			return syncErr("changes[%d]: actor %s seq %d applied after %d changes of that actor",
				i, c.actor, c.seq, count[c.actor])
		}
		count[c.actor]++
		applied[c.hash] = true
		return nil
	}

	var queue []int
	for i := range parsed {
		c := &parsed[i]
		if isApplied(c.hash) {
			continue
		}
		if c.seq <= count[c.actor] {
			// automerge refuses this one itself, but only after applying
			// the changes before it; refusing the message is cleaner.
			return syncErr("changes[%d]: actor %s seq %d already used", i, c.actor, c.seq)
		}
		if !ready(c) {
			if len(queue) == MaxOutOfOrderChanges {
				return syncErr("more than %d changes arrive before their dependencies", MaxOutOfOrderChanges)
			}
			queue = append(queue, i)
			continue
		}
		if err := apply(i); err != nil {
			return err
		}
	}
	for len(queue) > 0 {
		j := slices.IndexFunc(queue, func(i int) bool { return ready(&parsed[i]) })
		if j < 0 {
			d, _ := missingDep(&parsed[queue[0]])
			return fmt.Errorf("%w: changes[%d] depends on unknown change %s", ErrMissingDeps, queue[0], d)
		}
		i := queue[j]
		queue[j] = queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if !isApplied(parsed[i].hash) {
			if err := apply(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// syncUvarintSize is the length of v's minimal LEB128 encoding.
func syncUvarintSize[T int | uint64](v T) int {
	n := 1
	for x := uint64(v); x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

func syncHashesSize(hs []ChangeHash) int {
	return syncUvarintSize(len(hs)) + len(hs)*syncHashLen
}

func appendSyncHashes(out []byte, hs []ChangeHash) []byte {
	out = binary.AppendUvarint(out, uint64(len(hs)))
	for _, h := range hs {
		out = append(out, h[:]...)
	}
	return out
}

func appendSyncBytes(out, b []byte) []byte {
	out = binary.AppendUvarint(out, uint64(len(b)))
	return append(out, b...)
}
