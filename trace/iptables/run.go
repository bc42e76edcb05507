package iptables

import (
	"fmt"
	"net/netip"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// status is how a branch leaves a chain.
type status int

const (
	// fellOff: end of the chain or RETURN; the caller goes on.
	fellOff status = iota
	// decided: ACCEPT, DNAT, REDIRECT or MASQUERADE ended this table's
	// traversal; the packet goes on to the next table or hook.
	decided
	// ended: DROP or REJECT.
	ended
	// next: the rule did not stop the chain (internal to run).
	next
)

type branch struct {
	st     *trace.State
	status status
}

const maxDepth = 64

// run walks chain c of table t with st and returns how each of its
// branches leaves the chain. A rule with a --probability forks the
// branch: one part takes the rule, the other goes on.
func (ev *Evaluator) run(t *table, c *chain, st *trace.State, depth int) ([]branch, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%s %s: chains nest deeper than %d (a loop?)", t.name, c.name, maxDepth)
	}
	// live and cont swap their arrays: a walk of a long chain allocates
	// nothing while no rule matches.
	live, cont := make([]*trace.State, 1, 4), make([]*trace.State, 0, 4)
	live[0] = st
	var out []branch
	for _, r := range c.rules {
		if len(live) == 0 {
			break
		}
		cont = cont[:0]
		for _, s := range live {
			if !r.matchAll(s) {
				cont = append(cont, s)
				continue
			}
			taken := s
			if r.prob < 1 {
				taken = s.Fork(r.prob)
				cont = append(cont, s)
			}
			taken.Record(string(t.name), c.name, r.text)
			bs, err := ev.apply(t, r, taken, depth)
			if err != nil {
				return nil, err
			}
			for _, b := range bs {
				if b.status == next {
					cont = append(cont, b.st)
				} else {
					out = append(out, b)
				}
			}
		}
		live, cont = cont, live
	}
	for _, s := range live {
		out = append(out, branch{s, fellOff})
	}
	return out, nil
}

// matchAll reports whether every match of r holds. A recent --rcheck
// rule that would otherwise match records the affinity and does not match.
func (r *rule) matchAll(s *trace.State) bool {
	for _, m := range r.matches {
		if !m(s) {
			return false
		}
	}
	if r.rcheck {
		if r.affinity > 0 {
			s.AffinitySeconds = r.affinity
		}
		return false
	}
	return r.prob > 0
}

// apply carries out r's target on s.
func (ev *Evaluator) apply(t *table, r *rule, s *trace.State, depth int) ([]branch, error) {
	switch r.kind {
	case tNone:
		return []branch{{s, next}}, nil
	case tReturn:
		return []branch{{s, fellOff}}, nil
	case tJump, tGoto:
		return ev.call(t, r, s, depth)
	case tAccept:
		s.Touched = true
		return []branch{{s, decided}}, nil
	case tDrop:
		s.End(trace.Drop)
		return []branch{{s, ended}}, nil
	case tReject:
		s.End(trace.Reject)
		return []branch{{s, ended}}, nil
	case tMark:
		s.Mark = (s.Mark &^ r.mask) ^ r.mark
		s.Touched = true
		return []branch{{s, next}}, nil
	case tMasquerade:
		s.Masquerade, s.Touched = true, true
		return []branch{{s, decided}}, nil
	case tDNAT:
		to := r.to
		if to.Port() == 0 {
			to = netip.AddrPortFrom(to.Addr(), s.Packet.Port)
		}
		s.SetDNAT(to)
		return []branch{{s, decided}}, nil
	case tRedirect:
		return ev.redirect(r, s)
	}
	return nil, fmt.Errorf("rule %q: target not implemented", r.text)
}

// call runs the chain a jump or goto names. After a jump, what falls off
// the called chain goes on with the next rule; after a goto, it returns
// from this chain too.
func (ev *Evaluator) call(t *table, r *rule, s *trace.State, depth int) ([]branch, error) {
	bs, err := ev.run(t, t.chains[r.chain], s, depth+1)
	if err != nil {
		return nil, err
	}
	for i := range bs {
		if bs[i].status == fellOff && r.kind == tJump {
			bs[i].status = next
		}
	}
	return bs, nil
}

// redirect sends the packet to a port of the node: the primary address of
// the input interface, or loopback for the node's own packets; the trace
// takes the node's first address.
func (ev *Evaluator) redirect(r *rule, s *trace.State) ([]branch, error) {
	var a netip.Addr
	if s.InInterface == "" {
		a = netip.MustParseAddr("127.0.0.1")
		if s.Packet.Dst.Is6() {
			a = netip.IPv6Loopback()
		}
	}
	for _, na := range ev.node.Addresses {
		if !a.IsValid() && na.Is4() == s.Packet.Dst.Is4() {
			a = na
		}
	}
	if !a.IsValid() {
		return nil, fmt.Errorf("rule %q: REDIRECT needs a node address", r.text)
	}
	s.SetDNAT(netip.AddrPortFrom(a, r.port))
	return []branch{{s, decided}}, nil
}
