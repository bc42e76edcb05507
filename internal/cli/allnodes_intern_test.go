package cli

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// equalPort must compare every field of ServicePort and Endpoint: one it
// missed would let a node take over another node's rules for a port that
// differs. A new field fails here until equalPort reads it.
func TestEqualPortCoversEveryField(t *testing.T) {
	if n := reflect.TypeFor[nodetable.ServicePort]().NumField(); n != 16 {
		t.Errorf("ServicePort has %d fields; equalPort compares 16", n)
	}
	if n := reflect.TypeFor[nodetable.Endpoint]().NumField(); n != 9 {
		t.Errorf("Endpoint has %d fields; equalEndpoint compares 9", n)
	}
	base := nodetable.ServicePort{AllEndpoints: []nodetable.Endpoint{{IP: netip.MustParseAddr("10.0.0.1"), Port: 80}}}
	changes := []func(*nodetable.ServicePort){
		func(p *nodetable.ServicePort) { p.Name.Port = "x" },
		func(p *nodetable.ServicePort) { p.ClusterIP = netip.MustParseAddr("10.96.0.1") },
		func(p *nodetable.ServicePort) { p.Port = 1 },
		func(p *nodetable.ServicePort) { p.NodePort = 1 },
		func(p *nodetable.ServicePort) { p.ExternalIPs = []netip.Addr{netip.MustParseAddr("1.1.1.1")} },
		func(p *nodetable.ServicePort) { p.LoadBalancerVIPs = []netip.Addr{netip.MustParseAddr("1.1.1.1")} },
		func(p *nodetable.ServicePort) {
			p.LoadBalancerSourceRanges = []netip.Prefix{netip.MustParsePrefix("1.1.1.0/24")}
		},
		func(p *nodetable.ServicePort) { p.HealthCheckNodePort = 1 },
		func(p *nodetable.ServicePort) { p.AffinityTimeoutSeconds = 1 },
		func(p *nodetable.ServicePort) { p.InternalPolicyLocal = true },
		func(p *nodetable.ServicePort) { p.ExternalPolicyLocal = true },
		func(p *nodetable.ServicePort) { p.HasEndpoints = true },
		func(p *nodetable.ServicePort) { p.ClusterEndpoints = p.AllEndpoints },
		func(p *nodetable.ServicePort) { p.LocalEndpoints = p.AllEndpoints },
		func(p *nodetable.ServicePort) { p.ReachableEndpoints = p.AllEndpoints },
		func(p *nodetable.ServicePort) {
			p.AllEndpoints = []nodetable.Endpoint{{IP: netip.MustParseAddr("10.0.0.2"), Port: 80}}
		},
		func(p *nodetable.ServicePort) {
			p.AllEndpoints = []nodetable.Endpoint{{IP: p.AllEndpoints[0].IP, Port: 81}}
		},
		func(p *nodetable.ServicePort) {
			p.AllEndpoints = []nodetable.Endpoint{{IP: p.AllEndpoints[0].IP, Port: 80, NodeName: "n"}}
		},
		func(p *nodetable.ServicePort) {
			p.AllEndpoints = []nodetable.Endpoint{{IP: p.AllEndpoints[0].IP, Port: 80, Local: true}}
		},
		func(p *nodetable.ServicePort) {
			p.AllEndpoints = []nodetable.Endpoint{{IP: p.AllEndpoints[0].IP, Port: 80, Ready: true}}
		},
		func(p *nodetable.ServicePort) {
			p.AllEndpoints = []nodetable.Endpoint{{IP: p.AllEndpoints[0].IP, Port: 80, Serving: true}}
		},
		func(p *nodetable.ServicePort) {
			p.AllEndpoints = []nodetable.Endpoint{{IP: p.AllEndpoints[0].IP, Port: 80, Terminating: true}}
		},
		func(p *nodetable.ServicePort) {
			p.AllEndpoints = []nodetable.Endpoint{{IP: p.AllEndpoints[0].IP, Port: 80, ZoneHints: []string{"z"}}}
		},
		func(p *nodetable.ServicePort) {
			p.AllEndpoints = []nodetable.Endpoint{{IP: p.AllEndpoints[0].IP, Port: 80, NodeHints: []string{"n"}}}
		},
	}
	for i, change := range changes {
		p := base
		change(&p)
		if equalPort(&base, &p) {
			t.Errorf("change %d: equalPort sees no difference", i)
		}
	}
	same := base
	same.AllEndpoints = []nodetable.Endpoint{base.AllEndpoints[0]}
	if !equalPort(&base, &same) {
		t.Error("equal ports in different lists: not equal")
	}
}
