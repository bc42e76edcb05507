package iptables_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// TestOwnRulesProbeInKernel checks the probes of where the mode's rules
// are, against real tables of both backends: a rule in one of the chains
// asked for, in either family, is found; an empty chain, a chain of
// another name and kubelet's chains are not; no x_tables table is created.
func TestOwnRulesProbeInKernel(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "iptables-nft", "iptables-legacy", "ip6tables-nft", "ip6tables-legacy")
	chains := []applyipt.TableChain{{Table: ipt.Filter, Chain: "KUBE-FORWARD"}, {Table: ipt.NAT, Chain: "KUBE-SERVICES"}}
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			lab := netlab.New(t)
			run := func(line string) {
				t.Helper()
				if out, err := lab.Node().Run(context.Background(), "sh", "-c", line); err != nil {
					t.Fatalf("%s: %v: %s", line, err, out)
				}
			}
			probe := func(want, why string) {
				t.Helper()
				before := legacyTableNames(t, lab.Node())
				var got string
				err := lab.Node().Do(func() (err error) {
					if b == applyipt.NFT {
						got, err = applyipt.KernelProbe{}.NFTRules(chains)
					} else {
						got, err = applyipt.KernelProbe{}.LegacyRules(chains)
					}
					return err
				})
				if err != nil || got != want {
					t.Errorf("%s: got %q, %v; want %q", why, got, err, want)
				}
				if after := legacyTableNames(t, lab.Node()); after != before {
					t.Errorf("%s: the probe created x_tables tables: %q before, %q after", why, before, after)
				}
			}
			ipt4, ipt6 := "iptables-"+string(b), "ip6tables-"+string(b)
			probe("", "no tables")
			run(ipt4 + " -t nat -N KUBE-SERVICES; " + ipt4 + " -t nat -A PREROUTING -j KUBE-SERVICES")
			probe("", "an empty chain, jumped to")
			run(ipt4 + " -t nat -N KUBE-SERVICES-X; " + ipt4 + " -t nat -A KUBE-SERVICES-X -j RETURN; " +
				ipt4 + " -t nat -N KUBE-MARK-MASQ; " + ipt4 + " -t nat -A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000; " +
				ipt4 + " -N KUBE-FIREWALL; " + ipt4 + " -A KUBE-FIREWALL -j DROP")
			probe("", "rules in other chains")
			run(ipt6 + " -N KUBE-FORWARD; " + ipt6 + " -A KUBE-FORWARD -j ACCEPT")
			probe("IPv6 filter KUBE-FORWARD", "a rule in an IPv6 chain")
			run(ipt4 + " -t nat -A KUBE-SERVICES -j RETURN")
			probe("IPv6 filter KUBE-FORWARD", "filter comes before nat")
			run(ipt6 + " -F KUBE-FORWARD")
			probe("IPv4 nat KUBE-SERVICES", "a rule in an IPv4 nat chain")
		})
	}
}

// TestDetectFindsTheModesRules is the node of issue 33: an apply wrote the
// iptables mode's rules into one backend, and another program then put
// 250 rules into the other one, with kubelet's hint in the nft case. Auto
// detection must pick the backend that holds the mode's rules, so that
// the next apply finds nothing to do and writes no second copy; both
// orders are tried. With the rules in both, it is an error naming both,
// and once one copy is reset, detection picks the other.
func TestDetectFindsTheModesRules(t *testing.T) {
	testenv.RequireTools(t, "iptables-nft-restore", "iptables-legacy-restore", "iptables-nft-save", "iptables-legacy-save")
	snap := snapshot(web("10.244.0.11"), other("10.244.0.13"))
	for _, b := range backends {
		other := otherBackend(b)
		t.Run("rules-in="+string(b), func(t *testing.T) {
			n := newNode(t, b)
			n.apply(t, snap)
			addForeignRules(t, n.lab.Node(), other, 250)
			got, err := detect(n)
			if err != nil || got != b {
				t.Fatalf("detected %q, %v; the mode's rules are in %s", got, err, b)
			}
			n.assertNoChanges(t, snap)
			if c := ownedChains(readBackend(t, n, other)); len(c) > 0 {
				t.Fatalf("the %s backend holds a copy of the mode's chains: %q", other, c)
			}
		})
	}
	t.Run("rules-in=both", func(t *testing.T) {
		n := newNode(t, applyipt.NFT)
		n.apply(t, snap)
		legacy := &node{lab: n.lab, rec: n.rec, client: &applyipt.Client{Exec: n.rec, Backend: applyipt.Legacy, WaitSeconds: 5,
			Ownership: render.IPTablesOwnership(), Counters: n.lab.Node().NFAcctCounters()}}
		legacy.apply(t, snap)
		_, err := detect(n)
		var both *applyipt.BothBackendsError
		if !errors.As(err, &both) || !strings.Contains(err.Error(), "iptables-legacy (IPv4 filter KUBE-FORWARD)") || !strings.Contains(err.Error(), "iptables-nft (IPv4 filter KUBE-FORWARD)") {
			t.Fatalf("with the mode's rules in both backends: %v; want an error naming both", err)
		}
		t.Logf("the error: %v", err)
		plans, err := legacy.client.Plan(context.Background(), []*ipt.Ruleset{diff.EmptyIPTables(nodetable.IPv4)})
		if err == nil {
			err = legacy.client.Apply(context.Background(), plans)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got, err := detect(n); err != nil || got != applyipt.NFT {
			t.Fatalf("after the legacy copy was reset: detected %q, %v; want nft", got, err)
		}
	})
}

func detect(n *node) (applyipt.Backend, error) {
	var got applyipt.Backend
	err := n.lab.Node().Do(func() (err error) {
		got, err = applyipt.DetectBackend(context.Background(), applyipt.OSExec{}, render.IPTablesOwnership())
		return err
	})
	return got, err
}

// ownedChains lists the iptables mode's chains in rs, but kubelet's.
func ownedChains(rs *ipt.Ruleset) []string {
	own := render.IPTablesOwnership()
	var out []string
	for _, t := range rs.Tables {
		for _, c := range t.Chains {
			if !ipt.IsBuiltin(t.Name, c.Name) && own.Owns(t.Name, c.Name) && !own.IsShared(c.Name) {
				out = append(out, string(t.Name)+" "+c.Name)
			}
		}
	}
	return out
}

func readBackend(t *testing.T, n *node, b applyipt.Backend) *ipt.Ruleset {
	t.Helper()
	rs, err := (&applyipt.Client{Exec: nsExec{ns: n.lab.Node().Name()}, Backend: b}).Read(context.Background(), nodetable.IPv4)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}
