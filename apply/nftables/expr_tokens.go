package nftables

import (
	"fmt"
	"strings"
)

// token is one word of a rule, a quoted string (quotes kept), or the
// inside of a "{ ... }" group (brace set, text without the braces).
type token struct {
	text  string
	brace bool
}

// tokenize splits rule text as nft prints it.
func tokenize(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == ' ':
			i++
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return nil, fmt.Errorf("unterminated string at %q", s[i:])
			}
			out = append(out, token{text: s[i : i+j+2]})
			i += j + 2
		case c == '{':
			j := strings.IndexByte(s[i:], '}')
			if j < 0 {
				return nil, fmt.Errorf("unterminated { at %q", s[i:])
			}
			inner := strings.TrimSpace(s[i+1 : i+j])
			if inner == "" || strings.ContainsAny(inner, "{\"") {
				return nil, fmt.Errorf("unsupported set %q", s[i:i+j+1])
			}
			out = append(out, token{text: inner, brace: true})
			i += j + 1
		default:
			j := strings.IndexAny(s[i:], " \"{")
			if j < 0 {
				j = len(s) - i
			}
			out = append(out, token{text: s[i : i+j]})
			i += j
		}
	}
	return out, nil
}

// splitItems splits the inside of a brace group at ", ".
func splitItems(inner string) []string {
	items := strings.Split(inner, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

func wordCount(s string) int { return strings.Count(s, " ") + 1 }

func joinWords(ws []string) string { return strings.Join(ws, " ") }

// tokenStream walks a token slice.
type tokenStream struct {
	toks []token
	pos  int
}

func (ts *tokenStream) done() bool { return ts.pos >= len(ts.toks) }

func (ts *tokenStream) peek() token {
	if ts.done() {
		return token{}
	}
	return ts.toks[ts.pos]
}

// peekWord is the next token's text when it is a plain word.
func (ts *tokenStream) peekWord() string {
	t := ts.peek()
	if t.brace {
		return ""
	}
	return t.text
}

func (ts *tokenStream) next() token {
	t := ts.peek()
	ts.pos++
	return t
}

// accept consumes the next token if it is the word w.
func (ts *tokenStream) accept(w string) bool {
	if ts.peekWord() == w && !ts.done() {
		ts.pos++
		return true
	}
	return false
}

// words returns the plain words from the current position on, up to the
// first brace group.
func (ts *tokenStream) words() []string {
	var out []string
	for _, t := range ts.toks[ts.pos:] {
		if t.brace {
			break
		}
		out = append(out, t.text)
	}
	return out
}
