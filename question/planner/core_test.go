package planner_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

func at(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }

func waiting(id string, saved int) question.AnswerRow {
	return question.AnswerRow{Decision: id, Generation: 1, By: "ana", SavedAt: at(saved), State: question.RowWaiting}
}

func claimed(id, turn string, saved, claimedAt int) question.AnswerRow {
	r := waiting(id, saved)
	r.State, r.Turn, r.ClaimedAt = question.RowClaimed, turn, at(claimedAt)
	return r
}

var open = planner.Gate{Owner: "ana"}

// T4, T6, T7: the core's decisions, one rule per case, on explicit times.
func TestNextRules(t *testing.T) {
	stale := waiting("s", 0)
	stale.State = question.RowStale
	staleClaimed := claimed("s", "t9", 0, 1)
	staleClaimed.State = question.RowStale
	cases := []struct {
		name       string
		now        int
		rows       []question.AnswerRow
		gate       planner.Gate
		unaccepted []string
		want       planner.Plan
	}{
		{name: "nothing waits", now: 100, gate: open, want: planner.Plan{}},
		{name: "T4 quiet: 5 s after the save", now: 4, rows: []question.AnswerRow{waiting("a", 0)}, gate: open,
			want: planner.Plan{Wake: at(5)}},
		{name: "T4 quiet passed", now: 5, rows: []question.AnswerRow{waiting("a", 0)}, gate: open,
			want: planner.Plan{Claim: []string{"a"}}},
		{name: "T4 a later save pushes the start", now: 6, rows: []question.AnswerRow{waiting("a", 0), waiting("b", 3)}, gate: open,
			want: planner.Plan{Wake: at(8)}},
		{name: "T4 30 s cap beats the quiet time", now: 29, rows: []question.AnswerRow{waiting("a", 0), waiting("b", 27)}, gate: open,
			want: planner.Plan{Wake: at(30)}},
		{name: "T4 cap reached with saves still coming", now: 30, rows: []question.AnswerRow{waiting("b", 28), waiting("a", 0)}, gate: open,
			want: planner.Plan{Claim: []string{"a", "b"}}},
		{name: "T4 busy Chat: nothing starts", now: 100, rows: []question.AnswerRow{waiting("a", 0)}, gate: planner.Gate{Owner: "ana", Busy: true},
			want: planner.Plan{Blocked: planner.ChatBusy}},
		{name: "T6 no owner: waits", now: 100, rows: []question.AnswerRow{waiting("a", 0)}, gate: planner.Gate{},
			want: planner.Plan{Blocked: planner.NoOwner}},
		{name: "T6 remote harness without a Planner: waits", now: 100, rows: []question.AnswerRow{waiting("a", 0)},
			gate: planner.Gate{Owner: "ana", Remote: true}, want: planner.Plan{Blocked: planner.NotAttached}},
		{name: "T6 remote harness with a Planner attached", now: 100, rows: []question.AnswerRow{waiting("a", 0)},
			gate: planner.Gate{Owner: "ana", Remote: true, Attached: true}, want: planner.Plan{Claim: []string{"a"}}},
		{name: "T2 stale rows never form a turn", now: 100, rows: []question.AnswerRow{stale}, gate: open, want: planner.Plan{}},
		{name: "T7 a claimed turn is looked up first, even without an owner", now: 0, rows: []question.AnswerRow{claimed("a", "t1", 0, 0), waiting("b", 0)},
			gate: planner.Gate{}, want: planner.Plan{Check: "t1"}},
		{name: "T7 oldest claim first", now: 50, rows: []question.AnswerRow{claimed("a", "t2", 0, 9), claimed("b", "t1", 0, 8)}, gate: open,
			want: planner.Plan{Check: "t1"}},
		{name: "T7 unaccepted claim restarts under its id", now: 50, rows: []question.AnswerRow{claimed("a", "t1", 0, 9), waiting("b", 0)}, gate: open,
			unaccepted: []string{"t1"}, want: planner.Plan{Start: "t1"}},
		{name: "T7 unaccepted claim waits for a free Chat", now: 50, rows: []question.AnswerRow{claimed("a", "t1", 0, 9)},
			gate: planner.Gate{Owner: "ana", Busy: true}, unaccepted: []string{"t1"}, want: planner.Plan{Blocked: planner.ChatBusy}},
		{name: "T7 a stale row still names its turn", now: 50, rows: []question.AnswerRow{staleClaimed}, gate: open,
			want: planner.Plan{Check: "t9"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			un := map[string]bool{}
			for _, id := range c.unaccepted {
				un[id] = true
			}
			got := planner.Next(planner.PlanInput{Now: at(c.now), Rows: c.rows, Gate: c.gate, Unaccepted: un})
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("Next = %+v\nwant   %+v", got, c.want)
			}
		})
	}
}

// T4: replaying a save pattern through the core gives the turn start
// times the rules describe: each turn starts at min(last+5, first+30),
// and saves during a busy Chat join the next turn.
func TestNextSchedule(t *testing.T) {
	type turn struct {
		at  int
		ids []string
	}
	run := func(saves map[int]string, busy func(s int) bool, until int) []turn {
		var rows []question.AnswerRow
		var out []turn
		for s := 0; s <= until; s++ {
			if id, ok := saves[s]; ok {
				rows = append(rows, waiting(id, s))
			}
			p := planner.Next(planner.PlanInput{Now: at(s), Rows: rows, Gate: planner.Gate{Owner: "ana", Busy: busy(s)}})
			if len(p.Claim) > 0 {
				out = append(out, turn{s, p.Claim})
				rows = slices.DeleteFunc(rows, func(r question.AnswerRow) bool { return slices.Contains(p.Claim, r.Decision) })
			}
		}
		return out
	}
	never := func(int) bool { return false }
	// A save every 4 s never leaves 5 s of quiet: the cap starts the turn.
	steady := map[int]string{0: "a", 4: "b", 8: "c", 12: "d", 16: "e", 20: "f", 24: "g", 28: "h", 32: "i"}
	got := run(steady, never, 60)
	want := []turn{{30, []string{"a", "b", "c", "d", "e", "f", "g", "h"}}, {37, []string{"i"}}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("steady saves: %v, want %v", got, want)
	}
	// Two saves close together, then quiet.
	if got := run(map[int]string{0: "a", 2: "b"}, never, 20); fmt.Sprint(got) != fmt.Sprint([]turn{{7, []string{"a", "b"}}}) {
		t.Fatalf("close saves: %v", got)
	}
	// Chat busy from 3 to 40: the save at 0 and the one at 20 share the
	// turn that starts when Chat is free.
	busy := func(s int) bool { return s >= 3 && s < 40 }
	if got := run(map[int]string{0: "a", 20: "b"}, busy, 60); fmt.Sprint(got) != fmt.Sprint([]turn{{40, []string{"a", "b"}}}) {
		t.Fatalf("busy Chat: %v", got)
	}
}
