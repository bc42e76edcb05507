package trace

import "net/netip"

// Hook is a netfilter hook.
type Hook string

const (
	Prerouting  Hook = "prerouting"
	Input       Hook = "input"
	Forward     Hook = "forward"
	Output      Hook = "output"
	Postrouting Hook = "postrouting"
)

// Step is one rule the packet matched: the table, the chain and the
// rule's text as the mode lists it.
type Step struct {
	Table string `json:"table"`
	Chain string `json:"chain"`
	Rule  string `json:"rule"`
}

// State is one branch of a trace: the packet as the rules have changed it
// so far and what has been decided about it. A rule that matches only
// with some probability forks the state (Fork); every branch carries its
// probability.
type State struct {
	// Packet is the packet now: its destination changes with DNAT.
	Packet Packet
	// Original is the packet as it entered.
	Original Packet
	// InInterface is the input interface, "" for the node's own traffic.
	InInterface string
	// Hook is the hook being evaluated.
	Hook Hook
	// Looped is set while the node's own packet to one of its addresses
	// passes PREROUTING a second time, over loopback: its NAT was done in
	// OUTPUT, so the nat chains are not run again; the others are.
	Looped bool
	// Mark is the packet mark (skb->mark).
	Mark uint32
	// DNAT is set once the destination was rewritten; Endpoint is then
	// the new destination.
	DNAT     bool
	Endpoint netip.AddrPort
	// IPVS is set once IPVS translated the packet (what `-m ipvs` tests).
	IPVS bool
	// Masquerade is set when a masquerade statement or target was reached.
	Masquerade bool
	// Prob is the branch's probability.
	Prob float64
	// Steps are the rules matched, in order.
	Steps []Step
	// AffinitySeconds is the ClientIP affinity timeout met on the way, 0
	// for none.
	AffinitySeconds int
	// Verdict is Drop or Reject once a rule ended the packet; "" while it
	// goes on.
	Verdict Verdict
	// DecidedBy is the rule that dropped or rejected it.
	DecidedBy *Step
	// Touched is set when a rule specific to a Service acted on the
	// packet (not only the jumps between the proxy's fixed chains).
	Touched bool
	// Scheduler and Via are set by ipvs and userspace: the virtual
	// server's scheduler, or the proxy port the portal sent it to.
	Scheduler string
	ProxyPort string
}

// NewState returns the state of a packet entering at e.
func NewState(p Packet, e Entry) *State {
	return &State{Packet: p, Original: p, InInterface: e.InInterface, Prob: 1}
}

// Fork returns a copy of s that takes the fraction p of its probability;
// s keeps the rest.
func (s *State) Fork(p float64) *State {
	c := *s
	c.Steps = append(make([]Step, 0, len(s.Steps)+4), s.Steps...)
	if s.DecidedBy != nil {
		d := *s.DecidedBy
		c.DecidedBy = &d
	}
	c.Prob = s.Prob * p
	s.Prob -= c.Prob
	return &c
}

// Record appends a matched rule to the path.
func (s *State) Record(table, chain, rule string) {
	s.Steps = append(s.Steps, Step{Table: table, Chain: chain, Rule: rule})
}

// SetDNAT rewrites the destination.
func (s *State) SetDNAT(to netip.AddrPort) {
	s.DNAT = true
	s.Endpoint = to
	s.Packet.Dst = to.Addr()
	s.Packet.Port = to.Port()
	s.Touched = true
}

// End drops or rejects the packet, naming the last recorded rule.
func (s *State) End(v Verdict) {
	s.Verdict = v
	if n := len(s.Steps); n > 0 {
		d := s.Steps[n-1]
		s.DecidedBy = &d
	}
	s.Touched = true
}

// Ended reports whether a rule dropped or rejected the packet.
func (s *State) Ended() bool { return s.Verdict == Drop || s.Verdict == Reject }
