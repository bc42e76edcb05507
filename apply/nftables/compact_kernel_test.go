package nftables_test

import (
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// TestCompactEndpointChangeIsElementsOnly replaces one endpoint of a
// Service in the compact layout, at two sizes: the change is one element
// out of and one into one shared map, with no rule or chain touched, so
// the kernel has no table to validate.
func TestCompactEndpointChangeIsElementsOnly(t *testing.T) {
	requireKernel(t)
	cfg := benchConfig()
	cfg.NFTablesLayout = render.NFTablesLayoutCompact
	for _, size := range []int{200, 2000} {
		n := newNode(t)
		base := syntheticTable(size, 10)
		n.apply(t, render.NFTables(base, cfg))
		changed := render.NFTables(synthetic.WithOneEndpointChanged(base, 20, 1), cfg)
		plans := n.apply(t, changed)
		c := plans[0].Changes
		if len(c.Chains) != 0 || len(c.Sets) != 1 || plans[0].Ops != 2 {
			t.Fatalf("at %d Services: %s, %d operations, changes %v; want one map's elements, 2 operations", size, c.Summary(), plans[0].Ops, changeNames(plans[0]))
		}
		if s := c.Sets[0]; !strings.HasPrefix(s.Set.Name, "endpoint-addresses-") || len(s.Added) != 1 || len(s.Removed) != 1 || s.Added[0].Key != s.Removed[0].Key {
			t.Errorf("at %d Services: the change is %+v, want one key's address replaced in a shared map", size, s)
		}
		n.assertNoChanges(t, changed)
	}
}
