package cli

import (
	"strings"
	"testing"
)

// TestE2ENFTablesLayoutMigration moves a node between kube-proxy's layout
// and the compact one and back, with plan and apply only: each plan shows
// the service chains' numgen rules changing and nothing else, each apply
// leaves nothing to change, and the compact table holds no anonymous map.
func TestE2ENFTablesLayoutMigration(t *testing.T) {
	t.Parallel()
	n := newE2ENode(t, "nft")
	compact := append([]string{"--nftables-layout=compact"}, nftablesArgs...)
	expect(t, n.run("apply", nftablesArgs...), ExitOK, "Applied (nftables)")
	kubeProxy := n.nft("list", "table", "ip", "kube-proxy")
	if !strings.Contains(kubeProxy, "numgen random mod 3 map {") {
		t.Fatalf("kube-proxy's layout has no numgen map:\n%s", kubeProxy)
	}

	r := expect(t, n.run("plan", compact...), ExitChanges, "+\tmap endpoint-addresses-", " map @endpoint-addresses-", "-\t\tmeta l4proto tcp dnat ip to numgen random mod 3 map {")
	for _, line := range changedOutsideEndpointsMap(r.stdout) {
		if !strings.Contains(line, "numgen") && !strings.Contains(line, "dnat to ") && !strings.Contains(line, "goto endpoint-") {
			t.Errorf("the migration changes more than the endpoint choice: %q", line)
		}
	}
	expect(t, n.run("apply", compact...), ExitOK, "Applied (nftables)")
	expect(t, n.run("plan", compact...), ExitOK, "No changes")
	if listing := n.nft("list", "table", "ip", "kube-proxy"); strings.Contains(listing, " map {") || !strings.Contains(listing, "map @endpoint-addresses-") {
		t.Fatalf("the compact layout has an anonymous map, or no rule that picks from the shared one:\n%s", listing)
	}

	expect(t, n.run("plan", nftablesArgs...), ExitChanges, "numgen random mod 3 map {")
	expect(t, n.run("apply", nftablesArgs...), ExitOK, "Applied (nftables)")
	expect(t, n.run("plan", nftablesArgs...), ExitOK, "No changes")
	if back := n.nft("list", "table", "ip", "kube-proxy"); back != kubeProxy {
		t.Errorf("back in kube-proxy's layout, the table differs from the first apply:\nfirst:\n%s\nnow:\n%s", kubeProxy, back)
	}
}

// changedOutsideEndpointsMap lists a plan's added and removed lines,
// leaving out the compact layout's new maps of endpoints as a whole.
func changedOutsideEndpointsMap(plan string) []string {
	var out []string
	inMap := false
	for line := range strings.Lines(plan) {
		switch {
		case strings.HasPrefix(line, "+\tmap endpoint-addresses-"):
			inMap = true
		case inMap:
			inMap = !strings.HasPrefix(line, "+\t}")
		case strings.HasPrefix(line, "+\t") || strings.HasPrefix(line, "-\t"):
			out = append(out, line)
		}
	}
	return out
}
