package cli

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nfacct"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// cartNodePort is the example's cart NodePort, on the loopback address.
var cartNodePort = netip.MustParseAddrPort("127.0.0.1:30080")

// With default flags, apply does what kube-proxy does on a kernel with
// nfacct: it creates the two counters, writes the counting matches and
// the localhost NodePort rules, and a connection to 127.0.0.1:NodePort on
// the node reaches the Service's endpoints. With --nfacct=false, as
// kube-proxy on a kernel without nfacct, the counting rules are left out.
func TestE2ELocalhostNodePortsWithNFAcct(t *testing.T) {
	forEachBackend(t, func(t *testing.T, n *e2eNode) {
		supported := false
		if err := n.lab.Node().Do(func() error { supported = nfacct.Supported(); return nil }); err != nil {
			t.Fatal(err)
		}
		if !supported {
			testenv.SkipOrFail(t, "the kernel has no nfacct (nfnetlink_acct)")
		}
		for ip, name := range map[string]string{"10.244.0.31": "cart-31", "10.244.1.32": "cart-32"} {
			if err := n.lab.AddPod(name, netip.MustParseAddr(ip)).ServeTCP(8080); err != nil {
				t.Fatal(err)
			}
		}
		expect(t, n.run("apply", exampleArgs...), ExitOK)
		for _, name := range nfacct.Counters {
			var ok bool
			if err := n.lab.Node().Do(func() (err error) { ok, err = nfacct.Exists(name); return err }); err != nil || !ok {
				t.Fatalf("apply did not create the nfacct counter %s (%v)", name, err)
			}
		}
		save := n.save()
		for _, want := range []string{"-m nfacct --nfacct-name  localhost_nps_accepted_pkts", "--ctstate INVALID -m nfacct --nfacct-name  ct_state_invalid_dropped_pkts -j DROP"} {
			if !strings.Contains(save, want) {
				t.Fatalf("the node lacks %q:\n%s", want, save)
			}
		}
		// cart has ClientIP session affinity: every connection from the
		// node reaches the same one of its endpoints.
		got, err := n.lab.Node().Spread(t.Context(), netlab.TCP, cartNodePort, 20)
		if names := sortedKeys(got); err != nil || len(names) != 1 || !slices.Contains([]string{"cart-31", "cart-32"}, names[0]) {
			t.Fatalf("%s from the node reached %v (%v), want one of cart-31 and cart-32", cartNodePort, got, err)
		}
		expect(t, n.run("plan", exampleArgs...), ExitOK, "No changes")

		off := append([]string{"--nfacct=false"}, exampleArgs...)
		expect(t, n.run("apply", off...), ExitOK)
		if save := n.save(); strings.Contains(save, "nfacct") || strings.Contains(save, "-A KUBE-NODEPORTS -d 127.0.0.0/8") {
			t.Fatalf("with --nfacct=false the counting matches and the localhost NodePort rules must go:\n%s", save)
		}
		// The rule for 127.0.0.0/8 only counts: the NodePort rule for any
		// local address still takes the connection, as with kube-proxy.
		if _, err := n.lab.Node().DialTCP(t.Context(), cartNodePort, netlab.DefaultTimeout); err != nil {
			t.Fatalf("%s: %v", cartNodePort, err)
		}
	})
}
