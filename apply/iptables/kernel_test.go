package iptables_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

var (
	webIP   = netip.MustParseAddrPort("10.96.0.10:80")
	otherIP = netip.MustParseAddrPort("10.96.0.20:80")
)

func web(eps ...string) svc {
	return svc{name: "web", ip: "10.96.0.10", port: 80, targetPort: 8080, endpoints: eps}
}

func other(eps ...string) svc {
	return svc{name: "other", ip: "10.96.0.20", port: 80, targetPort: 8080, endpoints: eps}
}

// withPods adds pods a (10.244.0.11), b (10.244.1.12) and c (10.244.0.13),
// each serving TCP on 8080 and 9090.
func withPods(t *testing.T, n *node) {
	for name, ip := range map[string]string{"a": "10.244.0.11", "b": "10.244.1.12", "c": "10.244.0.13"} {
		p := n.lab.AddPod(name, netip.MustParseAddr(ip))
		for _, port := range []uint16{8080, 9090} {
			if err := p.ServeTCP(port); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// assertReaches checks that connections from the client reach exactly want.
func assertReaches(t *testing.T, n *node, dst netip.AddrPort, want ...string) {
	t.Helper()
	got, err := n.lab.Client().Spread(context.Background(), netlab.TCP, dst, 30)
	if err != nil {
		t.Fatalf("%s: %v", dst, err)
	}
	var names []string
	for name := range got {
		names = append(names, name)
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("%s reached %v, want exactly %v", dst, got, want)
	}
}

func TestForeignRulesSurviveApplyAndReset(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			n := newNode(t, b)
			// Foreign state around and among the places the tool writes to.
			for _, cmd := range []string{
				"-t nat -A PREROUTING -s 192.0.2.7/32 -j ACCEPT",
				"-t nat -N USER-NAT", "-t nat -A USER-NAT -p udp --dport 53 -j RETURN",
				"-t nat -A POSTROUTING -o eth9 -j USER-NAT",
				"-A INPUT -s 198.51.100.0/24 -j DROP", "-A FORWARD -i eth9 -j DROP",
				"-N USER-FILTER", "-A USER-FILTER -j RETURN", "-A OUTPUT -j USER-FILTER",
				"-t mangle -A PREROUTING -j MARK --set-mark 7",
			} {
				n.ipt(t, cmd)
			}
			before := foreignView(n.read(t))
			n.apply(t, snapshot(web("10.244.0.11", "10.244.1.12"), other()))
			if after := foreignView(n.read(t)); after != before {
				t.Fatalf("apply changed foreign rules:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			// Foreign rules added after the tool's jumps, one of them into an owned chain.
			n.ipt(t, "-t nat -I PREROUTING 1 -d 192.0.2.8/32 -j ACCEPT")
			n.ipt(t, "-t nat -A OUTPUT -d 192.0.2.9/32 -j KUBE-SERVICES")
			before = foreignView(n.read(t))
			n.apply(t, snapshot(web("10.244.0.11"), other("10.244.0.13")))
			if after := foreignView(n.read(t)); after != before {
				t.Fatalf("second apply changed foreign rules:\nbefore:\n%s\nafter:\n%s", before, after)
			}

			plans, err := n.client.Plan(context.Background(), []*ipt.Ruleset{diff.EmptyIPTables(nodetable.IPv4)})
			if err != nil {
				t.Fatal(err)
			}
			if err := n.client.Apply(context.Background(), plans); err != nil {
				t.Fatal(err)
			}
			live := n.read(t)
			if after := foreignView(live); after != before {
				t.Fatalf("reset changed foreign rules:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			// Only what must stay is left: KUBE-SERVICES (a foreign rule jumps
			// to it; emptied) and kubelet's KUBE-FIREWALL.
			owned := diff.OwnedIPTables(live, render.IPTablesOwnership())
			for _, tb := range owned.Tables {
				for _, c := range tb.Chains {
					switch {
					case c.Name == "KUBE-SERVICES" && tb.Name == ipt.NAT && len(c.Rules) == 0:
					case c.Name == "KUBE-FIREWALL":
					case ipt.IsBuiltin(tb.Name, c.Name) && len(c.Rules) == 0:
					case ipt.IsBuiltin(tb.Name, c.Name) && c.Rules[0].Target() == "KUBE-FIREWALL":
					default:
						t.Errorf("reset left %s/%s with %d rules", tb.Name, c.Name, len(c.Rules))
					}
				}
			}
		})
	}
}

func TestDriftIsFoundAndRepaired(t *testing.T) {
	snap := snapshot(web("10.244.0.11", "10.244.1.12"), other("10.244.0.13"))
	drifts := []struct {
		name string
		cmds []string
		want []string // "verb chain" of each expected change, in order
	}{
		{"rule deleted", []string{"-t nat -D KUBE-SERVICES 1"}, []string{"replace-chain KUBE-SERVICES"}},
		{"rule edited", []string{"-t nat -R KUBE-MARK-MASQ 1 -j MARK --set-xmark 0x8000/0x8000"}, []string{"replace-chain KUBE-MARK-MASQ"}},
		{"rule added", []string{"-t nat -A KUBE-POSTROUTING -j ACCEPT"}, []string{"replace-chain KUBE-POSTROUTING"}},
		{"chain deleted", []string{"-t nat -D POSTROUTING 1", "-t nat -F KUBE-POSTROUTING", "-t nat -X KUBE-POSTROUTING"},
			[]string{"create-chain KUBE-POSTROUTING", "insert-jump POSTROUTING"}},
		{"jump deleted", []string{"-D FORWARD 2"}, []string{"insert-jump FORWARD"}},
		{"stale chain added", []string{"-t nat -N KUBE-SEP-AAAAAAAAAAAAAAAA"}, []string{"delete-chain KUBE-SEP-AAAAAAAAAAAAAAAA"}},
	}
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			n := newNode(t, b)
			withPods(t, n)
			n.apply(t, snap)
			for _, d := range drifts {
				for _, cmd := range d.cmds {
					n.ipt(t, cmd)
				}
				changes := n.plan(t, snap)[0].Changes
				var got []string
				for _, c := range changes.Changes {
					got = append(got, string(c.Verb)+" "+c.Chain)
				}
				if !slices.Equal(got, d.want) {
					var b strings.Builder
					changes.WriteText(&b, "live")
					t.Fatalf("%s: plan should report exactly %q, got:\n%s", d.name, d.want, b.String())
				}
				n.apply(t, snap)
				n.assertNoChanges(t, snap)
			}
			assertReaches(t, n, webIP, "a", "b")
		})
	}
}

// TestCacheIsExact checks the nf_tables dump cache: after an apply, what
// the cache holds equals a fresh dump, and a change by anyone else (here
// one rule edited with iptables-nft) is seen by the next plan.
func TestCacheIsExact(t *testing.T) {
	n := newNode(t, applyipt.NFT)
	withPods(t, n)
	n.ipt(t, "-t nat -A PREROUTING -s 192.0.2.7/32 -j ACCEPT")
	snap := snapshot(web("10.244.0.11", "10.244.1.12"), other("10.244.0.13"))
	n.apply(t, snap)
	n.apply(t, snapshot(web("10.244.0.11"), other("10.244.0.13", "10.244.1.12")))

	dumpsBefore := n.rec.dumps
	cached := n.read(t)
	if n.rec.dumps != dumpsBefore {
		t.Errorf("the read after an apply dumped the kernel; it should come from the cache")
	}
	fresh, err := (&applyipt.Client{Exec: nsExec{ns: n.lab.Node().Name()}, Backend: applyipt.NFT}).Read(context.Background(), nodetable.IPv4)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff.IPTables(diff.OwnedIPTables(fresh, render.IPTablesOwnership()), cached, render.IPTablesOwnership()); !d.Empty() {
		var b strings.Builder
		d.WriteText(&b, "cache")
		t.Fatalf("the cache differs from the kernel:\n%s", b.String())
	}
	if foreignView(cached) != foreignView(fresh) {
		t.Fatalf("the cache's foreign rules differ from the kernel's:\n%s\n%s", foreignView(cached), foreignView(fresh))
	}
	n.ipt(t, "-t nat -R KUBE-MARK-MASQ 1 -j MARK --set-xmark 0x8000/0x8000")
	snap = snapshot(web("10.244.0.11"), other("10.244.0.13", "10.244.1.12"))
	if changes := n.plan(t, snap)[0].Changes; changes.Empty() {
		t.Fatal("a rule edited behind the cache's back was not noticed")
	}
	n.apply(t, snap)
	n.assertNoChanges(t, snap)

	// A change made between plan and apply must not be cached away.
	plans := n.plan(t, snapshot(web("10.244.0.11", "10.244.1.12"), other("10.244.0.13")))
	n.ipt(t, "-t nat -A KUBE-POSTROUTING -j ACCEPT")
	if err := n.client.Apply(context.Background(), plans); err != nil {
		t.Fatal(err)
	}
	changes := n.plan(t, snapshot(web("10.244.0.11", "10.244.1.12"), other("10.244.0.13")))[0].Changes
	if len(changes.Changes) != 1 || changes.Changes[0].Chain != "KUBE-POSTROUTING" {
		t.Fatalf("a rule added between plan and apply was hidden by the cache: %+v", changes.Changes)
	}
}
