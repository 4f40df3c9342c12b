package question

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/accord-crdt/accord/marks"
)

// ParseProjection reads a projection in the format described at
// Projection, written by RenderProjection or by an older or newer writer: a missing response attribute
// means a choice question, and unknown elements and attributes are skipped.
// Malformed input returns an error wrapping ErrProjection; it never panics.
func ParseProjection(b []byte) (Projection, error) {
	b = bytes.TrimPrefix(b, []byte("\ufeff")) // a UTF-8 byte order mark
	ps := &projectionParser{d: xml.NewDecoder(bytes.NewReader(b))}
	p, err := ps.document()
	if err != nil {
		return Projection{}, err
	}
	return p, nil
}

// projectionParser reads one projection from a token stream.
type projectionParser struct {
	d *xml.Decoder
}

// fail returns an ErrProjection error at the decoder's position.
func (ps *projectionParser) fail(format string, args ...any) error {
	line, _ := ps.d.InputPos()
	return fmt.Errorf("%w: line %d: %s", ErrProjection, line, fmt.Sprintf(format, args...))
}

// wrap returns an ErrProjection error that also wraps err.
func (ps *projectionParser) wrap(err error, format string, args ...any) error {
	line, _ := ps.d.InputPos()
	return fmt.Errorf("%w: line %d: %s: %w", ErrProjection, line, fmt.Sprintf(format, args...), err)
}

// token returns the next token; the end of input is an error, since the
// callers are inside an element.
func (ps *projectionParser) token() (xml.Token, error) {
	t, err := ps.d.Token()
	if err == io.EOF {
		return nil, ps.fail("unexpected end of input")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProjection, err)
	}
	return t, nil
}

func (ps *projectionParser) document() (Projection, error) {
	var (
		p    Projection
		seen bool
	)
	for {
		t, err := ps.d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Projection{}, fmt.Errorf("%w: %w", ErrProjection, err)
		}
		switch t := t.(type) {
		case xml.StartElement:
			if seen {
				return Projection{}, ps.fail("<%s> after </Questionnaire>", displayName(t.Name))
			}
			if !isElement(t, "Questionnaire") {
				return Projection{}, ps.fail("root element is <%s>, want <Questionnaire>", displayName(t.Name))
			}
			if p, err = ps.questionnaire(t); err != nil {
				return Projection{}, err
			}
			seen = true
		case xml.CharData:
			if !isSpace(t) {
				return Projection{}, ps.fail("text outside <Questionnaire>")
			}
		}
	}
	if !seen {
		return Projection{}, ps.fail("no <Questionnaire> element")
	}
	return p, nil
}

func (ps *projectionParser) questionnaire(start xml.StartElement) (Projection, error) {
	attrs, err := ps.attrs(start)
	if err != nil {
		return Projection{}, err
	}
	id, ok := attrs["id"]
	if !ok || id == "" {
		return Projection{}, ps.fail("<Questionnaire> has no id")
	}
	p := Projection{ID: id, Status: Status(attrs["status"])}
	switch p.Status {
	case Open, Settled, Discarded:
	default:
		if _, ok := attrs["status"]; !ok {
			return Projection{}, ps.fail("<Questionnaire id=%q> has no status", id)
		}
		return Projection{}, ps.fail("<Questionnaire id=%q>: unknown status %q", id, p.Status)
	}
	ids := map[string]bool{}
	for {
		t, err := ps.token()
		if err != nil {
			return Projection{}, err
		}
		switch t := t.(type) {
		case xml.StartElement:
			if !isElement(t, "Question") {
				if err := ps.skip(); err != nil {
					return Projection{}, err
				}
				continue
			}
			q, err := ps.question(t, p.Status)
			if err != nil {
				return Projection{}, err
			}
			if ids[q.ID] {
				return Projection{}, ps.fail("question id %q is given twice", q.ID)
			}
			ids[q.ID] = true
			p.Questions = append(p.Questions, q)
		case xml.CharData:
			if !isSpace(t) {
				return Projection{}, ps.fail("text directly inside <Questionnaire>")
			}
		case xml.EndElement:
			if len(p.Questions) == 0 {
				return Projection{}, ps.fail("<Questionnaire id=%q> has no <Question>", id)
			}
			return p, nil
		}
	}
}

// The children of a <Question>, in the order they must come.
const (
	atStart = iota
	atText
	atContext
	atOptions
	atCriteria
	atAnswer
)

