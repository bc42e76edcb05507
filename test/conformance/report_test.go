package conformance

import (
	"strings"
	"testing"
)

// TestTableColumns checks that the table shows only the checks that ran:
// the host run has no ipvs column, the VM run only ipvs ones.
func TestTableColumns(t *testing.T) {
	for _, tc := range []struct {
		checks []Check
		header string
	}{
		{[]Check{CheckRules(IPTables), CheckRules(NFTables), CheckPlan(IPTables), CheckPlan(NFTables)},
			"scenario  iptables  nftables  plan-iptables  plan-nftables"},
		{[]Check{CheckPlan(IPVS), CheckRules(IPVS)}, "scenario  ipvs   plan-ipvs"},
	} {
		rp := &Report{}
		for _, c := range tc.checks {
			rp.Add(&Result{Scenario: "s", Check: c})
		}
		header, _, _ := strings.Cut(rp.Table(3), "\n")
		if strings.TrimSpace(header) != tc.header {
			t.Errorf("checks %v: header %q, want %q", tc.checks, header, tc.header)
		}
	}
}
