package render_test

import (
	"bytes"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// ipsetSaveExtras are the create options ipset save adds on its own.
var ipsetSaveExtras = regexp.MustCompile(` bucketsize \d+| initval 0x[0-9a-f]+`)

// TestGoldenIPVSKernelRoundTrip loads each golden case's ipsets and helper
// iptables chains into a throwaway network namespace and checks that
// `ipset save` and iptables-save give them back unchanged. Rules with the
// ipvs match are left out: it needs the xt_ipvs module, which a kernel
// without IPVS does not have. The IPVS virtual servers themselves are not
// loaded here (no IPVS in the kernel).
func TestGoldenIPVSKernelRoundTrip(t *testing.T) {
	requireRoot(t, "ipset", "iptables-restore", "ip6tables-restore")
	for _, gc := range loadGoldenCases(t) {
		t.Run(gc.Name, func(t *testing.T) {
			sets, _ := gc.renderIPVS(t, gc.Input)
			for _, rs := range sets {
				loadIPVSHelpers(t, rs)
			}
		})
	}
}

func loadIPVSHelpers(t *testing.T, rs *ipvs.Ruleset) {
	t.Helper()
	var setText bytes.Buffer
	var want []string
	for _, s := range rs.Sets {
		one := &ipvs.Ruleset{Family: rs.Family, Sets: []*ipvs.Set{s}}
		for _, line := range strings.Split(one.String(), "\n") {
			if strings.HasPrefix(line, "create ") || strings.HasPrefix(line, "add ") {
				setText.WriteString(line + "\n")
				want = append(want, line)
			}
		}
	}
	rules := withoutIPVSMatch(rs.IPTables)
	bin := "iptables"
	if rs.Family == nodetable.IPv6 {
		bin = "ip6tables"
	}
	script := `ipset restore <<'EOF'
` + setText.String() + `EOF
` + bin + `-restore <<'EOF'
` + rules.String() + `EOF
ipset save && echo '## iptables' && ` + bin + `-save`
	out, err := exec.Command("unshare", "--net", "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	setsOut, iptOut, _ := strings.Cut(string(out), "## iptables\n")
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(setsOut), "\n") {
		got = append(got, ipsetSaveExtras.ReplaceAllString(line, ""))
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: ipset save differs (-rendered +kernel):\n%s", rs.Family, diff)
	}
	dump, err := ipt.Parse([]byte(iptOut), rs.Family)
	if err != nil {
		t.Fatalf("parse %s-save: %v", bin, err)
	}
	assertKernelHolds(t, rules, dump)
}

func withoutIPVSMatch(rs *ipt.Ruleset) *ipt.Ruleset {
	out := &ipt.Ruleset{Family: rs.Family}
	for _, tbl := range rs.Tables {
		nt := &ipt.Table{Name: tbl.Name}
		for _, c := range tbl.Chains {
			nc := &ipt.Chain{Name: c.Name, Policy: c.Policy}
			if ipt.IsBuiltin(tbl.Name, c.Name) {
				nc.Policy = "ACCEPT"
			}
			for _, r := range c.Rules {
				if !strings.Contains(string(r), " -m ipvs ") {
					nc.Rules = append(nc.Rules, r)
				}
			}
			nt.Chains = append(nt.Chains, nc)
		}
		out.Tables = append(out.Tables, nt)
	}
	return out
}
