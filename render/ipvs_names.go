package render

import (
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// ipset names of kube-proxy v1.37's ipvs mode (pkg/proxy/ipvs/ipset.go).
// In IPv6 "KUBE-" becomes "KUBE-6-" and the name is cut to ipset's 31
// characters (ipvsSetName).
const (
	SetLoopBack               = "KUBE-LOOP-BACK"
	SetClusterIP              = "KUBE-CLUSTER-IP"
	SetExternalIP             = "KUBE-EXTERNAL-IP"
	SetExternalIPLocal        = "KUBE-EXTERNAL-IP-LOCAL"
	SetLoadBalancer           = "KUBE-LOAD-BALANCER"
	SetLoadBalancerLocal      = "KUBE-LOAD-BALANCER-LOCAL"
	SetLoadBalancerFW         = "KUBE-LOAD-BALANCER-FW"
	SetLoadBalancerSourceIP   = "KUBE-LOAD-BALANCER-SOURCE-IP"
	SetLoadBalancerSourceCIDR = "KUBE-LOAD-BALANCER-SOURCE-CIDR"
	SetNodePortTCP            = "KUBE-NODE-PORT-TCP"
	SetNodePortLocalTCP       = "KUBE-NODE-PORT-LOCAL-TCP"
	SetNodePortUDP            = "KUBE-NODE-PORT-UDP"
	SetNodePortLocalUDP       = "KUBE-NODE-PORT-LOCAL-UDP"
	SetNodePortSCTP           = "KUBE-NODE-PORT-SCTP-HASH"
	SetNodePortLocalSCTP      = "KUBE-NODE-PORT-LOCAL-SCTP-HASH"
	SetHealthCheckNodePort    = "KUBE-HEALTH-CHECK-NODE-PORT"
	SetIPVSIPs                = "KUBE-IPVS-IPS"

	// ipsetMaxNameLen is IPSET_MAXNAMELEN (32) minus the terminating NUL.
	ipsetMaxNameLen = 31
)

// Chains of the ipvs mode that the iptables mode does not have.
// KUBE-SERVICES, KUBE-POSTROUTING, KUBE-MARK-MASQ, KUBE-FORWARD and
// KUBE-PROXY-FIREWALL share their names with the iptables mode.
const (
	IPVSChainNodePort             = "KUBE-NODE-PORT"
	IPVSChainLoadBalancer         = "KUBE-LOAD-BALANCER"
	IPVSChainSourceRangesFirewall = "KUBE-SOURCE-RANGES-FIREWALL"
	IPVSChainFilter               = "KUBE-IPVS-FILTER"
	IPVSChainOutFilter            = "KUBE-IPVS-OUT-FILTER"

	// DefaultIPVSScheduler is kube-proxy's default scheduler, round robin.
	DefaultIPVSScheduler = "rr"
)

// ipvsSetInfo is kube-proxy's ipsetInfo table: every set it creates, always,
// with the comment it writes into the iptables rules matching the set.
var ipvsSetInfo = []struct {
	name    string
	typ     ipvs.SetType
	comment string
}{
	{SetLoopBack, ipvs.HashIPPortIP, "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose"},
	{SetClusterIP, ipvs.HashIPPort, "Kubernetes service cluster ip + port for masquerade purpose"},
	{SetExternalIP, ipvs.HashIPPort, "Kubernetes service external ip + port for masquerade and filter purpose"},
	{SetExternalIPLocal, ipvs.HashIPPort, "Kubernetes service external ip + port with externalTrafficPolicy=local"},
	{SetLoadBalancer, ipvs.HashIPPort, "Kubernetes service lb portal"},
	{SetLoadBalancerFW, ipvs.HashIPPort, "Kubernetes service load balancer ip + port for load balancer with sourceRange"},
	{SetLoadBalancerLocal, ipvs.HashIPPort, "Kubernetes service load balancer ip + port with externalTrafficPolicy=local"},
	{SetLoadBalancerSourceIP, ipvs.HashIPPortIP, "Kubernetes service load balancer ip + port + source IP for packet filter purpose"},
	{SetLoadBalancerSourceCIDR, ipvs.HashIPPortNet, "Kubernetes service load balancer ip + port + source cidr for packet filter purpose"},
	{SetNodePortTCP, ipvs.BitmapPort, "Kubernetes nodeport TCP port for masquerade purpose"},
	{SetNodePortLocalTCP, ipvs.BitmapPort, "Kubernetes nodeport TCP port with externalTrafficPolicy=local"},
	{SetNodePortUDP, ipvs.BitmapPort, "Kubernetes nodeport UDP port for masquerade purpose"},
	{SetNodePortLocalUDP, ipvs.BitmapPort, "Kubernetes nodeport UDP port with externalTrafficPolicy=local"},
	{SetNodePortSCTP, ipvs.HashIPPort, "Kubernetes nodeport SCTP port for masquerade purpose with type 'hash ip:port'"},
	{SetNodePortLocalSCTP, ipvs.HashIPPort, "Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type 'hash ip:port'"},
	{SetHealthCheckNodePort, ipvs.BitmapPort, "Kubernetes health check node port"},
	{SetIPVSIPs, ipvs.HashIP, "Addresses on the ipvs interface"},
}

// IPVSSetName returns the kernel name of one of kube-proxy's sets in a family.
func IPVSSetName(base string, family nodetable.Family) string {
	if family != nodetable.IPv6 || !strings.HasPrefix(base, "KUBE-") {
		return base
	}
	name := "KUBE-6-" + strings.TrimPrefix(base, "KUBE-")
	if len(name) > ipsetMaxNameLen {
		name = name[:ipsetMaxNameLen]
	}
	return name
}

// ipvsSchedulers are the schedulers kube-proxy v1.37 accepts (--ipvs-scheduler).
var ipvsSchedulers = []string{"rr", "wrr", "lc", "wlc", "lblc", "lblcr", "sh", "dh", "sed", "nq", "mh"}
