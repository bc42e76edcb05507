package nftables

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/textform"
)

// ParseError reports a line of the text form that could not be read.
type ParseError = textform.ParseError

// Parse reads the listing of exactly one table, as `nft list table` prints
// it and Encode writes it, into a Ruleset. Sets, elements, chains and rules
// keep the order of the text.
func Parse(data []byte) (*Ruleset, error) {
	return textform.One(ParseAll(data))
}

// ParseAll reads any number of tables, as `nft list ruleset` prints them
// and EncodeAll writes them. Blank lines and "#" comment lines between
// tables are skipped.
func ParseAll(data []byte) ([]*Ruleset, error) {
	p := &parser{text: string(data)}
	var out []*Ruleset
	for {
		line, ok := p.next()
		if !ok {
			return out, nil
		}
		if line == "" || line[0] == '#' {
			continue
		}
		rs, err := p.table(line)
		if err != nil {
			return nil, err
		}
		out = append(out, rs)
	}
}

// parser hands out the text one trimmed line at a time.
type parser struct {
	text   string
	lineNo int
	raw    string
	// names holds the current table's set and chain names ("set NAME",
	// "chain NAME"), so that duplicates are found without a linear search
	// per object.
	names map[string]bool
}

// claim records a name of the current table; false if it was taken.
func (p *parser) claim(kind, name string) bool {
	key := kind + " " + name
	if p.names[key] {
		return false
	}
	p.names[key] = true
	return true
}

func (p *parser) next() (string, bool) {
	if p.text == "" {
		return "", false
	}
	line := p.text
	if i := strings.IndexByte(p.text, '\n'); i >= 0 {
		line, p.text = p.text[:i], p.text[i+1:]
	} else {
		p.text = ""
	}
	p.lineNo++
	p.raw = line
	return strings.TrimSpace(line), true
}

func (p *parser) errorf(format string, args ...any) error {
	return &ParseError{Line: p.lineNo, Text: p.raw, Msg: fmt.Sprintf(format, args...)}
}

// blockHeader reads "<kind> NAME {" and returns NAME.
func blockHeader(line, kind string) (string, bool) {
	rest, ok := strings.CutPrefix(line, kind+" ")
	if !ok {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, " {")
	return name, ok
}

func (p *parser) table(line string) (*Ruleset, error) {
	head, ok := blockHeader(line, "table")
	family, name, ok2 := strings.Cut(head, " ")
	if !ok || !ok2 {
		return nil, p.errorf(`expected "table FAMILY NAME {"`)
	}
	if !validFamily(Family(family)) || !validName(name) {
		return nil, p.errorf("bad table family or name")
	}
	rs := &Ruleset{Family: Family(family), Table: name}
	p.names = map[string]bool{}
	for {
		line, ok := p.next()
		if !ok {
			return nil, p.errorf("table %s not closed", name)
		}
		if err := p.tableLine(rs, line); err != nil {
			if err == errEndOfBlock {
				return rs, nil
			}
			return nil, err
		}
	}
}

var errEndOfBlock = fmt.Errorf("end of block")

func (p *parser) tableLine(rs *Ruleset, line string) error {
	switch {
	case line == "":
		return nil
	case line == "}":
		return errEndOfBlock
	case strings.HasPrefix(line, "comment "):
		c, err := p.comment(line)
		if err != nil {
			return err
		}
		if rs.Comment != "" || len(rs.Sets) > 0 || len(rs.Chains) > 0 {
			return p.errorf("table comment must come first, and once")
		}
		if c == "" {
			return p.errorf("empty comment")
		}
		rs.Comment = c
		return nil
	}
	if name, ok := blockHeader(line, "chain"); ok {
		return p.chain(rs, name)
	}
	for _, kind := range []string{"set", "map"} {
		if name, ok := blockHeader(line, kind); ok {
			if len(rs.Chains) > 0 {
				return p.errorf("sets and maps must come before chains")
			}
			return p.set(rs, name, kind == "map")
		}
	}
	return p.errorf("expected a set, map, chain or the end of the table")
}

// comment reads `comment "TEXT"`.
func (p *parser) comment(line string) (string, error) {
	q, _ := strings.CutPrefix(line, "comment ")
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' || strings.Contains(q[1:len(q)-1], `"`) {
		return "", p.errorf("malformed comment")
	}
	return q[1 : len(q)-1], nil
}

