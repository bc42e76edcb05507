package nftables

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// verdictOf parses a verdict: "goto X", "jump X", "drop", "accept", ...
func verdictOf(words []string) (kind, string, error) {
	if len(words) == 2 && (words[0] == "goto" || words[0] == "jump") {
		if words[0] == "goto" {
			return kGoto, words[1], nil
		}
		return kJump, words[1], nil
	}
	if len(words) == 1 {
		switch words[0] {
		case "drop":
			return kDrop, "", nil
		case "accept":
			return kAccept, "", nil
		case "return":
			return kReturn, "", nil
		}
	}
	return 0, "", fmt.Errorf("unknown verdict %q", strings.Join(words, " "))
}

// vmap compiles "vmap @map" or "vmap { key : verdict, ... }": a key not in
// the map does not match.
func (c *compiler) vmap(sels []selector) error {
	var m *set
	if w := c.peek(); strings.HasPrefix(w, "@") {
		c.take()
		if m = c.ev.sets[w[1:]]; m == nil {
			return fmt.Errorf("no map %q", w)
		}
	} else {
		items, err := c.braced()
		if err != nil {
			return err
		}
		m = newSet("")
		for _, it := range items {
			k, v, ok := strings.Cut(strings.Join(it, " "), " : ")
			if !ok {
				return fmt.Errorf("bad map element %q", strings.Join(it, " "))
			}
			m.add(k, v)
		}
	}
	verdicts := map[string]res{}
	for _, v := range allValues(m) {
		k, ch, err := verdictOf(strings.Fields(v))
		if err != nil {
			return err
		}
		verdicts[v] = res{kind: k, chain: ch}
	}
	c.emit(func(st *trace.State) []res {
		v, ok := m.lookup(keyOf(sels, st))
		if !ok {
			return []res{{st, kNoMatch, ""}}
		}
		r := verdicts[v]
		r.st = st
		return []res{r}
	})
	return nil
}

func allValues(s *set) []string {
	var out []string
	for _, v := range s.exact {
		out = append(out, v)
	}
	for _, iv := range s.intervals {
		out = append(out, iv.value)
	}
	return out
}

// numgenPrefix reads "numgen random mod N" and returns N.
func (c *compiler) numgenPrefix() (int, error) {
	if c.take() != "numgen" || c.take() != "random" || c.take() != "mod" {
		return 0, fmt.Errorf("only \"numgen random mod N\" is known")
	}
	n, err := strconv.Atoi(c.take())
	if err != nil || n < 1 {
		return 0, fmt.Errorf("bad numgen modulus")
	}
	return n, nil
}

// numgenOffset reads an optional "offset B" after "numgen random mod N".
// The kernel refuses an offset that takes the last draw past 2^32-1.
func (c *compiler) numgenOffset(n int) (uint64, error) {
	if c.peek() != "offset" {
		return 0, nil
	}
	c.take()
	b, err := strconv.ParseUint(c.take(), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("bad numgen offset")
	}
	if b+uint64(n)-1 > math.MaxUint32 {
		return 0, fmt.Errorf("numgen offset %d and modulus %d pass 2^32", b, n) // the kernel refuses it
	}
	return b, nil
}

// numgenItems reads "{ 0 : X, 1 : Y, ... }" into X, Y, ... by index.
func (c *compiler) numgenItems(n int) ([][]string, error) {
	items, err := c.braced()
	if err != nil {
		return nil, err
	}
	out := make([][]string, n)
	for _, it := range items {
		if len(it) < 3 || it[1] != ":" {
			return nil, fmt.Errorf("bad numgen map element %q", strings.Join(it, " "))
		}
		i, err := strconv.Atoi(it[0])
		if err != nil || i < 0 || i >= n {
			return nil, fmt.Errorf("numgen map key %q out of range", it[0])
		}
		out[i] = it[2:]
	}
	return out, nil
}

// numgenVmap compiles "numgen random mod N vmap { i : verdict, ... }": the
// branch forks N ways, 1/N each; a value without an element does not match.
func (c *compiler) numgenVmap() error {
	n, err := c.numgenPrefix()
	if err != nil {
		return err
	}
	if err := c.expect("vmap"); err != nil {
		return err
	}
	items, err := c.numgenItems(n)
	if err != nil {
		return err
	}
	verdicts := make([]*res, n)
	for i, it := range items {
		if it != nil {
			k, ch, err := verdictOf(it)
			if err != nil {
				return err
			}
			verdicts[i] = &res{kind: k, chain: ch}
		}
	}
	c.emit(func(st *trace.State) []res {
		return fork(st, n, func(i int, s *trace.State) res {
			if verdicts[i] == nil {
				return res{s, kNoMatch, ""}
			}
			return res{s, verdicts[i].kind, verdicts[i].chain}
		})
	})
	return nil
}

// numgenMatch compiles "numgen random mod N V", the compact layout's
// endpoint choice: the branch forks in two, the fraction 1/N that draws V
// and goes on, and the rest, for which the rule does not match.
func (c *compiler) numgenMatch() error {
	n, err := c.numgenPrefix()
	if err != nil {
		return err
	}
	v, err := strconv.Atoi(c.take())
	if err != nil || v < 0 || v >= n {
		return fmt.Errorf("numgen random mod %d: want a value from 0 to %d", n, n-1)
	}
	c.emit(func(st *trace.State) []res {
		if n == 1 {
			return []res{{st, kCont, ""}}
		}
		return []res{{st.Fork(1 / float64(n)), kCont, ""}, {st, kNoMatch, ""}}
	})
	return nil
}

// fork splits st into n equally likely branches.
func fork(st *trace.State, n int, f func(i int, s *trace.State) res) []res {
	out := make([]res, 0, n)
	for i := 0; i < n-1; i++ {
		out = append(out, f(i, st.Fork(1/float64(n-i))))
	}
	return append(out, f(n-1, st))
}

// markSet compiles "meta mark set meta mark (|,^,&) V" and "meta mark set V".
func (c *compiler) markSet() error {
	c.i += 3
	if c.peek() != "meta" {
		v, err := strconv.ParseUint(c.take(), 0, 32)
		if err != nil {
			return fmt.Errorf("bad mark value")
		}
		c.emit(func(st *trace.State) []res { st.Mark, st.Touched = uint32(v), true; return []res{{st, kCont, ""}} })
		return nil
	}
	if c.take() != "meta" || c.take() != "mark" {
		return fmt.Errorf("bad mark statement")
	}
	opr := c.take()
	v, err := strconv.ParseUint(c.take(), 0, 32)
	if err != nil || (opr != "|" && opr != "^" && opr != "&") {
		return fmt.Errorf("bad mark statement")
	}
	c.emit(func(st *trace.State) []res {
		switch opr {
		case "|":
			st.Mark |= uint32(v)
		case "^":
			st.Mark ^= uint32(v)
		default:
			st.Mark &= uint32(v)
		}
		st.Touched = true
		return []res{{st, kCont, ""}}
	})
	return nil
}

// parseAddrPort reads "10.0.0.1:80", "[fd00::1]:80", or an address alone.
func parseAddrPort(w string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(w); err == nil {
		return ap, nil
	}
	a, err := netip.ParseAddr(strings.Trim(w, "[]"))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", w)
	}
	return netip.AddrPortFrom(a, 0), nil
}
