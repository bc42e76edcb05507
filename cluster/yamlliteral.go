package cluster

import "strings"

// literal reads the literal block scalar whose header, rest ("|", "|-",
// "|+", with an indentation indicator perhaps), ends the line just read;
// indent is the column of the mapping whose value it is. The scalar is
// read from the document's bytes, not its lines: blank lines and
// trailing spaces are its text. Anything unusual (no text, blank lines
// before it, a line indented less than its first, a line of spaces only
// that is longer than the indentation) is left to the slow path, which
// reads it as YAML says.
func (p *blockParser) literal(out []byte, indent int, rest string) ([]byte, error) {
	chomp, width, ok := literalHeader(rest)
	if !ok || p.pos >= len(p.lines) || p.lines[p.pos].indent <= indent {
		return nil, errSlowPath
	}
	begin := p.lines[p.pos-1].start + strings.IndexByte(p.doc[p.lines[p.pos-1].start:], '\n') + 1
	if begin != p.lines[p.pos].start {
		return nil, errSlowPath // blank lines before the text, or no line break
	}
	n := p.lines[p.pos].indent
	if width > 0 {
		n = indent + width
	}
	last := p.pos
	for last < len(p.lines) && p.lines[last].indent > indent {
		last++
	}
	text, ok := literalLines(p.doc[begin:p.lineStart(last)], n, chomp)
	if !ok {
		return nil, errSlowPath
	}
	p.pos = last
	return appendString(out, text), nil
}

// literalHeader reads a literal scalar's header: "|" and, in either
// order, a chomping indicator ('-', '+', or 0 for none) and an
// indentation indicator (1 to 9, or 0 for none).
func literalHeader(h string) (chomp byte, width int, ok bool) {
	if h == "" || h[0] != '|' {
		return 0, 0, false
	}
	for _, c := range []byte(h[1:]) {
		switch {
		case (c == '-' || c == '+') && chomp == 0:
			chomp = c
		case c >= '1' && c <= '9' && width == 0:
			width = int(c - '0')
		default:
			return 0, 0, false
		}
	}
	return chomp, width, true
}

// literalLines is the value of a literal scalar whose lines, indented by
// n, are region (each ending in a line break but perhaps the last), as
// chomp says: "-" drops the final line break, "+" keeps it and the empty
// lines after it, and none keeps the line break alone.
func literalLines(region string, n int, chomp byte) (string, bool) {
	var b strings.Builder
	b.Grow(len(region))
	empty, broken, seen := 0, false, false // empty lines pending; the last text line's break
	for region != "" {
		line, rest, found := strings.Cut(region, "\n")
		region = rest
		spaces := len(line) - len(strings.TrimLeft(line, " "))
		if spaces == len(line) {
			if spaces > n {
				return "", false // spaces that are text: left to the slow path
			}
			if found {
				empty++
			}
			continue
		}
		if spaces < n || !literalText(line[n:]) {
			return "", false
		}
		if seen {
			b.WriteByte('\n')
		}
		for ; empty > 0; empty-- {
			b.WriteByte('\n')
		}
		b.WriteString(line[n:])
		seen, broken = true, found
	}
	switch {
	case chomp == '-' || !broken:
	case chomp == '+':
		b.WriteString(strings.Repeat("\n", empty+1))
	default:
		b.WriteByte('\n')
	}
	return b.String(), seen
}
