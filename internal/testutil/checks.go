package testutil

import (
	"flag"
	"fmt"
	"os"
)

// WithRapidChecks runs f with rapid's check count (-rapid.checks) set to
// n, unless the command line or RAPID_CHECKS chose one: for a property
// whose cases cost more or less than the package's default. The count is
// one flag for every rapid.Check of the package, so only tests that do
// not call t.Parallel may use it (parallel tests start once those have
// ended).
func WithRapidChecks(n int, f func()) {
	set := false
	flag.Visit(func(fl *flag.Flag) { set = set || fl.Name == "rapid.checks" })
	fl := flag.Lookup("rapid.checks")
	if _, env := os.LookupEnv("RAPID_CHECKS"); set || env || fl == nil {
		f()
		return
	}
	old := fl.Value.String()
	_ = fl.Value.Set(fmt.Sprint(n))
	defer func() { _ = fl.Value.Set(old) }()
	f()
}
