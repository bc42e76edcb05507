package traffic

import (
	"embed"
	"net/netip"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// Scenarios returns the table every proxy mode must pass, in a fixed
// order. Each call returns fresh values that the caller may modify.
func Scenarios() []Scenario {
	return []Scenario{
		clusterIPScenario(),
		nodePortScenario(),
		externalIPScenario(),
		loadBalancerSourceRangesScenario(),
		externalPolicyLocalScenario(),
		externalPolicyLocalRemoteOnlyScenario(),
		noEndpointsScenario(),
		sessionAffinityScenario(),
		internalPolicyLocalScenario(),
		masqueradeScenario(),
		hairpinScenario(),
		dualStackScenario(),
	}
}

// Ports every backend pod serves: the targetPort of every TCP Service port
// and of every UDP Service port of the snapshots.
const (
	httpPort = 8080
	dnsPort  = 5353
)

// testerIP is the pod that only sends probes, on node1.
var testerIP = netip.MustParseAddr("10.244.0.2")

// fixtures are the scenarios' cluster objects as kubectl prints them:
// testdata/scenarios/<name>.yaml holds a scenario's Services and
// EndpointSlices, and testdata/node1.yaml the Node that all but dual-stack
// share. They are embedded, so that the tests run where the source tree is
// not (the ipvs tests' VM runs the test binary alone).
//
//go:embed testdata/node1.yaml testdata/scenarios/*.yaml
var fixtures embed.FS

// onNode1 is the snapshot of the named scenario: the shared Node, then the
// scenario's own objects.
func onNode1(name string) string {
	return fixture("testdata/node1.yaml") + "---\n" + objects(name)
}

// objects returns the named scenario's testdata/scenarios file as it is.
func objects(name string) string { return fixture("testdata/scenarios/" + name + ".yaml") }

func fixture(path string) string {
	b, err := fixtures.ReadFile(path)
	if err != nil {
		panic(err) // embedded: only a misspelt name gets here
	}
	return string(b)
}

// backend is a pod that serves httpPort over TCP and dnsPort over UDP on
// each of its addresses.
func backend(name string, ips ...string) PodSpec {
	p := PodSpec{Name: name, TCP: []uint16{httpPort}, UDP: []uint16{dnsPort}}
	for _, ip := range ips {
		p.IPs = append(p.IPs, netip.MustParseAddr(ip))
	}
	return p
}

// tester is a pod on node1 that serves nothing and only sends probes.
func tester() PodSpec {
	return PodSpec{Name: "tester", IPs: []netip.Addr{testerIP}}
}

func addrPort(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// nodePort is the node IP with port p.
func nodePort(p uint16) netip.AddrPort { return netip.AddrPortFrom(netlab.NodeIP, p) }

// noLocalhostNodePorts: kube-proxy's nftables mode does not serve NodePorts
// on 127.0.0.1 (its KubeProxyNFTablesLocalhostNodePorts gate is off by
// default), so nothing answers there but the node's own closed port.
var noLocalhostNodePorts = map[string]Expectation{"nftables": Refuse()}

// localhostPort is 127.0.0.1 with port p: a NodePort on localhost.
func localhostPort(p uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), p)
}

// clusterIPScenario: a TCP and a UDP ClusterIP spread connections from a
// client, the node and a pod over all their endpoints, local and remote.
func clusterIPScenario() Scenario {
	web := []string{"web-a", "web-b", "web-c"}
	dns := []string{"dns-a", "dns-b"}
	return Scenario{
		Name:     "clusterip",
		Snapshot: onNode1("clusterip"),
		Pods: []PodSpec{
			backend("web-a", "10.244.0.11"), backend("web-b", "10.244.0.12"), backend("web-c", "10.244.1.13"),
			backend("dns-a", "10.244.0.53"), backend("dns-b", "10.244.1.53"),
			tester(),
		},
		Probes: []Probe{
			{Name: "client to clusterIP", From: FromClient, Proto: netlab.TCP, Dst: addrPort("10.96.0.10:80"), Expect: Spread(web...)},
			{Name: "node to clusterIP", From: FromNode, Proto: netlab.TCP, Dst: addrPort("10.96.0.10:80"), Expect: Spread(web...)},
			{Name: "pod to clusterIP", From: "tester", Proto: netlab.TCP, Dst: addrPort("10.96.0.10:80"), Expect: Spread(web...)},
			{Name: "client to UDP clusterIP", From: FromClient, Proto: netlab.UDP, Dst: addrPort("10.96.0.53:53"), Expect: Spread(dns...)},
			{Name: "node to UDP clusterIP", From: FromNode, Proto: netlab.UDP, Dst: addrPort("10.96.0.53:53"), Expect: Spread(dns...)},
			{Name: "pod to UDP clusterIP", From: "tester", Proto: netlab.UDP, Dst: addrPort("10.96.0.53:53"), Expect: Spread(dns...)},
		},
	}
}

