package planner_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/accord-crdt/accord/internal/testutil"
	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

// T4 quiet: a turn starts 5 s after the last waiting save.
func TestTurnStartsAfterFiveQuietSeconds(t *testing.T) {
	e := newEnv(t)
	a := e.open("a", false, "p-onb")
	b := e.open("b", false, "p-ops")
	e.save(ana, a, "Invite links")
	if p := e.step(); !p.Wake.Equal(epoch.Add(5 * time.Second)) {
		t.Fatalf("plan after one save = %+v", p)
	}
	e.clock.Advance(3 * time.Second)
	e.save(ben, b, "In shifts")
	e.clock.Advance(4 * time.Second) // 4 s after the last save
	if p := e.step(); !p.Wake.Equal(epoch.Add(8*time.Second)) || len(e.turnsRun()) != 0 {
		t.Fatalf("plan 4 s after the last save = %+v, turns %d", p, len(e.turnsRun()))
	}
	e.clock.Advance(time.Second)
	e.step()
	turns := e.turnsRun()
	if len(turns) != 1 || len(turns[0].Answers) != 2 {
		t.Fatalf("turns = %+v", turns)
	}
	if len(e.rows()) != 0 {
		t.Fatalf("rows after the turn = %+v", e.rows())
	}
}

// T4 cap: saves that never leave 5 quiet seconds start a turn 30 s after
// the first.
func TestTurnStartsThirtySecondsAfterTheFirstSave(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for i := range 9 {
		ids = append(ids, e.open(string(rune('a'+i)), false, "p-onb"))
	}
	for i, id := range ids[:8] { // a save every 4 s: at 0, 4, ..., 28
		if i > 0 {
			e.clock.Advance(4 * time.Second)
		}
		e.save(ana, id, "yes")
		e.step()
	}
	if len(e.turnsRun()) != 0 {
		t.Fatal("a turn started while saves kept coming")
	}
	e.clock.Advance(2 * time.Second) // 30 s after the first save
	e.step()
	turns := e.turnsRun()
	if len(turns) != 1 || len(turns[0].Answers) != 8 {
		t.Fatalf("turns = %d", len(turns))
	}
	if turns[0].Notice != "@ana answered 8 decisions" {
		t.Fatalf("notice = %q", turns[0].Notice)
	}
}

// T4: never while a Planner turn runs or waits in that Chat; answers saved
// meanwhile join the next turn, and the turn's own run keeps Chat busy.
func TestTurnWaitsForABusyChat(t *testing.T) {
	e := newEnv(t)
	a, b, c := e.open("a", false, "p-onb"), e.open("b", false, "p-ops"), e.open("c", false, "p-reset")
	e.host.Runtime.SetBusy(doc, true) // someone typed a turn
	e.save(ana, a, "one")
	e.clock.Advance(time.Minute)
	if p := e.step(); p.Blocked != planner.ChatBusy || len(e.turnsRun()) != 0 {
		t.Fatalf("busy Chat: plan %+v, turns %d", p, len(e.turnsRun()))
	}
	e.save(ana, b, "two")
	e.host.Runtime.SetBusy(doc, false)
	e.step() // a's time came long ago, b's not yet: wait for b's quiet
	e.clock.Advance(5 * time.Second)
	e.step()
	turns := e.turnsRun()
	if len(turns) != 1 || len(turns[0].Answers) != 2 {
		t.Fatalf("turns = %+v", turns)
	}
	// The accepted turn runs: c waits for it.
	e.save(ben, c, "three")
	e.clock.Advance(time.Minute)
	if p := e.step(); p.Blocked != planner.ChatBusy {
		t.Fatalf("while the answers' turn runs: %+v", p)
	}
	e.host.Chat.Finish(doc, turns[0].ID)
	e.step()
	if turns = e.turnsRun(); len(turns) != 2 || turns[1].Answers[0].Decision != c {
		t.Fatalf("turns = %+v", turns)
	}
}

