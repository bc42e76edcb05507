package conformance

import (
	"context"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// comparePortTraffic connects to sp's ClusterIP from the external client
// (the container path, REDIRECT) and from the node itself (the host path,
// DNAT), through kube-proxy v1.25 and through the tool, and compares the
// backends reached: every ready endpoint with round robin, one with
// ClientIP affinity. Service ports without ready endpoints are left out:
// v1.25 accepted and closed such connections, the tool refuses them (see
// proxy/userspace/README.md).
func comparePortTraffic(t *testing.T, sp *nodetable.ServicePort, kpLab, toolLab *netlab.Lab) {
	t.Helper()
	proto := map[nodetable.Protocol]netlab.Proto{nodetable.TCP: netlab.TCP, nodetable.UDP: netlab.UDP}[sp.Name.Protocol]
	var ready []string
	for _, ep := range sp.AllEndpoints {
		if ep.Ready && ep.IP.Is4() && !slices.Contains(ready, podName(ep.IP)) {
			ready = append(ready, podName(ep.IP))
		}
	}
	if proto == "" || !sp.ClusterIP.Is4() || len(ready) == 0 {
		return
	}
	slices.Sort(ready)
	affinity := sp.AffinityTimeoutSeconds > 0
	want := strings.Join(ready, ",")
	if affinity {
		want = "one of " + want
	}
	dst := netip.AddrPortFrom(sp.ClusterIP, uint16(sp.Port))
	for _, side := range []struct {
		name string
		lab  *netlab.Lab
	}{{"kube-proxy v1.25", kpLab}, {"kubectl-svcproxy", toolLab}} {
		for _, from := range []struct {
			name string
			ns   netlab.NS
		}{{"client", side.lab.Client()}, {"node", side.lab.Node()}} {
			got, err := reached(from.ns, proto, dst, 3*len(ready))
			if affinity && len(got) == 1 && slices.Contains(ready, got[0]) {
				continue
			}
			if err != nil || strings.Join(got, ",") != want {
				t.Errorf("%s %s from %s through %s: reached %q (%v), want %q", sp.Name, dst, from.name, side.name, got, err, want)
			}
		}
	}
}

// reached probes dst n times from ns and returns the names of the
// backends that answered, sorted.
func reached(ns netlab.NS, proto netlab.Proto, dst netip.AddrPort, n int) ([]string, error) {
	counts, err := ns.Spread(context.Background(), proto, dst, n)
	return slices.Sorted(maps.Keys(counts)), err
}
