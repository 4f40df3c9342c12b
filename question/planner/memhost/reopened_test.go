package memhost_test

import (
	"strings"
	"testing"
	"time"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
	"github.com/accord-crdt/accord/question/planner/memhost"
)

// A write-up's line becomes a Reopened line once its decision is
// reopened, other lines stay, and the next write-up replaces it.
func TestReopenedLine(t *testing.T) {
	def := question.Definition{Questions: []question.Question{{ID: "q1", Text: "Which channel?",
		Options: []question.Option{{ID: "a", Label: "Passkey"}, {ID: "b", Label: "Email link"}}}}}
	ans := question.Answer{Generation: 1, By: "ana", At: time.Unix(1, 0),
		Answers: []question.QuestionAnswer{{Question: "q1", Choices: []string{"a"}}}}
	rec := question.Record{ID: "d1", Status: question.Settled, Definition: def, Passage: []string{"b1"}, Answer: &ans}
	ta, _ := planner.AnswerOf(rec)
	up := memhost.DefaultWriteUp(planner.WriteUpRequest{Blocks: []planner.Block{{ID: "b1", Text: "Recovery.\nDecided: Email link (saved by @ben)"}}, Answers: []planner.TurnAnswer{ta}})
	text := up.Source["b1"]
	if text != "Recovery.\nDecided: Passkey (saved by @ana)" {
		t.Fatalf("write-up: %q", text)
	}

	rec.Status, rec.Answer = question.Open, nil
	hist := question.HistoryEntry{Answer: ans, ReopenedBy: "ben"}
	rec.History = []question.HistoryEntry{hist}
	got := memhost.ReopenedLine(text, rec, hist)
	if got != "Recovery.\nReopened: Passkey had been saved by @ana; @ben reopened it" {
		t.Fatalf("reopened: %q", got)
	}
	if again := memhost.ReopenedLine(got, rec, hist); again != got {
		t.Fatalf("a second call changed it again: %q", again)
	}
	other := question.HistoryEntry{Answer: question.Answer{Generation: 1, By: "ben", Answers: []question.QuestionAnswer{{Question: "q1", Choices: []string{"b"}}}}, ReopenedBy: "ana"}
	if kept := memhost.ReopenedLine(text, rec, other); kept != text {
		t.Fatalf("another answer's reopening changed the line: %q", kept)
	}

	// The next save's write-up replaces the Reopened line.
	ans2 := question.Answer{Generation: 2, By: "ben", Answers: []question.QuestionAnswer{{Question: "q1", Choices: []string{"b"}}}}
	rec.Status, rec.Answer = question.Settled, &ans2
	ta2, _ := planner.AnswerOf(rec)
	next := memhost.DefaultWriteUp(planner.WriteUpRequest{Blocks: []planner.Block{{ID: "b1", Text: got}}, Answers: []planner.TurnAnswer{ta2}}).Source["b1"]
	if strings.Contains(next, "Reopened") || !strings.HasSuffix(next, "Decided: Email link (saved by @ben)") {
		t.Fatalf("the next write-up: %q", next)
	}
}