// T3, T5, T9, M7: one turn lists each question, answer, chosen option,
// criterion mark and who saved; one Chat notice names who answered; an
// anchored card's passage is left to its write-up.
func TestTurnContentAndNotice(t *testing.T) {
	e := newEnv(t)
	w := e.open("onboarding", false, "p-onb")
	c := e.open("reset", true, "p-reset")
	e.save(ana, w, "Invite links first")
	e.clock.Advance(5 * time.Second)
	e.step()
	turns := e.turnsRun()
	if len(turns) != 1 || turns[0].Notice != "@ana answered “What about onboarding?”" {
		t.Fatalf("one answer: %+v", turns)
	}
	notices := e.host.Chat.Notices(doc)
	if len(notices) != 1 || notices[0].ID != turns[0].ID || notices[0].Text != turns[0].Notice {
		t.Fatalf("notices = %+v", notices)
	}
	e.host.Chat.Finish(doc, turns[0].ID)

	e.reopen(w)
	e.save(ben, w, "Invite links, then SSO")
	e.save(ana, c, "SMS code")
	e.clock.Advance(5 * time.Second)
	e.step()
	turns = e.turnsRun()
	if len(turns) != 2 {
		t.Fatalf("%d turns", len(turns))
	}
	tu := turns[1]
	if tu.Notice != "@ben and @ana answered 2 decisions" || tu.Owner != "ana" {
		t.Fatalf("notice %q owner %q", tu.Notice, tu.Owner)
	}
	for _, want := range []string{
		"Question: What about onboarding?", "Answer: Invite links, then SSO", "saved by @ben",
		"Question: What about reset?", "Chosen: SMS code", "Criterion Cheap: SMS code is yes", "Criterion Easy reset: SMS code is unmarked", "saved by @ana",
		"Its passage (p-reset) is updated by its own write-up; leave that passage to it.",
	} {
		if !strings.Contains(tu.Prompt, want) {
			t.Fatalf("prompt lacks %q:\n%s", want, tu.Prompt)
		}
	}
	ca := tu.Answers[1]
	if ca.Questions[0].Chosen[0].Label != "SMS code" || ca.Questions[0].Criteria[0].Mark != "yes" || ca.Passage[0] != "p-reset" {
		t.Fatalf("structured answer = %+v", ca)
	}
	if len(e.host.Chat.Notices(doc)) != 2 {
		t.Fatal("more than one notice per turn")
	}
	if e.host.Docs.Applied(doc) != 0 {
		t.Fatal("a turn wrote the passage; that is the write-up's")
	}
}

// T6: without a Planner owner turns wait, across restarts, and start when
// an owner appears; nobody is made the owner.
func TestTurnWaitsForAnOwnerAcrossRestarts(t *testing.T) {
	e := newEnv(t)
	e.host.Runtime.SetOwner(doc, "")
	a := e.open("a", false, "p-onb")
	e.save(ana, a, "yes")
	e.clock.Advance(time.Hour)
	if p := e.step(); p.Blocked != planner.NoOwner {
		t.Fatalf("plan = %+v", p)
	}
	e.restart()
	e.clock.Advance(time.Hour)
	if p := e.step(); p.Blocked != planner.NoOwner || len(e.turnsRun()) != 0 {
		t.Fatalf("after a restart: %+v", p)
	}
	if o, ok, _ := e.host.Runtime.Owner(bg, doc); ok {
		t.Fatalf("the driver made %s the owner", o)
	}
	e.host.Runtime.SetOwner(doc, "rita") // a reader is no authorised owner
	if p := e.step(); p.Blocked != planner.NoOwner {
		t.Fatalf("under a reader: %+v", p)
	}
	e.host.Runtime.SetOwner(doc, "ben")
	e.step()
	if turns := e.turnsRun(); len(turns) != 1 || turns[0].Owner != "ben" {
		t.Fatalf("turns = %+v", turns)
	}
}

