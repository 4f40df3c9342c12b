package server

import (
	"net/http"
	"testing"
	"time"

	"github.com/accord-crdt/accord/persist/memstore"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/sync/wire"
)

func limitOptions(tune func(o *Options)) Options {
	o := Options{Store: memstore.New(), Authorize: func(*http.Request, string) (question.Member, error) { return question.Member{}, nil }}
	if tune != nil {
		tune(&o)
	}
	if err := o.setDefaults(); err != nil {
		panic(err)
	}
	return o
}

// TestLimitDefaults: zero takes the default, a negative value turns the
// limit off, and the byte bucket always holds a frame of ReadLimit.
func TestLimitDefaults(t *testing.T) {
	o := limitOptions(nil)
	if o.FrameRate != 50 || o.FrameBurst != 200 || o.ByteRate != 1<<20 || o.ByteBurst != 2*wire.MaxFrameBytes ||
		o.MaxThrottle != 5*time.Second || o.MaxMemberConnections != 32 || o.MaxDocumentConnections != 1024 {
		t.Fatalf("defaults %+v", o)
	}
	if o := limitOptions(func(o *Options) { o.ReadLimit, o.ByteBurst = 1<<20, 1000 }); o.ByteBurst != 1<<20 {
		t.Fatalf("a byte burst below ReadLimit became %d", o.ByteBurst)
	}
	if l := newLimiter(&o); l == nil || l.frames == nil || l.bytes == nil {
		t.Fatalf("the default limiter %+v", l)
	}
	off := limitOptions(func(o *Options) { o.FrameRate, o.ByteBurst = -1, -1 })
	if l := newLimiter(&off); l != nil {
		t.Fatalf("limits turned off, still a limiter %+v", l)
	}
	frames := limitOptions(func(o *Options) { o.ByteRate = -1 })
	if l := newLimiter(&frames); l == nil || l.frames == nil || l.bytes != nil {
		t.Fatalf("the frame limit alone: %+v", l)
	}
}

// TestLimiterClosesAFrameThatWouldWaitTooLong: a frame that would have
// to wait longer than MaxThrottle is refused at once, naming the bucket
// that would have held it.
func TestLimiterClosesAFrameThatWouldWaitTooLong(t *testing.T) {
	o := limitOptions(func(o *Options) { o.FrameRate, o.FrameBurst, o.ByteRate, o.ByteBurst, o.ReadLimit = 1, 1, 2, 100, 100 })
	l := newLimiter(&o)
	done := make(chan struct{})
	if throttled, err := l.take(100, done); throttled || err != nil {
		t.Fatalf("the first frame: throttled %v, %v", throttled, err)
	}
	// The next frame needs 1 s of frame tokens and 50 s of byte tokens.
	_, err := l.take(100, done)
	if o, ok := err.(*overRate); !ok || o.limit != "bytes" || o.reason != "rate limit: more than 2 bytes/s" {
		t.Fatalf("the second frame: %v", err)
	}
}

// TestLimiterPauseDoesNotForgiveAFlood: at the default limits, a flood
// whose reader pauses now and then (a busy CPU) has one frame pass at
// once after each pause, among throttled ones. Those frames do not end
// its run over the rate: it is refused once it has been over the rate
// for MaxThrottle. A connection that rests for a second's worth of its
// rate between two throttled bursts, each shorter than MaxThrottle, is
// not.
func TestLimiterPauseDoesNotForgiveAFlood(t *testing.T) {
	o := limitOptions(nil)
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	// flood sends frames from now, each as soon as the last one was let
	// through, with a pause of 25 ms (more than one frame's tokens at
	// 50/s) before every tenth, for up to d. It returns the time it
	// stopped, the time of the first throttled frame, how many frames
	// passed at once after it, and the error that refused a frame.
	flood := func(l *limiter, now time.Time, d time.Duration) (end, first time.Time, passed int, err error) {
		for i := 0; now.Sub(start) < 10*time.Minute; i++ {
			if i%10 == 9 {
				now = now.Add(25 * time.Millisecond)
			}
			if !first.IsZero() && now.Sub(first) > d {
				break
			}
			wait, err := l.reserve(now, 100)
			if err != nil {
				return now, first, passed, err
			}
			switch {
			case wait > 0 && first.IsZero():
				first = now
			case wait == 0 && !first.IsZero():
				passed++
			}
			now = now.Add(wait)
		}
		return now, first, passed, nil
	}

	l := newLimiter(&o)
	end, first, passed, err := flood(l, start, time.Minute)
	if passed == 0 {
		t.Fatal("no frame of the flood passed at once after the first throttled one")
	}
	if o, ok := err.(*overRate); !ok || o.limit != "frames" {
		t.Fatalf("a flood over its rate for %v (%d frames let through at once among throttled ones) ended with %v, want refused for its frame rate",
			end.Sub(first), passed, err)
	}
	if over := end.Sub(first); over > 5*time.Second || over < 4*time.Second {
		t.Fatalf("the flood was refused after %v over its rate, want about MaxThrottle (5 s)", over)
	}

	l = newLimiter(&o)
	end, first, _, err = flood(l, start, 4*time.Second)
	if err != nil || first.IsZero() {
		t.Fatalf("the first burst: throttled at %v, %v", first, err)
	}
	// 1.1 s at 50 frames/s refills more than 50 tokens.
	if _, _, _, err := flood(l, end.Add(1100*time.Millisecond), 4*time.Second); err != nil {
		t.Fatalf("a burst after a rest: %v", err)
	}
}

// BenchmarkLimiterTake is the cost the limits add to each frame of a
// connection under its rates (the normal path): two token buckets
// checked, nothing waited for. For scale, decode is what the read pump
// spends anyway on decoding the smallest edit frame.
func BenchmarkLimiterTake(b *testing.B) {
	b.Run("take", func(b *testing.B) {
		o := limitOptions(func(o *Options) { o.FrameRate, o.FrameBurst, o.ByteRate = 1e12, 1<<30, 1e15 })
		l := newLimiter(&o)
		done := make(chan struct{})
		b.ReportAllocs()
		for b.Loop() {
			if throttled, err := l.take(512, done); throttled || err != nil {
				b.Fatal(throttled, err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		frame, err := wire.Encode(&wire.Edit{Header: wire.Header{Kind: wire.KindEdit, RID: "r1"}, ID: "d1", Changes: make([]byte, 100)}, wire.Binary)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := wire.Decode(frame, wire.Binary); err != nil {
				b.Fatal(err)
			}
		}
	})
}