func (p *parser) chain(rs *Ruleset, name string) error {
	if !validName(name) || !p.claim("chain", name) {
		return p.errorf("bad or duplicate chain name")
	}
	c := &Chain{Name: name}
	rs.Chains = append(rs.Chains, c)
	for {
		line, ok := p.next()
		if !ok {
			return p.errorf("chain %s not closed", name)
		}
		switch {
		case line == "}":
			return nil
		case line == "":
		case strings.HasPrefix(line, "comment "):
			if c.Comment != "" || c.Base != nil || len(c.Rules) > 0 {
				return p.errorf("chain comment must come first, and once")
			}
			cm, err := p.comment(line)
			if err != nil || cm == "" {
				return p.errorf("malformed comment")
			}
			c.Comment = cm
		case strings.HasPrefix(line, "type "):
			if c.Base != nil || len(c.Rules) > 0 {
				return p.errorf("base chain declaration must precede the rules, once")
			}
			b, err := parseBaseChain(line)
			if err != nil {
				return p.errorf("%v", err)
			}
			c.Base = b
		default:
			if !validRule(line) {
				return p.errorf("malformed rule")
			}
			c.Rules = append(c.Rules, Rule(line))
		}
	}
}

// parseBaseChain reads `type filter hook input priority filter; policy accept;`.
func parseBaseChain(line string) (*BaseChain, error) {
	decl, policy, ok := strings.Cut(line, "; policy ")
	policy, ok2 := strings.CutSuffix(policy, ";")
	f := strings.SplitN(decl, " ", 6)
	if !ok || !ok2 || len(f) != 6 || f[0] != "type" || f[2] != "hook" || f[4] != "priority" {
		return nil, fmt.Errorf(`expected "type T hook H priority P; policy P;"`)
	}
	b := &BaseChain{Type: ChainType(f[1]), Hook: Hook(f[3]), Priority: Priority(f[5]), Policy: Policy(policy)}
	if !b.valid() {
		return nil, fmt.Errorf("malformed base chain declaration")
	}
	return b, nil
}

func (p *parser) set(rs *Ruleset, name string, isMap bool) error {
	if !validName(name) || !p.claim("set", name) {
		return p.errorf("bad or duplicate set name")
	}
	s := &Set{Name: name}
	seen := map[string]bool{}
	for {
		line, ok := p.next()
		if !ok {
			return p.errorf("set %s not closed", name)
		}
		if line == "" {
			continue
		}
		if line == "}" {
			break
		}
		word, _, _ := strings.Cut(line, " ")
		if seen[word] {
			return p.errorf("%s given twice", word)
		}
		seen[word] = true
		if err := p.setLine(s, word, line); err != nil {
			return err
		}
	}
	if s.Type == "" || isMap != s.IsMap() {
		return p.errorf("set %s: missing type, or a data type on a set or none on a map", name)
	}
	rs.Sets = append(rs.Sets, s)
	return nil
}

func (p *parser) setLine(s *Set, word, line string) error {
	_, arg, _ := strings.Cut(line, " ")
	switch word {
	case "type", "typeof":
		if s.Type != "" {
			return p.errorf("type given twice")
		}
		key, data, _ := strings.Cut(arg, " : ")
		if !validType(key) || (data != "" && !validType(data)) {
			return p.errorf("malformed type")
		}
		s.Type, s.DataType, s.Typeof = key, data, word == "typeof"
	case "size":
		n, err := strconv.ParseUint(arg, 10, 32)
		if err != nil || n == 0 {
			return p.errorf("malformed size")
		}
		s.Size = n
	case "flags":
		for _, f := range strings.Split(arg, ",") {
			if !validWord(f) {
				return p.errorf("malformed flags")
			}
			s.Flags = append(s.Flags, SetFlag(f))
		}
	case "timeout":
		d, err := ParseDuration(arg)
		if err != nil {
			return p.errorf("malformed timeout")
		}
		s.Timeout = d
	case "comment":
		c, err := p.comment(line)
		if err != nil || c == "" {
			return p.errorf("malformed comment")
		}
		s.Comment = c
	case "elements":
		return p.elements(s, line)
	default:
		return p.errorf("unsupported set attribute %q", word)
	}
	return nil
}
