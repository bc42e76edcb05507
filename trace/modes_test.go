package trace_test

import (
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
	tipt "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/iptables"
	tnft "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/nftables"
)

// goldenModes are the modes the golden files hold.
var goldenModes = []string{"iptables", "nftables"}

// evaluator renders tab in mode and loads it for tracing.
func evaluator(t testing.TB, mode string, tab *nodetable.ServiceTable, cfg render.Config, n *trace.Node) trace.Evaluator {
	t.Helper()
	var ev trace.Evaluator
	var err error
	switch mode {
	case "iptables":
		ev, err = tipt.New(render.IPTables(tab, cfg), n, tipt.Options{})
	case "nftables":
		ev, err = tnft.New(render.NFTables(tab, cfg), n)
	default:
		t.Fatalf("unknown mode %s", mode)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ev
}
