package question

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/accord-crdt/accord/marks"
)

// settledChoice is a settled choice decision with criteria and marks.
func settledChoice() Projection {
	return Projection{
		ID:     "rec-7",
		Status: Settled,
		Questions: []ProjectedQuestion{{
			Question: Question{
				ID:      "q1",
				Text:    "Which storage should sessions use?",
				Context: "We already run Postgres.",
				Options: []Option{{ID: "pg", Label: "Postgres"}, {ID: "sqlite", Label: "SQLite"}},
				Criteria: []Criterion{
					{ID: "no-storage", Label: "No new storage"},
					{ID: "easy-reset", Label: "Easy reset"},
				},
			},
			Answer: &QuestionAnswer{
				Question: "q1",
				Choices:  []string{"pg"},
				Marks: marks.Snapshot{
					"sqlite/no-storage": marks.No,
					"pg/no-storage":     marks.Yes,
					"sqlite/easy-reset": marks.Partly,
				},
			},
			By: "ana",
		}},
	}
}

// settledWritten is a settled written decision whose answer spans lines.
func settledWritten() Projection {
	return Projection{
		ID:     "rec-8",
		Status: Settled,
		Questions: []ProjectedQuestion{{
			Question: Question{ID: "q1", Text: "How should onboarding work?", Response: Text},
			Answer:   &QuestionAnswer{Question: "q1", Text: "Invite-only at first.\nOpen sign-up in May."},
			By:       "sam",
		}},
	}
}

func mustParse(t testing.TB, b []byte) Projection {
	t.Helper()
	p, err := ParseProjection(b)
	if err != nil {
		t.Fatalf("ParseProjection(%s): %v", b, err)
	}
	return p
}