func (ps *projectionParser) question(start xml.StartElement, status Status) (ProjectedQuestion, error) {
	attrs, err := ps.attrs(start)
	if err != nil {
		return ProjectedQuestion{}, err
	}
	var q ProjectedQuestion
	id, ok := attrs["id"]
	if !ok || id == "" {
		return q, ps.fail("<Question> has no id")
	}
	q.ID = id
	where := fmt.Sprintf("<Question id=%q>", id)
	switch r := attrs["response"]; r {
	case "", string(Text):
		q.Response = Response(r)
	default:
		return q, ps.fail("%s: unknown response %q", where, r)
	}
	if q.Multiple, err = ps.boolAttr(attrs, "multiple", where); err != nil {
		return q, err
	}
	if q.Verbatim, err = ps.boolAttr(attrs, "verbatim", where); err != nil {
		return q, err
	}
	if q.Written() && q.Multiple {
		return q, ps.fail(`%s: a written question cannot be multiple`, where)
	}

	optionIDs := map[string]bool{}
	criterionIDs := map[string]bool{}
	at := atStart
	for {
		t, err := ps.token()
		if err != nil {
			return q, err
		}
		switch t := t.(type) {
		case xml.CharData:
			if !isSpace(t) {
				return q, ps.fail("%s: text directly inside <Question>; question text goes in <Text>", where)
			}
			continue
		case xml.EndElement:
			if at == atStart {
				return q, ps.fail("%s has no <Text>", where)
			}
			return q, nil
		case xml.StartElement:
			name := t.Name.Local
			if t.Name.Space != "" {
				name = ""
			}
			switch name {
			case "Text":
				if at != atStart {
					return q, ps.fail("%s: <Text> must come first, once", where)
				}
				if q.Text, err = ps.text(t); err != nil {
					return q, err
				}
				at = atText
			case "Context":
				if at != atText {
					return q, ps.fail("%s: <Context> must come once, right after <Text>", where)
				}
				if q.Context, err = ps.text(t); err != nil {
					return q, err
				}
				at = atContext
			case "Option":
				switch {
				case at == atStart:
					return q, ps.fail("%s: <Option> before <Text>", where)
				case at > atOptions:
					return q, ps.fail("%s: <Option> after <Criterion> or <Answer>", where)
				case q.Written():
					return q, ps.fail(`%s: a written question (response="text") has no options`, where)
				}
				id, label, err := ps.item(t, "Option", where, optionIDs)
				if err != nil {
					return q, err
				}
				q.Options = append(q.Options, Option{ID: id, Label: label})
				at = atOptions
			case "Criterion":
				switch {
				case at == atStart:
					return q, ps.fail("%s: <Criterion> before <Text>", where)
				case at > atCriteria:
					return q, ps.fail("%s: <Criterion> after <Answer>", where)
				case q.Written():
					return q, ps.fail(`%s: a written question (response="text") has no criteria`, where)
				case q.Verbatim:
					return q, ps.fail(`%s: a verbatim question has no criteria`, where)
				}
				id, label, err := ps.item(t, "Criterion", where, criterionIDs)
				if err != nil {
					return q, err
				}
				q.Criteria = append(q.Criteria, Criterion{ID: id, Label: label})
				at = atCriteria
			case "Answer":
				switch {
				case at == atStart:
					return q, ps.fail("%s: <Answer> before <Text>", where)
				case at == atAnswer:
					return q, ps.fail("%s: a second <Answer>", where)
				case status != Settled:
					return q, ps.fail("%s: <Answer> on a decision that is %s, not settled", where, status)
				}
				if err := ps.answer(t, &q, optionIDs, criterionIDs, where); err != nil {
					return q, err
				}
				at = atAnswer
			default:
				if err := ps.skip(); err != nil {
					return q, err
				}
			}
		}
	}
}

// item reads an <Option id label /> or <Criterion id label /> element.
func (ps *projectionParser) item(start xml.StartElement, kind, where string, seen map[string]bool) (id, label string, err error) {
	attrs, err := ps.attrs(start)
	if err != nil {
		return "", "", err
	}
	id, ok := attrs["id"]
	if !ok {
		return "", "", ps.fail("%s: <%s> has no id", where, kind)
	}
	if err := marks.CheckID(id); err != nil {
		return "", "", ps.wrap(err, "%s: <%s id=%q>", where, kind, id)
	}
	if seen[id] {
		return "", "", ps.fail("%s: %s id %q is given twice", where, strings.ToLower(kind), id)
	}
	seen[id] = true
	label, ok = attrs["label"]
	if !ok {
		return "", "", ps.fail("%s: <%s id=%q> has no label", where, kind, id)
	}
	// Content from a newer writer is ignored.
	if err := ps.skip(); err != nil {
		return "", "", err
	}
	return id, label, nil
}

