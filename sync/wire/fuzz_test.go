package wire

import (
	"bytes"
	"runtime/metrics"
	"testing"
)

// The fuzz targets call the decoder without Decode's recover, so that a
// panic is a finding rather than an error, and check that:
//   - the public decoder agrees (it never panics and fails exactly when
//     the unguarded one does);
//   - decoding allocates at most a bounded multiple of the input;
//   - PeekHeader reads the kind and rid of every frame that decodes;
//   - whatever decodes re-encodes, and decodes again to an equal frame.
//
// Seeds are real frames of every kind plus the inputs of the allocation
// regression tests; crashers found go in testdata/fuzz/<Target>/.

func FuzzDecodeBinary(f *testing.F) {
	seed(f, Binary, func(b []byte, _ bool) { f.Add(b) })
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzDecode(t, b, Binary, false)
	})
}

func FuzzDecodeText(f *testing.F) {
	seed(f, Text, func(b []byte, _ bool) { f.Add(b) })
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzDecode(t, b, Text, false)
	})
}

func FuzzDecodeServerFrame(f *testing.F) {
	seed(f, Binary, func(b []byte, _ bool) { f.Add(b, false) })
	seed(f, Text, func(b []byte, _ bool) { f.Add(b, true) })
	f.Fuzz(func(t *testing.T, b []byte, text bool) {
		format := Binary
		if text {
			format = Text
		}
		fuzzDecode(t, b, format, true)
	})
}

// seed adds every fixture frame in format f, and small malformed inputs.
func seed(tb testing.TB, f Format, add func([]byte, bool)) {
	for _, fr := range frames() {
		b, err := Encode(fr.msg, f)
		if err != nil {
			tb.Fatal(err)
		}
		add(b, fr.reply)
	}
	if f == Text {
		for _, s := range []string{
			``, `null`, `{}`, `{"kind":5}`, `{"kind":"hello","v":1,"have":{"d1":[]}}`,
			`{"kind":"question:edit","rid":"r","id":"d1","changes":"AQID"}`,
			`{"kind":"question:meta","id":"d1","record":{"createdAt":"2025-10-17T09:30:00.123456789+02:00"}}`,
			`{"kind":"welcome","records":[{},{},{}]}`,
			`{"kind":"hello","deep":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
		} {
			add([]byte(s), false)
		}
		return
	}
	array32 := func(b []byte, n uint32) []byte {
		return append(b, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	for _, b := range [][]byte{
		nil,
		{0xc0},
		{0x81, 0xa4, 'k', 'i', 'n', 'd', 0xc1},
		array32(msgpackStr(msgpackKV(2, KindCreate), "cards"), 1<<31),
		array32(msgpackStr(msgpackKV(2, KindWelcome), "records"), 1<<32-1),
		append(msgpackStr(msgpackKV(2, KindHello), "have"), 0xdf, 0xff, 0xff, 0xff, 0xff),
		append(array32(msgpackStr(msgpackKV(2, KindWelcome), "records"), 4), 0x80, 0x80, 0x80, 0x80),
		append(append(msgpackStr(msgpackKV(2, KindHello), "deep"), bytes.Repeat([]byte{0x91}, 40)...), 0xc0),
		// A time in each msgpack timestamp form: 4, 8 and 12 bytes.
		append(msgpackStr(msgpackKV(3, KindMeta), "id"), append(msgpackStr(nil, "d1"), append(msgpackStr(nil, "record"),
			0x81, 0xa9, 'c', 'r', 'e', 'a', 't', 'e', 'd', 'A', 't', 0xd6, 0xff, 0x68, 0xf2, 0x0c, 0xa8)...)...),
		append(msgpackStr(msgpackKV(3, KindMeta), "id"), append(msgpackStr(nil, "d1"), append(msgpackStr(nil, "record"),
			0x81, 0xa9, 'c', 'r', 'e', 'a', 't', 'e', 'd', 'A', 't', 0xd7, 0xff, 0x1d, 0x6f, 0x34, 0x54, 0x68, 0xf2, 0x0c, 0xa8)...)...),
		append(msgpackStr(msgpackKV(3, KindMeta), "id"), append(msgpackStr(nil, "d1"), append(msgpackStr(nil, "record"),
			0x81, 0xa9, 'c', 'r', 'e', 'a', 't', 'e', 'd', 'A', 't', 0xc7, 12, 0xff, 0x3b, 0x9a, 0xc9, 0xff, 0, 0, 0, 0x01, 0xe9, 0x9f, 0xe4, 0x80)...)...),
	} {
		add(b, false)
	}
}

var allocSample = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}

func heapAllocs() uint64 {
	metrics.Read(allocSample)
	return allocSample[0].Value.Uint64()
}

// maxFuzzAlloc is what decoding an n-byte input may allocate: a few
// hundred bytes per input byte (a one-byte element can become a record),
// never gigabytes from a declared length.
func maxFuzzAlloc(n int) uint64 { return 16<<20 + 2048*uint64(n) }

func fuzzDecode(t *testing.T, b []byte, f Format, server bool) {
	public, inner := Decode, decode
	if server {
		public, inner = DecodeServerFrame, decodeServerFrame
	}
	before := heapAllocs()
	var m Message
	err := checkShape(b, f)
	if err == nil {
		m, err = inner(b, f)
	}
	if n := heapAllocs() - before; n > maxFuzzAlloc(len(b)) {
		t.Fatalf("decoding %d bytes allocated %d bytes", len(b), n)
	}
	peek := PeekHeader(b, f)
	pm, perr := public(b, f)
	if (err == nil) != (perr == nil) {
		t.Fatalf("unguarded decode: %v; public decode: %v", err, perr)
	}
	if err != nil {
		if m != nil || pm != nil {
			t.Fatalf("an error came with a frame: %v", err)
		}
		return
	}
	if !equalFrames(m, pm) {
		t.Fatalf("two decodes of one input differ:\n%+v\n%+v", m, pm)
	}
	if h := headerOf(m); len(h.RID) <= 256 && peek != h {
		t.Fatalf("PeekHeader = %+v, the frame's header is %+v", peek, h)
	}

	again, err := Encode(m, f)
	if err != nil {
		t.Fatalf("decoded %+v, which does not encode: %v", m, err)
	}
	m2, err := public(again, f)
	if err != nil {
		t.Fatalf("decoded %+v, whose encoding %q does not decode: %v", m, again, err)
	}
	if !equalFrames(m, m2) {
		t.Fatalf("re-encoding changed the frame:\n%+v\n%+v", m, m2)
	}
}
