package iptables_test

import (
	"context"
	"testing"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// TestDetectBackendInKernel runs detection against real tables: the kernel
// probe must see what iptables-nft and iptables-legacy made, and create
// nothing.
func TestDetectBackendInKernel(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "iptables-nft", "iptables-legacy", "iptables-nft-save", "iptables-legacy-save")
	cases := []struct {
		name  string
		setup []string
		want  applyipt.Backend
	}{
		{"empty namespace", nil, applyipt.NFT},
		{"legacy tables loaded but empty", []string{"iptables-legacy -t nat -L -n", "ip6tables-legacy -t filter -L -n"}, applyipt.NFT},
		{"kubelet's hint in legacy only", []string{"iptables-legacy -t mangle -N KUBE-IPTABLES-HINT"}, applyipt.Legacy},
		{"an IPv6 rule in legacy only", []string{"ip6tables-legacy -t filter -A INPUT -j RETURN"}, applyipt.Legacy},
		{"rules in legacy only", []string{"iptables-legacy -t nat -N X", "iptables-legacy -t nat -A X -j RETURN"}, applyipt.Legacy},
		{"rules in nft only", []string{"iptables-nft -t nat -N X", "iptables-nft -t nat -A X -j RETURN"}, applyipt.NFT},
		{"more rules in legacy, hint in nft", []string{"iptables-legacy -t nat -N X", "iptables-legacy -t nat -A X -j RETURN", "iptables-nft -t mangle -N KUBE-IPTABLES-HINT"}, applyipt.NFT},
		{"canary in legacy, more rules in nft", []string{"ip6tables-legacy -t mangle -N KUBE-KUBELET-CANARY", "iptables-nft -t nat -N X", "iptables-nft -t nat -A X -j RETURN"}, applyipt.Legacy},
		{"more rules in legacy, both have tables", []string{"iptables-legacy -t nat -N X", "iptables-legacy -t nat -A X -j RETURN", "iptables-legacy -t nat -A X -j RETURN", "iptables-nft -t filter -N Y", "iptables-nft -t filter -A Y -j RETURN"}, applyipt.Legacy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lab := netlab.New(t)
			for _, line := range tc.setup {
				if out, err := lab.Node().Run(context.Background(), "sh", "-c", line); err != nil {
					t.Fatalf("%s: %v: %s", line, err, out)
				}
			}
			before := legacyTableNames(t, lab.Node())
			var got applyipt.Backend
			err := lab.Node().Do(func() (err error) {
				got, err = applyipt.DetectBackend(context.Background(), applyipt.OSExec{}, render.IPTablesOwnership())
				return err
			})
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
			if after := legacyTableNames(t, lab.Node()); after != before {
				t.Errorf("detection created x_tables tables: %q before, %q after", before, after)
			}
		})
	}
}

func legacyTableNames(t *testing.T, ns netlab.NS) string {
	t.Helper()
	out, err := ns.Run(context.Background(), "sh", "-c", "cat /proc/net/ip_tables_names /proc/net/ip6_tables_names 2>/dev/null; true")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestLegacyInUseInKernel checks the kernel probe's reading of x_tables'
// entry counts: instantiated but empty tables are not in use, a chain of
// their own or a rule, in either family, is.
func TestLegacyInUseInKernel(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "iptables-legacy", "ip6tables-legacy")
	lab := netlab.New(t)
	probe := func(want bool, why string) {
		t.Helper()
		var got bool
		err := lab.Node().Do(func() (err error) {
			got, err = applyipt.KernelProbe{}.LegacyInUse()
			return err
		})
		if err != nil || got != want {
			t.Errorf("%s: LegacyInUse %v, %v; want %v", why, got, err, want)
		}
	}
	run := func(line string) {
		t.Helper()
		if out, err := lab.Node().Run(context.Background(), "sh", "-c", line); err != nil {
			t.Fatalf("%s: %v: %s", line, err, out)
		}
	}
	probe(false, "no tables")
	run("iptables-legacy -t nat -L -n >/dev/null; iptables-legacy -t mangle -L -n >/dev/null; ip6tables-legacy -L -n >/dev/null")
	probe(false, "empty tables")
	run("ip6tables-legacy -A INPUT -j RETURN")
	probe(true, "an IPv6 rule")
	run("ip6tables-legacy -D INPUT -j RETURN")
	probe(false, "the rule deleted")
	run("iptables-legacy -t mangle -N KUBE-IPTABLES-HINT")
	probe(true, "an empty chain of its own")
}
