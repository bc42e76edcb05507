package kubeletlab

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nsthread"
)

// Addresses of the lab. The outside namespace holds a bridge (br0,
// OutsideIP) to which every node's eth0 is attached by a veth: one L2
// segment. Each node routes everything else to outside, which forwards
// nothing, and the other nodes' pod ranges to those nodes.
const (
	NodeIP    = "10.77.0.10"
	OutsideIP = "10.77.0.1"
	// PodCIDR is the cluster's pod range (--cluster-cidr); each node gets
	// a /24 of it from kube-controller-manager, the first node (which
	// registers first) NodePodCIDR.
	PodCIDR     = "10.244.0.0/16"
	NodePodCIDR = "10.244.0.0/24"
)

// maxNodes bounds Options.Nodes: the nodes' addresses follow NodeIP in
// 10.77.0.0/24, and each costs a kubelet and a containerd on a small
// machine.
const maxNodes = 8

// nodeIP is the address of node i (0 is the first, NodeIP).
func nodeIP(i int) string { return fmt.Sprintf("10.77.0.%d", 10+i) }

// nodeName is the name of node i: NodeName for the first, then
// NodeName-2, NodeName-3...
func nodeName(i int) string {
	if i == 0 {
		return NodeName
	}
	return fmt.Sprintf("%s-%d", NodeName, i+1)
}

// network is the outside namespace and its bridge.
type network struct {
	outside string // name under /run/netns
}

// newNetwork creates the outside namespace with its bridge, removed when
// the test ends. Frames the bridge forwards between nodes skip outside's
// netfilter (bridge-nf-call-*, per network namespace): outside is a
// switch, not a hop that tracks connections. Outside answers every packet
// to a closed port with its ICMP error, unlimited (icmp_ratelimit, per
// network namespace too): a lookup that cluster DNS forwards there
// (nodeResolvConf) then fails at once, not after a timeout.
func newNetwork(t testing.TB, prefix string) *network {
	t.Helper()
	n := &network{outside: prefix + "out"}
	t.Cleanup(func() { exec.Command("ip", "netns", "delete", n.outside).Run() })
	ipSteps(t,
		[]string{"netns", "add", n.outside},
		[]string{"-n", n.outside, "link", "add", "br0", "type", "bridge"},
		[]string{"-n", n.outside, "addr", "add", OutsideIP + "/24", "dev", "br0"},
		[]string{"-n", n.outside, "link", "set", "lo", "up"},
		[]string{"-n", n.outside, "link", "set", "br0", "up"},
	)
	h, err := netns.GetFromName(n.outside)
	if err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	defer h.Close()
	err = sysctl(h, "net.bridge.bridge-nf-call-iptables", "0",
		"net.bridge.bridge-nf-call-ip6tables", "0", "net.bridge.bridge-nf-call-arptables", "0",
		"net.ipv4.icmp_ratelimit", "0")
	if err != nil {
		t.Fatalf("kubeletlab: outside: %v", err)
	}
	return n
}

// attach connects a node's namespace to the bridge: its eth0 at ip, whose
// peer in outside is port, and its default route through outside.
func (n *network) attach(t testing.TB, node, port, ip string) {
	t.Helper()
	ipSteps(t,
		[]string{"-n", node, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", n.outside},
		[]string{"-n", node, "addr", "add", ip + "/24", "dev", "eth0"},
		[]string{"-n", node, "link", "set", "lo", "up"},
		[]string{"-n", node, "link", "set", "eth0", "up"},
		[]string{"-n", n.outside, "link", "set", port, "master", "br0"},
		[]string{"-n", n.outside, "link", "set", port, "up"},
		[]string{"-n", node, "route", "add", "default", "via", OutsideIP},
	)
}

// routePods routes each node's pod range to that node, in outside and in
// every other node, once kube-controller-manager has given the ranges.
func (l *Lab) routePods(t testing.TB) {
	t.Helper()
	for _, to := range l.nodes {
		ipSteps(t, []string{"-n", l.net.outside, "route", "replace", to.podCIDR, "via", to.ip})
		for _, from := range l.nodes {
			if from != to {
				ipSteps(t, []string{"-n", from.ns.name, "route", "replace", to.podCIDR, "via", to.ip})
			}
		}
	}
}

// ipSteps runs ip with each argument list in turn.
func ipSteps(t testing.TB, steps ...[]string) {
	t.Helper()
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			t.Fatalf("kubeletlab: ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
}

// sysctl writes key=value pairs inside the network namespace h.
func sysctl(h netns.NsHandle, kv ...string) error {
	return nsthread.Do(h, func() error {
		for i := 0; i+1 < len(kv); i += 2 {
			path := "/proc/sys/" + strings.ReplaceAll(kv[i], ".", "/")
			if err := os.WriteFile(path, []byte(kv[i+1]), 0); err != nil {
				return fmt.Errorf("sysctl %s=%s: %w", kv[i], kv[i+1], err)
			}
		}
		return nil
	})
}

// OutsideCommand returns a command that runs name in the outside network
// namespace (and the host's mount namespace).
func (n *network) OutsideCommand(name string, args ...string) *exec.Cmd {
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.outside, name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}
