package question

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/accord-crdt/accord/marks"
)

// normalizeDefinition checks a definition for creation, mints missing
// option and criterion ids, trims labels, and returns the result. Written
// questions must be exactly response "text", options [] and multiple
// false; criteria belong to choice questions only.
func normalizeDefinition(def Definition, mint func() string) (Definition, *Refusal) {
	if len(def.Questions) == 0 {
		return def, refuse(Invalid, "a decision needs at least one question")
	}
	if len(def.Questions) > MaxQuestions {
		return def, refuse(TooMany, "a decision holds at most %d questions", MaxQuestions)
	}
	out := Definition{Questions: make([]Question, len(def.Questions))}
	seenQ := map[string]bool{}
	for i, q := range def.Questions {
		q.Options = append([]Option(nil), q.Options...)
		q.Criteria = append([]Criterion(nil), q.Criteria...)
		if q.ID == "" {
			q.ID = "q" + itoa(i+1)
		}
		if err := marks.CheckID(q.ID); err != nil {
			return def, refuse(Invalid, "question id %q: only letters, digits, '_' and '-', at most 64", q.ID)
		}
		if seenQ[q.ID] {
			return def, refuse(Invalid, "question id %q is used twice", q.ID)
		}
		seenQ[q.ID] = true
		q.Text = strings.TrimSpace(q.Text)
		if q.Text == "" {
			return def, refuse(Invalid, "question %q has no text", q.ID)
		}
		if n := utf8.RuneCountInString(q.Text); n > MaxQuestionText {
			return def, refuse(Invalid, "question %q is %d characters; at most %d", q.ID, n, MaxQuestionText)
		}
		if utf8.RuneCountInString(q.Context) > MaxContext {
			return def, refuse(Invalid, "context of question %q is longer than %d characters", q.ID, MaxContext)
		}
		switch q.Response {
		case Text:
			if q.Options == nil {
				q.Options = []Option{}
			}
			if len(q.Options) != 0 || q.Multiple {
				return def, refuse(Invalid, `written question %q must have options [] and multiple false`, q.ID)
			}
			if len(q.Criteria) != 0 {
				return def, refuse(Invalid, "written question %q cannot have criteria; criteria apply only to choice questions", q.ID)
			}
		case Choice:
			if len(q.Options) > MaxOptions {
				return def, refuse(Full, "question %q has %d options; at most %d", q.ID, len(q.Options), MaxOptions)
			}
			if q.Verbatim && len(q.Criteria) != 0 {
				return def, refuse(Invalid, "verbatim question %q cannot have criteria", q.ID)
			}
			if len(q.Criteria) > MaxCriteria {
				return def, refuse(Full, "question %q has %d criteria; at most %d", q.ID, len(q.Criteria), MaxCriteria)
			}
		default:
			return def, refuse(Invalid, `question %q: response must be "text" or omitted, not %q`, q.ID, q.Response)
		}
		if q.Options == nil {
			q.Options = []Option{}
		}
		ids := map[string]bool{}
		labels := map[string]bool{}
		for j := range q.Options {
			o := &q.Options[j]
			if o.ID == "" {
				o.ID = mint()
			}
			o.Label = strings.TrimSpace(o.Label)
			if r := checkItem("option", q.ID, o.ID, o.Label, MaxOptionLabel, ids, labels); r != nil {
				return def, r
			}
		}
		ids = map[string]bool{}
		labels = map[string]bool{}
		for j := range q.Criteria {
			c := &q.Criteria[j]
			if c.ID == "" {
				c.ID = mint()
			}
			c.Label = strings.TrimSpace(c.Label)
			if r := checkItem("criterion", q.ID, c.ID, c.Label, MaxLabel, ids, labels); r != nil {
				return def, r
			}
		}
		if len(q.Criteria) == 0 {
			q.Criteria = nil
		}
		out.Questions[i] = q
	}
	return out, nil
}

func checkItem(kind, q, id, label string, maxLabel int, ids, labels map[string]bool) *Refusal {
	if err := marks.CheckID(id); err != nil {
		return refuse(Invalid, "%s id %q of question %q: only letters, digits, '_' and '-', at most 64", kind, id, q)
	}
	if ids[id] {
		return refuse(Duplicate, "%s id %q of question %q is used twice", kind, id, q)
	}
	if r := checkLabel(kind, label, maxLabel); r != nil {
		return r
	}
	key := strings.ToLower(label)
	if labels[key] {
		return refuse(Duplicate, "question %q already has the %s %q", q, kind, label)
	}
	ids[id], labels[key] = true, true
	return nil
}

func checkLabel(kind, label string, max int) *Refusal {
	n := utf8.RuneCountInString(label)
	if n == 0 {
		return refuse(Invalid, "a %s needs a label", kind)
	}
	if n > max {
		return refuse(Invalid, "%s label %q is %d characters; at most %d", kind, label, n, max)
	}
	for _, r := range label {
		if unicode.IsControl(r) {
			return refuse(Invalid, "%s label %q holds a control character", kind, label)
		}
	}
	return nil
}

