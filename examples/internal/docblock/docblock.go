// Package docblock reads the fenced blocks of the project's Markdown docs
// and splits their shell commands into words, for the tests that run the
// docs' commands as a reader would (examples/docs, and examples/server's
// test of docs/MCP.md).
package docblock

import (
	"errors"
	"fmt"
	"strings"
)

// Block is one fenced block of a Markdown file.
type Block struct {
	Info  string // the info string after the opening fence: "sh", "go", "text", or ""
	Line  int    // the opening fence's line, from 1
	End   int    // the closing fence's line
	Body  string // the lines between the fences, less the opening fence's indentation
	First string // the first line of Body that is neither blank nor a comment, trimmed
}

// Blocks returns every fenced block of md, in order. A fence is a line of
// three or more backticks, indented by spaces or not (a block inside a
// list item is); the block ends at a line of at least as many backticks
// and nothing else.
func Blocks(md []byte) ([]Block, error) {
	var out []Block
	var open *Block
	var fence, indent string
	var body strings.Builder
	n := 0
	for line := range strings.Lines(string(md)) {
		n++
		text := strings.TrimRight(line, "\r\n")
		trimmed := strings.TrimLeft(text, " ")
		ticks := len(trimmed) - len(strings.TrimLeft(trimmed, "`"))
		if open == nil {
			if ticks >= 3 {
				fence, indent = trimmed[:ticks], text[:len(text)-len(trimmed)]
				open = &Block{Info: strings.TrimSpace(trimmed[ticks:]), Line: n}
				body.Reset()
			}
			continue
		}
		if ticks >= len(fence) && strings.TrimSpace(trimmed) == trimmed[:ticks] {
			open.End, open.Body = n, body.String()
			open.First = firstCommand(open.Body)
			out = append(out, *open)
			open = nil
			continue
		}
		body.WriteString(strings.TrimPrefix(text, indent) + "\n")
	}
	if open != nil {
		return out, fmt.Errorf("the block opened on line %d is not closed", open.Line)
	}
	return out, nil
}

func firstCommand(body string) string {
	for line := range strings.Lines(body) {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return ""
}

// Commands returns body's commands as the shell reads them: lines
// continued by a trailing backslash joined into one (with a blank in
// place of the backslash and newline), blank lines and comment lines
// dropped.
func Commands(body string) []string {
	var out []string
	for line := range strings.Lines(strings.ReplaceAll(body, "\\\n", " ")) {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// Words splits a command line into words: blanks separate them, quotes
// join, a command substitution $(…) stays within its word as written, and
// a # starting a word begins a comment. Inside single quotes a $ is kept
// as $$, so that a caller expanding $NAME itself can tell the shell's
// variables from a literal dollar.
func Words(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quote, depth := false, rune(0), 0
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case depth > 0: // inside $(…), kept as written
			w.WriteRune(r)
			switch r {
			case '(':
				depth++
			case ')':
				depth--
			}
		case quote == '\'' && r == '\'', quote == '"' && r == '"':
			quote = 0
		case quote == '\'' && r == '$':
			w.WriteString("$$")
		case quote == 0 && r == '$' && i+1 < len(rs) && rs[i+1] == '(':
			w.WriteString("$(")
			i++
			depth, in = 1, true
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words, in = append(words, w.String()), false
				w.Reset()
			}
		case r == '#' && !in:
			return words, nil
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, errors.New("a quote is not closed")
	}
	if depth != 0 {
		return nil, errors.New("a $( is not closed")
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}
