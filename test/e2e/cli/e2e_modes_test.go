package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// e2eMode is a proxy mode as the cluster and watch end-to-end tests drive
// it: the flags that select it, and how to read and break its state in
// the node namespace by hand. The tests' phases are written once against
// this interface, so that a mode joins them by implementing it.
type e2eMode interface {
	// name is the mode's --mode value, which /proxyMode also serves.
	name() string
	// args select the mode on the command line.
	args() []string
	// applied starts apply's summary line, naming the backend.
	applied(n *e2eNode) string
	// requireUsable skips t, or fails it under CI (test/testenv),
	// when the test machine lacks what the test needs to inspect the
	// mode's state.
	requireUsable(t *testing.T)
	// list returns the mode's state in the node namespace, as text.
	list(n *e2eNode) string
	// serviceChains maps each ClusterIP in a listing to the per-service
	// chain its traffic is sent to. The tests' Services have one port.
	serviceChains(listing string) map[string]string
	// hasChain reports whether a listing holds chain.
	hasChain(listing, chain string) bool
	// dropServiceChain removes, in one transaction, the per-service
	// chain of the Service at clusterIP and every reference to it, as an
	// admin flushing "stale" rules by hand would. It returns the chain.
	// It does not check the result: a running apply --watch may have put
	// the chain back already (see deleteServiceChain).
	dropServiceChain(t *testing.T, n *e2eNode, clusterIP string) string
	// perService is what a ClusterIP Service with one endpoint and no
	// session affinity adds, as svcproxy_applied_changes_total series
	// (labels {object=...,op="added"}) and how many of each.
	perService() map[string]float64
}

// e2eModes are the modes the cluster and watch end-to-end tests run in.
var e2eModes = []e2eMode{iptablesE2E{}, nftablesE2E{}}

// forEachMode runs fn in a subtest per mode, one after the other: the
// tests that use it measure times that two modes running at once on a
// busy machine would skew.
func forEachMode(t *testing.T, fn func(t *testing.T, m e2eMode)) {
	for _, m := range e2eModes {
		t.Run(m.name(), func(t *testing.T) {
			m.requireUsable(t)
			fn(t, m)
		})
	}
}

// serviceChain returns the per-service chain of the Service at clusterIP
// in m's current state, failing the test if there is none.
func serviceChain(t *testing.T, n *e2eNode, m e2eMode, clusterIP string) (chain, listing string) {
	t.Helper()
	listing = m.list(n)
	chain = m.serviceChains(listing)[clusterIP]
	if chain == "" {
		t.Fatalf("%s mode: no per-service chain for %s in:\n%s", m.name(), clusterIP, listing)
	}
	return chain, listing
}

// deleteServiceChain is m.dropServiceChain, checked: it fails the test
// unless the chain and the ClusterIP's reference to it are gone after it.
// Where a watch loop may repair drift at any moment, use dropServiceChain.
func deleteServiceChain(t *testing.T, n *e2eNode, m e2eMode, clusterIP string) string {
	t.Helper()
	chain := m.dropServiceChain(t, n, clusterIP)
	if after := m.list(n); m.hasChain(after, chain) || m.serviceChains(after)[clusterIP] != "" {
		t.Fatalf("%s mode: %s or the reference to it from %s still there after deleting them:\n%s", m.name(), chain, clusterIP, after)
	}
	return chain
}

// assertServiceGone fails the test if m's state still holds chain, or
// any of addrs (the Service's ClusterIP and its endpoints' addresses).
func assertServiceGone(t *testing.T, n *e2eNode, m e2eMode, chain string, addrs ...string) {
	t.Helper()
	listing := m.list(n)
	if m.hasChain(listing, chain) {
		t.Fatalf("%s mode: chain %s remains after its Service was deleted:\n%s", m.name(), chain, listing)
	}
	for _, a := range addrs {
		if strings.Contains(listing, a) {
			t.Fatalf("%s mode: %s is still mentioned after its Service was deleted:\n%s", m.name(), a, listing)
		}
	}
}

// iptablesE2E is the iptables mode, through the node's iptables backend.
type iptablesE2E struct{}

func (iptablesE2E) name() string              { return string("iptables") }
func (iptablesE2E) args() []string            { return nil }
func (iptablesE2E) applied(n *e2eNode) string { return "Applied (iptables-" + n.backend + ")" }
func (iptablesE2E) requireUsable(*testing.T)  {} // newE2ENode checks iptables

// list returns the tables the iptables mode writes.
func (iptablesE2E) list(n *e2eNode) string { return n.save("filter", "nat") }