// answer reads an <Answer> element into q.
func (ps *projectionParser) answer(start xml.StartElement, q *ProjectedQuestion, optionIDs, criterionIDs map[string]bool, where string) error {
	attrs, err := ps.attrs(start)
	if err != nil {
		return err
	}
	a := &QuestionAnswer{Question: q.ID}
	if v := attrs["choices"]; v != "" {
		if q.Written() {
			return ps.fail(`%s: a written question's <Answer> has no choices`, where)
		}
		chosen := map[string]bool{}
		for _, c := range strings.Split(v, " ") {
			switch {
			case c == "":
				return ps.fail("%s: <Answer choices=%q>: choices must be separated by exactly one space", where, v)
			case !optionIDs[c]:
				return ps.fail("%s: <Answer choices=%q>: %q is not one of the question's options", where, v, c)
			case chosen[c]:
				return ps.fail("%s: <Answer choices=%q>: %q is chosen twice", where, v, c)
			}
			chosen[c] = true
			a.Choices = append(a.Choices, c)
		}
		if len(a.Choices) > 1 && !q.Multiple {
			return ps.fail(`%s: <Answer choices=%q>: more than one choice without multiple="true"`, where, v)
		}
	}
	if v := attrs["marks"]; v != "" {
		if q.Written() {
			return ps.fail(`%s: a written question's <Answer> has no marks`, where)
		}
		s, err := marks.ParseAttribute(v)
		if err != nil {
			return ps.wrap(err, "%s: <Answer marks>", where)
		}
		for _, k := range s.Keys() {
			c, _ := marks.ParseKey(k) // ParseAttribute checked every key
			if !optionIDs[c.Option] || !criterionIDs[c.Criterion] {
				return ps.fail("%s: <Answer marks>: cell %q is not an option and criterion of the question", where, k)
			}
		}
		a.Marks = s
	}
	if a.Text, err = ps.text(start); err != nil {
		return err
	}
	q.Answer = a
	q.By = attrs["by"]
	return nil
}

// text returns the character data directly inside the element just
// started, exactly, skipping unknown child elements and comments.
func (ps *projectionParser) text(start xml.StartElement) (string, error) {
	var b strings.Builder
	for {
		t, err := ps.token()
		if err != nil {
			return "", err
		}
		switch t := t.(type) {
		case xml.CharData:
			b.Write(t)
		case xml.StartElement:
			if err := ps.skip(); err != nil {
				return "", err
			}
		case xml.EndElement:
			return b.String(), nil
		}
	}
}

// skip consumes everything up to the end of the element just started.
func (ps *projectionParser) skip() error {
	if err := ps.d.Skip(); err != nil {
		if err == io.EOF {
			return ps.fail("unexpected end of input")
		}
		return fmt.Errorf("%w: %w", ErrProjection, err)
	}
	return nil
}

// attrs returns the element's attributes without a namespace, by name. An
// attribute given twice is an error, as in XML.
func (ps *projectionParser) attrs(start xml.StartElement) (map[string]string, error) {
	m := make(map[string]string, len(start.Attr))
	seen := make(map[xml.Name]bool, len(start.Attr))
	for _, a := range start.Attr {
		if seen[a.Name] {
			return nil, ps.fail("<%s>: attribute %s is given twice", displayName(start.Name), displayName(a.Name))
		}
		seen[a.Name] = true
		if a.Name.Space == "" {
			m[a.Name.Local] = a.Value
		}
	}
	return m, nil
}

func (ps *projectionParser) boolAttr(attrs map[string]string, name, where string) (bool, error) {
	switch v, ok := attrs[name]; {
	case !ok || v == "false":
		return false, nil
	case v == "true":
		return true, nil
	default:
		return false, ps.fail(`%s: %s=%q, want "true" or "false"`, where, name, v)
	}
}

func isElement(t xml.StartElement, local string) bool {
	return t.Name.Space == "" && t.Name.Local == local
}

func displayName(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return n.Space + ":" + n.Local
}

func isSpace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}
