package nftables

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// kind is how a rule's evaluation leaves a branch.
type kind int

const (
	kCont kind = iota // go on with the next expression, or the next rule
	kNoMatch
	kJump
	kGoto
	kAccept
	kDrop
	kReject
	kReturn
)

type res struct {
	st    *trace.State
	kind  kind
	chain string
}

// op is one expression or statement of a rule.
type op func(st *trace.State) []res

type rule struct {
	text string
	ops  []op
}

// compiler turns one rule's words into ops.
type compiler struct {
	ev *Evaluator
	cursor
	ops []op
}

func (ev *Evaluator) compile(text string) (*rule, error) {
	words, err := tokenize(text)
	if err != nil {
		return nil, err
	}
	c := &compiler{ev: ev, cursor: cursor{w: words}}
	for c.more() {
		if err := c.item(); err != nil {
			return nil, err
		}
	}
	return &rule{text: text, ops: c.ops}, nil
}

func (c *compiler) emit(o op) { c.ops = append(c.ops, o) }

// match emits an op that lets the branch go on when m holds.
func (c *compiler) match(m func(st *trace.State) bool) {
	c.emit(func(st *trace.State) []res {
		if m(st) {
			return []res{{st, kCont, ""}}
		}
		return []res{{st, kNoMatch, ""}}
	})
}

// item compiles the next expression or statement.
func (c *compiler) item() error {
	w := c.peek()
	switch {
	case w == "meta" && c.peekAt(1) == "mark" && c.peekAt(2) == "set":
		return c.markSet()
	case w == "numgen" && c.peekAt(4) == "vmap":
		return c.numgenVmap()
	case w == "numgen":
		return c.numgenMatch()
	case isStatement(w):
		return c.statement()
	}
	return c.relation()
}

func isStatement(w string) bool {
	switch w {
	case "jump", "goto", "accept", "drop", "reject", "return", "masquerade", "dnat", "update", "comment", "counter":
		return true
	}
	return false
}

// selector is one packet field an expression reads, as text.
type selector struct {
	name string
	get  func(st *trace.State) string
	addr bool
}

// selectors reads "sel [. sel ...]".
func (c *compiler) selectors() ([]selector, error) {
	var out []selector
	for {
		s, err := c.selector()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		if c.peek() != "." {
			return out, nil
		}
		c.take()
	}
}

func (c *compiler) selector() (selector, error) {
	a := c.take()
	name := a
	if a != "iifname" {
		name += " " + c.take()
	}
	node := c.ev.node
	switch name {
	case "ip saddr", "ip6 saddr":
		return selector{name, func(st *trace.State) string { return st.Packet.Src.String() }, true}, nil
	case "ip daddr", "ip6 daddr":
		return selector{name, func(st *trace.State) string { return st.Packet.Dst.String() }, true}, nil
	case "meta l4proto":
		return selector{name, func(st *trace.State) string { return st.Packet.Protocol }, false}, nil
	case "th dport":
		return selector{name, func(st *trace.State) string { return strconv.Itoa(int(st.Packet.Port)) }, false}, nil
	case "meta mark":
		return selector{name, func(st *trace.State) string { return fmt.Sprintf("0x%08x", st.Mark) }, false}, nil
	case "ct state":
		return selector{name, func(*trace.State) string { return "new" }, false}, nil
	case "ct status":
		return selector{name, func(st *trace.State) string { return map[bool]string{true: "dnat"}[st.DNAT] }, false}, nil
	case "iifname", "meta iifname":
		return selector{"iifname", func(st *trace.State) string { return st.InInterface }, false}, nil
	case "fib saddr", "fib daddr":
		if err := c.expect("type"); err != nil {
			return selector{}, err
		}
		src := name == "fib saddr"
		return selector{name + " type", func(st *trace.State) string {
			a := st.Packet.Dst
			if src {
				a = st.Packet.Src
			}
			if node.IsLocal(a) {
				return "local"
			}
			return "unicast"
		}, false}, nil
	}
	return selector{}, fmt.Errorf("unknown expression %q", name)
}