func TestRenderProjection(t *testing.T) {
	tests := []struct {
		name string
		p    Projection
		want string
	}{
		{"settled choice with criteria and marks", settledChoice(), `<Questionnaire id="rec-7" status="settled">
  <Question id="q1">
    <Text>Which storage should sessions use?</Text>
    <Context>We already run Postgres.</Context>
    <Option id="pg" label="Postgres" />
    <Option id="sqlite" label="SQLite" />
    <Criterion id="no-storage" label="No new storage" />
    <Criterion id="easy-reset" label="Easy reset" />
    <Answer by="ana" choices="pg" marks="pg/no-storage:yes sqlite/easy-reset:partly sqlite/no-storage:no" />
  </Question>
</Questionnaire>
`},
		{"settled written", settledWritten(), `<Questionnaire id="rec-8" status="settled">
  <Question id="q1" response="text">
    <Text>How should onboarding work?</Text>
    <Answer by="sam">Invite-only at first.
Open sign-up in May.</Answer>
  </Question>
</Questionnaire>
`},
		{"open, multiple, no options yet", Projection{ID: "r", Status: Open, Questions: []ProjectedQuestion{
			{Question: Question{ID: "a", Text: "Pick any", Multiple: true}},
			{Question: Question{ID: "b", Text: "Host says", Verbatim: true, Options: []Option{{ID: "ok", Label: "OK"}}}},
		}}, `<Questionnaire id="r" status="open">
  <Question id="a" multiple="true">
    <Text>Pick any</Text>
  </Question>
  <Question id="b" verbatim="true">
    <Text>Host says</Text>
    <Option id="ok" label="OK" />
  </Question>
</Questionnaire>
`},
		{"settled without marks or choices", Projection{ID: "r", Status: Settled, Questions: []ProjectedQuestion{
			{Question: Question{ID: "a", Text: "t", Options: []Option{{ID: "x", Label: "X"}}, Criteria: []Criterion{{ID: "c", Label: "C"}}},
				Answer: &QuestionAnswer{Question: "a", Marks: marks.Snapshot{}}, By: "bo"},
		}}, `<Questionnaire id="r" status="settled">
  <Question id="a">
    <Text>t</Text>
    <Option id="x" label="X" />
    <Criterion id="c" label="C" />
    <Answer by="bo" />
  </Question>
</Questionnaire>
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := RenderProjection(tc.p)
			if string(got) != tc.want {
				t.Fatalf("RenderProjection:\n%s\nwant:\n%s", got, tc.want)
			}
			for range 10 { // marks come from a map: output must not vary
				if again := RenderProjection(tc.p); !bytes.Equal(again, got) {
					t.Fatalf("RenderProjection is not deterministic:\n%s\nthen\n%s", got, again)
				}
			}
			back := mustParse(t, got)
			if !equalProjection(back, tc.p) {
				t.Errorf("ParseProjection(RenderProjection(p)) = %+v, want %+v", back, tc.p)
			}
		})
	}
}

// equalProjection compares projections, treating empty and nil lists and
// snapshots alike.
func equalProjection(a, b Projection) bool {
	return reflect.DeepEqual(canonical(a), canonical(b))
}

func canonical(p Projection) Projection {
	qs := p.Questions
	p.Questions = nil
	for _, q := range qs {
		if len(q.Options) == 0 {
			q.Options = nil
		}
		if len(q.Criteria) == 0 {
			q.Criteria = nil
		}
		if q.Answer != nil {
			a := *q.Answer
			if len(a.Choices) == 0 {
				a.Choices = nil
			}
			if len(a.Marks) == 0 {
				a.Marks = nil
			}
			q.Answer = &a
		}
		p.Questions = append(p.Questions, q)
	}
	return p
}

func TestProjectionOnlySettledShowsAnswer(t *testing.T) {
	for _, status := range []Status{Open, Discarded} {
		p := settledChoice()
		p.Status = status
		out := string(RenderProjection(p))
		if strings.Contains(out, "<Answer") || strings.Contains(out, "marks=") {
			t.Errorf("status %s renders an answer:\n%s", status, out)
		}
		back := mustParse(t, []byte(out))
		if back.Questions[0].Answer != nil || back.Status != status {
			t.Errorf("status %s parses as %+v", status, back)
		}
	}
}

func TestProjectionOfRecord(t *testing.T) {
	r := &Record{
		ID:     "rec-1",
		Status: Settled,
		Definition: Definition{Questions: []Question{
			{ID: "q1", Text: "Which?", Options: []Option{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}},
				Criteria: []Criterion{{ID: "c1", Label: "Cheap"}}},
			{ID: "q2", Text: "Why?", Response: Text, Options: []Option{}},
		}},
		Answer: &Answer{
			Generation: 1,
			By:         "ana",
			Answers: []QuestionAnswer{
				{Question: "q2", Text: "Because."},
				{Question: "q1", Choices: []string{"b"}, Marks: marks.Snapshot{"b/c1": marks.Yes, "a/c1": marks.No}},
			},
		},
	}
	p := projectionOf(r)
	out := string(RenderProjection(p))
	want := `<Questionnaire id="rec-1" status="settled">
  <Question id="q1">
    <Text>Which?</Text>
    <Option id="a" label="A" />
    <Option id="b" label="B" />
    <Criterion id="c1" label="Cheap" />
    <Answer by="ana" choices="b" marks="a/c1:no b/c1:yes" />
  </Question>
  <Question id="q2" response="text">
    <Text>Why?</Text>
    <Answer by="ana">Because.</Answer>
  </Question>
</Questionnaire>
`
	if out != want {
		t.Fatalf("settled record renders:\n%s\nwant:\n%s", out, want)
	}
	if back := mustParse(t, []byte(out)); !equalProjection(back, p) {
		t.Errorf("round trip: %+v, want %+v", back, p)
	}

	// The projection shares no memory with the record.
	p.Questions[0].Options[0].Label = "changed"
	p.Questions[0].Answer.Marks["a/c1"] = marks.Yes
	p.Questions[0].Answer.Choices[0] = "a"
	if r.Definition.Questions[0].Options[0].Label != "A" || r.Answer.Answers[1].Marks["a/c1"] != marks.No || r.Answer.Answers[1].Choices[0] != "b" {
		t.Fatalf("changing the projection changed the record: %+v", r)
	}

	// Reopening: the record is open with no current answer (it moved to
	// history); the projection has no <Answer>, hence no marks attribute.
	r.History = append(r.History, HistoryEntry{Answer: *r.Answer})
	r.Answer = nil
	r.Status = Open
	out = string(RenderProjection(projectionOf(r)))
	if strings.Contains(out, "<Answer") || strings.Contains(out, "marks=") {
		t.Errorf("reopened record still renders its answer:\n%s", out)
	}
	// Even a stale answer left on an open record is not projected.
	r.Answer = &r.History[0].Answer
	if p := projectionOf(r); p.Questions[0].Answer != nil || p.Questions[0].By != "" {
		t.Errorf("open record projects an answer: %+v", p.Questions[0])
	}
}

func TestParseProjectionLegacyChoice(t *testing.T) {
	// Written before written decisions and criteria existed: no response
	// marker, so every question is a choice question (L8).
	old := `<Questionnaire id="old-1" status="settled">
  <Question id="q1">
    <Text>Ship on Friday?</Text>
    <Option id="yes" label="Yes" />
    <Option id="no" label="No" />
    <Answer by="lee" choices="no" />
  </Question>
</Questionnaire>`
	p := mustParse(t, []byte(old))
	q := p.Questions[0]
	if q.Response != Choice || q.Written() {
		t.Errorf("Response = %q, want choice", q.Response)
	}
	want := Projection{ID: "old-1", Status: Settled, Questions: []ProjectedQuestion{{
		Question: Question{ID: "q1", Text: "Ship on Friday?", Options: []Option{{ID: "yes", Label: "Yes"}, {ID: "no", Label: "No"}}},
		Answer:   &QuestionAnswer{Question: "q1", Choices: []string{"no"}},
		By:       "lee",
	}}}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got %+v, want %+v", p, want)
	}
	// A byte order mark in front is allowed.
	if bom := mustParse(t, append([]byte("\ufeff"), old...)); !reflect.DeepEqual(bom, want) {
		t.Errorf("with a byte order mark: %+v", bom)
	}
	// It re-renders without a response marker.
	if out := RenderProjection(p); bytes.Contains(out, []byte("response=")) {
		t.Errorf("legacy projection gained a response marker:\n%s", out)
	}
}

func TestParseProjectionIgnoresUnknown(t *testing.T) {
	in := `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE Questionnaire>
<!-- a newer writer -->
<Questionnaire id="r1" status="settled" version="3" x:extra="1" xmlns:x="urn:x">
  <Badge kind="new"><Nested><Deeper>text</Deeper></Nested></Badge>
  <Question id="q1" priority="high" multiple="false">
    <Text lang="en">What <Em>now</Em>?<!-- note --></Text>
    <Hint>ignored</Hint>
    <Option id="a" label="A" color="red"><Icon /></Option>
    <x:Option id="zz" label="namespaced, not ours" />
    <Criterion id="c" label="C" weight="2">ignored text</Criterion>
    <Answer by="ana" choices="a" marks="a/c:partly" at="2025-01-01">
      <Signature />
    </Answer>
    <Footnote />
  </Question>
  <?app hint?>
</Questionnaire>
<!-- trailing comment -->
`
	p := mustParse(t, []byte(in))
	want := Projection{ID: "r1", Status: Settled, Questions: []ProjectedQuestion{{
		Question: Question{ID: "q1", Text: "What ?", Options: []Option{{ID: "a", Label: "A"}}, Criteria: []Criterion{{ID: "c", Label: "C"}}},
		Answer:   &QuestionAnswer{Question: "q1", Choices: []string{"a"}, Marks: marks.Snapshot{"a/c": marks.Partly}, Text: "\n      \n    "},
		By:       "ana",
	}}}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got %#v\nwant %#v", p, want)
	}
}

func TestParseProjectionInvalid(t *testing.T) {
	q := func(inner string) string {
		return `<Questionnaire id="r" status="settled"><Question id="q"><Text>t</Text>` + inner + `</Question></Questionnaire>`
	}
	open := func(inner string) string {
		return `<Questionnaire id="r" status="open"><Question id="q"><Text>t</Text>` + inner + `</Question></Questionnaire>`
	}
	written := func(inner string) string {
		return `<Questionnaire id="r" status="settled"><Question id="q" response="text"><Text>t</Text>` + inner + `</Question></Questionnaire>`
	}
	const ab = `<Option id="a" label="A" /><Option id="b" label="B" /><Criterion id="c" label="C" />`
	tests := []struct {
		name, in, reason string
	}{
		{"empty", "", "no <Questionnaire>"},
		{"only whitespace", " \n", "no <Questionnaire>"},
		{"not xml", "hello", "text outside"},
		{"wrong root", `<Question id="q"><Text>t</Text></Question>`, "root element is <Question>"},
		{"namespaced root", `<x:Questionnaire xmlns:x="urn:x" id="r" status="open"/>`, "want <Questionnaire>"},
		{"unclosed", `<Questionnaire id="r" status="open"><Question id="q"><Text>t</Text>`, "unexpected EOF"},
		{"mismatched end", `<Questionnaire id="r" status="open"><Question id="q"><Text>t</Question></Questionnaire>`, "closed by"},
		{"two roots", q("") + q(""), "<Questionnaire> after </Questionnaire>"},
		{"text after root", q("") + "x", "text outside"},
		{"bad entity", q(`<Answer by="&nbsp;" />`), "invalid character entity"},
		{"control char", "<Questionnaire id=\"r\x01\" status=\"open\"/>", "illegal character"},
		{"control char reference", `<Questionnaire id="&#x1;" status="open"/>`, "illegal character"},
		{"invalid utf-8", "<Questionnaire id=\"\xff\" status=\"open\"/>", "invalid UTF-8"},
		{"other encoding", `<?xml version="1.0" encoding="ISO-8859-1"?><Questionnaire id="r" status="open"/>`, "encoding"},
		{"lt in attribute", `<Questionnaire id="<" status="open"/>`, "unescaped <"},
		{"unquoted attribute", `<Questionnaire id=r status="open"/>`, "unquoted"},
		{"no id", `<Questionnaire status="open"><Question id="q"><Text>t</Text></Question></Questionnaire>`, "<Questionnaire> has no id"},
		{"empty id", `<Questionnaire id="" status="open"><Question id="q"><Text>t</Text></Question></Questionnaire>`, "<Questionnaire> has no id"},
		{"no status", `<Questionnaire id="r"><Question id="q"><Text>t</Text></Question></Questionnaire>`, "has no status"},
		{"unknown status", `<Questionnaire id="r" status="closed"><Question id="q"><Text>t</Text></Question></Questionnaire>`, `unknown status "closed"`},
		{"duplicate attribute", `<Questionnaire id="r" id="s" status="open"/>`, "attribute id is given twice"},
		{"no questions", `<Questionnaire id="r" status="open"></Questionnaire>`, "has no <Question>"},
		{"stray text", `<Questionnaire id="r" status="open">hi<Question id="q"><Text>t</Text></Question></Questionnaire>`, "text directly inside <Questionnaire>"},
		{"question without id", `<Questionnaire id="r" status="open"><Question><Text>t</Text></Question></Questionnaire>`, "<Question> has no id"},
		{"duplicate question", `<Questionnaire id="r" status="open"><Question id="q"><Text>t</Text></Question><Question id="q"><Text>u</Text></Question></Questionnaire>`, `question id "q" is given twice`},
		{"unknown response", `<Questionnaire id="r" status="open"><Question id="q" response="number"><Text>t</Text></Question></Questionnaire>`, `unknown response "number"`},
		{"bad multiple", `<Questionnaire id="r" status="open"><Question id="q" multiple="yes"><Text>t</Text></Question></Questionnaire>`, `multiple="yes"`},
		{"bad verbatim", `<Questionnaire id="r" status="open"><Question id="q" verbatim="1"><Text>t</Text></Question></Questionnaire>`, `verbatim="1"`},
		{"no text", `<Questionnaire id="r" status="open"><Question id="q"></Question></Questionnaire>`, "has no <Text>"},
		{"text twice", q(`<Text>u</Text>`), "<Text> must come first, once"},
		{"stray text in question", q(`hello`), "text directly inside <Question>"},
		{"context before text", `<Questionnaire id="r" status="open"><Question id="q"><Context>c</Context><Text>t</Text></Question></Questionnaire>`, "<Context> must come once, right after <Text>"},
		{"context after option", q(`<Option id="a" label="A" /><Context>c</Context>`), "<Context> must come once"},
		{"option before text", `<Questionnaire id="r" status="open"><Question id="q"><Option id="a" label="A" /><Text>t</Text></Question></Questionnaire>`, "<Option> before <Text>"},
		{"option after criterion", q(`<Criterion id="c" label="C" /><Option id="a" label="A" />`), "<Option> after <Criterion>"},
		{"criterion after answer", q(`<Answer by="x" /><Criterion id="c" label="C" />`), "<Criterion> after <Answer>"},
		{"option without id", q(`<Option label="A" />`), "<Option> has no id"},
		{"option with bad id", q(`<Option id="a b" label="A" />`), `<Option id="a b">`},
		{"option with long id", q(`<Option id="` + strings.Repeat("a", 65) + `" label="A" />`), "longer than 64"},
		{"option without label", q(`<Option id="a" />`), `<Option id="a"> has no label`},
		{"duplicate option", q(`<Option id="a" label="A" /><Option id="a" label="B" />`), `option id "a" is given twice`},
		{"criterion with bad id", q(`<Criterion id="c/d" label="C" />`), `<Criterion id="c/d">`},
		{"criterion without label", q(`<Criterion id="c" />`), `<Criterion id="c"> has no label`},
		{"duplicate criterion", q(`<Criterion id="c" label="C" /><Criterion id="c" label="D" />`), `criterion id "c" is given twice`},
		{"written with option", written(`<Option id="a" label="A" />`), "has no options"},
		{"written with criterion", written(`<Criterion id="c" label="C" />`), "has no criteria"},
		{"written multiple", `<Questionnaire id="r" status="open"><Question id="q" response="text" multiple="true"><Text>t</Text></Question></Questionnaire>`, "cannot be multiple"},
		{"verbatim with criterion", `<Questionnaire id="r" status="open"><Question id="q" verbatim="true"><Text>t</Text><Criterion id="c" label="C" /></Question></Questionnaire>`, "verbatim question has no criteria"},
		{"answer on open", open(`<Answer by="x" />`), "<Answer> on a decision that is open"},
		{"answer on discarded", strings.Replace(q(`<Answer by="x" />`), "settled", "discarded", 1), "that is discarded"},
		{"two answers", q(`<Answer by="x" /><Answer by="y" />`), "a second <Answer>"},
		{"answer before text", `<Questionnaire id="r" status="settled"><Question id="q"><Answer /><Text>t</Text></Question></Questionnaire>`, "<Answer> before <Text>"},
		{"unknown choice", q(ab + `<Answer choices="z" />`), `"z" is not one of the question's options`},
		{"choice twice", `<Questionnaire id="r" status="settled"><Question id="q" multiple="true"><Text>t</Text>` + ab + `<Answer choices="a a" /></Question></Questionnaire>`, `"a" is chosen twice`},
		{"two choices, single", q(ab + `<Answer choices="a b" />`), "more than one choice"},
		{"choices double space", q(ab + `<Answer choices="a  b" />`), "exactly one space"},
		{"choices leading space", q(ab + `<Answer choices=" a" />`), "exactly one space"},
		{"written with choices", written(`<Answer choices="a" />`), "has no choices"},
		{"written with marks", written(`<Answer marks="a/c:yes" />`), "has no marks"},
		{"marks double space", q(ab + `<Answer marks="a/c:yes  b/c:no" />`), "exactly one space"},
		{"marks missing colon", q(ab + `<Answer marks="a/c" />`), `has no ":mark"`},
		{"marks bad mark", q(ab + `<Answer marks="a/c:maybe" />`), "mark must be"},
		{"marks duplicate cell", q(ab + `<Answer marks="a/c:yes a/c:no" />`), "given twice"},
		{"marks unknown option", q(ab + `<Answer marks="z/c:yes" />`), `cell "z/c" is not an option and criterion`},
		{"marks unknown criterion", q(ab + `<Answer marks="a/z:yes" />`), `cell "a/z" is not an option and criterion`},
		{"unclosed unknown element", `<Questionnaire id="r" status="open"><Foo><Bar></Foo>`, "closed by"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseProjection([]byte(tc.in))
			if err == nil {
				t.Fatalf("ParseProjection(%q) = %+v, want an error", tc.in, p)
			}
			if !errors.Is(err, ErrProjection) {
				t.Errorf("errors.Is(%v, ErrProjection) = false", err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q does not mention %q", err, tc.reason)
			}
			if !reflect.DeepEqual(p, Projection{}) {
				t.Errorf("ParseProjection returned %+v with the error", p)
			}
		})
	}
}

func TestParseProjectionErrorChain(t *testing.T) {
	in := `<Questionnaire id="r" status="settled"><Question id="q"><Text>t</Text><Option id="a" label="A" /><Criterion id="c" label="C" /><Answer marks=" a/c:yes" /></Question></Questionnaire>`
	_, err := ParseProjection([]byte(in))
	var me *marks.Error
	if !errors.Is(err, ErrProjection) || !errors.Is(err, marks.ErrInvalid) || !errors.As(err, &me) || me.Reason != "leading space" {
		t.Errorf("marks error not wrapped: %v", err)
	}
	_, err = ParseProjection([]byte(`<Questionnaire id="r" status="open">`))
	var se *xml.SyntaxError
	if !errors.Is(err, ErrProjection) || !errors.As(err, &se) {
		t.Errorf("syntax error not wrapped: %v (%T)", err, err)
	}
	_, err = ParseProjection([]byte(`<Questionnaire id="r" status="settled"><Question id="q"><Text>t</Text><Option id="é" label="A" /></Question></Questionnaire>`))
	if !errors.Is(err, ErrProjection) || !errors.Is(err, marks.ErrInvalid) {
		t.Errorf("id error not wrapped: %v", err)
	}
	// Errors say where.
	_, err = ParseProjection([]byte("<Questionnaire id=\"r\" status=\"open\">\n<Question id=\"q\">\n<Text>t</Text>\n<Option id=\"a\" />\n</Question>\n</Questionnaire>"))
	if err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("error %v does not name line 4", err)
	}
}

