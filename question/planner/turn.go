package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/accord-crdt/accord/marks"
	"github.com/accord-crdt/accord/question"
)

// AnswerOf returns the saved answer of a settled record as the Planner
// reads it: each question with its written answer or chosen options, and
// each criterion with each chosen option's mark. ok is false when the
// record has no saved answer.
func AnswerOf(rec question.Record) (TurnAnswer, bool) {
	if rec.Answer == nil {
		return TurnAnswer{}, false
	}
	out := TurnAnswer{
		Decision: rec.ID, Generation: rec.Answer.Generation, By: rec.Answer.By, SavedAt: rec.Answer.At,
		Passage:        slices.Clone(rec.Passage),
		PassageDeleted: rec.WriteUp != nil && rec.WriteUp.State == question.JobDropped && rec.WriteUp.Generation == rec.Answer.Generation,
	}
	for _, q := range rec.Definition.Questions {
		aq := AnsweredQuestion{Question: q.Text, Written: q.Written()}
		var qa *question.QuestionAnswer
		for i := range rec.Answer.Answers {
			if rec.Answer.Answers[i].Question == q.ID {
				qa = &rec.Answer.Answers[i]
			}
		}
		if qa != nil {
			aq.Answer = qa.Text
			for _, o := range q.Options {
				if !slices.Contains(qa.Choices, o.ID) {
					continue
				}
				aq.Chosen = append(aq.Chosen, o)
				for _, c := range q.Criteria {
					aq.Criteria = append(aq.Criteria, CriterionMark{Criterion: c.Label, Option: o.Label, Mark: qa.Marks[marks.Key(o.ID, c.ID)]})
				}
			}
		}
		out.Questions = append(out.Questions, aq)
	}
	for _, f := range rec.Findings {
		if f.Status != question.FindingReady {
			continue
		}
		fc := FindingContext{Kind: f.Kind, Title: f.Title, Summary: f.Summary, Sources: slices.Clone(f.Sources), Branch: f.Branch}
		if f.Kind == question.FindingAsk {
			fc.By, fc.Stance = f.Ref, f.Stance
		}
		out.Findings = append(out.Findings, fc)
	}
	return out, true
}

// writeFindings lists a saved answer's ready findings as context: each
// research result and investigation with its sources or branch, and each
// asked member's take with its stance.
func writeFindings(b *strings.Builder, a TurnAnswer, indent string) {
	for _, f := range a.Findings {
		switch f.Kind {
		case question.FindingAsk:
			stance := ""
			if f.Stance != "" {
				stance = " (" + string(f.Stance) + ")"
			}
			fmt.Fprintf(b, "%sTake of @%s%s: %s\n", indent, f.By, stance, f.Summary)
		default:
			kind := "Research"
			if f.Kind == question.FindingSpike {
				kind = "Investigation"
			}
			title := ""
			if f.Title != "" {
				title = " “" + f.Title + "”"
			}
			fmt.Fprintf(b, "%s%s finding%s: %s\n", indent, kind, title, f.Summary)
			for _, s := range f.Sources {
				fmt.Fprintf(b, "%s  source: %s\n", indent, s.URL)
			}
			if f.Branch != "" {
				fmt.Fprintf(b, "%s  branch: %s\n", indent, f.Branch)
			}
		}
	}
}

// NoticeText is the one Chat notice of a turn: who answered, then the
// question for one answer ("@ana answered “How should onboarding
// work?”") or a count for several ("@ana answered 3 decisions").
func NoticeText(answers []TurnAnswer) string {
	var who []string
	for _, a := range answers {
		if h := "@" + a.By; !slices.Contains(who, h) {
			who = append(who, h)
		}
	}
	names := strings.Join(who, ", ")
	if n := len(who); n > 1 {
		names = strings.Join(who[:n-1], ", ") + " and " + who[n-1]
	}
	if len(answers) == 1 && len(answers[0].Questions) > 0 {
		return fmt.Sprintf("%s answered “%s”", names, answers[0].Questions[0].Question)
	}
	return fmt.Sprintf("%s answered %d decisions", names, len(answers))
}

// TurnPrompt lists the saved answers for the Planner: each question, the
// answer, the chosen options, each criterion with the chosen option's
// mark, and who saved it. A card with a passage is left to its write-up.
func TurnPrompt(answers []TurnAnswer) string {
	var b strings.Builder
	if len(answers) == 1 {
		b.WriteString("A decision you left open was answered. Act on the answer.\n")
	} else {
		fmt.Fprintf(&b, "%d decisions you left open were answered. Act on each answer.\n", len(answers))
	}
	for i, a := range answers {
		fmt.Fprintf(&b, "\n%d. Decision %s, saved by @%s\n", i+1, a.Decision, a.By)
		writeAnswer(&b, a, "   ")
		if len(a.Passage) > 0 {
			fmt.Fprintf(&b, "   Its passage (%s) is updated by its own write-up; leave that passage to it.\n", strings.Join(a.Passage, ", "))
		}
		if a.PassageDeleted {
			b.WriteString("   A rewrite of the whole document deleted its passage, so no write-up will state this answer; put it into the plan where it belongs.\n")
		}
	}
	return b.String()
}

func writeAnswer(b *strings.Builder, a TurnAnswer, indent string) {
	for _, q := range a.Questions {
		fmt.Fprintf(b, "%sQuestion: %s\n", indent, q.Question)
		if q.Written {
			fmt.Fprintf(b, "%sAnswer: %s\n", indent, q.Answer)
			continue
		}
		labels := make([]string, len(q.Chosen))
		for i, o := range q.Chosen {
			labels[i] = o.Label
		}
		fmt.Fprintf(b, "%sChosen: %s\n", indent, strings.Join(labels, "; "))
		for _, c := range q.Criteria {
			m := string(c.Mark)
			if m == "" {
				m = "unmarked"
			}
			fmt.Fprintf(b, "%sCriterion %s: %s is %s\n", indent, c.Criterion, c.Option, m)
		}
	}
}

// WriteUpPrompt asks the Planner to rewrite a passage so it states every
// saved answer of its scope, earlier ones included.
func WriteUpPrompt(blocks []Block, answers []TurnAnswer) string {
	var b strings.Builder
	b.WriteString("Rewrite this passage so it states the saved answers below. Keep every earlier saved answer; change nothing outside the passage.\n\nPassage:\n")
	for _, bl := range blocks {
		fmt.Fprintf(&b, "[%s %s] %s\n", bl.Kind, bl.ID, bl.Text)
	}
	b.WriteString("\nSaved answers:\n")
	for _, a := range answers {
		fmt.Fprintf(&b, "- saved by @%s\n", a.By)
		writeAnswer(&b, a, "  ")
		writeFindings(&b, a, "  ")
	}
	return b.String()
}

// WhyPrompt asks for the why of one settle: exactly one plain sentence of
// at most question.MaxWhy characters, no Markdown.
func WhyPrompt(a TurnAnswer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Write why this answer was chosen: exactly one plain sentence of at most %d characters, no Markdown.\n\n", question.MaxWhy)
	writeAnswer(&b, a, "")
	fmt.Fprintf(&b, "Saved by @%s\n", a.By)
	if len(a.Findings) > 0 {
		b.WriteString("\nWhat was found before the decision:\n")
		writeFindings(&b, a, "")
	}
	return b.String()
}
