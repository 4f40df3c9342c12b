package planner_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

// The answer queue against a plain model: saves, re-saves, reopens, turns
// (with Chat refusing a turn or losing its reply), busy Chats, owners
// coming and going, crashes right after a claim, and restarts. After every
// action the store's rows and Chat's turns must equal the model's, no
// answer may be delivered twice or lost, and at the end every settled
// answer has reached exactly one turn.

type mrow struct {
	gen     uint64
	state   question.RowState
	turn    string
	saved   time.Time
	claimed time.Time
}

type mturn struct {
	id      string
	answers []string // "decision:generation"
}

type queueModel struct {
	settled  map[string]bool
	gen      map[string]uint64
	rows     map[string]mrow
	accepted []mturn
	running  int
	typed    bool // a typed turn keeps Chat busy
	owner    bool
	nextTurn int
	fault    string // the next Accept: "" ok, "refuse", "lose-reply"
}

func (m *queueModel) gateOpen() bool { return m.owner && !m.typed && m.running == 0 }

func (m *queueModel) isAccepted(id string) bool {
	return slices.ContainsFunc(m.accepted, func(t mturn) bool { return t.id == id })
}

// claim claims every waiting row under id and drops stale rows no turn
// holds, as Authority.ClaimAnswers does.
func (m *queueModel) claim(id string, now time.Time) {
	for d, r := range m.rows {
		switch {
		case r.state == question.RowWaiting:
			r.state, r.turn, r.claimed = question.RowClaimed, id, now
			m.rows[d] = r
		case r.state == question.RowStale && r.turn == "":
			delete(m.rows, d)
		}
	}
}

// step is what one Driver.Step must do, written plainly. It returns false
// when the step ends with an error (a fault).
func (m *queueModel) step(now time.Time) bool {
	for {
		turns := map[string]time.Time{}
		for _, r := range m.rows {
			if r.turn != "" {
				if at, ok := turns[r.turn]; !ok || r.claimed.Before(at) {
					turns[r.turn] = r.claimed
				}
			}
		}
		done := false
		for id := range turns {
			if m.isAccepted(id) {
				m.mark(id)
				done = true
			}
		}
		if done {
			continue
		}
		if !m.gateOpen() {
			return true
		}
		var id string
		if len(turns) > 0 {
			ids := slices.Collect(func(yield func(string) bool) {
				for id := range turns {
					if !yield(id) {
						return
					}
				}
			})
			slices.SortFunc(ids, func(x, y string) int {
				if c := turns[x].Compare(turns[y]); c != 0 {
					return c
				}
				return strings.Compare(x, y)
			})
			id = ids[0]
		} else {
			var first, last time.Time
			n := 0
			for _, r := range m.rows {
				if r.state != question.RowWaiting {
					continue
				}
				if n == 0 || r.saved.Before(first) {
					first = r.saved
				}
				if n == 0 || r.saved.After(last) {
					last = r.saved
				}
				n++
			}
			if n == 0 {
				return true
			}
			due := last.Add(5 * time.Second)
			if c := first.Add(30 * time.Second); c.Before(due) {
				due = c
			}
			if now.Before(due) {
				return true
			}
			m.nextTurn++
			id = fmt.Sprintf("turn-%d", m.nextTurn)
			m.claim(id, now)
		}
		var answers []string
		for d, r := range m.rows {
			if r.turn == id && r.state == question.RowClaimed {
				answers = append(answers, fmt.Sprintf("%s:%d", d, r.gen))
			}
		}
		slices.Sort(answers)
		if len(answers) > 0 {
			switch m.fault {
			case "refuse":
				m.fault = ""
				return false
			case "lose-reply":
				m.fault = ""
				m.accepted = append(m.accepted, mturn{id, answers})
				m.running++
				return false
			}
			m.accepted = append(m.accepted, mturn{id, answers})
			m.running++
		}
		m.mark(id)
	}
}

func (m *queueModel) mark(id string) {
	for d, r := range m.rows {
		if r.turn == id {
			delete(m.rows, d)
		}
	}
}

func TestQueueMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		e := newEnvOn(rt)
		defer func() { e.d.Close() }()
		fault := ""
		e.host.Chat.SetBeforeAccept(func(string, planner.Turn) error {
			if fault == "refuse" {
				fault = ""
				return errors.New("Chat is down")
			}
			return nil
		})
		e.host.Chat.SetAfterAccept(func(string, planner.Turn) error {
			if fault == "lose-reply" {
				fault = ""
				return errors.New("reply lost")
			}
			return nil
		})
		m := &queueModel{settled: map[string]bool{}, gen: map[string]uint64{}, rows: map[string]mrow{}, owner: true}
		var ids []string
		for i := range 4 {
			id := e.open(fmt.Sprintf("k%d", i), i%2 == 1, "p-onb")
			ids = append(ids, id)
			m.gen[id] = 1
		}
		crashes := 0

		rt.Repeat(map[string]func(*rapid.T){
			"save": func(rt *rapid.T) {
				d := rapid.SampledFrom(ids).Draw(rt, "decision")
				if m.settled[d] {
					rt.Skip("settled")
				}
				answer := "yes"
				if e.record(d).Definition.Questions[0].Response == question.Choice {
					answer = "SMS code"
				}
				e.save(ben, d, answer)
				m.settled[d] = true
				m.rows[d] = mrow{gen: m.gen[d], state: question.RowWaiting, saved: e.clock.Now()}
			},
			"reopen": func(rt *rapid.T) {
				d := rapid.SampledFrom(ids).Draw(rt, "decision")
				if !m.settled[d] {
					rt.Skip("open")
				}
				e.reopen(d)
				m.settled[d] = false
				m.gen[d]++
				if r, ok := m.rows[d]; ok {
					r.state = question.RowStale
					m.rows[d] = r
				}
			},
			"advance": func(rt *rapid.T) {
				e.clock.Advance(time.Duration(rapid.IntRange(1, 40).Draw(rt, "seconds")) * time.Second)
			},
			"step": func(rt *rapid.T) {
				fault = rapid.SampledFrom([]string{"", "", "", "refuse", "lose-reply"}).Draw(rt, "fault")
				m.fault = fault
				ok := m.step(e.clock.Now())
				_, err := e.d.Step(bg, doc)
				if ok != (err == nil) {
					rt.Fatalf("step: model ok %v, driver %v", ok, err)
				}
				fault, m.fault = "", ""
			},
			"finish turns": func(rt *rapid.T) {
				e.host.Chat.FinishAll(doc)
				m.running = 0
			},
			"typed turn": func(rt *rapid.T) {
				m.typed = rapid.Bool().Draw(rt, "busy")
				e.host.Runtime.SetBusy(doc, m.typed)
			},
			"owner": func(rt *rapid.T) {
				m.owner = rapid.Bool().Draw(rt, "owner")
				owner := ""
				if m.owner {
					owner = "ana"
				}
				e.host.Runtime.SetOwner(doc, owner)
			},
			"crash after claim": func(rt *rapid.T) {
				if !slices.ContainsFunc(slices.Collect(mapValues(m.rows)), func(r mrow) bool { return r.state == question.RowWaiting }) {
					rt.Skip("nothing waits")
				}
				crashes++
				id := fmt.Sprintf("crash-%d", crashes)
				e.do(func(a *question.Authority) error {
					var all []string
					for _, r := range a.AnswerRows() {
						all = append(all, r.Decision)
					}
					_, err := a.ClaimAnswers(bg, id, all)
					return err
				})
				m.claim(id, e.clock.Now())
				e.restart()
			},
			"restart": func(rt *rapid.T) { e.restart() },
			"":        func(rt *rapid.T) { checkQueue(rt, e, m) },
		})

		// In the end, with an owner and a free Chat, every settled answer
		// reaches exactly one turn.
		e.host.Runtime.SetOwner(doc, "ana")
		e.host.Runtime.SetBusy(doc, false)
		for range 2 + len(m.rows) { // each turn keeps Chat busy until it finishes
			e.host.Chat.FinishAll(doc)
			e.clock.Advance(time.Minute)
			e.step()
		}
		if rows := e.rows(); len(rows) != 0 && slices.ContainsFunc(rows, func(r question.AnswerRow) bool { return r.State != question.RowStale }) {
			rt.Fatalf("answers still waiting after the drain: %+v", rows)
		}
		delivered := deliveredOnce(rt, e)
		for _, d := range ids {
			rec := e.record(d)
			if rec.Status == question.Settled && delivered[fmt.Sprintf("%s:%d", d, rec.Answer.Generation)] != 1 {
				rt.Fatalf("the answer of %s (generation %d) was lost", d, rec.Answer.Generation)
			}
		}
	})
}

func mapValues[K comparable, V any](m map[K]V) func(func(V) bool) {
	return func(yield func(V) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// deliveredOnce counts each answer's turns and fails if one ran twice.
func deliveredOnce(rt *rapid.T, e *env) map[string]int {
	n := map[string]int{}
	ids := map[string]bool{}
	for _, tu := range e.turnsRun() {
		if ids[tu.ID] {
			rt.Fatalf("turn %s ran twice", tu.ID)
		}
		ids[tu.ID] = true
		for _, a := range tu.Answers {
			k := fmt.Sprintf("%s:%d", a.Decision, a.Generation)
			if n[k]++; n[k] > 1 {
				rt.Fatalf("answer %s was delivered twice", k)
			}
		}
	}
	return n
}

func checkQueue(rt *rapid.T, e *env, m *queueModel) {
	got := map[string]mrow{}
	for _, r := range e.rows() {
		got[r.Decision] = mrow{gen: r.Generation, state: r.State, turn: r.Turn, saved: r.SavedAt, claimed: r.ClaimedAt}
	}
	if fmt.Sprint(got) != fmt.Sprint(m.rows) {
		rt.Fatalf("rows:\n got  %v\n want %v", got, m.rows)
	}
	var turns []mturn
	for _, tu := range e.turnsRun() {
		var answers []string
		for _, a := range tu.Answers {
			answers = append(answers, fmt.Sprintf("%s:%d", a.Decision, a.Generation))
		}
		slices.Sort(answers)
		turns = append(turns, mturn{tu.ID, answers})
	}
	if fmt.Sprint(turns) != fmt.Sprint(m.accepted) {
		rt.Fatalf("turns:\n got  %v\n want %v", turns, m.accepted)
	}
	delivered := deliveredOnce(rt, e)
	// No answer lost: a settled answer was delivered or still waits.
	for d, settled := range m.settled {
		if !settled {
			continue
		}
		k := fmt.Sprintf("%s:%d", d, m.gen[d])
		r, waits := m.rows[d]
		if delivered[k] == 0 && (!waits || r.state == question.RowStale || r.gen != m.gen[d]) {
			rt.Fatalf("the answer %s is neither delivered nor waiting", k)
		}
	}
}
