package ipvs

import "fmt"

// Sysctls returns the sysctls kube-proxy v1.37's ipvs mode sets at start
// (NewProxier), as paths under /proc/sys with the value wanted:
//   - net/ipv4/vs/conntrack=1: IPVS keeps conntrack entries, which the
//     helper chains' MASQUERADE needs;
//   - net/ipv4/vs/expire_nodest_conn=1 and expire_quiescent_template=1:
//     flows to deleted or weight-0 real servers end at their next packet;
//   - net/ipv4/vs/conn_reuse_mode=0 on kernels 4.1 to 5.8 only;
//   - net/ipv4/ip_forward=1;
//   - with strictARP, net/ipv4/conf/all/arp_ignore=1 and arp_announce=2,
//     so the node does not answer ARP for kube-ipvs0's addresses.
//
// A plan shows those whose value differs, and apply writes only those.
func Sysctls(strictARP bool) [][2]string {
	kv := [][2]string{
		{"net/ipv4/vs/conntrack", "1"},
		{"net/ipv4/vs/expire_nodest_conn", "1"},
		{"net/ipv4/vs/expire_quiescent_template", "1"},
		{"net/ipv4/ip_forward", "1"},
	}
	if major, minor := kernelVersion(); (major == 4 && minor >= 1) || (major == 5 && minor < 9) {
		kv = append(kv, [2]string{"net/ipv4/vs/conn_reuse_mode", "0"})
	}
	if strictARP {
		kv = append(kv, [2]string{"net/ipv4/conf/all/arp_ignore", "1"}, [2]string{"net/ipv4/conf/all/arp_announce", "2"})
	}
	return kv
}

// EnsureSysctls writes every one of Sysctls in the client's network
// namespace, for the tests that program IPVS without a plan.
func (c *Client) EnsureSysctls(strictARP bool) error {
	for _, s := range Sysctls(strictARP) {
		if err := c.Kernel.WriteSysctl(s[0], s[1]); err != nil {
			return fmt.Errorf("set sysctl %s=%s: %w", s[0], s[1], err)
		}
	}
	return nil
}
