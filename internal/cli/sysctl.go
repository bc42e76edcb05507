package cli

import (
	"fmt"
	"os"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nfacct"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
)

// readNodeSysctls fills in what kube-proxy reads from the node's sysctls
// at startup: with nf_conntrack_tcp_be_liberal set, it installs no rule that
// drops conntrack-INVALID packets. Only the commands that run on the node
// (ProxyFlags.onNode: plan, apply, proxy) call it; render stays a function
// of its inputs.
func readNodeSysctls(cfg *render.Config) {
	if v, err := os.ReadFile("/proc/sys/net/netfilter/nf_conntrack_tcp_be_liberal"); err == nil && len(v) > 0 && v[0] != '0' {
		cfg.ConntrackTCPBeLiberal = true
	}
}

// ensureRouteLocalnet sets net.ipv4.conf.all.route_localnet=1 when
// NodePorts must answer on 127.0.0.1, as kube-proxy does.
func ensureRouteLocalnet(d *desired) error {
	if !render.LocalhostNodePorts(d.tables.IPv4, d.cfg) {
		return nil
	}
	const path = "/proc/sys/net/ipv4/conf/all/route_localnet"
	if cur, err := os.ReadFile(path); err == nil && len(cur) > 0 && cur[0] == '1' {
		return nil
	}
	if err := os.WriteFile(path, []byte("1"), 0o644); err != nil {
		return fmt.Errorf("set route_localnet for localhost NodePorts (or pass --iptables-localhost-nodeports=false): %w", err)
	}
	return nil
}

// ensureNFAcct creates the nfacct counters that the rules about to be
// written name, in this process's network namespace, as kube-proxy does
// before every full sync; it never resets one that exists.
func ensureNFAcct(names []string) error {
	for _, name := range names {
		if err := nfacct.Ensure(name); err != nil {
			return fmt.Errorf("%w (on a kernel without nfacct, pass --nfacct=false: kube-proxy then leaves out the counting matches and the localhost NodePort rules)", err)
		}
	}
	return nil
}
