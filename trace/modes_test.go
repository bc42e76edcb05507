package trace_test

import (
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
	tipt "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/iptables"
	tipvs "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/ipvs"
	tnft "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/nftables"
	tus "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/userspace"
)

// goldenModes are the modes the golden files hold.
var goldenModes = []string{"iptables", "nftables", "ipvs", "userspace"}

// evaluator renders tab in mode and loads it for tracing; it returns the
// node as the mode makes it.
func evaluator(t testing.TB, mode string, tab *nodetable.ServiceTable, cfg render.Config, n *trace.Node) (trace.Evaluator, *trace.Node) {
	t.Helper()
	var ev trace.Evaluator
	var err error
	switch mode {
	case "iptables":
		ev, err = tipt.New(render.IPTables(tab, cfg), n, tipt.Options{})
	case "nftables":
		ev, err = tnft.New(render.NFTables(tab, cfg), n)
	case "ipvs":
		ev, n, err = tipvs.New(render.IPVS(tab, cfg, render.IPVSOptions{}), n)
	case "userspace":
		ev, err = tus.New(render.Userspace(tab, cfg, render.UserspaceOptions{}), n)
	default:
		t.Fatalf("unknown mode %s", mode)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ev, n
}
