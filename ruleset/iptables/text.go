package iptables

import (
	"bufio"
	"bytes"
	"io"
	"slices"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/textform"
)

// Encode writes rs in iptables-save format: for each table a "*name" line,
// the chain lines with "[0:0]" counters, the rules grouped by chain, and
// COMMIT. The output is valid iptables-restore input.
func (rs *Ruleset) Encode(w io.Writer) error {
	return textform.Write(w, func(bw *bufio.Writer) error {
		for _, t := range rs.Tables {
			t.encode(bw)
		}
		return nil
	})
}

func (t *Table) encode(w *bufio.Writer) {
	w.WriteString("*" + string(t.Name) + "\n")
	for _, c := range t.Chains {
		w.WriteString(":" + c.Name + " " + c.Policy + " [0:0]\n")
	}
	for _, c := range t.Chains {
		for _, r := range c.Rules {
			// Piece by piece: one string per rule was 320k allocations
			// for a 10k-Service table.
			w.WriteString("-A ")
			w.WriteString(c.Name)
			w.WriteByte(' ')
			w.WriteString(string(r))
			w.WriteByte('\n')
		}
	}
	w.WriteString("COMMIT\n")
}

// encodedLen is the length of t's text form.
func (t *Table) encodedLen() int {
	n := len("*\nCOMMIT\n") + len(t.Name)
	for _, c := range t.Chains {
		n += len(":  [0:0]\n") + len(c.Name) + len(c.Policy)
		for _, r := range c.Rules {
			n += len("-A  \n") + len(c.Name) + len(r)
		}
	}
	return n
}

// String returns the iptables-save text of rs.
func (rs *Ruleset) String() string { return textform.String(rs.Encode) }

// Bytes returns the iptables-save text of rs, as String does, in a buffer
// made once at its size: the text of a 10k-Service ruleset is 33 MB, and
// a buffer grown as it is written copies it several times over.
func (rs *Ruleset) Bytes() []byte {
	n := 0
	for _, t := range rs.Tables {
		n += t.encodedLen()
	}
	var b bytes.Buffer
	b.Grow(n)
	_ = rs.Encode(&b)
	return b.Bytes()
}

// ParseError reports a line of the text form that could not be read.
type ParseError = textform.ParseError

// Parse reads iptables-save output (or iptables-restore input of the same
// shape) into a Ruleset of the given family. Comment lines and counters are
// ignored. Chains keep the order of their ":" lines; Sort puts them into
// iptables-save order.
func Parse(data []byte, family nodetable.Family) (*Ruleset, error) {
	rs := &Ruleset{Family: family}
	var cur *Table
	// One conversion; every rule is then a substring of it, with no copy.
	text := string(data)
	lineNo := 0
	for len(text) > 0 {
		var line string
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			line, text = text, ""
		}
		lineNo++
		first := lineNo
		// A quoted string may hold a newline: iptables-save prints a
		// comment such as $'foreign\nrule' as it is, across two lines.
		for isRuleLine(line) && inQuotes(line) && len(text) > 0 {
			var more string
			if i := strings.IndexByte(text, '\n'); i >= 0 {
				more, text = text[:i], text[i+1:]
			} else {
				more, text = text, ""
			}
			line += "\n" + more
			lineNo++
		}
		if err := parseLine(rs, &cur, line, first); err != nil {
			return nil, err
		}
	}
	if cur != nil {
		return nil, &ParseError{Line: lineNo, Msg: "missing COMMIT for table " + string(cur.Name)}
	}
	return rs, nil
}

func parseLine(rs *Ruleset, cur **Table, raw string, lineNo int) error {
	line := strings.TrimRight(raw, " \r")
	perr := func(msg string) error { return &ParseError{Line: lineNo, Text: line, Msg: msg} }
	if line == "" || line[0] == '#' {
		return nil
	}
	switch {
	case line[0] == '*':
		if *cur != nil {
			return perr("table started before COMMIT of " + string((*cur).Name))
		}
		name := TableName(line[1:])
		if name == "" {
			return perr("empty table name")
		}
		if rs.Table(name) != nil {
			return perr("table listed twice")
		}
		*cur = &Table{Name: name}
		rs.Tables = append(rs.Tables, *cur)
	case line == "COMMIT":
		if *cur == nil {
			return perr("COMMIT outside a table")
		}
		*cur = nil
	case line[0] == ':':
		if *cur == nil {
			return perr("chain outside a table")
		}
		f := strings.Fields(line[1:])
		if len(f) < 2 {
			return perr("chain line needs a name and a policy")
		}
		if (*cur).Chain(f[0]) != nil {
			return perr("chain declared twice")
		}
		(*cur).AddChain(&Chain{Name: f[0], Policy: f[1]})
	default:
		return parseRule(*cur, stripCounters(line), perr)
	}
	return nil
}

