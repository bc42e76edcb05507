package render

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// IPTablesRenderer is IPTables for a caller that renders one family's
// tables again and again (apply --watch), as NFTablesRenderer is for
// nftables: it remembers what each Service port rendered, and the next
// Render takes that over for every port that is the same as before (see
// samePort), with the same configuration (host addresses aside, see
// memoSetup), node and large-cluster mode, instead of writing its rules
// anew.
//
// Render gives exactly what IPTables gives. The chains it returns are
// shared with earlier and later results: the rulesets are read-only. The
// zero value is ready to use; it is not safe for concurrent use.
type IPTablesRenderer struct {
	setup string
	ports map[nodetable.ServicePortName]*iptPortOutput
	order map[ipt.TableName]*chainOrder
}

// chainOrder is one table's chains of the last render, sorted by name:
// the next render, which mostly has the same chains, sorts only those it
// adds and merges them in. Sorting every chain by name was two fifths of
// a render that replays its ports (plan --all-nodes).
type chainOrder struct {
	byName []*ipt.Chain
	last   map[string]*ipt.Chain
}

// sorted returns the chains sorted by name, and remembers them.
func (o *chainOrder) sorted(chains map[string]*ipt.Chain) []*ipt.Chain {
	kept := make([]*ipt.Chain, 0, len(chains))
	for _, c := range o.byName {
		if now := chains[c.Name]; now != nil {
			kept = append(kept, now)
		}
	}
	if len(kept) < len(chains) {
		var added []*ipt.Chain
		for name, c := range chains {
			if _, ok := o.last[name]; !ok {
				added = append(added, c)
			}
		}
		slices.SortFunc(added, byChainName)
		kept = mergeChains(kept, added)
	}
	o.byName, o.last = kept, chains
	return kept
}

func byChainName(a, b *ipt.Chain) int { return strings.Compare(a.Name, b.Name) }

// mergeChains merges two lists sorted by name.
func mergeChains(a, b []*ipt.Chain) []*ipt.Chain {
	out := make([]*ipt.Chain, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if byChainName(a[0], b[0]) <= 0 {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// iptPortOutput is what one Service port rendered: the chains it created
// (its KUBE-SVC, KUBE-SEP, ... chains), and the rules it appended to the
// chains every port shares (KUBE-SERVICES, KUBE-NODEPORTS, ...), in order.
type iptPortOutput struct {
	port nodetable.ServicePort
	// nodeIP is the node's primary IP when the port was written, which
	// a port with loadBalancerSourceRanges reads (readsNodeIP).
	nodeIP netip.Addr
	chains []iptOwnChain
	shared []iptSharedRule
	owned  map[*ipt.Chain]bool // chains, while the port is written
}

type iptOwnChain struct {
	table ipt.TableName
	chain *ipt.Chain
}

type iptSharedRule struct {
	table ipt.TableName
	chain string
	rule  ipt.Rule
}

// own records a chain the port created; a nil output records nothing.
func (o *iptPortOutput) own(table ipt.TableName, c *ipt.Chain) {
	if o != nil {
		o.chains = append(o.chains, iptOwnChain{table: table, chain: c})
		o.owned[c] = true
	}
}

// sharedRule records r when c is not a chain the port created.
func (o *iptPortOutput) sharedRule(table ipt.TableName, c *ipt.Chain, r ipt.Rule) {
	if o != nil && !o.owned[c] {
		o.shared = append(o.shared, iptSharedRule{table: table, chain: c.Name, rule: r})
	}
}

// Render renders t with cfg, reusing the output of unchanged ports.
func (r *IPTablesRenderer) Render(t *nodetable.ServiceTable, cfg Config) *ipt.Ruleset {
	if r.order == nil {
		r.order = map[ipt.TableName]*chainOrder{ipt.Filter: {}, ipt.NAT: {}}
	}
	s := newIPTablesStateSized(t, &cfg, len(r.order[ipt.Filter].last), len(r.order[ipt.NAT].last))
	s.order = r.order
	s.writeFixedRules()
	setup := fmt.Sprintf("%s large=%v local=%+v lhNP=%v", iptablesMemoSetup(t, cfg), s.large, s.local, s.lhNP)
	prev := r.ports
	if setup != r.setup {
		prev = nil
	}
	nodeIP := primaryNodeIP(t)
	next := make(map[nodetable.ServicePortName]*iptPortOutput, len(t.Ports))
	for i := range t.Ports {
		sp := &t.Ports[i]
		out := prev[sp.Name]
		if out == nil || !samePort(&out.port, sp) || (readsNodeIP(sp) && out.nodeIP != nodeIP) {
			out = s.recordServicePort(sp)
			out.nodeIP = nodeIP
		} else {
			s.replay(out)
		}
		next[sp.Name] = out
	}
	s.writeTrailingRules()
	r.setup, r.ports = setup, next
	return s.ruleset()
}

// recordServicePort writes one Service port and records what it wrote.
func (s *iptablesState) recordServicePort(sp *nodetable.ServicePort) *iptPortOutput {
	s.rec = &iptPortOutput{port: *sp, owned: map[*ipt.Chain]bool{}}
	s.writeServicePort(sp)
	out := s.rec
	s.rec, out.owned = nil, nil
	return out
}

// replay adds what a port rendered before, in the order it was written.
func (s *iptablesState) replay(out *iptPortOutput) {
	for _, own := range out.chains {
		s.chains(own.table)[own.chain.Name] = own.chain
	}
	for _, r := range out.shared {
		c := s.chain(r.table, r.chain)
		c.Rules = append(c.Rules, r.rule)
	}
}

// iptablesMemoSetup is what the iptables memo keys the whole render on:
// memoSetup without the node. A port's rules read of the node only what
// the state derives from it once per render, the local-traffic detector
// (the node's pod range, in NodeCIDR mode) and the localhost NodePorts,
// which Render adds to the key, and, for a port with
// loadBalancerSourceRanges, the node's primary IP (readsNodeIP); its
// name, zone and other addresses reach only the rules written outside the
// ports. So one renderer can take a port's rules over from another
// node's render, as plan --all-nodes does.
func iptablesMemoSetup(t *nodetable.ServiceTable, cfg Config) string {
	whole := *t
	whole.Node = nodetable.Node{}
	return memoSetup(&whole, cfg)
}

// readsNodeIP reports whether writing sp reads the node's primary IP:
// its KUBE-FW chain lets the node's own traffic through when a source
// range holds that IP.
func readsNodeIP(sp *nodetable.ServicePort) bool { return len(sp.LoadBalancerSourceRanges) > 0 }
