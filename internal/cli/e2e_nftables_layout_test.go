package cli

import (
	"strings"
	"testing"
)

// TestE2ENFTablesLayoutMigration moves a node between kube-proxy's layout
// and the compact one and back, with plan and apply only: each plan shows
// the service chains' numgen rules changing and nothing else, each apply
// leaves nothing to change, and the compact table holds no numgen map.
func TestE2ENFTablesLayoutMigration(t *testing.T) {
	t.Parallel()
	n := newE2ENode(t, "nft")
	compact := append([]string{"--nftables-layout=compact"}, nftablesArgs...)
	expect(t, n.run("apply", nftablesArgs...), ExitOK, "Applied (nftables)")
	kubeProxy := n.nft("list", "table", "ip", "kube-proxy")
	if !strings.Contains(kubeProxy, "numgen random mod 3 map {") {
		t.Fatalf("kube-proxy's layout has no numgen map:\n%s", kubeProxy)
	}

	r := expect(t, n.run("plan", compact...), ExitChanges, "+\t\tnumgen random mod 3 0 meta l4proto tcp dnat to ", "-\t\tmeta l4proto tcp dnat ip to numgen random mod 3 map {")
	for line := range strings.Lines(r.stdout) {
		if (strings.HasPrefix(line, "+\t") || strings.HasPrefix(line, "-\t")) && !strings.Contains(line, "numgen") && !strings.Contains(line, "dnat to ") && !strings.Contains(line, "goto endpoint-") {
			t.Errorf("the migration changes more than the endpoint choice: %q", line)
		}
	}
	expect(t, n.run("apply", compact...), ExitOK, "Applied (nftables)")
	expect(t, n.run("plan", compact...), ExitOK, "No changes")
	if listing := n.nft("list", "table", "ip", "kube-proxy"); strings.Contains(listing, " map {") || !strings.Contains(listing, "numgen random mod 2 0 ") {
		t.Fatalf("the compact layout has an anonymous map, or no numgen rule:\n%s", listing)
	}

	expect(t, n.run("plan", nftablesArgs...), ExitChanges, "numgen random mod 3 map {")
	expect(t, n.run("apply", nftablesArgs...), ExitOK, "Applied (nftables)")
	expect(t, n.run("plan", nftablesArgs...), ExitOK, "No changes")
	if back := n.nft("list", "table", "ip", "kube-proxy"); back != kubeProxy {
		t.Errorf("back in kube-proxy's layout, the table differs from the first apply:\nfirst:\n%s\nnow:\n%s", kubeProxy, back)
	}
}
