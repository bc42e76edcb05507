package vmtest

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// preloadModules are loaded by the guest's init, in dependency order,
// before any test runs. Names without a match in modules.dep are skipped
// (built into the kernel, or not shipped). Patterns are path.Match
// patterns on the module name.
//
// The set covers IPVS with every scheduler kube-proxy accepts, the dummy
// and veth links netlab and kube-ipvs0 need, conntrack and NAT, nftables
// with its expressions, and the iptables tables, matches and targets of
// kube-proxy's iptables and ipvs modes, with ipset. Everything else under
// the netfilter directories is still packed and can be loaded on demand
// through /sbin/modprobe (busybox), which the kernel runs for
// request_module.
var preloadModules = []string{
	"ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_lc", "ip_vs_wlc", "ip_vs_sh",
	"ip_vs_dh", "ip_vs_sed", "ip_vs_nq", "ip_vs_mh",
	"dummy", "veth",
	"virtio_pci", "virtio_net", // Config.UserNet's NIC
	"nf_conntrack", "nf_conntrack_netlink", "nf_nat", "nf_reject_ipv4", "nf_reject_ipv6",
	"nfnetlink", "nf_tables", "nft_*",
	"ip_tables", "iptable_nat", "iptable_filter", "iptable_mangle", "iptable_raw",
	"ip6_tables", "ip6table_nat", "ip6table_filter", "ip6table_mangle", "ip6table_raw",
	"ipt_REJECT", "ip6t_REJECT",
	"xt_set", "xt_comment", "xt_mark", "xt_addrtype", "xt_conntrack", "xt_MASQUERADE",
	"xt_nat", "xt_statistic", "xt_recent", "xt_multiport", "xt_tcpudp", "xt_REDIRECT",
	"xt_state", "xt_physdev", "xt_NFLOG", "xt_limit", "xt_CT",
	"ip_set", "ip_set_hash_ip", "ip_set_hash_ipport", "ip_set_hash_ipportip",
	"ip_set_hash_ipportnet", "ip_set_hash_net", "ip_set_bitmap_port",
	"sctp",
}

// packDirs are the module directories packed whole (with dependencies), so
// that modprobe can load what preloadModules does not name.
var packDirs = []string{
	"kernel/net/netfilter/", "kernel/net/ipv4/netfilter/", "kernel/net/ipv6/netfilter/",
	"kernel/net/sctp/", "kernel/drivers/net/dummy.ko", "kernel/drivers/net/veth.ko",
}

// moduleSet is the parsed modules.dep of one kernel.
type moduleSet struct {
	dir    string              // .../lib/modules/<kver>
	deps   map[string][]string // relative path -> its dependencies' paths
	byName map[string]string   // module name (ip_vs) -> relative path
}

func readModules(dir string) (*moduleSet, error) {
	f, err := os.Open(filepath.Join(dir, "modules.dep"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ms := &moduleSet{dir: dir, deps: map[string][]string{}, byName: map[string]string{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		mod, deps, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		ms.deps[mod] = strings.Fields(deps)
		ms.byName[moduleName(mod)] = mod
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ms.deps) == 0 {
		return nil, fmt.Errorf("%s/modules.dep is empty", dir)
	}
	return ms, nil
}

// moduleName turns kernel/net/netfilter/ipvs/ip_vs_rr.ko into ip_vs_rr
// (modprobe treats - and _ alike; module files use both).
func moduleName(rel string) string {
	base := path.Base(rel)
	if i := strings.Index(base, ".ko"); i >= 0 {
		base = base[:i]
	}
	return strings.ReplaceAll(base, "-", "_")
}

// loadOrder returns the modules to preload, each after its dependencies.
func (ms *moduleSet) loadOrder() []string {
	var order []string
	seen := map[string]bool{}
	var visit func(rel string)
	visit = func(rel string) {
		if seen[rel] {
			return
		}
		seen[rel] = true
		for _, d := range ms.deps[rel] {
			visit(d)
		}
		order = append(order, rel)
	}
	names := make([]string, 0, len(ms.byName))
	for n := range ms.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, want := range preloadModules {
		for _, n := range names {
			if ok, _ := path.Match(want, n); ok {
				visit(ms.byName[n])
			}
		}
	}
	return order
}

// packList returns every module file to pack: the preloaded ones and the
// packDirs, each with its dependencies, sorted.
func (ms *moduleSet) packList() []string {
	set := map[string]bool{}
	var add func(rel string)
	add = func(rel string) {
		if set[rel] {
			return
		}
		set[rel] = true
		for _, d := range ms.deps[rel] {
			add(d)
		}
	}
	for rel := range ms.deps {
		for _, p := range packDirs {
			if rel == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(rel, p)) {
				add(rel)
			}
		}
	}
	for _, rel := range ms.loadOrder() {
		add(rel)
	}
	list := make([]string, 0, len(set))
	for rel := range set {
		list = append(list, rel)
	}
	sort.Strings(list)
	return list
}