func parseRule(t *Table, line string, perr func(string) error) error {
	if t == nil {
		return perr("rule outside a table")
	}
	if !strings.HasPrefix(line, "-A ") {
		return perr("expected -A, a chain line, a table or COMMIT")
	}
	rest := line[3:]
	name, spec, _ := strings.Cut(rest, " ")
	c := t.Chain(name)
	if c == nil {
		return perr("rule for undeclared chain " + name)
	}
	c.Rules = append(c.Rules, Rule(strings.TrimSpace(spec)))
	return nil
}

// isRuleLine reports whether a line is a rule, with or without counters.
func isRuleLine(line string) bool {
	return strings.HasPrefix(line, "-A ") || strings.HasPrefix(line, "[")
}

// inQuotes reports whether a line ends inside a double-quoted string, as
// iptables-save quotes them (a backslash escapes the next character).
func inQuotes(line string) bool {
	open := false
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && open:
			i++
		case line[i] == '"':
			open = !open
		}
	}
	return open
}

// stripCounters removes a leading "[packets:bytes] " that iptables-save -c writes.
func stripCounters(line string) string {
	if strings.HasPrefix(line, "[") {
		if i := strings.Index(line, "] "); i > 0 {
			return line[i+2:]
		}
	}
	return line
}

// Sort puts each table's chains into iptables-save order: built-in chains
// in hook order, then user-defined chains by name. Rule order is kept.
func (rs *Ruleset) Sort() {
	for _, t := range rs.Tables {
		builtins := builtinChains[t.Name]
		rank := func(c *Chain) int {
			if i := slices.Index(builtins, c.Name); i >= 0 {
				return i
			}
			return len(builtins)
		}
		slices.SortStableFunc(t.Chains, func(a, b *Chain) int {
			ra, rb := rank(a), rank(b)
			if ra != rb {
				return ra - rb
			}
			return strings.Compare(a.Name, b.Name)
		})
	}
}

// familyMarker starts each family's section when several rulesets share one text.
const familyMarker = "# family: "

// EncodeAll writes several rulesets, each after a "# family: IPv4" line.
func EncodeAll(w io.Writer, sets []*Ruleset) error {
	return textform.EncodeAll(w, sets, func(rs *Ruleset) string { return familyMarker + string(rs.Family) })
}

// ParseAll reads what EncodeAll writes. Text without a family line is read
// as one IPv4 ruleset.
func ParseAll(data []byte) ([]*Ruleset, error) {
	var out []*Ruleset
	family := nodetable.IPv4
	start, lineNo, startLine := 0, 0, 1
	flush := func(end int) error {
		section := data[start:end]
		if len(bytes.TrimSpace(section)) == 0 {
			return nil
		}
		rs, err := Parse(section, family)
		if err != nil {
			return textform.Within(err, startLine, "")
		}
		out = append(out, rs)
		return nil
	}
	for pos := 0; pos < len(data); {
		end := bytes.IndexByte(data[pos:], '\n')
		next := len(data)
		if end >= 0 {
			next = pos + end + 1
		}
		lineNo++
		line := string(bytes.TrimRight(data[pos:next], "\r\n"))
		if strings.HasPrefix(line, familyMarker) {
			if err := flush(pos); err != nil {
				return nil, err
			}
			family = nodetable.Family(strings.TrimSpace(strings.TrimPrefix(line, familyMarker)))
			if family != nodetable.IPv4 && family != nodetable.IPv6 {
				return nil, &ParseError{Line: lineNo, Text: line, Msg: "unknown family"}
			}
			start, startLine = next, lineNo+1
		}
		pos = next
	}
	if err := flush(len(data)); err != nil {
		return nil, err
	}
	return out, nil
}
