package ipvs

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clusterPorts are the example's ClusterIP Service ports
// (internal/example/snapshot.yaml), as "proto ip:port".
var clusterPorts = []string{"tcp 10.96.0.10:80", "udp 10.96.0.53:53", "tcp 10.96.0.53:53",
	"tcp 10.96.0.20:443", "tcp 10.96.0.30:80", "tcp 10.96.0.40:80"}

// TestE2EIPVSApplyAndDrift applies the example to an empty node, checks
// the kernel's listings, applies again (nothing to do), then deletes a
// virtual server and a kube-ipvs0 address by hand: plan names each and
// apply puts each back.
func TestE2EIPVSApplyAndDrift(t *testing.T) {
	n := newNode(t)
	saved := filepath.Join(n.dir, "first.plan")
	plan := expect(t, n.run("plan", append(exampleArgs, "--out="+saved)...), exitChanges,
		"@@ kube-ipvs0: new dummy interface @@", "@@ ipvs -t 10.96.0.10:80: new virtual server @@")
	expect(t, n.run("apply", saved), exitOK, "Applied (ipvs, iptables-nft): ")
	n.requireExample(append(added(plan.stdout, "-A -"), added(plan.stdout, "-a -")...))
	before := n.kernel()
	if r := expect(t, n.run("apply", exampleArgs...), exitOK); !strings.HasSuffix(r.stdout, ": chains +0 ~0 -0, rules +0 -0\n") {
		t.Fatalf("a second apply changed something:\n%s", r)
	}
	if after := n.kernel(); after != before {
		t.Fatalf("a second apply changed the kernel:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	expect(t, n.run("plan", exampleArgs...), exitOK, "No changes")
	for _, d := range []struct {
		cmd               []string
		inPlan, inSummary string
	}{
		{[]string{"ipvsadm", "-D", "-t", "10.96.0.30:80"}, "@@ ipvs -t 10.96.0.30:80: new virtual server @@", "virtual servers +1 ~0 -0"},
		{[]string{"ip", "addr", "del", "10.96.0.20/32", "dev", "kube-ipvs0"}, "+addr add 10.96.0.20/32 dev kube-ipvs0", "addresses +1 -0"},
	} {
		n.sh(d.cmd[0], d.cmd[1:]...)
		expect(t, n.run("plan", exampleArgs...), exitChanges, d.inPlan)
		expect(t, n.run("apply", exampleArgs...), exitOK, d.inSummary)
		expect(t, n.run("plan", exampleArgs...), exitOK, "No changes")
		if after := n.kernel(); after != before {
			t.Fatalf("after %v, apply did not restore the kernel:\nbefore:\n%s\nafter:\n%s", d.cmd, before, after)
		}
	}
	// A saved plan that the node moved away from is refused, and the
	// kernel is left as it is.
	n.sh("ipvsadm", "-D", "-t", "10.96.0.30:80")
	stale := filepath.Join(n.dir, "stale.plan")
	expect(t, n.run("plan", append(exampleArgs, "--out="+stale)...), exitChanges)
	n.sh("ip", "addr", "del", "10.96.0.20/32", "dev", "kube-ipvs0")
	moved := n.kernel()
	if r := n.run("apply", stale); r.code != 2 || !strings.Contains(r.stderr, "changed since the plan was made, in IPv4 ipvs") {
		t.Fatalf("a stale saved plan was not refused:\n%s", r)
	}
	if after := n.kernel(); after != moved {
		t.Fatalf("a refused saved plan changed the kernel:\nbefore:\n%s\nafter:\n%s", moved, after)
	}
}

// requireExample checks that the kernel holds the planned ipvsadm-save
// lines and, for each of the example's ClusterIP ports, a virtual server,
// an address on kube-ipvs0 and a KUBE-CLUSTER-IP entry.
func (n *node) requireExample(planned []string) {
	n.t.Helper()
	k := n.kernel()
	want := slices.Clone(planned)
	for _, cp := range clusterPorts {
		proto, ap, _ := strings.Cut(cp, " ")
		ip, port, _ := strings.Cut(ap, ":")
		want = append(want, "-A -"+proto[:1]+" "+ap, "add KUBE-CLUSTER-IP "+ip+","+proto+":"+port)
		if !strings.Contains(k, " inet "+ip+"/32 ") {
			n.t.Errorf("kube-ipvs0 lacks %s", ip)
		}
	}
	lines := strings.Split(k, "\n")
	for _, w := range want {
		if !slices.ContainsFunc(lines, func(l string) bool { return l == w || strings.HasPrefix(l, w+" ") }) {
			n.t.Errorf("the kernel lacks %q", w)
		}
	}
	if n.t.Failed() {
		n.t.Fatalf("ipvsadm -Sn, ip addr show kube-ipvs0 and ipset save:\n%s", k)
	}
}

// TestE2EIPVSDryRunAndReset checks that apply --dry-run prints the
// commands and changes nothing, and that a foreign virtual server
// survives apply and reset while reset removes all the tool's objects.
func TestE2EIPVSDryRunAndReset(t *testing.T) {
	n := newNode(t)
	const foreign = "-A -t 198.51.100.99:80 -s rr"
	n.sh("ipvsadm", "-A", "-t", "198.51.100.99:80", "-s", "rr")
	expect(t, n.run("apply", exampleArgs...), exitOK)
	n.sh("ipvsadm", "-D", "-t", "10.96.0.10:80")
	before := n.kernel()
	expect(t, n.run("apply", slices.Concat(exampleArgs, []string{"--dry-run"})...), exitOK, "ipvsadm -A -t 10.96.0.10:80 ")
	if after := n.kernel(); after != before {
		t.Fatalf("apply --dry-run changed the kernel:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	plan := expect(t, n.run("plan", exampleArgs...), exitChanges, "@@ ipvs -t 10.96.0.10:80: new virtual server @@")
	if strings.Contains(plan.stdout, "198.51.100.99") {
		t.Fatalf("the plan touches the foreign virtual server:\n%s", plan)
	}
	expect(t, n.run("apply", exampleArgs...), exitOK, "virtual servers +1 ~0 -0")
	if save := n.sh("ipvsadm", "-Sn"); !strings.Contains(save, foreign+"\n") {
		t.Fatalf("apply removed the foreign virtual server:\n%s", save)
	}
	expect(t, n.run("reset", "--mode=ipvs", "--family=ipv4"), exitOK, "Reset (ipvs, iptables-nft): ")
	if k := n.kernel(); k != foreign+"\n## kube-ipvs0\n## ipset\n" {
		t.Fatalf("after reset, the kernel holds more than the foreign virtual server:\n%s", k)
	}
	if out, err := n.lab.Node().Run(t.Context(), "ip", "link", "show", "kube-ipvs0"); err == nil {
		t.Fatalf("reset left kube-ipvs0:\n%s", out)
	}
	if ipt := n.sh("iptables-nft-save"); strings.Contains(ipt, "KUBE-") {
		t.Errorf("reset left helper chains:\n%s", ipt)
	}
	expect(t, n.run("plan", exampleArgs...), exitChanges, "@@ kube-ipvs0: new dummy interface @@")
}

// webPods are the example's endpoints of default/web (port 8080).
var webPods = map[string]netip.Addr{"web-11": netip.MustParseAddr("10.244.0.11"),
	"web-12": netip.MustParseAddr("10.244.0.12"), "web-13": netip.MustParseAddr("10.244.1.13")}

// TestE2EIPVSTrafficAndScheduler sends a connection from the client to
// web's ClusterIP through IPVS, then switches every virtual server to wrr:
// the plan edits them in place, and the virtual server's connection
// counter, which a re-created one would start at 0, survives.
func TestE2EIPVSTrafficAndScheduler(t *testing.T) {
	n := newNode(t)
	for name, ip := range webPods {
		if err := n.lab.AddPod(name, ip).ServeTCP(8080); err != nil {
			t.Fatal(err)
		}
	}
	vip := netip.MustParseAddrPort("10.96.0.10:80")
	expect(t, n.run("apply", exampleArgs...), exitOK)
	n.dial(vip)
	conns := n.conns(vip)
	if conns < 1 {
		t.Fatalf("ipvsadm counts %d connections to %s after one", conns, vip)
	}
	wrr := slices.Concat(exampleArgs, []string{"--ipvs-scheduler=wrr"})
	// "+0 ~N -0": every virtual server edited, none deleted and added.
	virtual := strconv.Itoa(strings.Count(n.sh("ipvsadm", "-Sn"), "-A -"))
	expect(t, n.run("plan", wrr...), exitChanges, "@@ ipvs -t 10.96.0.10:80: changed in place @@", "virtual servers +0 ~"+virtual+" -0")
	expect(t, n.run("apply", wrr...), exitOK, "virtual servers +0 ~"+virtual+" -0")
	if save := n.sh("ipvsadm", "-Sn"); strconv.Itoa(strings.Count(save, " -s wrr")) != virtual {
		t.Errorf("not all %s virtual servers switched to wrr:\n%s", virtual, save)
	}
	if got := n.conns(vip); got < conns {
		t.Errorf("%s counts %d connections after the edit, %d before: re-created?", vip, got, conns)
	}
	n.dial(vip)
	expect(t, n.run("plan", wrr...), exitOK, "No changes")
}

// dial connects from the client to dst and wants a web pod to answer.
func (n *node) dial(dst netip.AddrPort) {
	n.t.Helper()
	got, err := n.lab.Client().DialTCP(n.t.Context(), dst, 5*time.Second)
	if _, ok := webPods[got]; err != nil || !ok {
		n.t.Fatalf("client to %s: answered by %q, %v; want a web pod", dst, got, err)
	}
}

// conns counts the connections IPVS holds for the virtual server's real
// servers (ActiveConn + InActConn of ipvsadm -Ln): a closed connection
// stays as an inactive one for TIME_WAIT (2 minutes); the real servers of
// a re-created virtual server would start at 0.
func (n *node) conns(vip netip.AddrPort) int {
	n.t.Helper()
	total := 0
	for line := range strings.Lines(n.sh("ipvsadm", "-Ln", "-t", vip.String())) {
		var rs, fwd string
		var weight, active, inactive int
		if _, err := fmt.Sscan(line, &rs, &rs, &fwd, &weight, &active, &inactive); err == nil && fwd == "Masq" {
			total += active + inactive
		}
	}
	return total
}
