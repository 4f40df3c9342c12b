package main

import (
	"bytes"
	"errors"
)

// useItBlock returns the body of the first ```go block in the README's
// "## Use it" section, up to the next "## " heading.
func useItBlock(readme []byte) ([]byte, error) {
	_, section, ok := bytes.Cut(readme, []byte("\n## Use it\n"))
	section = append([]byte("\n"), section...)
	if !ok {
		return nil, errors.New(`README.md has no "## Use it" section`)
	}
	if i := bytes.Index(section, []byte("\n## ")); i >= 0 {
		section = section[:i+1]
	}
	_, rest, ok := bytes.Cut(section, []byte("\n```go\n"))
	if !ok {
		return nil, errors.New(`the "Use it" section has no Go block`)
	}
	body, _, ok := bytes.Cut(rest, []byte("\n```\n"))
	if !ok {
		return nil, errors.New(`the "Use it" section's Go block is not closed`)
	}
	return append(body, '\n'), nil
}
