package ipvsvm

import (
	"context"
	"regexp"
	"slices"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/conformance"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// ipsetExtras are set aside in `ipset save`'s create lines: initval, the
// random hash seed, differs between any two sets; "bucketsize 12" is the
// kernel's default bucket size (AHASH_MAX_SIZE), which the ipset command
// kube-proxy runs passes explicitly, so the kernel flags it and prints it,
// while the tool's netlink create leaves it to the default (the netlink
// library has no bucket size option): the same hash table either way. Any
// other bucket size stays in the comparison.
var ipsetExtras = regexp.MustCompile(` initval 0x[0-9a-f]+| bucketsize 12\b`)

// dumpIPVS reads what ipvs mode programs in ns, with the kernel's own
// tools, in canonical form: the IPVS virtual and real servers
// (`ipvsadm -Sn`: scheduler, flags, persistence, forwarding and weight),
// the ipsets with their members, kube-ipvs0 and its addresses, and the
// iptables rules of both families (conformance.CanonicalIPTables). Order
// only matters within iptables chains; everything else is sorted.
func dumpIPVS(ctx context.Context, ns netlab.NS) (conformance.Canonical, error) {
	var out conformance.Canonical
	save, err := ns.Run(ctx, "ipvsadm", "-Sn")
	if err != nil {
		return nil, err
	}
	out = append(out, prefixSorted("ipvs ", string(save))...)
	sets, err := ns.Run(ctx, "ipset", "save")
	if err != nil {
		return nil, err
	}
	out = append(out, prefixSorted("ipset ", ipsetExtras.ReplaceAllString(string(sets), ""))...)
	out = append(out, dummyLink(ctx, ns)...)
	rules, err := conformance.Dump(ctx, ns, conformance.IPTables)
	if err != nil {
		return nil, err
	}
	return append(out, rules...), nil
}

// dummyLink describes kube-ipvs0: its kind and flags ("link kube-ipvs0
// dummy <BROADCAST,NOARP>") and one line per address ("addr inet
// 10.96.0.10/32"), or that it is missing.
func dummyLink(ctx context.Context, ns netlab.NS) []string {
	link, err := ns.Run(ctx, "ip", "-o", "-d", "link", "show", "dev", "kube-ipvs0")
	if err != nil {
		return []string{"link kube-ipvs0 missing"}
	}
	f := strings.Fields(string(link))
	desc := "link kube-ipvs0"
	if len(f) > 2 {
		desc += " " + f[2]
	}
	if strings.Contains(string(link), " dummy ") {
		desc += " dummy"
	}
	out := []string{desc}
	addrs, _ := ns.Run(ctx, "ip", "-o", "addr", "show", "dev", "kube-ipvs0")
	var lines []string
	for l := range strings.Lines(string(addrs)) {
		if f := strings.Fields(l); len(f) > 3 {
			lines = append(lines, "addr "+f[2]+" "+f[3])
		}
	}
	slices.Sort(lines)
	return append(out, lines...)
}

// prefixSorted returns the non-empty lines of s, sorted, each with prefix.
func prefixSorted(prefix, s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, prefix+l)
		}
	}
	slices.Sort(out)
	return out
}