// Text that needs escaping, in every place text goes.
var awkward = []string{
	``,
	` `,
	"\n",
	"\r",
	"\r\n",
	"\t",
	`"quoted" and 'single'`,
	`a < b && c > d`,
	`]]>`,
	`<![CDATA[x]]>`,
	`&amp; is not &`,
	`&#xA; literal`,
	"  leading and trailing  ",
	"\n\nline one\nline two\n\n",
	"tab\there\r\nwindows\rold mac",
	"日本語のテキスト — ünïcödé ✓ 🎉 \u200b\ufeff",
	"\U0010FFFD and \uFFFD",
	`<Answer by="x" />`,
	"</Text>",
}

func TestProjectionEscaping(t *testing.T) {
	for _, s := range awkward {
		t.Run(fmt.Sprintf("%q", s), func(t *testing.T) {
			p := Projection{ID: s + "id", Status: Settled, Questions: []ProjectedQuestion{
				{
					Question: Question{ID: "q" + s, Text: s, Context: s, Options: []Option{{ID: "o", Label: s}}, Criteria: []Criterion{{ID: "c", Label: s}}},
					Answer:   &QuestionAnswer{Question: "q" + s, Choices: []string{"o"}, Text: s, Marks: marks.Snapshot{"o/c": marks.Yes}},
					By:       s,
				},
				{
					Question: Question{ID: "w", Text: s, Response: Text},
					Answer:   &QuestionAnswer{Question: "w", Text: s},
					By:       s,
				},
			}}
			out := RenderProjection(p)
			back := mustParse(t, out)
			if !equalProjection(back, p) {
				t.Fatalf("round trip of %q:\n%s\nparsed %+v", s, out, back)
			}
			if bytes.ContainsRune(out, '\r') {
				t.Errorf("literal carriage return in\n%q", out)
			}

			// Attribute values never hold a literal tab, newline or
			// carriage return, which other XML processors would turn into
			// spaces: with s only in attributes, the output has exactly the
			// structural newlines and no tab.
			attrsOnly := Projection{ID: s + "id", Status: Settled, Questions: []ProjectedQuestion{{
				Question: Question{ID: "q" + s, Text: "t", Options: []Option{{ID: "o", Label: s}}, Criteria: []Criterion{{ID: "c", Label: s}}},
				Answer:   &QuestionAnswer{Question: "q" + s, Choices: []string{"o"}},
				By:       s,
			}}}
			out = RenderProjection(attrsOnly)
			if n := bytes.Count(out, []byte("\n")); n != 8 || bytes.ContainsAny(out, "\t\r") {
				t.Errorf("raw whitespace in attribute values:\n%q", out)
			}
			if back := mustParse(t, out); !equalProjection(back, attrsOnly) {
				t.Errorf("round trip of attributes %q: %+v", s, back)
			}
		})
	}
}

