package traffic

import (
	"fmt"
	"io/fs"
	"net/netip"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// TestScenariosAreConsistent checks the table itself, without a kernel:
// every snapshot loads and builds cleanly, every endpoint has a pod that
// serves it, and every probe names a known source and known backends.
func TestScenariosAreConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			if !nameRE.MatchString(sc.Name) || seen[sc.Name] {
				t.Errorf("scenario name %q is not a unique lowercase identifier", sc.Name)
			}
			seen[sc.Name] = true
			served := checkPods(t, sc.Pods)
			checkSnapshot(t, sc, served)
			checkProbes(t, sc)
		})
	}
}

// TestFixturesAreScenarios checks that each scenario's snapshot ends with
// its own testdata/scenarios file, and that no file there is left unused.
func TestFixturesAreScenarios(t *testing.T) {
	names := map[string]bool{}
	for _, sc := range Scenarios() {
		names[sc.Name] = true
		if !strings.HasSuffix(sc.Snapshot, objects(sc.Name)) {
			t.Errorf("scenario %s: the snapshot is not that of testdata/scenarios/%s.yaml", sc.Name, sc.Name)
		}
	}
	files, err := fs.Glob(fixtures, "testdata/scenarios/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !names[strings.TrimSuffix(path.Base(f), ".yaml")] {
			t.Errorf("%s is the snapshot of no scenario", f)
		}
	}
}

// checkPods checks the pods' names and addresses and returns what they
// serve, as "proto ip:port".
func checkPods(t *testing.T, pods []PodSpec) map[string]bool {
	t.Helper()
	names, addrs := map[string]bool{}, map[netip.Addr]bool{}
	served := map[string]bool{}
	for _, p := range pods {
		switch {
		case !nameRE.MatchString(p.Name), names[p.Name]:
			t.Errorf("pod name %q is not a unique DNS label", p.Name)
		case p.Name == FromClient || p.Name == FromClient2 || p.Name == FromNode:
			t.Errorf("pod name %q is taken by a probe source", p.Name)
		}
		names[p.Name] = true
		for _, ip := range p.IPs {
			if addrs[ip] || !netlab.ClusterCIDR.Contains(ip) && !netlab.ClusterCIDRv6.Contains(ip) {
				t.Errorf("pod %s: address %s is taken or outside the cluster CIDRs", p.Name, ip)
			}
			addrs[ip] = true
			for _, port := range p.TCP {
				served[serving(netlab.TCP, netip.AddrPortFrom(ip, port))] = true
			}
			for _, port := range p.UDP {
				served[serving(netlab.UDP, netip.AddrPortFrom(ip, port))] = true
			}
		}
	}
	return served
}

func serving(proto netlab.Proto, ap netip.AddrPort) string { return fmt.Sprintf("%s %s", proto, ap) }

// checkSnapshot decodes and builds the snapshot for node1 and checks that
// every endpoint is served by a pod.
func checkSnapshot(t *testing.T, sc Scenario, served map[string]bool) {
	t.Helper()
	snap, err := cluster.Decode(sc.Name+".yaml", []byte(sc.Snapshot))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range snap.Warnings {
		t.Errorf("decode: %s", w)
	}
	tables, warnings, err := cluster.Build(snap, cluster.Config{NodeName: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warnings {
		t.Errorf("build: %s", w)
	}
	ports := 0
	for _, table := range []*nodetable.ServiceTable{tables.IPv4, tables.IPv6} {
		ports += len(table.Ports)
		for _, sp := range table.Ports {
			for _, ep := range sp.AllEndpoints {
				key := serving(netlab.Proto(sp.Name.Protocol.Lower()), netip.AddrPortFrom(ep.IP, uint16(ep.Port)))
				if !served[key] {
					t.Errorf("%s: endpoint %s has no pod serving it", sp.Name, key)
				}
			}
		}
	}
	if ports == 0 {
		t.Error("the snapshot has no Service ports")
	}
}

// checkProbes checks the probes' names, sources and expectations.
func checkProbes(t *testing.T, sc Scenario) {
	t.Helper()
	sources := []string{FromClient, FromClient2, FromNode}
	pods := []string{}
	for _, p := range sc.Pods {
		pods = append(pods, p.Name)
	}
	names := map[string]bool{}
	for _, pr := range sc.Probes {
		if names[pr.Name] || pr.Name == "" {
			t.Errorf("probe name %q is empty or repeated", pr.Name)
		}
		names[pr.Name] = true
		if !slices.Contains(sources, pr.From) && !slices.Contains(pods, pr.From) {
			t.Errorf("probe %q: unknown source %q", pr.Name, pr.From)
		}
		if !pr.Dst.IsValid() || pr.Proto != netlab.TCP && pr.Proto != netlab.UDP {
			t.Errorf("probe %q: invalid destination %s or protocol %q", pr.Name, pr.Dst, pr.Proto)
		}
		e := pr.Expect
		if (e.Outcome == Answered) != (len(e.Backends) > 0) {
			t.Errorf("probe %q: %s with backends %v", pr.Name, e.Outcome, e.Backends)
		}
		for _, b := range e.Backends {
			if !slices.Contains(pods, b) {
				t.Errorf("probe %q: expected backend %q is not a pod", pr.Name, b)
			}
		}
	}
	if len(sc.Probes) == 0 {
		t.Error("no probes")
	}
}

func TestExpectationAttempts(t *testing.T) {
	tests := []struct {
		e          Expectation
		minN, maxN int
	}{
		{Spread("a", "b"), 20, 200},
		{Spread("a").Times(5), 5, 50},
		{Sticky("a", "b"), 20, 20},
		{Refuse(), 1, 1},
		{Drop().Times(3), 3, 3},
	}
	for _, tt := range tests {
		if minN, maxN := tt.e.attempts(); minN != tt.minN || maxN != tt.maxN {
			t.Errorf("%v.attempts() = %d, %d; want %d, %d", tt.e, minN, maxN, tt.minN, tt.maxN)
		}
	}
}