// nodePortScenario: TCP and UDP NodePorts on the node IP, and on
// localhost where the mode serves them, reach every endpoint from clients,
// the node and a pod. With externalTrafficPolicy Cluster, external traffic
// is masqueraded and may go to the remote endpoint.
func nodePortScenario() Scenario {
	both := []string{"np-local", "np-remote"}
	return Scenario{
		Name:     "nodeport",
		Snapshot: onNode1("nodeport"),
		Pods:     []PodSpec{backend("np-local", "10.244.0.31"), backend("np-remote", "10.244.1.32"), tester()},
		Probes: []Probe{
			{Name: "client to nodePort", From: FromClient, Proto: netlab.TCP, Dst: nodePort(30080), Expect: Spread(both...), SourceIs: netlab.NodeIP},
			{Name: "client2 to nodePort", From: FromClient2, Proto: netlab.TCP, Dst: nodePort(30080), Expect: Spread(both...), SourceIs: netlab.NodeIP},
			{Name: "client to UDP nodePort", From: FromClient, Proto: netlab.UDP, Dst: nodePort(30053), Expect: Spread(both...), SourceIs: netlab.NodeIP},
			{Name: "node to nodePort", From: FromNode, Proto: netlab.TCP, Dst: nodePort(30080), Expect: Spread(both...)},
			{Name: "node to localhost nodePort", From: FromNode, Proto: netlab.TCP, Dst: localhostPort(30080), Expect: Spread(both...), SourceIs: netlab.NodeIP, ExpectIn: noLocalhostNodePorts},
			{Name: "node to localhost UDP nodePort", From: FromNode, Proto: netlab.UDP, Dst: localhostPort(30053), Expect: Spread(both...), SourceIs: netlab.NodeIP, ExpectIn: noLocalhostNodePorts},
			{Name: "pod to nodePort", From: "tester", Proto: netlab.TCP, Dst: nodePort(30080), Expect: Spread(both...)},
			{Name: "client to clusterIP", From: FromClient, Proto: netlab.TCP, Dst: addrPort("10.96.0.30:80"), Expect: Spread(both...)},
		},
	}
}

// externalIPScenario: an external IP that the clients route through the
// node reaches every endpoint from clients (masqueraded), the node and a
// pod.
func externalIPScenario() Scenario {
	both := []string{"ext-local", "ext-remote"}
	eip := addrPort("192.0.2.40:80")
	return Scenario{
		Name:     "external-ip",
		Snapshot: onNode1("external-ip"),
		Pods:     []PodSpec{backend("ext-local", "10.244.0.41"), backend("ext-remote", "10.244.1.42"), tester()},
		Probes: []Probe{
			{Name: "client to externalIP", From: FromClient, Proto: netlab.TCP, Dst: eip, Expect: Spread(both...), SourceIs: netlab.NodeIP},
			{Name: "client2 to externalIP", From: FromClient2, Proto: netlab.TCP, Dst: eip, Expect: Spread(both...), SourceIs: netlab.NodeIP},
			{Name: "node to externalIP", From: FromNode, Proto: netlab.TCP, Dst: eip, Expect: Spread(both...)},
			{Name: "pod to externalIP", From: "tester", Proto: netlab.TCP, Dst: eip, Expect: Spread(both...)},
		},
	}
}