func TestRenderProjectionReplacesNonXMLText(t *testing.T) {
	p := Projection{ID: "r", Status: Open, Questions: []ProjectedQuestion{{
		Question: Question{ID: "q", Text: "bell\x07 nul\x00 bad\xff byte \uFFFE end", Options: []Option{{ID: "o", Label: "\x1b[0m"}}},
	}}}
	back := mustParse(t, RenderProjection(p))
	if got, want := back.Questions[0].Text, "bell\uFFFD nul\uFFFD bad\uFFFD byte \uFFFD end"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
	if got, want := back.Questions[0].Options[0].Label, "\uFFFD[0m"; got != want {
		t.Errorf("Label = %q, want %q", got, want)
	}
}

// genText draws text of any XML character, favouring the ones that need
// escaping.
func genText(t *rapid.T, label string) string {
	special := rapid.SampledFrom([]rune("<>&\"' \t\r\n]\u00a0\u2028\ufeff\ufffd"))
	anyChar := rapid.Rune().Filter(func(r rune) bool { return utf8.ValidRune(r) && xmlChar(r) })
	letters := rapid.RuneFrom(nil, unicode.Latin, unicode.Greek, unicode.Han, unicode.Arabic)
	return rapid.StringOfN(rapid.OneOf(special, anyChar, letters), 0, 40, -1).Draw(t, label)
}

