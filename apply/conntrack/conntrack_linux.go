package conntrack

import (
	"fmt"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// MatchConntrackFlow implements netlink.CustomConntrackFilter.
func (f *staleFilter) MatchConntrackFlow(flow *netlink.ConntrackFlow) bool {
	if flow.Forward.Protocol != unix.IPPROTO_UDP {
		return false
	}
	reply := addrPort(flow.Reverse.SrcIP, flow.Reverse.SrcPort)
	if serving, ok := f.frontends[addrPort(flow.Forward.DstIP, flow.Forward.DstPort)]; ok {
		return !serving[reply]
	}
	if serving, ok := f.nodePorts[flow.Forward.DstPort]; ok {
		return !serving[reply]
	}
	return false
}

// CleanStaleUDP deletes the stale UDP flows of t's family in the current
// network namespace and returns how many were deleted.
func CleanStaleUDP(t *nodetable.ServiceTable) (int, error) {
	f := newStaleFilter(t)
	if f.empty() {
		return 0, nil
	}
	family := netlink.InetFamily(unix.AF_INET)
	if t.Family == nodetable.IPv6 {
		family = netlink.InetFamily(unix.AF_INET6)
	}
	n, err := netlink.ConntrackDeleteFilters(netlink.ConntrackTable, family, f)
	if err != nil {
		return int(n), fmt.Errorf("delete stale %s UDP conntrack entries: %w", t.Family, err)
	}
	return int(n), nil
}
