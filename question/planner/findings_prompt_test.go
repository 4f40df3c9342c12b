package planner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/accord-crdt/accord/question"
	"github.com/accord-crdt/accord/question/planner"
)

// TestReadyFindingsFeedThePrompts is R10 (and Y3's context): the write-up
// and the why draft read the decision's ready findings and takes with
// their stances; running, failed and stopped ones are left out.
func TestReadyFindingsFeedThePrompts(t *testing.T) {
	at := time.Date(2026, 10, 19, 9, 0, 0, 0, time.UTC)
	rec := question.Record{
		ID: "d1", Status: question.Settled,
		Definition: question.Definition{Questions: []question.Question{{
			ID: "q1", Text: "Which reset flow?",
			Options: []question.Option{{ID: "email", Label: "Email link"}, {ID: "sms", Label: "SMS code"}},
		}}},
		Answer: &question.Answer{Generation: 1, By: "ana", At: at, Answers: []question.QuestionAnswer{{Question: "q1", Choices: []string{"email"}}}},
		Findings: []question.Finding{
			{ID: "f1", Kind: question.FindingResearch, Status: question.FindingReady, Title: "Reset costs", Summary: "Email links cost nothing per reset.",
				Sources: []question.Source{{URL: "https://example.org/costs"}}},
			{ID: "f2", Kind: question.FindingSpike, Status: question.FindingReady, Summary: "The mailer already sends links.", Branch: "spike/reset"},
			{ID: "f3", Kind: question.FindingAsk, Status: question.FindingReady, Ref: "sam", Summary: "SMS needs a provider contract.", Stance: question.Objects},
			{ID: "f4", Kind: question.FindingResearch, Status: question.FindingRunning, Summary: "still running"},
			{ID: "f5", Kind: question.FindingResearch, Status: question.FindingFailed, Summary: "it failed"},
			{ID: "f6", Kind: question.FindingAsk, Status: question.FindingStopped, Ref: "ben", Summary: "never answered"},
		},
	}
	ans, ok := planner.AnswerOf(rec)
	if !ok || len(ans.Findings) != 3 {
		t.Fatalf("findings of the answer: %+v", ans.Findings)
	}
	for name, prompt := range map[string]string{
		"write-up": planner.WriteUpPrompt([]planner.Block{{ID: "b1", Kind: planner.Paragraph, Text: "Reset: TBD."}}, []planner.TurnAnswer{ans}),
		"why":      planner.WhyPrompt(ans),
	} {
		for _, want := range []string{"Email links cost nothing per reset.", "“Reset costs”", "https://example.org/costs",
			"The mailer already sends links.", "spike/reset", "Take of @sam (objects): SMS needs a provider contract."} {
			if !strings.Contains(prompt, want) {
				t.Errorf("%s prompt lacks %q:\n%s", name, want, prompt)
			}
		}
		for _, not := range []string{"still running", "it failed", "never answered"} {
			if strings.Contains(prompt, not) {
				t.Errorf("%s prompt holds a finding that is not ready (%q)", name, not)
			}
		}
	}
}
