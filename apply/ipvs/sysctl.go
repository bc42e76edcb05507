package ipvs

import "fmt"

// EnsureSysctls sets the sysctls kube-proxy v1.37's ipvs mode sets at
// start (NewProxier), in the client's network namespace:
//   - net/ipv4/vs/conntrack=1: IPVS keeps conntrack entries, which the
//     helper chains' MASQUERADE needs;
//   - net/ipv4/vs/expire_nodest_conn=1 and expire_quiescent_template=1:
//     flows to deleted or weight-0 real servers end at their next packet;
//   - net/ipv4/vs/conn_reuse_mode=0 on kernels 4.1 to 5.8 only;
//   - net/ipv4/ip_forward=1;
//   - with strictARP, net/ipv4/conf/all/arp_ignore=1 and arp_announce=2,
//     so the node does not answer ARP for kube-ipvs0's addresses.
func (c *Client) EnsureSysctls(strictARP bool) error {
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
	for _, s := range kv {
		if err := c.Kernel.WriteSysctl(s[0], s[1]); err != nil {
			return fmt.Errorf("set sysctl %s=%s: %w", s[0], s[1], err)
		}
	}
	return nil
}
