package iptables_test

import (
	"context"
	"fmt"
	"testing"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// BenchmarkDetectBackend measures --iptables-backend=auto on a node whose
// rules, 2k Services x 10 endpoints, are all in one backend, as the CLI
// runs it: on a thread in the node's namespace, through OSExec.
func BenchmarkDetectBackend(b *testing.B) {
	for _, backend := range backends {
		b.Run(fmt.Sprintf("rules-in=%s/services=2000", backend), func(b *testing.B) {
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
			for b.Loop() {
				var got applyipt.Backend
				err := lab.Node().Do(func() (err error) {
					got, err = applyipt.DetectBackend(context.Background(), applyipt.OSExec{})
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