// loadBalancerSourceRangesScenario: the load-balancer IP answers a client
// inside loadBalancerSourceRanges and drops a client or pod outside them.
// The ranges guard the load-balancer IP only; the NodePort and the
// ClusterIP stay open.
func loadBalancerSourceRangesScenario() Scenario {
	both := []string{"lb-local", "lb-remote"}
	lbIP := addrPort("192.0.2.20:443")
	return Scenario{
		Name:     "lb-source-ranges",
		Snapshot: onNode1("lb-source-ranges"),
		Pods:     []PodSpec{backend("lb-local", "10.244.0.21"), backend("lb-remote", "10.244.1.22"), tester()},
		Probes: []Probe{
			{Name: "client in range to LB IP", From: FromClient, Proto: netlab.TCP, Dst: lbIP, Expect: Spread(both...), SourceIs: netlab.NodeIP},
			{Name: "client2 out of range to LB IP", From: FromClient2, Proto: netlab.TCP, Dst: lbIP, Expect: Drop()},
			{Name: "pod out of range to LB IP", From: "tester", Proto: netlab.TCP, Dst: lbIP, Expect: Drop()},
			{Name: "client2 to nodePort", From: FromClient2, Proto: netlab.TCP, Dst: nodePort(31443), Expect: Spread(both...)},
			{Name: "client2 to clusterIP", From: FromClient2, Proto: netlab.TCP, Dst: addrPort("10.96.0.20:443"), Expect: Spread(both...)},
		},
	}
}

// masqueradeScenario: traffic to a ClusterIP from outside the cluster CIDR
// is masqueraded; pod traffic keeps the pod's address.
func masqueradeScenario() Scenario {
	both := []string{"masq-local", "masq-remote"}
	tcp, udp := addrPort("10.96.0.60:80"), addrPort("10.96.0.60:53")
	remoteTester := netip.MustParseAddr("10.244.1.3")
	return Scenario{
		Name:     "masquerade",
		Snapshot: onNode1("masquerade"),
		Pods: []PodSpec{
			backend("masq-local", "10.244.0.61"), backend("masq-remote", "10.244.1.62"),
			tester(), {Name: "remote-tester", IPs: []netip.Addr{remoteTester}},
		},
		Probes: []Probe{
			{Name: "client is masqueraded", From: FromClient, Proto: netlab.TCP, Dst: tcp, Expect: Spread(both...), SourceIs: netlab.NodeIP},
			{Name: "client2 is masqueraded", From: FromClient2, Proto: netlab.TCP, Dst: tcp, Expect: Spread(both...), SourceIs: netlab.NodeIP},
			{Name: "client UDP is masqueraded", From: FromClient, Proto: netlab.UDP, Dst: udp, Expect: Spread(both...), SourceIs: netlab.NodeIP},
			{Name: "node is masqueraded", From: FromNode, Proto: netlab.TCP, Dst: tcp, Expect: Spread(both...), SourceIs: netlab.NodeIP},
			{Name: "pod keeps its IP", From: "tester", Proto: netlab.TCP, Dst: tcp, Expect: Spread(both...), SourceIs: testerIP},
			{Name: "pod UDP keeps its IP", From: "tester", Proto: netlab.UDP, Dst: udp, Expect: Spread(both...), SourceIs: testerIP},
			{Name: "remote-range pod keeps its IP", From: "remote-tester", Proto: netlab.TCP, Dst: tcp, Expect: Spread(both...), SourceIs: remoteTester},
		},
	}
}

// hairpinScenario: a pod reaches a ClusterIP whose only endpoint is itself;
// the connection is masqueraded so that the pod's reply goes back through
// the node.
func hairpinScenario() Scenario {
	return Scenario{
		Name:     "hairpin",
		Snapshot: onNode1("hairpin"),
		Pods:     []PodSpec{backend("hairpin", "10.244.0.71")},
		Probes: []Probe{
			{Name: "pod to its own service", From: "hairpin", Proto: netlab.TCP, Dst: addrPort("10.96.0.70:80"), Expect: Spread("hairpin"), SourceIs: netlab.NodeIP},
			{Name: "pod to its own UDP service", From: "hairpin", Proto: netlab.UDP, Dst: addrPort("10.96.0.70:53"), Expect: Spread("hairpin"), SourceIs: netlab.NodeIP},
		},
	}
}
