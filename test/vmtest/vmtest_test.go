package vmtest

import (
	"context"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"

	"github.com/moby/ipvs"
	"github.com/vishvananda/netlink"

	_ "github.com/kubectl-svcproxy/kubectl-svcproxy/test/golden"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

func TestMain(m *testing.M) { Main(m) }

// TestInVM boots this package's own tests in the VM: the TestGuest* tests
// below run there, and prove the harness.
func TestInVM(t *testing.T) {
	Run(t, ".", "-test.run", "^TestGuest")
}

// TestGuestIPVSTraffic sends real TCP connections from the lab's client
// through an IPVS virtual server (masquerade mode, round robin) in the node
// namespace to two backend pods.
func TestGuestIPVSTraffic(t *testing.T) {
	RequireGuest(t)
	lab := netlab.New(t)
	a := lab.AddPod("a", netip.MustParseAddr("10.244.0.5"))
	b := lab.AddPod("b", netip.MustParseAddr("10.244.1.7"))
	for _, p := range []*netlab.Pod{a, b} {
		if err := p.ServeTCP(8080); err != nil {
			t.Fatal(err)
		}
	}
	vip := netip.MustParseAddr("10.96.0.10")
	addDummy(t, lab.Node(), "kube-ipvs0", vip)

	h, err := ipvs.New("/run/netns/" + lab.Node().Name())
	if err != nil {
		t.Fatalf("ipvs handle in the node namespace: %v", err)
	}
	defer h.Close()
	svc := &ipvs.Service{
		Address: net.IP(vip.AsSlice()), Protocol: syscall.IPPROTO_TCP, Port: 80,
		SchedName: "rr", AddressFamily: syscall.AF_INET, Netmask: 0xffffffff,
	}
	if err := h.NewService(svc); err != nil {
		t.Fatalf("new virtual server: %v", err)
	}
	for _, p := range []*netlab.Pod{a, b} {
		d := &ipvs.Destination{Address: net.IP(p.IP().AsSlice()), Port: 8080, Weight: 1,
			ConnectionFlags: ipvs.ConnectionFlagMasq, AddressFamily: syscall.AF_INET}
		if err := h.NewDestination(svc, d); err != nil {
			t.Fatalf("new real server %s: %v", p.IP(), err)
		}
	}

	ctx := context.Background()
	counts := map[string]int{}
	for range 4 {
		r, err := lab.Client().Probe(ctx, netlab.TCP, netip.Addr{}, netip.AddrPortFrom(vip, 80), netlab.DefaultTimeout)
		if err != nil {
			t.Fatalf("client to the virtual server: %v", err)
		}
		if r.Source.Addr() != netlab.ClientIP {
			t.Errorf("backend %s saw source %s, want the client %s (masquerade mode does not SNAT)", r.Backend, r.Source, netlab.ClientIP)
		}
		counts[r.Backend]++
	}
	if counts["a"] != 2 || counts["b"] != 2 {
		t.Errorf("round robin over 4 connections reached %v, want a:2 b:2", counts)
	}
	// The connection table counts at once (the byte and packet stats wait
	// for the estimator): each backend holds two closed connections.
	dests, err := h.GetDestinations(svc)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dests {
		if n := d.ActiveConnections + d.InactiveConnections; n != 2 {
			t.Errorf("IPVS real server %s holds %d connections, want 2", d.Address, n)
		}
	}
}

// netlabNode returns the node namespace of a new lab.
func netlabNode(t *testing.T) netlab.NS { return netlab.New(t).Node() }

// addDummy creates a dummy link holding addr in ns, as kube-proxy's
// kube-ipvs0.
func addDummy(t *testing.T, ns netlab.NS, name string, addr netip.Addr) {
	t.Helper()
	err := ns.Do(func() error {
		if err := netlink.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: name}}); err != nil {
			return err
		}
		link, err := netlink.LinkByName(name)
		if err != nil {
			return err
		}
		ipn := &net.IPNet{IP: net.IP(addr.AsSlice()), Mask: net.CIDRMask(addr.BitLen(), addr.BitLen())}
		return netlink.AddrAdd(link, &netlink.Addr{IPNet: ipn})
	})
	if err != nil {
		t.Fatalf("dummy %s in %s: %v", name, ns.Name(), err)
	}
}

// TestGuestEnvironment checks what the guest's init promises: PID 1 is
// the parent, and the IPVS module is loaded.
func TestGuestEnvironment(t *testing.T) {
	RequireGuest(t)
	if _, err := os.Stat("/proc/net/ip_vs"); err != nil {
		t.Errorf("IPVS is not loaded: %v", err)
	}
}