func genNonEmptyText(t *rapid.T, label string) string {
	s := genText(t, label)
	if s == "" {
		s = "x"
	}
	return s
}

func genItemIDs(t *rapid.T, label string, max int) []string {
	id := rapid.StringOfN(rapid.SampledFrom([]rune("abAB01_-")), 1, marks.MaxIDLen, -1)
	return rapid.SliceOfNDistinct(id, 0, max, rapid.ID[string]).Draw(t, label)
}

// genProjection draws a projection that follows every rule of the format,
// with empty lists as nil, as ParseProjection returns them.
func genProjection(t *rapid.T) Projection {
	p := Projection{
		ID:     genNonEmptyText(t, "record id"),
		Status: rapid.SampledFrom([]Status{Open, Settled, Discarded}).Draw(t, "status"),
	}
	qids := rapid.SliceOfNDistinct(rapid.Custom(func(t *rapid.T) string { return genNonEmptyText(t, "question id") }), 1, 4, rapid.ID[string]).Draw(t, "question ids")
	for _, id := range qids {
		q := ProjectedQuestion{Question: Question{ID: id, Text: genText(t, "text"), Context: genText(t, "context")}}
		written := rapid.Bool().Draw(t, "written")
		if written {
			q.Response = Text
			q.Verbatim = rapid.Bool().Draw(t, "verbatim")
		} else {
			q.Multiple = rapid.Bool().Draw(t, "multiple")
			q.Verbatim = rapid.Bool().Draw(t, "verbatim")
			for _, o := range genItemIDs(t, "options", 6) {
				q.Options = append(q.Options, Option{ID: o, Label: genText(t, "option label")})
			}
			if !q.Verbatim {
				for _, c := range genItemIDs(t, "criteria", MaxCriteria) {
					q.Criteria = append(q.Criteria, Criterion{ID: c, Label: genText(t, "criterion label")})
				}
			}
		}
		if p.Status == Settled && rapid.Bool().Draw(t, "answered") {
			a := &QuestionAnswer{Question: id}
			if written {
				a.Text = genText(t, "answer text")
			} else {
				for _, o := range q.Options {
					if (q.Multiple || len(a.Choices) == 0) && rapid.Bool().Draw(t, "chosen") {
						a.Choices = append(a.Choices, o.ID)
					}
				}
				a.Choices = rapid.Permutation(a.Choices).Draw(t, "choice order")
				if len(a.Choices) == 0 {
					a.Choices = nil
				}
				for _, o := range q.Options {
					for _, c := range q.Criteria {
						if rapid.Bool().Draw(t, "marked") {
							if a.Marks == nil {
								a.Marks = marks.Snapshot{}
							}
							a.Marks[marks.Key(o.ID, c.ID)] = rapid.SampledFrom(marks.All[:]).Draw(t, "mark")
						}
					}
				}
				if rapid.IntRange(0, 4).Draw(t, "choice text") == 0 {
					a.Text = genText(t, "choice answer text")
				}
			}
			q.Answer = a
			q.By = genText(t, "by")
		}
		p.Questions = append(p.Questions, q)
	}
	return p
}

func TestProjectionRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genProjection(t)
		out := RenderProjection(p)
		back, err := ParseProjection(out)
		if err != nil {
			t.Fatalf("ParseProjection(RenderProjection(p)): %v\n%s", err, out)
		}
		if !reflect.DeepEqual(back, p) {
			t.Fatalf("round trip changed the projection:\n%s\ngot  %#v\nwant %#v", out, back, p)
		}
		if again := RenderProjection(back); !bytes.Equal(again, out) {
			t.Fatalf("rendering is not deterministic:\n%s\nthen\n%s", out, again)
		}
		if !utf8.Valid(out) {
			t.Fatalf("output is not UTF-8")
		}
	})
}

// FuzzParseProjection checks that ParseProjection never panics, refuses only
// with errors wrapping ErrProjection, and that whatever it accepts renders
// to bytes that parse back to an equal projection and render identically.
func FuzzParseProjection(f *testing.F) {
	f.Add(RenderProjection(settledChoice()))
	f.Add(RenderProjection(settledWritten()))
	open := settledChoice()
	open.Status = Open
	f.Add(RenderProjection(open))
	for _, s := range awkward {
		p := settledWritten()
		p.Questions[0].Text, p.Questions[0].Answer.Text = s, s
		f.Add(RenderProjection(p))
	}
	f.Add([]byte(`<Questionnaire id="r" status="settled" v="2"><Question id="q"><Text>t<X/></Text><Option id="a" label="A"><Y/></Option><Criterion id="c" label="C" /><Answer by="b" choices="a" marks="a/c:no"><Z/></Answer><W/></Question></Questionnaire>`))
	f.Add([]byte(`<?xml version="1.0"?><!-- c --><Questionnaire id="r" status="open"><Question id="q"><Text><![CDATA[a <b> & c]]></Text></Question></Questionnaire>`))
	f.Add([]byte(`<Questionnaire id="r" status="open"><Question id="q"><Text>t</Text></Question></Questionnaire><Questionnaire/>`))
	f.Add([]byte(`<Questionnaire id="r" status="settled"><Question id="q"><Text>t</Text><Answer marks="a/c:yes  b/c:no"/></Question></Questionnaire>`))
	f.Add([]byte(""))
	f.Add([]byte("<"))
	f.Add([]byte("\ufeff<Questionnaire id=\"r\" status=\"open\"><Question id=\"q\"><Text/></Question></Questionnaire>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProjection(b)
		if err != nil {
			if !errors.Is(err, ErrProjection) {
				t.Fatalf("error %v (%T) does not wrap ErrProjection", err, err)
			}
			return
		}
		out := RenderProjection(p)
		back, err := ParseProjection(out)
		if err != nil {
			t.Fatalf("accepted input re-renders to bytes that fail: %v\ninput: %q\nrendered:\n%s", err, b, out)
		}
		if !reflect.DeepEqual(back, p) {
			t.Fatalf("re-parse differs:\ninput: %q\nrendered:\n%s\nfirst  %#v\nsecond %#v", b, out, p, back)
		}
		if again := RenderProjection(back); !bytes.Equal(again, out) {
			t.Fatalf("rendering is not canonical:\n%s\nthen\n%s", out, again)
		}
	})
}

