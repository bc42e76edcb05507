package conformance

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/repo"
)

func TestAllowListMoved(t *testing.T) {
	file := filepath.Join(t.TempDir(), "allow.yaml")
	os.WriteFile(file, []byte(`entries:
- {scenario: "*", mode: plan-iptables, moved: true, line: "KUBE-SERVICES", reason: order}
`), 0o644)
	l, err := LoadAllowList(file)
	if err != nil {
		t.Fatal(err)
	}
	r := &Result{Scenario: "s", Check: CheckPlan(IPTables), Diff: []string{
		"--A KUBE-SERVICES -d 10.96.0.1/32 -j X", // moved: also added below
		"+-A KUBE-SERVICES -d 10.96.0.1/32 -j X",
		"+-A KUBE-SERVICES -d 10.96.0.9/32 -j Y", // new: not a move
	}}
	r.Explain(l)
	if !slices.Equal(r.Unexplained, r.Diff[2:]) {
		t.Errorf("unexplained = %q, want only the added rule", r.Unexplained)
	}
	if !r.Failed() {
		t.Error("a result with an unexplained line does not fail")
	}
	os.WriteFile(file, []byte("entries:\n- {scenario: a, mode: iptables, line: x}\n"), 0o644)
	if _, err := LoadAllowList(file); err == nil {
		t.Error("an entry without a reason was accepted")
	}
}

func TestParseSyncMetrics(t *testing.T) {
	text := `# TYPE kubeproxy_sync_proxy_rules_duration_seconds histogram
kubeproxy_sync_proxy_rules_duration_seconds_bucket{ip_family="IPv4",le="0.001"} 0
kubeproxy_sync_proxy_rules_duration_seconds_sum{ip_family="IPv4"} 1.5
kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv4"} 2
kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} 1.7e+09
kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv6"} 0
`
	m, err := parseSyncMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if m["IPv4"].Syncs != 2 || m["IPv4"].Total != 1500*time.Millisecond || m.LastSync().Unix() != 1_700_000_000 {
		t.Errorf("IPv4 = %+v", m["IPv4"])
	}
	if !m.Synced("IPv4") || m.Synced("IPv4", "IPv6") {
		t.Errorf("Synced: IPv4 has synced, IPv6 has not: %+v", m)
	}
}

// TestAllowListFile checks the repository's allow-list without a kernel,
// so that a broken entry fails even where the conformance run skips.
func TestAllowListFile(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	l, err := LoadAllowList(filepath.Join(root, "testdata", "conformance", "allowlist.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	scenarios, err := LoadScenarios(root)
	if err != nil {
		t.Fatal(err)
	}
	// The known kube-proxy race, as the rules check and the plan check
	// print it, is explained in both; nothing else about that rule is.
	const missing = `drop comment "Drop traffic to unallocated ClusterIPs"`
	for check, line := range map[Check]string{
		CheckRules(NFTables): "+ ip chain cluster-ips-check rule ip daddr 10.96.0.0/16 " + missing,
		CheckPlan(NFTables):  "+\t\tip daddr 10.96.0.0/16 " + missing,
	} {
		if l.Match("session-affinity", check, line, false) == nil {
			t.Errorf("%s: the allow-list does not explain %q", check, line)
		}
	}
	if l.Match("session-affinity", CheckPlan(NFTables), "-\t\tip daddr 10.96.0.0/16 "+missing, false) != nil {
		t.Errorf("the allow-list explains the rule missing from the tool's side too")
	}
	for _, e := range l.Entries {
		found := false
		for _, s := range scenarios {
			if ok, _ := filepath.Match(e.Scenario, s.Name); ok {
				found = true
			}
		}
		if !found {
			t.Errorf("allow-list entry names no golden scenario: %s", e)
		}
	}
}
