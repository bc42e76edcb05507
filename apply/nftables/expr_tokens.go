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
	out := make([]token, 0, strings.Count(s, " ")+1)
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

// hasPhrase reports whether words start with the words of phrase, and
// how many those are. Unlike joining the words to compare, it allocates
// nothing: a rule is compiled by trying one phrase after another, and a
// new table at 10k Services in the compact layout is 102k rules.
func hasPhrase(words []string, phrase string) (int, bool) {
	n := 0
	for {
		w, rest, more := strings.Cut(phrase, " ")
		if n >= len(words) || words[n] != w {
			return 0, false
		}
		n++
		if !more {
			return n, true
		}
		phrase = rest
	}
}

// maxWords is the most words that words returns: more than the longest
// phrase that a rule is matched against ("fib saddr type",
// "numgen random mod N").
const maxWords = 8

// tokenStream walks a token slice.
type tokenStream struct {
	toks []token
	pos  int
	buf  [maxWords]string // words' result
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
// first brace group and at most maxWords of them. The slice is valid
// until the next call.
func (ts *tokenStream) words() []string {
	out := ts.buf[:0]
	for _, t := range ts.toks[ts.pos:] {
		if t.brace || len(out) == maxWords {
			break
		}
		out = append(out, t.text)
	}
	return out
}