func ExampleRenderProjection() {
	// A settled choice decision judged against two criteria.
	choice := Projection{
		ID:     "rec-7",
		Status: Settled,
		Questions: []ProjectedQuestion{{
			Question: Question{
				ID:      "q1",
				Text:    "Which storage should sessions use?",
				Options: []Option{{ID: "pg", Label: "Postgres"}, {ID: "sqlite", Label: "SQLite"}},
				Criteria: []Criterion{
					{ID: "no-storage", Label: "No new storage"},
					{ID: "easy-reset", Label: "Easy reset"},
				},
			},
			Answer: &QuestionAnswer{
				Choices: []string{"pg"},
				Marks: marks.Snapshot{
					marks.Key("pg", "no-storage"):     marks.Yes,
					marks.Key("sqlite", "no-storage"): marks.No,
					marks.Key("sqlite", "easy-reset"): marks.Partly,
				},
			},
			By: "ana",
		}},
	}
	fmt.Print(string(RenderProjection(choice)))

	// A settled written decision: the answer is the element's text.
	written := Projection{
		ID:     "rec-8",
		Status: Settled,
		Questions: []ProjectedQuestion{{
			Question: Question{ID: "q1", Text: "How should onboarding work?", Response: Text},
			Answer:   &QuestionAnswer{Text: "Invite-only at first.\nOpen sign-up in May."},
			By:       "sam",
		}},
	}
	fmt.Print(string(RenderProjection(written)))
	// Output:
	// <Questionnaire id="rec-7" status="settled">
	//   <Question id="q1">
	//     <Text>Which storage should sessions use?</Text>
	//     <Option id="pg" label="Postgres" />
	//     <Option id="sqlite" label="SQLite" />
	//     <Criterion id="no-storage" label="No new storage" />
	//     <Criterion id="easy-reset" label="Easy reset" />
	//     <Answer by="ana" choices="pg" marks="pg/no-storage:yes sqlite/easy-reset:partly sqlite/no-storage:no" />
	//   </Question>
	// </Questionnaire>
	// <Questionnaire id="rec-8" status="settled">
	//   <Question id="q1" response="text">
	//     <Text>How should onboarding work?</Text>
	//     <Answer by="sam">Invite-only at first.
	// Open sign-up in May.</Answer>
	//   </Question>
	// </Questionnaire>
}

func ExampleParseProjection() {
	// An old projection: no response marker, so a choice question.
	p, err := ParseProjection([]byte(`<Questionnaire id="old-1" status="settled">
  <Question id="q1">
    <Text>Ship on Friday?</Text>
    <Option id="yes" label="Yes" />
    <Option id="no" label="No" />
    <Answer by="lee" choices="no" />
  </Question>
</Questionnaire>`))
	if err != nil {
		fmt.Println(err)
		return
	}
	q := p.Questions[0]
	fmt.Println(p.Status, q.Written(), q.Answer.Choices, q.By)

	_, err = ParseProjection([]byte(`<Questionnaire id="r" status="open"><Question id="q"><Text>t</Text><Answer by="lee" /></Question></Questionnaire>`))
	fmt.Println(err)
	// Output:
	// settled false [no] lee
	// question: malformed projection: line 1: <Question id="q">: <Answer> on a decision that is open, not settled
}