// T6: under a remote harness a turn waits for an attached Planner, across
// restarts too.
func TestTurnWaitsForAnAttachedPlanner(t *testing.T) {
	e := newEnv(t)
	e.host.Runtime.SetRemote(true)
	a := e.open("a", false, "p-onb")
	e.save(ana, a, "yes")
	e.clock.Advance(time.Minute)
	if p := e.step(); p.Blocked != planner.NotAttached {
		t.Fatalf("plan = %+v", p)
	}
	e.restart()
	if p := e.step(); p.Blocked != planner.NotAttached {
		t.Fatalf("after restart: %+v", p)
	}
	e.host.Runtime.SetAttached(doc, true)
	e.step()
	if len(e.turnsRun()) != 1 {
		t.Fatal("no turn once a Planner attached")
	}
}

// T2: a reopened answer never reaches a turn; saving again does, once.
func TestStaleRowsAreNeverHandedOver(t *testing.T) {
	e := newEnv(t)
	a := e.open("a", false, "p-onb")
	e.save(ana, a, "first")
	e.reopen(a)
	e.clock.Advance(time.Minute)
	e.step()
	if len(e.turnsRun()) != 0 {
		t.Fatal("a reopened answer was handed over")
	}
	e.save(ben, a, "second")
	e.clock.Advance(5 * time.Second)
	e.step()
	turns := e.turnsRun()
	if len(turns) != 1 || turns[0].Answers[0].Questions[0].Answer != "second" || turns[0].Answers[0].Generation != 2 {
		t.Fatalf("turns = %+v", turns)
	}
}

// T7: Chat refusing a turn leaves it claimed; the next pass looks it up,
// finds it unaccepted and hands it over again under the same id, once.
func TestRefusedAcceptIsRetriedUnderTheSameID(t *testing.T) {
	e := newEnv(t)
	a := e.open("a", false, "p-onb")
	e.save(ana, a, "yes")
	e.clock.Advance(5 * time.Second)
	e.host.Chat.SetBeforeAccept(func(string, planner.Turn) error { return errors.New("Chat is down") })
	if _, err := e.d.Step(bg, doc); err == nil {
		t.Fatal("a refused turn was reported delivered")
	}
	rows := e.rows()
	if len(rows) != 1 || rows[0].State != question.RowClaimed || rows[0].Turn != "turn-1" {
		t.Fatalf("rows = %+v", rows)
	}
	e.host.Chat.SetBeforeAccept(nil)
	e.step()
	turns := e.turnsRun()
	if len(turns) != 1 || turns[0].ID != "turn-1" || len(e.rows()) != 0 {
		t.Fatalf("turns = %+v, rows %+v", turns, e.rows())
	}
}

// T7: a turn Chat accepted whose reply was lost is recognised as started:
// it is marked, never run twice.
func TestAcceptedButUnmarkedTurnIsNeverRunTwice(t *testing.T) {
	e := newEnv(t)
	a := e.open("a", false, "p-onb")
	e.save(ana, a, "yes")
	e.clock.Advance(5 * time.Second)
	e.host.Chat.SetAfterAccept(func(string, planner.Turn) error { return errors.New("reply lost") })
	if _, err := e.d.Step(bg, doc); err == nil {
		t.Fatal("no error from a lost reply")
	}
	e.host.Chat.SetAfterAccept(nil)
	e.host.Chat.FinishAll(doc)
	e.restart() // a crash between accept and mark
	e.step()
	if turns := e.turnsRun(); len(turns) != 1 || len(e.rows()) != 0 {
		t.Fatalf("turns = %d, rows %+v", len(turns), e.rows())
	}
}

