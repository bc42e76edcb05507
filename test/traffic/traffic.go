// Package traffic holds one table of traffic scenarios that every proxy
// mode must pass, and the runner that sends their packets through a real
// kernel. A scenario is a cluster snapshot, the pods that physically serve
// its endpoints, and probes: connections from a client, the node or a pod
// to a Service address, each with the backends that may answer, or the
// failure that must happen instead.
//
// The table knows nothing of rules. Each mode supplies a Loader that turns
// the snapshot into its ruleset and loads it into the lab's node namespace
// (iptables-restore, nft -f, ipvsadm, ...); Run does the rest. So a new
// mode is proven against the same behaviour, probe for probe.
//
// Addresses follow netlab's conventions: node1 is 192.168.77.10 with pods
// in 10.244.0.0/24 (local), node2's pods are 10.244.1.0/24 (remote, but
// physically attached to the lab node too), ClusterIPs are in 10.96.0.0/16
// and external and load-balancer IPs in 192.0.2.0/24, which the clients
// route through the node (their default route).
package traffic

import (
	"cmp"
	"net/netip"
	"slices"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// Probe sources other than pods. A pod is named by its PodSpec.Name.
const (
	FromClient  = "client"  // netlab.ClientIP, inside LoadBalancer source ranges 203.0.113.0/24
	FromClient2 = "client2" // netlab.Client2IP, outside them
	FromNode    = "node"    // the node itself (host-network traffic)
)

// Timeouts of one probe. Expected answers come in well under a millisecond,
// so answerTimeout only bounds a failure; silenceTimeout is how long a
// dropped connection must stay silent, and so what each Dropped probe costs.
const (
	answerTimeout  = time.Second
	silenceTimeout = 400 * time.Millisecond
)

// Connection counts. A spread check probes at least defaultSpreadN times
// and keeps going, up to maxSpreadFactor times that, until every expected
// backend has answered: with three equally likely backends, 20 tries miss
// one in about 1 run in 1000, 200 tries practically never.
const (
	defaultSpreadN  = 20
	maxSpreadFactor = 10
	defaultStickyN  = 20
)

// Scenario is one cluster state and the traffic that must flow through it.
type Scenario struct {
	// Name is a short lowercase identifier, used as the subtest name.
	Name string
	// Snapshot is the cluster as kubectl prints it (multi-document YAML):
	// Node node1 (InternalIP 192.168.77.10, podCIDR 10.244.0.0/24), the
	// Services and their EndpointSlices. The table's scenarios read it
	// from testdata (see fixtures).
	Snapshot string
	// Pods are the endpoints that physically exist, plus any pods that
	// only send probes. An endpoint of the snapshot without a pod here is
	// a black hole.
	Pods []PodSpec
	// Probes run in order, each as a subtest; order matters for session
	// affinity.
	Probes []Probe
}

// PodSpec is one pod of the lab: a namespace with its own addresses whose
// backends answer with the pod's name.
type PodSpec struct {
	// Name is a DNS label; backends answer with it.
	Name string
	// IPs are the pod's addresses, at most one per family. An IPv6 address
	// makes the whole scenario's lab dual-stack (netlab.WithIPv6).
	IPs []netip.Addr
	// TCP and UDP are the ports the pod serves on each of its addresses.
	TCP, UDP []uint16
}

// Probe is one kind of connection and what must come of it.
type Probe struct {
	// Name describes the probe; it becomes the subtest name.
	Name string
	// From is FromClient, FromClient2, FromNode or the name of a pod.
	From string
	// Proto is the transport protocol: one TCP connection or one UDP
	// datagram and its reply per attempt.
	Proto netlab.Proto
	// Dst is the Service address: a ClusterIP, NodeIP or 127.0.0.1 with a
	// NodePort, an external IP or a load-balancer IP.
	Dst netip.AddrPort
	// Expect says who must answer, or how the connection must fail.
	Expect Expectation
	// ExpectIn overrides Expect in the named modes, where kube-proxy's own
	// behaviour differs (nftables mode has no localhost NodePorts).
	ExpectIn map[string]Expectation
	// SourceIs, if valid, is the source address every answering backend
	// must have seen: the client's own address when it is preserved, the
	// node's when it is masqueraded. The zero Addr checks nothing.
	SourceIs netip.Addr
}

// Outcome is what a probe's connections must end in.
type Outcome int

const (
	// Answered: backends answer (see Expectation.Backends and Sticky).
	Answered Outcome = iota
	// Refused: a TCP reset or ICMP port unreachable, as REJECT sends.
	Refused
	// Dropped: no answer at all within the silence timeout, and the node
	// did not route the packets on untranslated either (see leakWatch).
	Dropped
)

func (o Outcome) String() string {
	switch o {
	case Answered:
		return "answered"
	case Refused:
		return "refused"
	case Dropped:
		return "dropped"
	}
	return "unknown"
}

// Expectation is exactly what may come back. Build it with Spread, Sticky,
// Refuse or Drop.
type Expectation struct {
	Outcome Outcome
	// Backends are the pods that may answer (Answered only). Without
	// Sticky, each of them must answer at least once, and no other pod
	// ever.
	Backends []string
	// Sticky requires all N answers to come from one backend of Backends
	// (ClientIP session affinity); the others need not answer.
	Sticky bool
	// N is the number of connections; 0 means 20 for Answered (a spread
	// check may go on to 10×N until every backend has answered) and 1 for
	// Refused and Dropped.
	N int
}

// Spread expects the connections to reach each of backends at least once
// and nothing else.
func Spread(backends ...string) Expectation {
	return Expectation{Outcome: Answered, Backends: backends}
}

// Sticky expects every connection to reach one and the same backend, one
// of backends.
func Sticky(backends ...string) Expectation {
	return Expectation{Outcome: Answered, Backends: backends, Sticky: true}
}

// Refuse expects the connection to be refused (REJECT).
func Refuse() Expectation { return Expectation{Outcome: Refused} }

// Drop expects the node to drop the connection (DROP): no answer, and no
// packet routed on past the node.
func Drop() Expectation { return Expectation{Outcome: Dropped} }

// Times returns e with N set to n connections.
func (e Expectation) Times(n int) Expectation {
	e.N = n
	return e
}

// attempts is how many connections to open at least, and at most.
func (e Expectation) attempts() (minN, maxN int) {
	switch {
	case e.Outcome != Answered:
		n := max(e.N, 1)
		return n, n
	case e.Sticky:
		n := cmp.Or(e.N, defaultStickyN)
		return n, n
	}
	n := cmp.Or(e.N, defaultSpreadN)
	return n, n * maxSpreadFactor
}

// allows reports whether backend may answer.
func (e Expectation) allows(backend string) bool { return slices.Contains(e.Backends, backend) }

// usesIPv6 reports whether the scenario needs a dual-stack lab.
func (sc *Scenario) usesIPv6() bool {
	for _, p := range sc.Pods {
		for _, ip := range p.IPs {
			if ip.Is6() {
				return true
			}
		}
	}
	for _, pr := range sc.Probes {
		if pr.Dst.Addr().Is6() {
			return true
		}
	}
	return false
}
