package traffic_test

import (
	"log/slog"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	proxy "github.com/kubectl-svcproxy/kubectl-svcproxy/proxy/userspace"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/traffic"
)

// userspaceScenarios are the scenarios whose behaviour v1.25's userspace
// mode had. The others test what it never did: it honoured no traffic
// policies and no loadBalancerSourceRanges, and it could not keep a
// client's address, since the proxy opens its own connection to the
// endpoint.
var userspaceScenarios = []string{"clusterip", "nodeport", "external-ip", "no-endpoints", "session-affinity", "hairpin", "dual-stack"}

// TestUserspaceTraffic loads the userspace mode's portal rules into each
// lab's node with iptables-restore and runs the proxy with its sockets in
// that namespace, then checks where real connections land. It runs every
// scenario twice: with the proxy on every address (--bind-address unset:
// traffic from outside the node is REDIRECTed) and bound to the node IP
// (it is DNATed there instead). The backend always sees the proxy's own
// address, so the probes' source checks are dropped.
func TestUserspaceTraffic(t *testing.T) {
	testenv.RequireRoot(t)
	backend := "nft"
	if _, err := exec.LookPath("iptables-nft-restore"); err != nil {
		backend = "legacy"
	}
	testenv.RequireTools(t, "iptables-"+backend+"-restore", "ip6tables-"+backend+"-restore")
	variants := []struct {
		name   string
		listen netip.Addr
	}{{"any-address", netip.Addr{}}, {"node-ip", netlab.NodeIP}}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			for _, sc := range traffic.Scenarios() {
				if !slices.Contains(userspaceScenarios, sc.Name) {
					continue
				}
				if sc.Probes = userspaceProbes(sc, v.listen); len(sc.Probes) == 0 {
					continue
				}
				t.Run(sc.Name, func(t *testing.T) {
					t.Parallel()
					traffic.Run(t, sc, traffic.Mode{Name: "userspace", Load: userspaceLoader(backend, v.listen), Evaluator: userspaceEvaluator(v.listen)})
				})
			}
		})
	}
}

// userspaceProbes drops the probes' source checks and the probes that the
// userspace mode cannot pass here:
//   - v1.25 sent the node's own traffic to an external IP to the proxy only
//     when that IP is a local address, so "node to externalIP" leaves the
//     node untouched;
//   - with the proxy on every address, pod traffic is REDIRECTed to the
//     address of the interface it came in on, and a lab pod's veth has no
//     IPv4 address on the node (as with unnumbered CNI veths), so the
//     kernel drops it. The node-ip variant covers pods.
func userspaceProbes(sc traffic.Scenario, listen netip.Addr) []traffic.Probe {
	pods := map[string]bool{}
	for _, p := range sc.Pods {
		pods[p.Name] = true
	}
	var out []traffic.Probe
	for _, pr := range sc.Probes {
		switch {
		case pr.From == traffic.FromNode && strings.HasPrefix(pr.Dst.Addr().String(), "192.0.2."):
			continue
		case !listen.IsValid() && pods[pr.From] && pr.Dst.Addr().Is4():
			continue
		}
		pr.SourceIs = netip.Addr{}
		out = append(out, pr)
	}
	return out
}

// userspaceLoader renders node1's userspace rulesets with the proxy bound
// to listen (the zero Addr: every address), loads their portal rules and
// starts a proxier whose sockets live in the lab's node. The proxier stops
// before the lab is torn down.
func userspaceLoader(backend string, listen netip.Addr) traffic.Loader {
	return func(t *testing.T, lab *netlab.Lab, snap *cluster.Snapshot) {
		t.Helper()
		var sets []*userspace.Ruleset
		for _, table := range usedTables(t, snap) {
			rs := render.Userspace(table, labConfig(), render.UserspaceOptions{ListenIP: listen})
			sets = append(sets, rs)
			bin := "iptables-" + backend
			if table.Family == nodetable.IPv6 {
				bin = "ip6tables-" + backend
			}
			rules := rs.IPTables.String()
			if _, err := lab.Node().RunInput(t.Context(), []byte(rules), bin+"-restore", "-w", "10"); err != nil {
				t.Fatalf("load %s portal rules: %v\n%s", table.Family, err, rules)
			}
			t.Cleanup(func() { logRulesIfFailed(t, lab, bin+"-save") })
		}
		logs := &lockedBuilder{}
		p := proxy.New(proxy.Options{
			InNamespace: lab.Node().Do,
			Logger:      slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: proxy.LevelConn})),
		})
		t.Cleanup(func() {
			p.Close()
			if t.Failed() {
				t.Logf("proxy log:\n%s", logs)
			}
		})
		if err := p.Update(sets); err != nil {
			t.Fatalf("start the proxy: %v", err)
		}
	}
}

// lockedBuilder is a log sink for concurrent writers.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
