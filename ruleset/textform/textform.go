// Package textform holds what the rulesets' text forms share: the parse
// error that names the line and its place in a larger text, reading exactly
// one ruleset, the buffered writing of one or several rulesets, and String.
package textform

import "fmt"

// ParseError reports a line of a ruleset's text form that could not be read.
type ParseError struct {
	Line int
	Text string
	Msg  string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("line %d: %s: %q", e.Line, e.Msg, e.Text)
}

// One returns the only ruleset of a ParseAll result, or a ParseError when
// there is not exactly one. Use it as One(ParseAll(data)).
func One[R any](all []R, err error) (R, error) {
	var zero R
	if err != nil {
		return zero, err
	}
	if len(all) != 1 {
		return zero, &ParseError{Line: 1, Msg: fmt.Sprintf("want exactly one ruleset, found %d", len(all))}
	}
	return all[0], nil
}