func keyOf(sels []selector, st *trace.State) []string {
	k := make([]string, len(sels))
	for i, s := range sels {
		k[i] = s.get(st)
	}
	return k
}

// relation compiles "selectors [op] RIGHT" where RIGHT is a value, @set,
// { anonymous set }, or "vmap" @map / { map }.
func (c *compiler) relation() error {
	sels, err := c.selectors()
	if err != nil {
		return err
	}
	if c.peek() == "&" {
		return c.masked(sels)
	}
	neg := false
	switch c.peek() {
	case "!=":
		neg = true
		c.take()
	case "==":
		c.take()
	case "vmap":
		c.take()
		return c.vmap(sels)
	}
	m, err := c.right(sels)
	if err != nil {
		return err
	}
	c.match(func(st *trace.State) bool { return m(st) != neg })
	return nil
}

// masked compiles "meta mark & MASK (==|!=) VALUE".
func (c *compiler) masked(sels []selector) error {
	c.take()
	if len(sels) != 1 || sels[0].name != "meta mark" {
		return fmt.Errorf("\"&\" after %q", sels[0].name)
	}
	mask, err1 := strconv.ParseUint(c.take(), 0, 32)
	rel := c.take()
	val, err2 := strconv.ParseUint(c.take(), 0, 32)
	if err1 != nil || err2 != nil || (rel != "==" && rel != "!=") {
		return fmt.Errorf("bad mark comparison")
	}
	c.match(func(st *trace.State) bool { return (uint64(st.Mark)&mask == val) == (rel == "==") })
	return nil
}

// right compiles the right-hand side of a comparison into a test.
func (c *compiler) right(sels []selector) (func(st *trace.State) bool, error) {
	w := c.peek()
	var s *set
	switch {
	case strings.HasPrefix(w, "@"):
		c.take()
		if s = c.ev.sets[w[1:]]; s == nil {
			return nil, fmt.Errorf("no set %q", w)
		}
	case w == "{":
		items, err := c.braced()
		if err != nil {
			return nil, err
		}
		s = newSet("")
		for _, it := range items {
			s.add(strings.Join(it, " "), "")
		}
	default:
		c.take()
		if len(sels) != 1 {
			return nil, fmt.Errorf("a single value %q against a concatenation", w)
		}
		return literal(sels[0], w)
	}
	return func(st *trace.State) bool {
		_, ok := s.lookup(keyOf(sels, st))
		if s.affinity > 0 {
			st.AffinitySeconds = s.affinity // an affinity set: ClientIP affinity
		}
		return ok
	}, nil
}

// literal compares one field with one value: a prefix for addresses, a
// glob ("veth*") for interface names, the text otherwise.
func literal(sel selector, w string) (func(st *trace.State) bool, error) {
	if sel.name == "iifname" {
		pat := strings.Trim(w, `"`)
		if prefix, ok := strings.CutSuffix(pat, "*"); ok {
			return func(st *trace.State) bool { return st.InInterface != "" && strings.HasPrefix(st.InInterface, prefix) }, nil
		}
		return func(st *trace.State) bool { return st.InInterface == pat }, nil
	}
	if sel.addr {
		p := parsePart(w)
		if p.exact == "" && !p.prefix.IsValid() && !p.lo.IsValid() {
			return nil, fmt.Errorf("bad address %q", w)
		}
		return func(st *trace.State) bool { return p.matches(sel.get(st)) }, nil
	}
	switch sel.name + " " + w {
	case "ct state new", "ct state established", "ct state related", "ct state invalid", "ct status dnat",
		"fib saddr type local", "fib daddr type local", "meta l4proto tcp", "meta l4proto udp", "meta l4proto sctp":
	default:
		if _, err := strconv.ParseUint(w, 0, 32); err != nil {
			return nil, fmt.Errorf("unknown value %q for %s", w, sel.name)
		}
	}
	return func(st *trace.State) bool { return sel.get(st) == w }, nil
}
