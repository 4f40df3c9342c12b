package interop_test

// The page client's per-change cost as a decision's history grows
// (sync/js/bench/apply.mjs, under Node): BenchmarkPageClientApply reports its
// figures; TestPageClientBenchRuns runs it small, for its own checks (the
// client converges with the writer and reads the same values), never for
// its timings.

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

type applyFigures struct {
	Changes        int     `json:"changes"`
	Batch          int     `json:"batch"`
	Edits          int     `json:"edits"`
	RebaseEvery    int     `json:"rebase_every"`
	Rebased        int     `json:"rebased"`
	ApplyAt100     float64 `json:"apply_us_at_100"`
	ApplyAtN       float64 `json:"apply_us_at_n"`
	AutomergeAt100 float64 `json:"am_us_at_100"`
	AutomergeAtN   float64 `json:"am_us_at_n"`
	ClientAt100    float64 `json:"client_us_at_100"`
	ClientAtN      float64 `json:"client_us_at_n"`
	AckAt100       float64 `json:"ack_us_at_100"`
	AckAtN         float64 `json:"ack_us_at_n"`
}

// runApplyBench runs bench/apply.mjs with env (N, BATCH, WINDOW,
// STRIDE, REBASE) and returns its figures.
func runApplyBench(tb testing.TB, env ...string) applyFigures {
	tb.Helper()
	if _, err := os.Stat("../node_modules/@automerge/automerge/dist/automerge.wasm"); err != nil {
		tb.Fatalf("sync/js/node_modules is missing: run `npm ci` in sync/js (or `make js-check`)")
	}
	cmd := exec.Command("node", "bench/apply.mjs")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		tb.Fatalf("bench/apply.mjs: %v\n%s", err, msg)
	}
	var f applyFigures
	if err := json.Unmarshal(out, &f); err != nil {
		tb.Fatalf("bench/apply.mjs printed %q: %v", out, err)
	}
	return f
}

func TestPageClientBenchRuns(t *testing.T) {
	f := runApplyBench(t, "N=400", "BATCH=3", "WINDOW=20", "STRIDE=4", "REBASE=150")
	if f.Changes != 400 || f.Batch != 3 || f.Rebased != 2 || f.Edits == 0 {
		t.Fatalf("figures %+v", f)
	}
	for name, v := range map[string]float64{"apply": f.ApplyAtN, "automerge": f.AutomergeAtN, "ack": f.AckAtN} {
		if !(v > 0) {
			t.Errorf("%s: %v µs", name, v)
		}
	}
}

// BenchmarkPageClientApply reports the cost of a question:changes frame
// at change 100 and at change ACCORD_BENCH_CHANGES (default 10,000), with
// BATCH changes a frame and, with REBASE=K, a rebased document every K
// changes:
//
//	cd examples && go test ./server/ -run '^$' -bench PageClientApply -benchtime 1x
//	REBASE=1000 go test ./server/ -run '^$' -bench PageClientApply -benchtime 1x
func BenchmarkPageClientApply(b *testing.B) {
	n := 10000
	if s := os.Getenv("ACCORD_BENCH_CHANGES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	env := []string{"N=" + strconv.Itoa(n)}
	for _, k := range []string{"BATCH", "REBASE", "WINDOW", "STRIDE"} {
		if v := os.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	var f applyFigures
	for b.Loop() {
		f = runApplyBench(b, env...)
	}
	b.ReportMetric(f.ApplyAt100, "apply-us@100")
	b.ReportMetric(f.ApplyAtN, "apply-us@N")
	b.ReportMetric(f.ApplyAtN/f.ApplyAt100, "apply-ratio")
	b.ReportMetric(f.ClientAt100, "client-us@100")
	b.ReportMetric(f.ClientAtN, "client-us@N")
	b.ReportMetric(f.AutomergeAtN/f.AutomergeAt100, "automerge-ratio")
	b.ReportMetric(f.AckAtN/f.AckAt100, "ack-ratio")
}
