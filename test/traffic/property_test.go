package traffic_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
	tipt "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/iptables"
	tnft "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/nftables"
)

// Property test: random packets against a large synthetic cluster loaded
// in a lab node; the kernel's verdict for each, read from what the sender
// saw (refused, silence) and from the node's conntrack table (no entry:
// the packet died before its connection was confirmed; an entry: its reply
// tuple gives the DNAT destination and whether it was masqueraded), must
// be what the evaluator predicts over the same ruleset.
const (
	propertyServices = 1000
	propertySamples  = 150 // per mode; each costs at most propertyWait
	propertyWait     = 150 * time.Millisecond
)

func TestTraceMatchesKernelOnRandomPackets(t *testing.T) {
	table, cfg, node, seed := propertyCluster(t)
	for _, mode := range []string{"iptables", "nftables"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			lab := netlab.New(t)
			tester := lab.AddPod("tester", netip.MustParseAddr("10.244.0.2"))
			// Refusals are ICMP errors: the node must send one per sample.
			for _, kv := range []string{"net.ipv4.icmp_ratelimit=0", "net.ipv4.icmp_msgs_per_sec=100000"} {
				if _, err := lab.Node().Run(t.Context(), "sysctl", "-qw", kv); err != nil {
					t.Fatal(err)
				}
			}
			ev := loadProperty(t, lab, mode, table, cfg, node)
			rng := rand.New(rand.NewPCG(seed, uint64(len(mode))))
			sources := []propertySource{
				{"client", lab.Client(), netlab.ClientIP}, {"pod", tester.NS(), tester.IP()}, {"node", lab.Node(), netlab.NodeIP},
			}
			seen := map[trace.Verdict]int{}
			for i := range propertySamples {
				src := sources[rng.IntN(len(sources))]
				pkt := randomPacket(rng, table, src.addr)
				seen[checkPropertySample(t, i, lab, ev, node, src, pkt)]++
			}
			t.Logf("predicted verdicts: %v", seen)
			if seen[trace.DNAT] == 0 || len(seen) < 3 {
				t.Errorf("the samples did not cover DNAT and two other verdicts: %v", seen)
			}
		})
	}
}

// propertyCluster is the property tests' synthetic cluster, its render
// settings and node, and a seed for the samples (logged, to replay).
func propertyCluster(t *testing.T) (*nodetable.ServiceTable, render.Config, *trace.Node, uint64) {
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "iptables-nft-restore")
	table := synthetic.VariedTable(propertyServices, 3)
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netlab.ClusterCIDR}
	node := trace.NodeOf(table, trace.NodeOptions{ClusterCIDRs: cfg.ClusterCIDRs})
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return table, cfg, node, seed
}

type propertySource struct {
	name string
	ns   netlab.NS
	addr netip.Addr
}

