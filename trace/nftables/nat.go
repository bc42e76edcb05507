package nftables

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// statement compiles a verdict, NAT or bookkeeping statement.
func (c *compiler) statement() error {
	w := c.take()
	switch w {
	case "comment":
		c.take()
		return nil
	case "counter":
		for c.peek() == "packets" || c.peek() == "bytes" {
			c.i += 2
		}
		return nil
	case "jump", "goto":
		k, ch, err := verdictOf([]string{w, c.take()})
		if err != nil {
			return err
		}
		if c.ev.chainRules(ch) == nil {
			return fmt.Errorf("%s to unknown chain %q", w, ch)
		}
		c.emit(func(st *trace.State) []res { return []res{{st, k, ch}} })
		return nil
	case "accept", "drop", "return":
		k, _, _ := verdictOf([]string{w})
		c.emit(func(st *trace.State) []res { return []res{{st, k, ""}} })
		return nil
	case "reject":
		return c.reject()
	case "masquerade":
		for c.peek() == "fully-random" || c.peek() == "random" || c.peek() == "persistent" {
			c.take()
		}
		c.emit(func(st *trace.State) []res {
			st.Masquerade, st.Touched = true, true
			return []res{{st, kAccept, ""}}
		})
		return nil
	case "dnat":
		return c.dnat()
	case "update":
		return c.update()
	}
	return fmt.Errorf("unknown statement %q", w)
}

func (c *compiler) reject() error {
	if c.peek() == "with" {
		c.take()
		switch c.take() {
		case "icmp", "icmpv6", "icmpx":
			if err := c.expect("type"); err != nil {
				return err
			}
			c.take()
		case "tcp":
			if err := c.expect("reset"); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown reject type")
		}
	}
	c.emit(func(st *trace.State) []res { return []res{{st, kReject, ""}} })
	return nil
}

// update compiles "update @set { ip saddr }": it records the client in an
// affinity set, which changes nothing for this packet.
func (c *compiler) update() error {
	name := c.take()
	if len(name) < 2 || name[0] != '@' || c.ev.sets[name[1:]] == nil {
		return fmt.Errorf("update of unknown set %q", name)
	}
	if _, err := c.braced(); err != nil {
		return err
	}
	return nil
}

// dnat compiles "dnat [ip|ip6] to ADDR[:PORT]", "dnat ip to numgen
// random mod N map { i : ADDR . PORT, ... }" and the compact layout's
// "dnat ip to numgen random mod N [offset B] map @name".
func (c *compiler) dnat() error {
	if c.peek() == "ip" || c.peek() == "ip6" {
		c.take()
	}
	if err := c.expect("to"); err != nil {
		return err
	}
	if c.peek() != "numgen" {
		to, err := parseAddrPort(c.take())
		if err != nil {
			return err
		}
		c.emit(func(st *trace.State) []res { return []res{dnatTo(st, to)} })
		return nil
	}
	n, err := c.numgenPrefix()
	if err != nil {
		return err
	}
	offset, err := c.numgenOffset(n)
	if err != nil {
		return err
	}
	if err := c.expect("map"); err != nil {
		return err
	}
	targets, err := c.numgenTargets(n, offset)
	if err != nil {
		return err
	}
	c.emit(func(st *trace.State) []res {
		return fork(st, n, func(i int, s *trace.State) res {
			if !targets[i].IsValid() {
				return res{s, kNoMatch, ""} // no element: the lookup fails
			}
			return dnatTo(s, targets[i])
		})
	})
	return nil
}

// numgenTargets reads the ADDR . PORT values that numgen's n draws pick,
// from "{ i : ADDR . PORT, ... }" or the keys offset..offset+n-1 of a
// named map. A draw without an element has the zero AddrPort.
func (c *compiler) numgenTargets(n int, offset uint64) ([]netip.AddrPort, error) {
	items := make([][]string, n)
	if w := c.peek(); strings.HasPrefix(w, "@") {
		c.take()
		m := c.ev.sets[w[1:]]
		if m == nil {
			return nil, fmt.Errorf("no map %q", w)
		}
		for i := range items {
			if v, ok := m.lookup([]string{strconv.FormatUint(offset+uint64(i), 10)}); ok {
				items[i] = strings.Fields(v)
			}
		}
	} else {
		if offset != 0 {
			return nil, fmt.Errorf("numgen offset with an anonymous map")
		}
		var err error
		if items, err = c.numgenItems(n); err != nil {
			return nil, err
		}
	}
	targets := make([]netip.AddrPort, n)
	for i, it := range items {
		if it == nil {
			continue
		}
		if len(it) != 3 || it[1] != "." {
			return nil, fmt.Errorf("numgen map value %v is not ADDR . PORT", it)
		}
		a, err1 := netip.ParseAddr(it[0])
		p, err2 := strconv.ParseUint(it[2], 10, 16)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("numgen map value %v is not ADDR . PORT", it)
		}
		targets[i] = netip.AddrPortFrom(a, uint16(p))
	}
	return targets, nil
}

func dnatTo(st *trace.State, to netip.AddrPort) res {
	if to.Port() == 0 {
		to = netip.AddrPortFrom(to.Addr(), st.Packet.Port)
	}
	st.SetDNAT(to)
	return res{st, kAccept, ""}
}
