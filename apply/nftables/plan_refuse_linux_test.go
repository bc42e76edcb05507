package nftables_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// TestPlanRefusesRulesTheTextCannotHold checks that a render whose pod
// bridge name nft's text cannot hold (a quote would end the string and
// give the rule "ip saddr 6.6.6.6") is refused by Plan, before anything is
// sent and before the --dry-run script is written from the plan (issue 33).
func TestPlanRefusesRulesTheTextCannotHold(t *testing.T) {
	n := newFakeNode(t)
	cfg := render.DefaultConfig()
	cfg.DetectLocalMode = render.LocalModeBridgeInterface
	cfg.BridgeInterface = `br0" ip saddr 6.6.6.6 "`
	desired := render.NFTables(synthetic.VariedTable(5, 1), cfg)
	_, err := n.client.Plan(context.Background(), []*nft.Ruleset{desired})
	if err == nil || !strings.Contains(err.Error(), "refusing to write the rendered rules") {
		t.Fatalf("Plan = %v, want a refusal", err)
	}
	if sent := n.fake.Sent(); len(sent) != 0 {
		t.Errorf("%d transactions sent", len(sent))
	}
}
