package question

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"
)

// ErrProjection is returned, wrapped with a description of what is wrong and
// where, when ParseProjection is given bytes that are not a well-formed
// document projection. A malformed option or criterion id or marks attribute
// also matches marks.ErrInvalid, and malformed XML also wraps the *xml.SyntaxError.
var ErrProjection = errors.New("question: malformed projection")

// Projection is how one decision card reads in the plan document: one
// <Questionnaire> element that reads correctly on its own, carrying every
// question's text, context, options, criteria and, once settled, the saved
// answer with its marks. The record stays authoritative; the projection is
// rewritten from it whenever the definition, status or answer changes.
// Empty lists (options, criteria, choices, marks) parse as nil.
//
// The syntax is a small, fixed subset of XML 1.0 (UTF-8, no namespaces):
//
//	<Questionnaire id="rec-7" status="settled">
//	  <Question id="q1">
//	    <Text>Which storage should sessions use?</Text>
//	    <Context>We already run Postgres.</Context>
//	    <Option id="pg" label="Postgres" />
//	    <Option id="sqlite" label="SQLite" />
//	    <Criterion id="no-storage" label="No new storage" />
//	    <Answer by="ana" choices="pg" marks="pg/no-storage:yes sqlite/no-storage:no" />
//	  </Question>
//	  <Question id="q2" response="text">
//	    <Text>How should onboarding work?</Text>
//	    <Answer by="ana">Invite-only at first.
//	Open sign-up in May.</Answer>
//	  </Question>
//	</Questionnaire>
//
// Elements and attributes:
//
//   - <Questionnaire id status>: the record id (non-empty) and its status
//     (open, settled or discarded); one or more <Question> children.
//   - <Question id [response="text"] [multiple="true"] [verbatim="true"]>:
//     children in this order: <Text> (required), <Context> (when not
//     empty), <Option id label /> for each option, <Criterion id label /> for
//     each criterion, then <Answer> when the decision is settled. A question
//     without response is a choice question, as every projection written
//     before written decisions existed is (L8); response="text" marks a
//     written question, which has no options, criteria or multiple.
//   - <Text> and <Context> hold the question's text and context as character
//     data, exactly: leading and trailing whitespace and newlines are part of
//     the value.
//   - <Option> and <Criterion> ids match ^[A-Za-z0-9_-]{1,64}$ and are
//     unique within their question; labels are any text.
//   - <Answer [by] [choices] [marks]>: present only on a settled decision.
//     by is who saved the answer; choices lists the chosen option ids
//     separated by single spaces (at most one unless multiple="true");
//     marks is the sparse matrix snapshot written by marks.Snapshot.Attribute,
//     present only when a cell was marked, naming only the question's own
//     options and criteria. The character data of <Answer> is the written
//     answer, exactly. A reopened (open) or discarded decision has no
//     <Answer>, so its marks attribute is gone.
//
// Rendering is deterministic: attributes and children always come in the
// order above, with two-space indentation and a final newline. In attribute
// values &, <, >, " and the whitespace characters tab, newline and carriage
// return are written as references (&amp; &lt; &gt; &quot; &#x9; &#xA;
// &#xD;), so no XML processor's attribute-value normalisation can change
// them; in character data &, < and > are escaped and carriage returns are
// written as &#xD; (a processor turns literal ones into newlines). Text that
// is not valid UTF-8, or holds a character XML 1.0 forbids (control
// characters other than tab, newline and carriage return, U+FFFE, U+FFFF),
// is written with each such byte or character replaced by U+FFFD: no XML
// processor could read it back.
//
// Reading is strict about what the format defines and tolerant of what it
// does not: unknown elements (with everything inside them) and unknown
// attributes, such as those a newer writer adds, are skipped, as are
// comments, processing instructions and a document type declaration.
// Anything else that does not follow the rules above (malformed XML, a
// missing or repeated element or attribute, children out of order, an
// unknown status or response, an answer on a decision that is not settled,
// a choice or mark naming an option or criterion the question does not have)
// is refused with an error wrapping ErrProjection. For every projection p
// that follows the rules, ParseProjection(RenderProjection(p)) equals p.
type Projection struct {
	// ID is the record id.
	ID string
	// Status is the record's status: open, settled or discarded.
	Status Status
	// Questions are the definition's questions, in order.
	Questions []ProjectedQuestion
}