// loadProperty loads the mode's rendered ruleset into the lab's node and
// returns its evaluator.
func loadProperty(t *testing.T, lab *netlab.Lab, mode string, table *nodetable.ServiceTable, cfg render.Config, node *trace.Node) trace.Evaluator {
	t.Helper()
	if mode == "iptables" {
		if err := lab.Node().EnsureNFAcct(); err != nil {
			t.Fatal(err)
		}
		rs := render.IPTables(table, cfg)
		if _, err := lab.Node().RunInput(t.Context(), []byte(rs.String()), "iptables-nft-restore", "-w", "10"); err != nil {
			t.Fatal(err)
		}
		ev, err := tipt.New(rs, node, tipt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	rs := render.NFTables(table, cfg)
	err := lab.Node().Do(func() error {
		client, err := applynft.NewClient(render.NFTablesOwnership())
		if err != nil {
			return err
		}
		defer client.Close()
		plans, err := client.Plan(t.Context(), []*nft.Ruleset{rs})
		if err != nil {
			return err
		}
		return client.Apply(t.Context(), plans)
	})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := tnft.New(rs, node)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// randomPacket picks a destination of every kind: a ClusterIP at its port
// or another, a NodePort or a random port on the node, a load-balancer or
// external IP, an unallocated ClusterIP, an address no rule knows.
func randomPacket(rng *rand.Rand, table *nodetable.ServiceTable, src netip.Addr) trace.Packet {
	proto := []string{"tcp", "udp"}[rng.IntN(2)]
	sp := &table.Ports[rng.IntN(len(table.Ports))]
	port := uint16(sp.Port)
	if rng.IntN(5) == 0 {
		port = uint16(1 + rng.IntN(65535))
	}
	dst := sp.ClusterIP
	switch k := rng.IntN(10); {
	case k == 0 || k == 1:
		dst, port = netlab.NodeIP, uint16(30000+rng.IntN(2768))
	case k == 2 && len(sp.LoadBalancerVIPs) > 0 && sp.LoadBalancerVIPs[0].As4()[3]%255 != 0 && src != netlab.NodeIP:
		// (The synthetic VIPs are in client2's link network, which the
		// node reaches from another of its addresses than the node IP.)
		dst = sp.LoadBalancerVIPs[0]
	case k == 3 && len(sp.ExternalIPs) > 0 && sp.ExternalIPs[0].As4()[3]%255 != 0:
		dst = sp.ExternalIPs[0]
	case k == 4:
		dst = netip.AddrFrom4([4]byte{10, 96 + byte(rng.IntN(2)), byte(rng.IntN(256)), byte(rng.IntN(256))})
	case k == 5:
		dst = netip.AddrFrom4([4]byte{192, 0, 2, byte(200 + rng.IntN(50))})
	}
	return trace.Packet{Src: src, Dst: dst, Port: port, Protocol: proto}
}

// kernelVerdict is what the kernel did with one packet.
type kernelVerdict struct {
	refused    bool
	denied     bool           // the node's own packet, dropped or rejected in OUTPUT
	confirmed  bool           // a conntrack entry was committed
	replyFrom  netip.AddrPort // the reply's source: the DNAT destination
	masquerade bool           // the reply goes to another address than the sender's
}

func (k kernelVerdict) String() string {
	if !k.confirmed {
		return fmt.Sprintf("no connection (refused %v, denied %v)", k.refused, k.denied)
	}
	return fmt.Sprintf("connection to %s, masquerade %v, refused %v", k.replyFrom, k.masquerade, k.refused)
}

func checkPropertySample(t *testing.T, i int, lab *netlab.Lab, ev trace.Evaluator, node *trace.Node, src propertySource, pkt trace.Packet) trace.Verdict {
	t.Helper()
	r, err := trace.Run(ev, node, pkt, node.Infer(pkt.Src))
	if err != nil {
		t.Fatal(err)
	}
	got := kernelSample(t, lab, src, pkt)
	if msg := disagree(r, node, got); msg != "" {
		t.Errorf("sample %d, %s %s -> %s:%d from %s: %s; the kernel: %s\n%s",
			i, pkt.Protocol, pkt.Src, pkt.Dst, pkt.Port, src.name, msg, got, r.Text())
	}
	return r.Verdict
}

// kernelSample flushes the node's conntrack table, sends the packet and
// reads back what the kernel recorded.
func kernelSample(t *testing.T, lab *netlab.Lab, src propertySource, pkt trace.Packet) kernelVerdict {
	t.Helper()
	flush := func() error { return netlink.ConntrackTableFlush(netlink.ConntrackTable) }
	if err := lab.Node().Do(flush); err != nil {
		t.Fatal(err)
	}
	_, err := src.ns.Probe(t.Context(), netlab.Proto(pkt.Protocol), netip.Addr{}, netip.AddrPortFrom(pkt.Dst, pkt.Port), propertyWait)
	var k kernelVerdict
	k.refused = err != nil && netlab.IsRefused(err)
	// A packet the node sends and its own rules drop or reject fails the
	// send itself with EPERM (the ICMP error of a reject is then no news).
	k.denied = err != nil && errors.Is(err, unix.EPERM)
	err = lab.Node().Do(func() error {
		flows, err := netlink.ConntrackTableList(netlink.ConntrackTable, unix.AF_INET)
		for _, f := range flows {
			fw := f.Forward
			if fw.SrcIP.Equal(pkt.Src.AsSlice()) && fw.DstIP.Equal(pkt.Dst.AsSlice()) && fw.DstPort == pkt.Port && protoOf(pkt) == f.Forward.Protocol {
				k.confirmed = true
				from, _ := netip.AddrFromSlice(f.Reverse.SrcIP.To4())
				k.replyFrom = netip.AddrPortFrom(from, f.Reverse.SrcPort)
				to, _ := netip.AddrFromSlice(f.Reverse.DstIP.To4())
				k.masquerade = to != pkt.Src
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func protoOf(p trace.Packet) uint8 {
	if p.Protocol == "udp" {
		return unix.IPPROTO_UDP
	}
	return unix.IPPROTO_TCP
}

// disagree compares the prediction with the kernel; "" when they agree.
func disagree(r *trace.Result, node *trace.Node, k kernelVerdict) string {
	switch r.Verdict {
	case trace.DNAT:
		if !k.confirmed {
			return "trace predicts DNAT"
		}
		for _, ep := range r.Endpoints {
			if ep.Address == k.replyFrom.String() {
				if ep.Masquerade != k.masquerade {
					return fmt.Sprintf("trace predicts masquerade %v to %s", ep.Masquerade, ep.Address)
				}
				return ""
			}
		}
		return fmt.Sprintf("the kernel chose %s, not a predicted endpoint", k.replyFrom)
	case trace.Drop:
		if k.refused || (k.confirmed && !untranslatedToNode(r, node, k)) {
			return "trace predicts a drop"
		}
	case trace.Reject:
		if !(k.refused || k.denied) || (k.confirmed && !untranslatedToNode(r, node, k)) {
			return "trace predicts a reject"
		}
	default:
		if node.IsLocal(r.Packet.Dst) {
			// Delivered to the node, where nothing listens: refused. (A
			// TCP reset ends the conntrack entry at once.)
			if !k.refused {
				return "trace predicts the node's own refusal (nothing listens there)"
			}
			return ""
		}
		untouched := k.confirmed && k.replyFrom == netip.AddrPortFrom(r.Packet.Dst, r.Packet.Port)
		if !untouched || k.masquerade != r.Masquerade {
			return "trace predicts the packet goes on untranslated"
		}
	}
	return ""
}

// untranslatedToNode reports whether a connection the rules ended was
// still committed to conntrack untranslated: the node's own packets to
// its own addresses are confirmed in POSTROUTING, before INPUT ends them.
func untranslatedToNode(r *trace.Result, node *trace.Node, k kernelVerdict) bool {
	return r.Entry.Via == trace.ViaNode && node.IsLocal(r.Packet.Dst) &&
		k.replyFrom == netip.AddrPortFrom(r.Packet.Dst, r.Packet.Port)
}
