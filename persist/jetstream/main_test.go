package jetstream_test

import (
	"flag"
	"os"
	"testing"
)

// The tests run in parallel: they mostly wait on the servers' timers and
// fsyncs, not on the CPU.
//
// TestMain sizes the property tests' rounds: storetest runs at least
// Options.Checks random sequences in rounds of -rapid.checks (100 by
// default), and every sequence here creates a stream on an embedded
// server. Unless -rapid.checks is given, rounds are short, shorter still
// under the race detector, which slows the embedded servers tenfold.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		n := "5"
		if raceEnabled {
			n = "2"
		}
		if err := flag.Set("rapid.checks", n); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