// T7: rows claimed before a crash, never handed to Chat, start after the
// restart under their id, even though the owner has to appear first; a row
// of that claim reopened meanwhile stays out.
func TestClaimedBeforeACrashStartsAfterTheRestart(t *testing.T) {
	e := newEnv(t)
	a, b := e.open("a", false, "p-onb"), e.open("b", false, "p-ops")
	e.save(ana, a, "yes")
	e.save(ana, b, "no")
	e.do(func(q *question.Authority) error {
		_, err := q.ClaimAnswers(bg, "turn-crashed", []string{a, b})
		return err
	})
	e.reopen(b)
	e.host.Runtime.SetOwner(doc, "")
	e.restart()
	if p := e.step(); p.Blocked != planner.NoOwner || len(e.turnsRun()) != 0 {
		t.Fatalf("plan = %+v", p)
	}
	e.host.Runtime.SetOwner(doc, "ana")
	e.step()
	turns := e.turnsRun()
	if len(turns) != 1 || turns[0].ID != "turn-crashed" || len(turns[0].Answers) != 1 || turns[0].Answers[0].Decision != a {
		t.Fatalf("turns = %+v", turns)
	}
	if len(e.rows()) != 0 {
		t.Fatalf("rows = %+v", e.rows())
	}
}

// T1: decisions nobody left to the Planner (people's, Chat's) never start
// a turn.
func TestOnlyThePlannersDecisionsStartTurns(t *testing.T) {
	e := newEnv(t)
	var id string
	e.do(func(a *question.Authority) error {
		out, err := a.Create(bg, ana, []question.CreateRequest{{Key: "mine", Origin: question.FromPerson,
			Definition: question.Definition{Questions: []question.Question{{Text: "Q?", Response: question.Text, Options: []question.Option{}}}}}})
		if err == nil {
			id = out[0].Record.ID
		}
		return err
	})
	e.save(ana, id, "x")
	e.clock.Advance(time.Minute)
	e.step()
	if len(e.turnsRun()) != 0 {
		t.Fatal("a person's decision started a Planner turn")
	}
}

// The background loop: Watch, a save and the fake clock start a turn; an
// owner appearing (a Poke) starts a waiting one.
func TestWatchRunsOnTimersAndPokes(t *testing.T) {
	e := newEnv(t)
	e.local.OnChange(e.d.Poke)
	e.host.Runtime.OnChange(func(string) { e.d.PokeAll() })
	e.d.Watch(doc)
	a := e.open("a", false, "p-onb")
	e.save(ana, a, "yes")
	due := epoch.Add(5 * time.Second)
	testutil.Eventually(t, "the timer for the quiet time", func() bool { return e.clock.Armed(due) })
	e.clock.Advance(5 * time.Second)
	testutil.Eventually(t, "the turn", func() bool { return len(e.turnsRun()) == 1 })
	e.host.Chat.FinishAll(doc)

	e.host.Runtime.SetOwner(doc, "")
	b := e.open("b", false, "p-ops")
	e.save(ana, b, "no")
	e.clock.Advance(time.Minute)
	if p := e.step(); p.Blocked != planner.NoOwner || len(e.turnsRun()) != 1 {
		t.Fatalf("without an owner: %+v, %d turns", p, len(e.turnsRun()))
	}
	e.host.Runtime.SetOwner(doc, "ana") // pokes the driver
	testutil.Eventually(t, "the turn once an owner appeared", func() bool { return len(e.turnsRun()) == 2 })
	// Write-up jobs ran too, in their own loop.
	testutil.Eventually(t, "the write-ups", func() bool { return e.host.Docs.Applied(doc) == 2 })
}

// Close stops the loops; Step and RunJobs then refuse.
func TestCloseStopsTheDriver(t *testing.T) {
	e := newEnv(t)
	e.d.Watch(doc)
	e.d.Close()
	if _, err := e.d.Step(bg, doc); !errors.Is(err, planner.ErrClosed) {
		t.Fatalf("Step after Close = %v", err)
	}
	if _, err := e.d.RunJobs(context.Background(), doc); !errors.Is(err, planner.ErrClosed) {
		t.Fatalf("RunJobs after Close = %v", err)
	}
	if _, err := planner.New(planner.Options{}); err == nil {
		t.Fatal("New without hosts")
	}
}
