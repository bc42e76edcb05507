package render_test

import "testing"

// TestGoldenUserspaceKernelRoundTrip loads each golden case's portal rules
// into a throwaway network namespace with both iptables backends and
// checks that iptables-save gives back exactly the rendered rules.
func TestGoldenUserspaceKernelRoundTrip(t *testing.T) {
	requireRoot(t, "iptables-legacy-restore", "iptables-nft-restore")
	for _, gc := range loadGoldenCases(t) {
		sets, _ := gc.renderUserspace(t, gc.Input)
		for _, backend := range []string{"legacy", "nft"} {
			t.Run(gc.Name+"/"+backend, func(t *testing.T) {
				for _, rs := range sets {
					got := kernelRoundTrip(t, backend, rs.Family, rs.IPTables.String())
					assertKernelHolds(t, rs.IPTables, got)
				}
			})
		}
	}
}