// checkWhy checks a why (Y1): one plain sentence of at most MaxWhy
// characters, without Markdown or line breaks.
func checkWhy(text string) *Refusal {
	if n := utf8.RuneCountInString(text); n > MaxWhy {
		return refuse(Invalid, "a why is at most %d characters; this one is %d", MaxWhy, n)
	}
	if strings.ContainsAny(text, "\n\r\t") {
		return refuse(Invalid, "a why is one plain sentence, without line breaks")
	}
	for _, md := range []string{"**", "__", "`", "](", "<", ">", "~~"} {
		if strings.Contains(text, md) {
			return refuse(Invalid, "a why is plain text, without Markdown (%q)", md)
		}
	}
	if c := text[0]; c == '#' || c == '-' || c == '*' || c == '+' {
		return refuse(Invalid, "a why is plain text, without Markdown (%q at the start)", string(c))
	}
	rs := []rune(text)
	for _, mark := range []rune{'*', '_'} {
		if emphasized(rs, mark) {
			return refuse(Invalid, "a why is plain text, without Markdown emphasis (%c...%c)", mark, mark)
		}
	}
	if i := secondSentence(rs); i >= 0 {
		return refuse(Invalid, "a why is exactly one sentence; a second one starts at %q", string(rs[i:min(len(rs), i+20)]))
	}
	return nil
}

// emphasized reports whether rs holds Markdown emphasis made of mark: a
// mark that opens a word (at the start, or after a space or punctuation,
// and before a non-space) and a later one that closes a word (after a
// non-space, and at the end or before a space or punctuation). A mark
// inside a word, as in snake_case, is neither.
func emphasized(rs []rune, mark rune) bool {
	open := false
	for i, r := range rs {
		if r != mark {
			continue
		}
		before := i == 0 || !isWordRune(rs[i-1])
		after := i+1 == len(rs) || !isWordRune(rs[i+1])
		if open && i > 0 && !unicode.IsSpace(rs[i-1]) && rs[i-1] != mark && after {
			return true
		}
		if before && i+1 < len(rs) && !unicode.IsSpace(rs[i+1]) {
			open = true
		}
	}
	return false
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// abbreviations end with a full stop inside a sentence; a capital after
// them does not start a new one ("e.g. Supabase").
var abbreviations = map[string]bool{
	"e.g": true, "i.e": true, "etc": true, "vs": true, "cf": true, "approx": true,
	"mr": true, "mrs": true, "ms": true, "dr": true, "prof": true, "st": true,
	"inc": true, "ltd": true, "co": true, "corp": true, "jr": true, "sr": true,
	"no": true, "nos": true, "fig": true, "ca": true, "esp": true, "incl": true,
	"a.m": true, "p.m": true, "u.s": true, "u.k": true, "e.u": true,
}

// secondSentence returns where a second sentence starts in rs, or -1. A
// sentence ends at '.', '!' or '?' (and any closing quotes or brackets)
// and the next begins with a capital letter (after optional opening quotes
// or brackets), with or without a space between: "It is cheap. It is
// fast." and "It is cheap.It is fast." both hold two. Full stops inside
// numbers and names ("3.5", "Node.js", "ASP.NET") and after common
// abbreviations ("e.g. Supabase") end nothing.
func secondSentence(rs []rune) int {
	for i := 0; i < len(rs); i++ {
		if rs[i] != '.' && rs[i] != '!' && rs[i] != '?' {
			continue
		}
		j := i + 1
		for j < len(rs) && strings.ContainsRune(")]\"'”’", rs[j]) {
			j++
		}
		spaced := j < len(rs) && unicode.IsSpace(rs[j])
		for j < len(rs) && unicode.IsSpace(rs[j]) {
			j++
		}
		for j < len(rs) && strings.ContainsRune("([\"'“‘", rs[j]) {
			j++
		}
		if j >= len(rs) || !unicode.IsUpper(rs[j]) {
			continue
		}
		if rs[i] == '.' {
			word := wordBefore(rs, i)
			if abbreviations[strings.ToLower(word)] {
				continue
			}
			// Without a space, only a word ending in a small letter and a
			// capitalized word after it ("cheap.It") part two sentences;
			// "ASP.NET" and "v2.Beta" are names.
			if !spaced && (i == 0 || !unicode.IsLower(rs[i-1]) || j+1 >= len(rs) || !unicode.IsLower(rs[j+1])) {
				continue
			}
		}
		return j
	}
	return -1
}

// wordBefore returns the word that ends at rs[end] (exclusive), with the
// inner full stops of abbreviations such as "e.g".
func wordBefore(rs []rune, end int) string {
	i := end
	for i > 0 && (isWordRune(rs[i-1]) || rs[i-1] == '.' && i-1 > 0 && isWordRune(rs[i-2])) {
		i--
	}
	return string(rs[i:end])
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
