package cli

import (
	"net"
	"net/netip"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// hostAddresses returns the addresses of this network namespace's
// interfaces, against which kube-proxy matches --nodeport-addresses CIDRs
// and, in ipvs mode, creates NodePort virtual servers. kube-ipvs0 is left
// out, as kube-proxy leaves it out (GetAllLocalAddressesExcept): its
// addresses are Service IPs, not the node's. nil (when the interfaces
// cannot be read) makes render fall back to the node IPs and loopback.
func hostAddresses() []netip.Addr {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, iface := range ifaces {
		if iface.Name == ipvs.DummyDevice {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			return nil
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				out = append(out, p.Addr().Unmap())
			}
		}
	}
	return out
}
