package conformance

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// Where a userspace rule names its proxy port: REDIRECT's --to-ports,
// DNAT's --to-destination address:port, and the --dport of the filter
// KUBE-NODEPORT-NON-LOCAL rules, which accept traffic to the proxy port.
var (
	toPortsRE     = regexp.MustCompile(`(--to-ports )(\d+)`)
	toDestRE      = regexp.MustCompile(`(--to-destination [^\s:]+:)(\d+)`)
	dportRE       = regexp.MustCompile(`(--dport )(\d+)`)
	ruleCommentRE = regexp.MustCompile(`--comment ("[^"]*"|\S+)`)
)

// nonLocalChain is the filter chain whose --dport is a proxy port.
const nonLocalChain = "KUBE-NODEPORT-NON-LOCAL"

// CanonicalUserspace reads an IPv4 iptables-save dump and returns the
// userspace mode's part canonically: the declarations of its chains, the
// jumps to them from the built-in chains (in kernel order, which matters
// there), and the rules of its chains sorted (v1.25 added them service by
// service in Go map order; each matches its own destination). Every proxy
// port is replaced by "<proxy-port SERVICE-PORT>", the service port its
// rule's comment names: v1.25 picked proxy ports at random, the tool picks
// them deterministically, so only which rules share a port can be
// compared. A port used by two service ports, or a service port with two
// ports, adds a "proxy-port conflict" line, which then differs.
func CanonicalUserspace(dump []byte) (Canonical, error) {
	all, err := CanonicalIPTables(dump, nodetable.IPv4)
	if err != nil {
		return nil, err
	}
	pm := proxyPortMap{byPort: map[string]string{}, byName: map[string]string{}}
	var out, rules Canonical
	for _, l := range all {
		chain, rule, isRule := splitCanonical(l)
		if !slices.Contains(userspaceChains, chain) {
			if isRule && jumpsToUserspace(rule) {
				out = append(out, l)
			}
			continue
		}
		if !isRule {
			out = append(out, l)
			continue
		}
		rules = append(rules, pm.replace(l, chain == nonLocalChain))
	}
	slices.Sort(rules)
	out = append(out, rules...)
	return append(out, pm.conflicts...), nil
}

// splitCanonical splits "IPv4 nat -A CHAIN rule" into CHAIN and rule, and
// "IPv4 nat :CHAIN -" into CHAIN.
func splitCanonical(l string) (chain, rule string, isRule bool) {
	f := strings.SplitN(l, " ", 5)
	if len(f) >= 4 && f[2] == "-A" {
		if len(f) == 5 {
			rule = f[4]
		}
		return f[3], rule, true
	}
	if len(f) >= 3 {
		return strings.TrimPrefix(f[2], ":"), "", false
	}
	return "", "", false
}

func jumpsToUserspace(rule string) bool {
	for _, c := range userspaceChains {
		if strings.HasSuffix(rule, "-j "+c) {
			return true
		}
	}
	return false
}

// proxyPortMap names proxy ports by service port and records conflicts.
type proxyPortMap struct {
	byPort, byName map[string]string
	conflicts      []string
}

// replace names the proxy port in the line l after the service port in its
// comment; dport says that --dport is a proxy port (KUBE-NODEPORT-NON-LOCAL).
func (m *proxyPortMap) replace(l string, dport bool) string {
	name := "?"
	if c := ruleCommentRE.FindStringSubmatch(l); c != nil {
		name = strings.Trim(c[1], `"`)
	}
	res := []*regexp.Regexp{toPortsRE, toDestRE}
	if dport {
		res = []*regexp.Regexp{dportRE}
	}
	for _, re := range res {
		l = re.ReplaceAllStringFunc(l, func(s string) string {
			sub := re.FindStringSubmatch(s)
			m.note(sub[2], name)
			return sub[1] + "<proxy-port " + name + ">"
		})
	}
	return l
}

func (m *proxyPortMap) note(port, name string) {
	if other, ok := m.byPort[port]; ok && other != name {
		m.conflicts = append(m.conflicts, fmt.Sprintf("proxy-port conflict: %s used by %s and %s", port, other, name))
	}
	if other, ok := m.byName[name]; ok && other != port {
		m.conflicts = append(m.conflicts, fmt.Sprintf("proxy-port conflict: %s uses %s and %s", name, other, port))
	}
	m.byPort[port], m.byName[name] = name, port
}
