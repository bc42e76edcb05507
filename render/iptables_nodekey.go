package render

import (
	"fmt"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// IPTablesNodeKey is, as text, everything IPTables reads of the node that
// t is for: two tables of one family whose ports are equal in what
// IPTables reads of them (see below) and whose keys are equal render the
// same rules with cfg, whatever else their nodes differ in. plan
// --against --all-nodes renders one node for all the nodes that agree
// in this and in their ports (internal/cli/allnodes_classes.go).
//
// Of the node, IPTables reads the local-traffic detector (the node's pod
// range in NodeCIDR mode), the NodePort addresses (the node's IPs and
// the host addresses, when --nodeport-addresses does not match every
// address) with the localhost NodePorts that follow from them, and, for
// each port with loadBalancerSourceRanges, whether a range holds the
// node's primary IP. Not its name or zone, nor its IPs otherwise. Of a
// port's endpoints it reads which are in each list (ClusterEndpoints,
// LocalEndpoints, ReachableEndpoints) by address and port, and how many
// AllEndpoints has; not Local, NodeName, hints or conditions, which
// cluster.Build has already applied in making the lists.
// TestIPTablesNodeKey holds IPTables to this.
func IPTablesNodeKey(t *nodetable.ServiceTable, cfg Config) string {
	s := newIPTablesState(t, &cfg)
	var b strings.Builder
	fmt.Fprintf(&b, "%s local=%+v lhNP=%v", t.Family, s.local, s.lhNP)
	if s.np.matchAll {
		b.WriteString(" nodeports=all")
	} else {
		fmt.Fprintf(&b, " nodeports=%v", s.np.ips)
	}
	node := primaryNodeIP(t)
	b.WriteString(" sourceRangesHoldNode=")
	for i := range t.Ports {
		for _, cidr := range t.Ports[i].LoadBalancerSourceRanges {
			if cidr.Contains(node) {
				b.WriteByte('1')
			} else {
				b.WriteByte('0')
			}
		}
	}
	return b.String()
}
