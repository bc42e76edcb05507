package nftables_test

import (
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// The size of a change: which objects a plan touches and how many netlink
// operations its batch holds (Plan.Ops, counted by the encoder that feeds
// the socket), on the in-memory kernel at two sizes. That the kernel takes
// these changes and lists them back as rendered is the *OnKernel tests'.

// oneEndpointChanges applies a table of size Services to n, then changes
// one endpoint of each of services (and back), and returns the operations
// of each change. Each touches only its Service's objects, and a plan
// after it finds nothing to do.
func oneEndpointChanges(t *testing.T, n *node, size int, services []int) map[int]int {
	t.Helper()
	base := syntheticTable(size, 10)
	full := render.NFTables(base, benchConfig())
	n.apply(t, full)
	ops := map[int]int{}
	for _, svc := range services {
		changed := render.NFTables(synthetic.WithOneEndpointChanged(base, svc, 1), benchConfig())
		plans := n.apply(t, changed)
		id := base.Ports[svc].Name
		mark := id.Namespace + "/" + id.Name + "/"
		for _, name := range changeNames(plans[0]) {
			if !strings.Contains(name, mark) {
				t.Errorf("service %d at %d: the change touches %s", svc, size, name)
			}
		}
		n.assertNoChanges(t, changed)
		ops[svc] = plans[0].Ops
		t.Logf("service %d at %d Services: %s, %d netlink operations", svc, size, plans[0].Changes.Summary(), plans[0].Ops)
		n.apply(t, full)
	}
	return ops
}

// oneEndpointServices are the Services changed: without and with affinity.
var oneEndpointServices = []int{20, 24}

// TestOneEndpointChangeIsSmall checks that one endpoint changing in a
// large table touches only its Service's objects, and that the batch sent
// has the same number of operations at 200 and at 2,000 Services.
func TestOneEndpointChangeIsSmall(t *testing.T) {
	ops := map[int]map[int]int{}
	for _, size := range []int{200, 2000} {
		ops[size] = oneEndpointChanges(t, newFakeNode(t), size, oneEndpointServices)
	}
	for _, svc := range oneEndpointServices {
		if a, b := ops[200][svc], ops[2000][svc]; a != b || a == 0 || a > maxOneEndpointOps {
			t.Errorf("service %d: a one-endpoint change sends %d operations at 200 Services and %d at 2000; want the same, at most %d", svc, a, b, maxOneEndpointOps)
		}
	}
}

// maxOneEndpointOps bounds the netlink operations of a one-endpoint change
// of a Service with 10 endpoints. With affinity, its service chain holds
// one rule per endpoint, all rewritten.
const maxOneEndpointOps = 40

// compactEndpointChange applies a table of size Services in the compact
// layout to n, then replaces one endpoint of a Service: the change must be
// one element out of and one into one shared map, in 2 operations, with
// no rule or chain touched, and a plan after it finds nothing to do.
func compactEndpointChange(t *testing.T, n *node, size int) {
	t.Helper()
	cfg := benchConfig()
	cfg.NFTablesLayout = render.NFTablesLayoutCompact
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

// TestCompactEndpointChangeIsElementsOnly replaces one endpoint of a
// Service in the compact layout, at two sizes: the change is one element
// out of and one into one shared map, with no rule or chain touched, so
// the kernel has no table to validate.
func TestCompactEndpointChangeIsElementsOnly(t *testing.T) {
	for _, size := range []int{200, 2000} {
		compactEndpointChange(t, newFakeNode(t), size)
	}
}

// TestEndpointChangesOnKernel makes the changes of the two tests above in
// a kernel: it takes them (the compact one deletes and adds the same key
// of a map in one transaction) and reads them back as rendered.
func TestEndpointChangesOnKernel(t *testing.T) {
	oneEndpointChanges(t, newNode(t), 200, oneEndpointServices)
	compactEndpointChange(t, newNode(t), 200)
}
