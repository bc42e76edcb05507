package nftables

import (
	"fmt"
	"strings"
)

// elements reads `elements = { ... }`, which nft wraps over several lines.
func (p *parser) elements(s *Set, line string) error {
	text, ok := strings.CutPrefix(line, "elements = {")
	if !ok {
		return p.errorf(`expected "elements = {"`)
	}
	var b strings.Builder
	b.WriteString(text)
	// Each line is scanned once, carrying the quote state across lines:
	// rescanning the whole text per line made a 10k-Service listing take
	// seconds.
	var scan braceScanner
	for closed := scan.feed(text); !closed; {
		more, ok := p.next()
		if !ok {
			return p.errorf("elements not closed")
		}
		b.WriteString(" " + more)
		closed = scan.feed(" " + more)
	}
	body, _ := strings.CutSuffix(strings.TrimSpace(b.String()), "}")
	parts, err := splitElements(body)
	if err != nil {
		return p.errorf("%v", err)
	}
	for _, part := range parts {
		e, err := parseElement(part, s.IsMap())
		if err != nil {
			return p.errorf("%v", err)
		}
		s.Elements = append(s.Elements, e)
	}
	return nil
}

// braceScanner finds the first "}" outside double quotes in text fed to
// it piece by piece.
type braceScanner struct {
	inQuote bool
}

// feed scans the next piece and reports whether it holds that "}".
func (s *braceScanner) feed(text string) bool {
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '"':
			s.inQuote = !s.inQuote
		case '}':
			if !s.inQuote {
				return true
			}
		}
	}
	return false
}

// splitElements splits an element list at the commas outside quotes. The
// text must end right after the closing brace was removed.
func splitElements(body string) ([]string, error) {
	var out []string
	inQuote, start := false, 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '"':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				out = append(out, strings.TrimSpace(body[start:i]))
				start = i + 1
			}
		case '{', '}':
			if !inQuote {
				return nil, fmt.Errorf("unexpected brace in elements")
			}
		}
	}
	if inQuote {
		return nil, fmt.Errorf("unterminated string in elements")
	}
	return append(out, strings.TrimSpace(body[start:])), nil
}

// parseElement reads `KEY [comment "C"] [: VALUE]`.
func parseElement(text string, isMap bool) (Element, error) {
	var e Element
	head := text
	if i := indexOutsideQuotes(text, " : "); i >= 0 {
		head, e.Value = text[:i], strings.TrimSpace(text[i+3:])
	}
	if i := strings.Index(head, ` comment "`); i >= 0 {
		c := head[i+len(` comment "`):]
		c, ok := strings.CutSuffix(c, `"`)
		if !ok || c == "" || strings.Contains(c, `"`) {
			return e, fmt.Errorf("malformed element comment in %q", text)
		}
		head, e.Comment = head[:i], c
	}
	e.Key = strings.TrimSpace(head)
	if !validElementText(e.Key) || (e.Value != "" && !validElementText(e.Value)) {
		return e, fmt.Errorf("malformed element %q", text)
	}
	if isMap != (e.Value != "") {
		return e, fmt.Errorf("element %q: a map element needs a value and a set element has none", text)
	}
	return e, nil
}

func indexOutsideQuotes(s, sub string) int {
	inQuote := false
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			inQuote = !inQuote
		} else if !inQuote && strings.HasPrefix(s[i:], sub) {
			return i
		}
	}
	return -1
}