// ProjectedQuestion is one question of a projection: the definition's
// question and, on a settled decision, its saved answer.
type ProjectedQuestion struct {
	Question
	// Answer is the saved answer to this question; set only when the
	// decision is settled. RenderProjection ignores Answer.Question (the
	// question's ID is used) and ParseProjection sets it to the question's
	// ID. Empty Choices and Marks parse as nil.
	Answer *QuestionAnswer
	// By is who saved the answer; meaningful only with Answer.
	By string
}

// projectionOf returns the projection of r: its definition, and its saved
// answer only while it is settled, so reopening or discarding a decision
// removes the answer (and its marks) from the document. The result shares
// no memory with r.
func projectionOf(r *Record) Projection {
	p := Projection{ID: r.ID, Status: r.Status}
	for _, q := range r.Definition.Questions {
		pq := ProjectedQuestion{Question: q}
		pq.Options = slices.Clone(q.Options)
		pq.Criteria = slices.Clone(q.Criteria)
		if r.Status == Settled && r.Answer != nil {
			for _, a := range r.Answer.Answers {
				if a.Question != q.ID {
					continue
				}
				pq.Answer = &QuestionAnswer{
					Question: q.ID,
					Choices:  slices.Clone(a.Choices),
					Text:     a.Text,
					Marks:    a.Marks.Clone(),
				}
				pq.By = r.Answer.By
				break
			}
		}
		p.Questions = append(p.Questions, pq)
	}
	return p
}

// RenderProjection writes p as a <Questionnaire> element in the format
// described at Projection. It writes what it is given and never fails; a projection
// that breaks the format's rules (an empty id, an unknown status, a choice
// naming no option, ...) renders, but ParseProjection refuses it. Answers
// are written only when p.Status is Settled.
func RenderProjection(p Projection) []byte {
	var b bytes.Buffer
	b.WriteString("<Questionnaire")
	writeAttr(&b, "id", p.ID)
	writeAttr(&b, "status", string(p.Status))
	b.WriteString(">\n")
	for i := range p.Questions {
		q := &p.Questions[i]
		b.WriteString("  <Question")
		writeAttr(&b, "id", q.ID)
		if q.Response != Choice {
			writeAttr(&b, "response", string(q.Response))
		}
		if q.Multiple {
			writeAttr(&b, "multiple", "true")
		}
		if q.Verbatim {
			writeAttr(&b, "verbatim", "true")
		}
		b.WriteString(">\n")
		writeElement(&b, "Text", q.Text)
		if q.Context != "" {
			writeElement(&b, "Context", q.Context)
		}
		for _, o := range q.Options {
			b.WriteString("    <Option")
			writeAttr(&b, "id", o.ID)
			writeAttr(&b, "label", o.Label)
			b.WriteString(" />\n")
		}
		for _, c := range q.Criteria {
			b.WriteString("    <Criterion")
			writeAttr(&b, "id", c.ID)
			writeAttr(&b, "label", c.Label)
			b.WriteString(" />\n")
		}
		if a := q.Answer; a != nil && p.Status == Settled {
			b.WriteString("    <Answer")
			writeAttr(&b, "by", q.By)
			if len(a.Choices) > 0 {
				writeAttr(&b, "choices", strings.Join(a.Choices, " "))
			}
			if len(a.Marks) > 0 {
				writeAttr(&b, "marks", a.Marks.Attribute())
			}
			if a.Text == "" {
				b.WriteString(" />\n")
			} else {
				b.WriteByte('>')
				escapeText(&b, a.Text, false)
				b.WriteString("</Answer>\n")
			}
		}
		b.WriteString("  </Question>\n")
	}
	b.WriteString("</Questionnaire>\n")
	return b.Bytes()
}

func writeAttr(b *bytes.Buffer, name, value string) {
	b.WriteByte(' ')
	b.WriteString(name)
	b.WriteString(`="`)
	escapeText(b, value, true)
	b.WriteByte('"')
}

func writeElement(b *bytes.Buffer, name, text string) {
	b.WriteString("    <")
	b.WriteString(name)
	b.WriteByte('>')
	escapeText(b, text, false)
	b.WriteString("</")
	b.WriteString(name)
	b.WriteString(">\n")
}

// escapeText writes s as XML character data, or as an attribute value when
// attr is set.
func escapeText(b *bytes.Buffer, s string, attr bool) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"' && attr:
			b.WriteString("&quot;")
		case r == '\t' && attr:
			b.WriteString("&#x9;")
		case r == '\n' && attr:
			b.WriteString("&#xA;")
		case r == '\r':
			b.WriteString("&#xD;")
		case r == utf8.RuneError && n == 1, !xmlChar(r):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteString(s[i-n : i])
		}
	}
}

// xmlChar reports whether r is in XML 1.0's Char production.
func xmlChar(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}