// iptablesServiceRE matches KUBE-SERVICES' jump for a ClusterIP.
var iptablesServiceRE = regexp.MustCompile(`(?m)^-A KUBE-SERVICES -d ([0-9.]+)/32 .*-j (KUBE-SVC-[A-Z0-9]+)$`)

func (iptablesE2E) serviceChains(listing string) map[string]string {
	chains := map[string]string{}
	for _, m := range iptablesServiceRE.FindAllStringSubmatch(listing, -1) {
		chains[m[1]] = m[2]
	}
	return chains
}

func (iptablesE2E) hasChain(listing, chain string) bool {
	return strings.Contains(listing, ":"+chain+" ")
}

// dropServiceChain deletes every jump to the KUBE-SVC chain, then the
// chain, in one iptables-restore.
func (m iptablesE2E) dropServiceChain(t *testing.T, n *e2eNode, clusterIP string) string {
	t.Helper()
	chain, _ := serviceChain(t, n, m, clusterIP)
	script := "*nat\n"
	for line := range strings.Lines(n.save("nat")) {
		if strings.HasPrefix(line, "-A ") && strings.HasSuffix(strings.TrimSpace(line), "-j "+chain) {
			script += "-D " + strings.TrimPrefix(line, "-A ")
		}
	}
	script += "-F " + chain + "\n-X " + chain + "\nCOMMIT\n"
	if _, err := n.lab.Node().RunInput(t.Context(), []byte(script), "iptables-"+n.backend+"-restore", "--noflush"); err != nil {
		t.Fatal(err)
	}
	return chain
}

// perService: a KUBE-SVC and a KUBE-SEP chain.
func (iptablesE2E) perService() map[string]float64 {
	return map[string]float64{`svcproxy_applied_changes_total{object="chains",op="added"}`: 2}
}

// nftablesE2E is the nftables mode: kube-proxy's table ip kube-proxy.
type nftablesE2E struct{}

func (nftablesE2E) name() string            { return string("nftables") }
func (nftablesE2E) args() []string          { return []string{"--mode=nftables"} }
func (nftablesE2E) applied(*e2eNode) string { return "Applied (nftables)" }

func (nftablesE2E) requireUsable(t *testing.T) {
	testenv.RequireTools(t, "nft")
}

func (nftablesE2E) list(n *e2eNode) string { return n.nft("list", "table", "ip", "kube-proxy") }

// nftablesServiceRE matches an element of the service-ips map: its key,
// ClusterIP . protocol . port, and the per-service chain it goes to.
// Elements are separated by commas and may share a line.
var nftablesServiceRE = regexp.MustCompile(`(?:^|[\s{,])(([0-9.]+) \. [a-z]+ \. [0-9]+) : goto (service-[^\s,}]+)`)

func (nftablesE2E) serviceChains(listing string) map[string]string {
	chains := map[string]string{}
	for _, m := range nftablesServiceRE.FindAllStringSubmatch(listing, -1) {
		chains[m[2]] = m[3]
	}
	return chains
}

// serviceKey returns the service-ips key that goes to chain.
func (nftablesE2E) serviceKey(listing, chain string) string {
	for _, m := range nftablesServiceRE.FindAllStringSubmatch(listing, -1) {
		if m[3] == chain {
			return m[1]
		}
	}
	return ""
}

func (nftablesE2E) hasChain(listing, chain string) bool {
	return strings.Contains(listing, "\tchain "+chain+" {")
}

// dropServiceChain deletes the service-ips element that goes to the
// service chain, flushes the chain (dropping any jump of it to endpoint
// chains, which session affinity adds) and deletes it, in one nft
// transaction.
func (m nftablesE2E) dropServiceChain(t *testing.T, n *e2eNode, clusterIP string) string {
	t.Helper()
	chain, listing := serviceChain(t, n, m, clusterIP)
	key := m.serviceKey(listing, chain)
	script := "delete element ip kube-proxy service-ips { " + key + " }\n" +
		"flush chain ip kube-proxy " + chain + "\n" +
		"delete chain ip kube-proxy " + chain + "\n"
	ctx, cancel := context.WithTimeout(t.Context(), cmdTimeout)
	defer cancel()
	if _, err := n.lab.Node().RunInput(ctx, []byte(script), "nft", "-f", "-"); err != nil {
		t.Fatalf("%v\nscript:\n%s", err, script)
	}
	return chain
}

// perService: the service chain, which DNATs to the endpoints through a
// numgen map (kube-proxy makes endpoint chains only for session affinity),
// and its elements in the service-ips map and the cluster-ips set.
func (nftablesE2E) perService() map[string]float64 {
	return map[string]float64{
		`svcproxy_applied_changes_total{object="chains",op="added"}`:   1,
		`svcproxy_applied_changes_total{object="elements",op="added"}`: 2,
	}
}
