package iptables_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// BenchmarkDetectBackend measures --iptables-backend=auto on a node whose
// rules, 2k Services x 10 endpoints, are all in one backend, as the CLI
// runs it: on a thread in the node's namespace, through OSExec. With
// foreign=250, the other backend holds 250 rules of someone else's (and,
// when that is nft, kubelet's hint): detection must still find the mode's
// rules, without reading either backend whole.
func BenchmarkDetectBackend(b *testing.B) {
	for _, backend := range backends {
		for _, foreign := range []int{0, 250} {
			b.Run(fmt.Sprintf("rules-in=%s/services=2000/foreign=%d", backend, foreign), func(b *testing.B) {
				requireKernel(b, backend)
				lab := netlab.New(b)
				client := &applyipt.Client{Exec: nsExec{ns: lab.Node().Name()}, Backend: backend, WaitSeconds: 5,
					Ownership: render.IPTablesOwnership(), Counters: lab.Node().NFAcctCounters()}
				full := render.IPTables(synthetic.Table(2000, 10), benchConfig())
				plans, err := client.Plan(context.Background(), []*ipt.Ruleset{full})
				if err == nil {
					err = client.Apply(context.Background(), plans)
				}
				if err != nil {
					b.Fatal(err)
				}
				if foreign > 0 {
					addForeignRules(b, lab.Node(), otherBackend(backend), foreign)
				}
				for b.Loop() {
					var got applyipt.Backend
					err := lab.Node().Do(func() (err error) {
						got, err = applyipt.DetectBackend(context.Background(), applyipt.OSExec{}, render.IPTablesOwnership())
						return err
					})
					if err != nil {
						b.Fatal(err)
					}
					if got != backend {
						b.Fatalf("detected %s, the rules are in %s", got, backend)
					}
				}
			})
		}
	}
}

func otherBackend(b applyipt.Backend) applyipt.Backend {
	if b == applyipt.Legacy {
		return applyipt.NFT
	}
	return applyipt.Legacy
}

// addForeignRules puts n rules of someone else's into the INPUT chain of
// backend b, and in nft also kubelet's hint chain.
func addForeignRules(tb testing.TB, ns netlab.NS, b applyipt.Backend, n int) {
	tb.Helper()
	var s strings.Builder
	s.WriteString("*filter\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&s, "-A INPUT -s 198.51.%d.%d/32 -j ACCEPT\n", 100+i/250, i%250+1)
	}
	s.WriteString("COMMIT\n")
	if b == applyipt.NFT {
		s.WriteString("*mangle\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n")
	}
	if out, err := ns.RunInput(context.Background(), []byte(s.String()), "iptables-"+string(b)+"-restore", "--noflush"); err != nil {
		tb.Fatalf("%v: %s", err, out)
	}
}
