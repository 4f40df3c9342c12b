package wire

import (
	"fmt"
	"runtime"
	"testing"
)

func measure(name string, b []byte, f func([]byte, Format) (Message, error)) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	_, err := f(b, Binary)
	runtime.ReadMemStats(&ms)
	fmt.Println(name, len(b), err, (ms.TotalAlloc-before)>>20, "MiB")
}

func hdr(kind, field string) []byte {
	b := []byte{0x82, 0xa4}
	b = append(b, "kind"...)
	b = append(b, 0xa0|byte(len(kind)))
	b = append(b, kind...)
	b = append(b, 0xa0|byte(len(field)))
	b = append(b, field...)
	return b
}

func TestProbeAlloc(t *testing.T) {
	n := MaxFrameBytes - 40
	b := hdr("question:create", "cards")
	b = append(b, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	for i := 0; i < n; i++ {
		b = append(b, 0xc0)
	}
	measure("cards nil", b, Decode)
	b = hdr("question:submit", "items")
	b = append(b, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	for i := 0; i < n; i++ {
		b = append(b, 0xc0)
	}
	measure("items nil", b, Decode)
	measure("items nil server", b, DecodeServerFrame)
	b = hdr("welcome", "records")
	b = append(b, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	for i := 0; i < n; i++ {
		b = append(b, 0xc0)
	}
	measure("records nil", b, DecodeServerFrame)
	b = hdr("welcome", "records")
	b = append(b, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	for i := 0; i < n; i++ {
		b = append(b, 0x80)
	}
	measure("records empty map", b, DecodeServerFrame)
}

func TestProbeDeep(t *testing.T) {
	b := hdr("hello", "zzz")
	for len(b) < MaxFrameBytes-1 {
		b = append(b, 0x91)
	}
	b = append(b, 0xc0)
	measure("deep", b, Decode)
}

func measureF(name string, b []byte, fm Format, f func([]byte, Format) (Message, error)) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	_, err := f(b, fm)
	runtime.ReadMemStats(&ms)
	fmt.Println(name, len(b), err, (ms.TotalAlloc-before)>>20, "MiB")
}

func TestProbeJSON(t *testing.T) {
	b := []byte(`{"kind":"welcome","records":[{}`)
	for len(b) < MaxFrameBytes-10 {
		b = append(b, ",{}"...)
	}
	b = append(b, "]}"...)
	measureF("json records", b, Text, DecodeServerFrame)
	b = []byte(`{"kind":"question:create","cards":[{}`)
	for len(b) < MaxFrameBytes-10 {
		b = append(b, ",{}"...)
	}
	b = append(b, "]}"...)
	measureF("json cards", b, Text, Decode)
}
