package nftables

import (
	"fmt"
	"strings"
)

// tokenize splits a rule as nft prints it into words: quoted strings stay
// whole (quotes kept), and "{", "}" and "," outside quotes are words of
// their own.
func tokenize(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted:
			cur.WriteByte(c)
			if c == '\\' && i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			} else if c == '"' {
				quoted = false
			}
		case c == '"':
			quoted = true
			cur.WriteByte(c)
		case c == ' ' || c == '\t':
			flush()
		case c == '{' || c == '}' || c == ',':
			flush()
			out = append(out, string(c))
		default:
			cur.WriteByte(c)
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote")
	}
	flush()
	return out, nil
}

// cursor walks a rule's words.
type cursor struct {
	w []string
	i int
}

func (c *cursor) more() bool { return c.i < len(c.w) }
func (c *cursor) peek() string {
	if c.more() {
		return c.w[c.i]
	}
	return ""
}
func (c *cursor) peekAt(n int) string {
	if c.i+n < len(c.w) {
		return c.w[c.i+n]
	}
	return ""
}
func (c *cursor) take() string {
	w := c.peek()
	c.i++
	return w
}
func (c *cursor) expect(w string) error {
	if got := c.take(); got != w {
		return fmt.Errorf("expected %q, found %q", w, got)
	}
	return nil
}

// braced reads "{ a, b, c }" into its comma-separated items, each a list
// of words.
func (c *cursor) braced() ([][]string, error) {
	if err := c.expect("{"); err != nil {
		return nil, err
	}
	var items [][]string
	var cur []string
	for c.more() {
		w := c.take()
		switch w {
		case "}":
			if len(cur) > 0 {
				items = append(items, cur)
			}
			return items, nil
		case ",":
			items = append(items, cur)
			cur = nil
		default:
			cur = append(cur, w)
		}
	}
	return nil, fmt.Errorf("unclosed {")
}
