package traffic

import (
	"net/netip"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// externalPolicyLocalScenario: with externalTrafficPolicy Local, external
// traffic reaches only the local endpoint and keeps the client's address;
// pod and node traffic to the same addresses is short-circuited to all
// endpoints.
func externalPolicyLocalScenario() Scenario {
	local, both := []string{"fe-local"}, []string{"fe-local", "fe-remote"}
	lbIP, eip, cip := addrPort("192.0.2.21:443"), addrPort("192.0.2.60:443"), addrPort("10.96.0.21:443")
	return Scenario{
		Name:     "etp-local",
		Snapshot: onNode1("etp-local"),
		Pods:     []PodSpec{backend("fe-local", "10.244.0.21"), backend("fe-remote", "10.244.1.22"), tester()},
		Probes: []Probe{
			{Name: "client to nodePort", From: FromClient, Proto: netlab.TCP, Dst: nodePort(31443), Expect: Spread(local...), SourceIs: netlab.ClientIP},
			{Name: "client to LB IP", From: FromClient, Proto: netlab.TCP, Dst: lbIP, Expect: Spread(local...), SourceIs: netlab.ClientIP},
			{Name: "client2 to LB IP", From: FromClient2, Proto: netlab.TCP, Dst: lbIP, Expect: Spread(local...), SourceIs: netlab.Client2IP},
			{Name: "client to externalIP", From: FromClient, Proto: netlab.TCP, Dst: eip, Expect: Spread(local...), SourceIs: netlab.ClientIP},
			{Name: "client to clusterIP", From: FromClient, Proto: netlab.TCP, Dst: cip, Expect: Spread(both...), SourceIs: netlab.NodeIP},
			{Name: "pod to clusterIP", From: "tester", Proto: netlab.TCP, Dst: cip, Expect: Spread(both...), SourceIs: testerIP},
			{Name: "pod to LB IP is short-circuited", From: "tester", Proto: netlab.TCP, Dst: lbIP, Expect: Spread(both...), SourceIs: testerIP},
			{Name: "node to nodePort is short-circuited", From: FromNode, Proto: netlab.TCP, Dst: nodePort(31443), Expect: Spread(both...), SourceIs: netlab.NodeIP},
			{Name: "node to localhost nodePort is short-circuited", From: FromNode, Proto: netlab.TCP, Dst: localhostPort(31443), Expect: Spread(both...), SourceIs: netlab.NodeIP, ExpectIn: noLocalhostNodePorts},
		},
	}
}

// externalPolicyLocalRemoteOnlyScenario: with externalTrafficPolicy Local
// and no local endpoint, external traffic is dropped (the load balancer's
// health check steers it elsewhere); cluster, pod and node traffic still
// flows.
func externalPolicyLocalRemoteOnlyScenario() Scenario {
	remote := []string{"ro-remote"}
	lbIP := addrPort("192.0.2.22:80")
	return Scenario{
		Name:     "etp-local-remote-only",
		Snapshot: onNode1("etp-local-remote-only"),
		Pods:     []PodSpec{backend("ro-remote", "10.244.1.23"), tester()},
		Probes: []Probe{
			{Name: "client to nodePort is dropped", From: FromClient, Proto: netlab.TCP, Dst: nodePort(31080), Expect: Drop()},
			{Name: "client to LB IP is dropped", From: FromClient, Proto: netlab.TCP, Dst: lbIP, Expect: Drop()},
			{Name: "client to clusterIP", From: FromClient, Proto: netlab.TCP, Dst: addrPort("10.96.0.22:80"), Expect: Spread(remote...)},
			{Name: "pod to LB IP is short-circuited", From: "tester", Proto: netlab.TCP, Dst: lbIP, Expect: Spread(remote...), SourceIs: testerIP},
			{Name: "node to nodePort is short-circuited", From: FromNode, Proto: netlab.TCP, Dst: nodePort(31080), Expect: Spread(remote...)},
		},
	}
}

// noEndpointsScenario: every address of a Service without endpoints, TCP
// or UDP, rejects, so that clients fail fast instead of timing out.
func noEndpointsScenario() Scenario {
	cip := addrPort("10.96.0.90:80")
	return Scenario{
		Name:     "no-endpoints",
		Snapshot: onNode1("no-endpoints"),
		Pods:     []PodSpec{tester()},
		Probes: []Probe{
			{Name: "client to clusterIP", From: FromClient, Proto: netlab.TCP, Dst: cip, Expect: Refuse()},
			{Name: "node to clusterIP", From: FromNode, Proto: netlab.TCP, Dst: cip, Expect: Refuse()},
			{Name: "pod to clusterIP", From: "tester", Proto: netlab.TCP, Dst: cip, Expect: Refuse()},
			{Name: "client to nodePort", From: FromClient, Proto: netlab.TCP, Dst: nodePort(30090), Expect: Refuse()},
			{Name: "client to externalIP", From: FromClient, Proto: netlab.TCP, Dst: addrPort("192.0.2.90:80"), Expect: Refuse()},
			{Name: "client to LB IP", From: FromClient, Proto: netlab.TCP, Dst: addrPort("192.0.2.91:80"), Expect: Refuse()},
			{Name: "client to UDP clusterIP", From: FromClient, Proto: netlab.UDP, Dst: addrPort("10.96.0.92:5000"), Expect: Refuse()},
		},
	}
}

// sessionAffinityScenario: with ClientIP session affinity, every
// connection of a source reaches the same backend. Affinity is per client
// address, so each source sticks to its own backend.
func sessionAffinityScenario() Scenario {
	all := []string{"aff-a", "aff-b", "aff-c"}
	cip := addrPort("10.96.0.45:80")
	return Scenario{
		Name:     "session-affinity",
		Snapshot: onNode1("session-affinity"),
		Pods:     []PodSpec{backend("aff-a", "10.244.0.46"), backend("aff-b", "10.244.0.47"), backend("aff-c", "10.244.1.48"), tester()},
		Probes: []Probe{
			{Name: "client sticks", From: FromClient, Proto: netlab.TCP, Dst: cip, Expect: Sticky(all...)},
			{Name: "client2 sticks", From: FromClient2, Proto: netlab.TCP, Dst: cip, Expect: Sticky(all...)},
			{Name: "pod sticks", From: "tester", Proto: netlab.TCP, Dst: cip, Expect: Sticky(all...)},
			{Name: "node sticks", From: FromNode, Proto: netlab.TCP, Dst: cip, Expect: Sticky(all...)},
		},
	}
}

// internalPolicyLocalScenario: with internalTrafficPolicy Local, ClusterIP
// traffic, from anywhere, reaches only this node's endpoints, and is
// dropped when there are none.
func internalPolicyLocalScenario() Scenario {
	local := []string{"itp-local"}
	cip := addrPort("10.96.0.50:80")
	return Scenario{
		Name:     "itp-local",
		Snapshot: onNode1("itp-local"),
		Pods:     []PodSpec{backend("itp-local", "10.244.0.51"), backend("itp-remote", "10.244.1.52"), backend("itpr-remote", "10.244.1.56"), tester()},
		Probes: []Probe{
			{Name: "pod reaches only the local endpoint", From: "tester", Proto: netlab.TCP, Dst: cip, Expect: Spread(local...), SourceIs: testerIP},
			{Name: "node reaches only the local endpoint", From: FromNode, Proto: netlab.TCP, Dst: cip, Expect: Spread(local...)},
			{Name: "client reaches only the local endpoint", From: FromClient, Proto: netlab.TCP, Dst: cip, Expect: Spread(local...), SourceIs: netlab.NodeIP},
			{Name: "pod to service without local endpoints is dropped", From: "tester", Proto: netlab.TCP, Dst: addrPort("10.96.0.55:80"), Expect: Drop()},
		},
	}
}

// dualStackScenario: a dual-stack NodePort Service, probed over both
// families. (The IPv6 masquerade source is left unchecked: the node picks
// it by RFC 6724 among its addresses, not necessarily the node IP.)
func dualStackScenario() Scenario {
	both := []string{"ds-local", "ds-remote"}
	tester6 := netip.MustParseAddr("fd00:244::2")
	cip4, cip6 := addrPort("10.96.0.80:80"), addrPort("[fd00:96::80]:80")
	return Scenario{
		Name:     "dual-stack",
		Snapshot: objects("dual-stack"),
		Pods: []PodSpec{
			backend("ds-local", "10.244.0.81", "fd00:244::81"),
			backend("ds-remote", "10.244.1.82", "fd00:244::1:82"),
			{Name: "tester", IPs: []netip.Addr{testerIP, tester6}},
		},
		Probes: []Probe{
			{Name: "client to IPv4 clusterIP", From: FromClient, Proto: netlab.TCP, Dst: cip4, Expect: Spread(both...), SourceIs: netlab.NodeIP},
			{Name: "client to IPv6 clusterIP", From: FromClient, Proto: netlab.TCP, Dst: cip6, Expect: Spread(both...)},
			{Name: "pod to IPv6 clusterIP", From: "tester", Proto: netlab.TCP, Dst: cip6, Expect: Spread(both...), SourceIs: tester6},
			{Name: "node to IPv6 clusterIP", From: FromNode, Proto: netlab.TCP, Dst: cip6, Expect: Spread(both...)},
			{Name: "client to IPv6 nodePort", From: FromClient, Proto: netlab.TCP, Dst: netip.AddrPortFrom(netlab.NodeIPv6, 30081), Expect: Spread(both...)},
			{Name: "client to IPv4 nodePort", From: FromClient, Proto: netlab.TCP, Dst: nodePort(30081), Expect: Spread(both...), SourceIs: netlab.NodeIP},
		},
	}
}
