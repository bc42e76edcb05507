package conformance

import (
	"slices"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// Canonical is a ruleset as lines that each name where they belong (family,
// table, chain or set), so that a line diff of two of them says exactly
// what differs. Order is kept where it has a meaning (rules within a
// chain) and normalised where it has none.
type Canonical []string

// String is the lines, one per line.
func (c Canonical) String() string { return strings.Join(c, "\n") + "\n" }

// canaryChain is kube-proxy's flush detector, its own bookkeeping rather
// than a service rule; the tool does not create it.
const canaryChain = "KUBE-PROXY-CANARY"

// dispatchChains are the chains whose rule order is kube-proxy's Go map
// iteration order over Services: one rule (or a few) per Service port, each
// matching its own destination, so their order has no meaning. The jumps
// to KUBE-NODEPORTS that end nat KUBE-SERVICES must stay after them; they
// are sorted among themselves (one per node address, each matching its
// own destination, listed in interface order by kube-proxy).
var dispatchChains = map[ipt.TableName][]string{
	ipt.NAT:    {"KUBE-SERVICES", "KUBE-NODEPORTS"},
	ipt.Filter: {"KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-NODEPORTS", "KUBE-PROXY-FIREWALL"},
}

// CanonicalIPTables reads an iptables-save dump (counters are dropped by
// the parser) and returns its canonical lines: "IPv4 nat :CHAIN POLICY" for
// each chain and "IPv4 nat -A CHAIN rule" for each rule. The canary chains
// built-in chains that are empty and
// accept are left out (they are the same as absent), chains are sorted by
// name and dispatch chains are sorted as dispatchChains says.
func CanonicalIPTables(dump []byte, f nodetable.Family) (Canonical, error) {
	rs, err := ipt.Parse(dump, f)
	if err != nil {
		return nil, err
	}
	var out Canonical
	for _, t := range rs.Tables {
		prefix := string(f) + " " + string(t.Name) + " "
		var chains []*ipt.Chain
		for _, c := range t.Chains {
			if c.Name == canaryChain {
				continue
			}
			rules := slices.Clone(c.Rules)
			if ipt.IsBuiltin(t.Name, c.Name) && len(rules) == 0 && (c.Policy == "ACCEPT" || c.Policy == "-") {
				continue
			}
			if slices.Contains(dispatchChains[t.Name], c.Name) {
				sortDispatch(rules)
			}
			chains = append(chains, &ipt.Chain{Name: c.Name, Policy: c.Policy, Rules: rules})
		}
		tmp := &ipt.Ruleset{Family: f, Tables: []*ipt.Table{{Name: t.Name, Chains: chains}}}
		tmp.Sort()
		for _, c := range tmp.Tables[0].Chains {
			policy := c.Policy
			if !ipt.IsBuiltin(t.Name, c.Name) {
				policy = "-"
			}
			out = append(out, prefix+":"+c.Name+" "+policy)
		}
		for _, c := range tmp.Tables[0].Chains {
			for _, r := range c.Rules {
				out = append(out, prefix+"-A "+c.Name+" "+string(r))
			}
		}
	}
	return out, nil
}

// sortDispatch sorts the rules before the first jump to KUBE-NODEPORTS,
// and the jumps to KUBE-NODEPORTS that follow it.
func sortDispatch(rules []ipt.Rule) {
	isJump := func(r ipt.Rule) bool { return r.Target() == "KUBE-NODEPORTS" }
	start := slices.IndexFunc(rules, isJump)
	if start < 0 {
		slices.Sort(rules)
		return
	}
	slices.Sort(rules[:start])
	end := start
	for end < len(rules) && isJump(rules[end]) {
		end++
	}
	slices.Sort(rules[start:end])
}

// CanonicalNFTables reads `nft list table` output and returns its
// canonical lines: the table, then each set (its declaration, then one
// line per element in SortElements order) and each chain (its declaration,
// then its rules in order), sets and chains sorted by name: the order in
// which objects were created, which is all their listing order says, has
// no meaning.
func CanonicalNFTables(dump []byte) (Canonical, error) {
	rs, err := nft.Parse(dump)
	if err != nil {
		return nil, err
	}
	rs.SortElements()
	prefix := string(rs.Family) + " "
	out := Canonical{prefix + "table " + rs.Table + " comment " + quoted(rs.Comment)}
	sets := slices.Clone(rs.Sets)
	slices.SortFunc(sets, func(a, b *nft.Set) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range sets {
		out = append(out, prefix+setDecl(s))
		for _, e := range s.Elements {
			line := prefix + "set " + s.Name + " element " + e.Key
			if e.Comment != "" {
				line += " comment " + quoted(e.Comment)
			}
			if e.Value != "" {
				line += " : " + e.Value
			}
			out = append(out, line)
		}
	}
	chains := slices.Clone(rs.Chains)
	slices.SortFunc(chains, func(a, b *nft.Chain) int { return strings.Compare(a.Name, b.Name) })
	for _, c := range chains {
		decl := prefix + "chain " + c.Name
		if b := c.Base; b != nil {
			decl += " { type " + string(b.Type) + " hook " + string(b.Hook) + " priority " + string(b.Priority) + "; policy " + string(b.Policy) + "; }"
		}
		if c.Comment != "" {
			decl += " comment " + quoted(c.Comment)
		}
		out = append(out, decl)
		for _, r := range c.Rules {
			out = append(out, prefix+"chain "+c.Name+" rule "+string(r))
		}
	}
	return out, nil
}

// setDecl is a set's declaration on one line, as nft would print it.
func setDecl(s *nft.Set) string {
	kind := "set"
	if s.IsMap() {
		kind = "map"
	}
	line := kind + " " + s.Name + " { " + s.TypeClause() + ";"
	if s.Size > 0 {
		line += " size " + strconv.FormatUint(s.Size, 10) + ";"
	}
	if len(s.Flags) > 0 {
		var fl []string
		for _, f := range s.Flags {
			fl = append(fl, string(f))
		}
		line += " flags " + strings.Join(fl, ",") + ";"
	}
	if s.Timeout > 0 {
		line += " timeout " + nft.FormatDuration(s.Timeout) + ";"
	}
	if s.Comment != "" {
		line += " comment " + quoted(s.Comment) + ";"
	}
	return line + " }"
}

func quoted(s string) string { return `"` + s + `"` }
