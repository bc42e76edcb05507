package cluster

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// nodeYAML is node-1 in zone-a, dual-stack.
const nodeYAML = `apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {topology.kubernetes.io/zone: zone-a}
spec:
  podCIDRs: [10.244.1.0/24, "fd00:10:244:1::/64"]
status:
  addresses:
  - {type: Hostname, address: node-1}
  - {type: ExternalIP, address: 203.0.113.1}
  - {type: InternalIP, address: 172.18.0.2}
  - {type: InternalIP, address: 172.18.0.3}
  - {type: ExternalIP, address: "2001:db8::1"}
---
apiVersion: v1
kind: Node
metadata: {name: node-2, labels: {topology.kubernetes.io/zone: zone-b}}
`

// buildFixture is a small dual-stack cluster for round trips and fuzzing.
const buildFixture = nodeYAML + `---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: kubernetes}
spec: {cidrs: [10.96.0.0/16, "fd00:10:96::/112"]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ns1}
spec:
  type: LoadBalancer
  clusterIP: 10.96.0.10
  clusterIPs: [10.96.0.10, "fd00:10:96::10"]
  ipFamilies: [IPv4, IPv6]
  ipFamilyPolicy: RequireDualStack
  externalTrafficPolicy: Local
  healthCheckNodePort: 30999
  ports:
  - {name: http, port: 80, nodePort: 30080, protocol: TCP}
status:
  loadBalancer:
    ingress: [{ip: 192.0.2.10}, {ip: "2001:db8::10"}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-v4, namespace: ns1, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.1.5], nodeName: node-1, conditions: {ready: true}}
- {addresses: [10.244.2.5], nodeName: node-2, conditions: {ready: true}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-v6, namespace: ns1, labels: {kubernetes.io/service-name: web}}
addressType: IPv6
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: ["fd00:10:244:1::5"], nodeName: node-1, conditions: {ready: true}}
`

// netipOpts lets go-cmp compare netip values, which have unexported fields.
var netipOpts = cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{})

func cmpDiff(want, got any) string { return cmp.Diff(want, got, netipOpts) }
func cmpEqual(want, got any) bool  { return cmp.Equal(want, got, netipOpts) }

func mustBuild(t *testing.T, in string, cfg Config) (*nodetable.Tables, []string) {
	t.Helper()
	tables, warnings, err := Build(mustDecode(t, in), cfg)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return tables, warningStrings(warnings)
}

// portNames lists a table's ports as "ns/name:port/PROTO".
func portNames(t *nodetable.ServiceTable) []string {
	var out []string
	for _, sp := range t.Ports {
		out = append(out, sp.Name.String()+"/"+string(sp.Name.Protocol))
	}
	return out
}

func epStrings(eps []nodetable.Endpoint) []string {
	var out []string
	for _, ep := range eps {
		out = append(out, ep.String())
	}
	return out
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func TestBuildFixture(t *testing.T) {
	tables, warnings := mustBuild(t, buildFixture, Config{NodeName: "node-1"})
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}
	want4 := &nodetable.ServiceTable{
		Family: nodetable.IPv4,
		Node: nodetable.Node{
			Name:     "node-1",
			IPs:      addrs("172.18.0.2"),
			PodCIDRs: prefixes("10.244.1.0/24"),
			Zone:     "zone-a",
		},
		ServiceCIDRs: prefixes("10.96.0.0/16"),
		Ports: []nodetable.ServicePort{{
			Name:                nodetable.ServicePortName{Namespace: "ns1", Name: "web", Port: "http", Protocol: nodetable.TCP},
			ClusterIP:           netip.MustParseAddr("10.96.0.10"),
			Port:                80,
			NodePort:            30080,
			LoadBalancerVIPs:    addrs("192.0.2.10"),
			HealthCheckNodePort: 30999,
			ExternalPolicyLocal: true,
			AllEndpoints: []nodetable.Endpoint{
				{IP: netip.MustParseAddr("10.244.1.5"), Port: 8080, NodeName: "node-1", Local: true, Ready: true, Serving: true},
				{IP: netip.MustParseAddr("10.244.2.5"), Port: 8080, NodeName: "node-2", Ready: true, Serving: true},
			},
		}},
	}
	sp := &want4.Ports[0]
	sp.ClusterEndpoints = sp.AllEndpoints
	sp.LocalEndpoints = sp.AllEndpoints[:1]
	sp.ReachableEndpoints = sp.AllEndpoints
	sp.HasEndpoints = true
	if diff := cmpDiff(want4, tables.IPv4); diff != "" {
		t.Errorf("IPv4 table (-want +got):\n%s", diff)
	}

	v6 := tables.ForFamily(nodetable.IPv6)
	if diff := cmpDiff(nodetable.Node{Name: "node-1", IPs: addrs("2001:db8::1"), PodCIDRs: prefixes("fd00:10:244:1::/64"), Zone: "zone-a"}, v6.Node); diff != "" {
		t.Errorf("IPv6 node (-want +got):\n%s", diff)
	}
	if len(v6.Ports) != 1 || v6.Ports[0].ClusterIP != netip.MustParseAddr("fd00:10:96::10") ||
		!cmpEqual(v6.Ports[0].LoadBalancerVIPs, addrs("2001:db8::10")) ||
		!cmpEqual(epStrings(v6.Ports[0].AllEndpoints), []string{"[fd00:10:244:1::5]:8080"}) {
		t.Errorf("IPv6 ports: %+v", v6.Ports)
	}
	if tables.ForFamily("IPv5") != nil {
		t.Error("ForFamily(IPv5) is not nil")
	}
}

func TestBuildServices(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want4    []string // IPv4 port names
		want6    []string // IPv6 port names
		warnings []string
		check    func(t *testing.T, tables *nodetable.Tables)
	}{{
		name: "headless, ExternalName and proxy-name services are skipped",
		in: `apiVersion: v1
kind: Service
metadata: {name: headless, namespace: ns}
spec: {clusterIP: None, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: noip, namespace: ns}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: ns}
spec: {type: ExternalName, externalName: example.com, clusterIP: 10.96.0.5, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: other, namespace: ns, labels: {service.kubernetes.io/service-proxy-name: cilium}}
spec: {clusterIP: 10.96.0.6, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: kept, namespace: ns}
spec: {clusterIP: 10.96.0.7, ports: [{port: 80}]}
`,
		want4: []string{"ns/kept/TCP"},
	}, {
		name: "dual-stack split",
		in: `apiVersion: v1
kind: Service
metadata: {name: dual, namespace: ns}
spec:
  type: ClusterIP
  clusterIP: "fd00::10"
  clusterIPs: ["fd00::10", 10.96.0.10]
  ipFamilies: [IPv6, IPv4]
  ipFamilyPolicy: RequireDualStack
  externalIPs: [192.0.2.1, "2001:db8::1"]
  ports: [{name: dns, port: 53, protocol: UDP}, {name: dns, port: 53, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: v4only, namespace: ns}
spec: {clusterIP: 10.96.0.11, ipFamilies: [IPv4], ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: v6only, namespace: ns}
spec: {clusterIP: "fd00::11", ports: [{port: 80}]}
`,
		want4: []string{"ns/dual:dns/TCP", "ns/dual:dns/UDP", "ns/v4only/TCP"},
		want6: []string{"ns/dual:dns/TCP", "ns/dual:dns/UDP", "ns/v6only/TCP"},
		check: func(t *testing.T, tables *nodetable.Tables) {
			v4, v6 := tables.IPv4.Ports[0], tables.IPv6.Ports[0]
			if v4.ClusterIP.String() != "10.96.0.10" || v6.ClusterIP.String() != "fd00::10" {
				t.Errorf("clusterIPs %v, %v", v4.ClusterIP, v6.ClusterIP)
			}
			if !cmpEqual(v4.ExternalIPs, addrs("192.0.2.1")) || !cmpEqual(v6.ExternalIPs, addrs("2001:db8::1")) {
				t.Errorf("externalIPs %v, %v", v4.ExternalIPs, v6.ExternalIPs)
			}
		},
	}, {
		name: "load-balancer IPs: ipMode Proxy and hostnames skipped, source ranges trimmed",
		in: `apiVersion: v1
kind: Service
metadata: {name: lb, namespace: ns}
spec:
  type: LoadBalancer
  clusterIP: 10.96.0.20
  loadBalancerSourceRanges: [" 192.0.2.0/24 ", "2001:db8::/32", "010.1.0.0/16"]
  ports: [{port: 443, nodePort: 30443}]
status:
  loadBalancer:
    ingress:
    - {ip: 192.0.2.20, ipMode: VIP}
    - {ip: 192.0.2.21, ipMode: Proxy}
    - {hostname: lb.example.com}
    - {ip: 192.0.2.22}
`,
		want4: []string{"ns/lb/TCP"},
		check: func(t *testing.T, tables *nodetable.Tables) {
			sp := tables.IPv4.Ports[0]
			if !cmpEqual(sp.LoadBalancerVIPs, addrs("192.0.2.20", "192.0.2.22")) {
				t.Errorf("LoadBalancerVIPs = %v", sp.LoadBalancerVIPs)
			}
			if !cmpEqual(sp.LoadBalancerSourceRanges, prefixes("192.0.2.0/24", "10.1.0.0/16")) {
				t.Errorf("LoadBalancerSourceRanges = %v", sp.LoadBalancerSourceRanges)
			}
			if sp.HealthCheckNodePort != 0 || sp.ExternalPolicyLocal {
				t.Errorf("eTP Cluster: healthCheckNodePort %d, externalPolicyLocal %v", sp.HealthCheckNodePort, sp.ExternalPolicyLocal)
			}
		},
	}, {
		name: "a zero source range allows all",
		in: `apiVersion: v1
kind: Service
metadata: {name: lb, namespace: ns}
spec:
  type: LoadBalancer
  clusterIP: 10.96.0.20
  clusterIPs: [10.96.0.20, "fd00::20"]
  ipFamilies: [IPv4, IPv6]
  ipFamilyPolicy: RequireDualStack
  loadBalancerSourceRanges: [192.0.2.0/24, 0.0.0.0/0, "2001:db8::/32"]
  ports: [{port: 443}]
`,
		want4: []string{"ns/lb/TCP"},
		want6: []string{"ns/lb/TCP"},
		check: func(t *testing.T, tables *nodetable.Tables) {
			if got := tables.IPv4.Ports[0].LoadBalancerSourceRanges; got != nil {
				t.Errorf("IPv4 source ranges = %v, want none", got)
			}
			if got := tables.IPv6.Ports[0].LoadBalancerSourceRanges; !cmpEqual(got, prefixes("2001:db8::/32")) {
				t.Errorf("IPv6 source ranges = %v", got)
			}
		},
	}, {
		name: "session affinity: default timeout, explicit timeout, none",
		in: `apiVersion: v1
kind: Service
metadata: {name: a-default, namespace: ns}
spec: {clusterIP: 10.96.0.1, sessionAffinity: ClientIP, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: b-explicit, namespace: ns}
spec:
  clusterIP: 10.96.0.2
  sessionAffinity: ClientIP
  sessionAffinityConfig: {clientIP: {timeoutSeconds: 60}}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: c-none, namespace: ns}
spec:
  clusterIP: 10.96.0.3
  sessionAffinity: None
  sessionAffinityConfig: {clientIP: {timeoutSeconds: 60}}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: d-empty-config, namespace: ns}
spec: {clusterIP: 10.96.0.4, sessionAffinity: ClientIP, sessionAffinityConfig: {clientIP: {}}, ports: [{port: 80}]}
`,
		want4: []string{"ns/a-default/TCP", "ns/b-explicit/TCP", "ns/c-none/TCP", "ns/d-empty-config/TCP"},
		check: func(t *testing.T, tables *nodetable.Tables) {
			var got []int32
			for _, sp := range tables.IPv4.Ports {
				got = append(got, sp.AffinityTimeoutSeconds)
			}
			if want := []int32{10800, 60, 0, 10800}; !cmpEqual(got, want) {
				t.Errorf("affinity timeouts = %v, want %v", got, want)
			}
		},
	}, {
		name: "traffic policies and health check",
		in: `apiVersion: v1
kind: Service
metadata: {name: a-lb-local, namespace: ns}
spec: {type: LoadBalancer, clusterIP: 10.96.0.1, externalTrafficPolicy: Local, healthCheckNodePort: 31000, ports: [{port: 80, nodePort: 30001}]}
---
apiVersion: v1
kind: Service
metadata: {name: b-np-local, namespace: ns}
spec: {type: NodePort, clusterIP: 10.96.0.2, externalTrafficPolicy: Local, healthCheckNodePort: 31001, ports: [{port: 80, nodePort: 30002}]}
---
apiVersion: v1
kind: Service
metadata: {name: c-clusterip-local, namespace: ns}
spec: {clusterIP: 10.96.0.3, externalTrafficPolicy: Local, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: d-externalip-local, namespace: ns}
spec: {clusterIP: 10.96.0.4, externalTrafficPolicy: Local, externalIPs: [192.0.2.4], ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: e-internal-local, namespace: ns}
spec: {clusterIP: 10.96.0.5, internalTrafficPolicy: Local, ports: [{port: 80}]}
`,
		want4: []string{"ns/a-lb-local/TCP", "ns/b-np-local/TCP", "ns/c-clusterip-local/TCP", "ns/d-externalip-local/TCP", "ns/e-internal-local/TCP"},
		check: func(t *testing.T, tables *nodetable.Tables) {
			type policy struct {
				ExternalLocal, InternalLocal bool
				HealthCheck                  int32
			}
			var got []policy
			for _, sp := range tables.IPv4.Ports {
				got = append(got, policy{sp.ExternalPolicyLocal, sp.InternalPolicyLocal, sp.HealthCheckNodePort})
			}
			want := []policy{{true, false, 31000}, {true, false, 0}, {false, false, 0}, {true, false, 0}, {false, true, 0}}
			if diff := cmpDiff(want, got); diff != "" {
				t.Errorf("policies (-want +got):\n%s", diff)
			}
		},
	}, {
		name: "invalid data skips the field, port or service with a warning",
		in: `apiVersion: v1
kind: Service
metadata: {name: bad-ip, namespace: ns1}
spec: {clusterIP: 10.0.0.300, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: bad-family, namespace: ns1}
spec: {clusterIP: 10.0.0.5, clusterIPs: [10.0.0.5], ipFamilies: [IPv6], ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: fields, namespace: ns1}
spec:
  type: LoadBalancer
  clusterIP: 10.0.0.1
  externalIPs: [1.2.3, 192.0.2.1]
  loadBalancerSourceRanges: [10.0.0.0/33]
  ports:
  - {name: a, port: 70000}
  - {name: b, port: 80, protocol: FOO}
  - {name: c, port: 80, nodePort: -1}
  - {name: d, port: 80}
  - {name: d, port: 81}
status:
  loadBalancer: {ingress: [{ip: "not-an-ip"}]}
---
apiVersion: v1
kind: Service
metadata: {name: good, namespace: ns1}
spec: {clusterIP: 10.0.0.2, ports: [{port: 80}]}
`,
		want4: []string{"ns1/fields:d/TCP", "ns1/good/TCP"},
		warnings: []string{
			`service ns1/bad-family: clusterIP "10.0.0.5" is not IPv6 as spec.ipFamilies[0] says: skipped`,
			`service ns1/bad-ip: invalid clusterIP "10.0.0.300": skipped`,
			`service ns1/fields: invalid ports[0].port 70000: port skipped`,
			`service ns1/fields: invalid ports[1].protocol "FOO": port skipped`,
			`service ns1/fields: invalid ports[2].nodePort -1: port skipped`,
			`service ns1/fields: ports[4] has the same name "d" and protocol as an earlier port: replaces it`,
			`service ns1/fields: invalid externalIPs[0] "1.2.3": ignored`,
			`service ns1/fields: invalid status.loadBalancer.ingress[0].ip "not-an-ip": ignored`,
			`service ns1/fields: invalid loadBalancerSourceRanges[0] "10.0.0.0/33": ignored`,
		},
		check: func(t *testing.T, tables *nodetable.Tables) {
			sp := tables.IPv4.Ports[0]
			if sp.Port != 81 || !cmpEqual(sp.ExternalIPs, addrs("192.0.2.1")) || sp.LoadBalancerSourceRanges != nil {
				t.Errorf("fields port: %+v", sp)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tables, warnings := mustBuild(t, nodeYAML+"---\n"+tt.in, Config{NodeName: "node-1"})
			if diff := cmpDiff(tt.want4, portNames(tables.IPv4)); diff != "" {
				t.Errorf("IPv4 ports (-want +got):\n%s", diff)
			}
			if diff := cmpDiff(tt.want6, portNames(tables.IPv6)); diff != "" {
				t.Errorf("IPv6 ports (-want +got):\n%s", diff)
			}
			if diff := cmpDiff(tt.warnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if tt.check != nil {
				tt.check(t, tables)
			}
		})
	}
}

// endpointsCase is one Service port and its slices, checked on node-1 (zone-a).
type endpointsCase struct {
	name     string
	service  string // spec fields in flow style
	ports    string // spec.ports; [{name: http, port: 80}] when empty
	slices   string // EndpointSlices of svc, YAML documents
	all      []string
	cluster  []string
	local    []string
	reach    []string
	hasAny   bool
	warnings []string
}

func TestBuildEndpoints(t *testing.T) {
	tests := []endpointsCase{{
		name:    "ports matched by name and protocol; proxy-name, headless and other-family slices ignored",
		service: `clusterIP: 10.96.0.1`,
		slices: `metadata: {name: svc-a, labels: {kubernetes.io/service-name: svc}}
addressType: IPv4
ports: [{name: http, port: 8080}, {name: http, port: 9090, protocol: UDP}, {name: other, port: 7070}, {port: 1}]
endpoints: [{addresses: [10.0.0.1]}, {addresses: []}]
---
metadata: {name: svc-b, labels: {kubernetes.io/service-name: svc, service.kubernetes.io/headless: ""}}
addressType: IPv4
ports: [{name: http, port: 8080}]
endpoints: [{addresses: [10.0.0.2]}]
---
metadata: {name: svc-c, labels: {kubernetes.io/service-name: svc, service.kubernetes.io/service-proxy-name: x}}
addressType: IPv4
ports: [{name: http, port: 8080}]
endpoints: [{addresses: [10.0.0.3]}]
---
metadata: {name: svc-d, labels: {kubernetes.io/service-name: svc}}
addressType: FQDN
ports: [{name: http, port: 8080}]
endpoints: [{addresses: [example.com]}]
---
metadata: {name: svc-e}
addressType: IPv4
ports: [{name: http, port: 8080}]
endpoints: [{addresses: [10.0.0.5]}]
`,
		all:     []string{"10.0.0.1:8080"},
		cluster: []string{"10.0.0.1:8080"},
		reach:   []string{"10.0.0.1:8080"},
		hasAny:  true,
		warnings: []string{
			// ports[3] has no name: defaulted to "", it matches no Service port.
			"endpointslice ns/svc-a: endpoints[1] has no addresses: ignored",
			"endpointslice ns/svc-e: no kubernetes.io/service-name label: skipped",
		},
	}, {
		name:    "dedupe keeps a non-terminating endpoint over a terminating one; sorted as strings",
		service: `clusterIP: 10.96.0.1`,
		slices: `metadata: {name: svc-a, labels: {kubernetes.io/service-name: svc}}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints:
- {addresses: [10.0.0.10], conditions: {ready: true}}
- {addresses: [10.0.0.9], conditions: {ready: false, serving: true, terminating: true}}
---
metadata: {name: svc-b, labels: {kubernetes.io/service-name: svc}}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints:
- {addresses: [10.0.0.9], conditions: {ready: true}}
- {addresses: [10.0.0.10], conditions: {ready: false, serving: true, terminating: true}}
`,
		all:     []string{"10.0.0.10:80", "10.0.0.9:80"},
		cluster: []string{"10.0.0.10:80", "10.0.0.9:80"},
		reach:   []string{"10.0.0.10:80", "10.0.0.9:80"},
		hasAny:  true,
	}, {
		name:    "one slice: sorted as strings, and a duplicate deduped as across slices",
		service: `clusterIP: 10.96.0.1`,
		slices: `metadata: {name: svc-a, labels: {kubernetes.io/service-name: svc}}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints:
- {addresses: [10.0.0.9], conditions: {ready: true}}
- {addresses: [10.0.0.10], conditions: {ready: false, serving: true, terminating: true}}
- {addresses: [10.0.0.9], conditions: {ready: false, serving: true, terminating: true}}
- {addresses: [10.0.0.10], conditions: {ready: true}}
`,
		all:     []string{"10.0.0.10:80", "10.0.0.9:80"},
		cluster: []string{"10.0.0.10:80", "10.0.0.9:80"},
		reach:   []string{"10.0.0.10:80", "10.0.0.9:80"},
		hasAny:  true,
	}, {
		name:    "one slice: a duplicate in order is deduped",
		service: `clusterIP: 10.96.0.1`,
		slices: `metadata: {name: svc-a, labels: {kubernetes.io/service-name: svc}}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints:
- {addresses: [10.0.0.10], conditions: {ready: true}}
- {addresses: [10.0.0.10], conditions: {ready: false, serving: false, terminating: true}}
- {addresses: [10.0.0.9], conditions: {ready: false, serving: false}}
`,
		all:     []string{"10.0.0.10:80", "10.0.0.9:80"},
		cluster: []string{"10.0.0.10:80"},
		reach:   []string{"10.0.0.10:80"},
		hasAny:  true,
	}, {
		name:    "terminating fallback for cluster traffic",
		service: `clusterIP: 10.96.0.1`,
		slices: `metadata: {name: svc-a, labels: {kubernetes.io/service-name: svc}}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints:
- {addresses: [10.0.0.1], conditions: {ready: false, serving: true, terminating: true}}
- {addresses: [10.0.0.2], conditions: {ready: false, serving: false, terminating: true}}
- {addresses: [10.0.0.3], conditions: {ready: false, serving: false, terminating: false}}
`,
		all:     []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"},
		cluster: []string{"10.0.0.1:80"},
		reach:   []string{"10.0.0.1:80"},
		hasAny:  true,
	}, {
		name:    "no usable endpoints",
		service: `clusterIP: 10.96.0.1`,
		slices: `metadata: {name: svc-a, labels: {kubernetes.io/service-name: svc}}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints: [{addresses: [10.0.0.1], conditions: {ready: false, serving: false}}]
`,
		all: []string{"10.0.0.1:80"},
	}, {
		name:    "internal traffic policy Local uses only local endpoints",
		service: `clusterIP: 10.96.0.1, internalTrafficPolicy: Local`,
		slices:  readyOnTwoNodes,
		all:     []string{"10.0.0.1:80", "10.0.0.2:80"},
		local:   []string{"10.0.0.1:80"},
		reach:   []string{"10.0.0.1:80"},
		hasAny:  true,
	}, {
		name:    "external traffic policy Local uses both, local ones a subset",
		service: `type: NodePort, clusterIP: 10.96.0.1, externalTrafficPolicy: Local`,
		ports:   `[{name: http, port: 80, nodePort: 30080}]`,
		slices:  readyOnTwoNodes,
		all:     []string{"10.0.0.1:80", "10.0.0.2:80"},
		cluster: []string{"10.0.0.1:80", "10.0.0.2:80"},
		local:   []string{"10.0.0.1:80"},
		reach:   []string{"10.0.0.1:80", "10.0.0.2:80"},
		hasAny:  true,
	}, {
		name:    "local terminating fallback makes the reachable set a union",
		service: `type: NodePort, clusterIP: 10.96.0.1, externalTrafficPolicy: Local`,
		ports:   `[{name: http, port: 80, nodePort: 30080}]`,
		slices: `metadata: {name: svc-a, labels: {kubernetes.io/service-name: svc}}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints:
- {addresses: [10.0.0.1], nodeName: node-1, conditions: {ready: false, serving: true, terminating: true}}
- {addresses: [10.0.0.2], nodeName: node-2, conditions: {ready: true}}
`,
		all:     []string{"10.0.0.1:80", "10.0.0.2:80"},
		cluster: []string{"10.0.0.2:80"},
		local:   []string{"10.0.0.1:80"},
		reach:   []string{"10.0.0.1:80", "10.0.0.2:80"},
		hasAny:  true,
	}, {
		name:    "zone hints",
		service: `clusterIP: 10.96.0.1`,
		slices: `metadata: {name: svc-a, labels: {kubernetes.io/service-name: svc}}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints:
- {addresses: [10.0.0.1], nodeName: node-2, hints: {forZones: [{name: zone-a}]}}
- {addresses: [10.0.0.2], nodeName: node-2, hints: {forZones: [{name: zone-b}]}}
- {addresses: [10.0.0.3], nodeName: node-3, hints: {forZones: [{name: zone-b}, {name: zone-a}]}}
`,
		all:     []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"},
		cluster: []string{"10.0.0.1:80", "10.0.0.3:80"},
		reach:   []string{"10.0.0.1:80", "10.0.0.3:80"},
		hasAny:  true,
	}, {
		name:    "zone hints ignored when a ready endpoint has none",
		service: `clusterIP: 10.96.0.1`,
		slices: `metadata: {name: svc-a, labels: {kubernetes.io/service-name: svc}}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints:
- {addresses: [10.0.0.1], hints: {forZones: [{name: zone-a}]}}
- {addresses: [10.0.0.2]}
`,
		all:     []string{"10.0.0.1:80", "10.0.0.2:80"},
		cluster: []string{"10.0.0.1:80", "10.0.0.2:80"},
		reach:   []string{"10.0.0.1:80", "10.0.0.2:80"},
		hasAny:  true,
	}, {
		name:    "node hints win over zone hints, and union with local endpoints",
		service: `clusterIP: 10.96.0.1, type: NodePort, externalTrafficPolicy: Local`,
		ports:   `[{name: http, port: 80, nodePort: 30080}]`,
		slices: `metadata: {name: svc-a, labels: {kubernetes.io/service-name: svc}}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints:
- {addresses: [10.0.0.1], nodeName: node-1, hints: {forZones: [{name: zone-a}], forNodes: [{name: node-9}]}}
- {addresses: [10.0.0.2], nodeName: node-2, hints: {forZones: [{name: zone-a}], forNodes: [{name: node-1}]}}
- {addresses: [10.0.0.3], nodeName: node-3, hints: {forZones: [{name: zone-b}], forNodes: [{name: node-3}]}}
`,
		all:     []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"},
		cluster: []string{"10.0.0.2:80"},
		local:   []string{"10.0.0.1:80"},
		reach:   []string{"10.0.0.1:80", "10.0.0.2:80"},
		hasAny:  true,
	}, {
		name:    "invalid endpoint addresses are skipped with a warning",
		service: `clusterIP: 10.96.0.1`,
		slices: `metadata: {name: svc-a, labels: {kubernetes.io/service-name: svc}}
addressType: IPv4
ports: [{name: http, port: 80}, {name: http, port: 70000, protocol: UDP}]
endpoints:
- {addresses: [10.0.0.300]}
- {addresses: ["fd00::1"]}
- {addresses: [010.000.000.001]}
`,
		all:     []string{"10.0.0.1:80"},
		cluster: []string{"10.0.0.1:80"},
		reach:   []string{"10.0.0.1:80"},
		hasAny:  true,
		warnings: []string{
			`endpointslice ns/svc-a: invalid endpoints[0].addresses[0] "10.0.0.300": endpoint skipped`,
			`endpointslice ns/svc-a: endpoints[1].addresses[0] "fd00::1" is not IPv4 like the slice: endpoint skipped`,
			`endpointslice ns/svc-a: invalid ports[1].port 70000: ignored`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ports := tt.ports
			if ports == "" {
				ports = "[{name: http, port: 80}]"
			}
			in := nodeYAML + "---\napiVersion: v1\nkind: Service\nmetadata: {name: svc, namespace: ns}\n" +
				"spec: {ports: " + ports + ", " + tt.service + "}\n---\n" + sliceDocs(tt.slices)
			tables, warnings := mustBuild(t, in, Config{NodeName: "node-1"})
			if len(tables.IPv4.Ports) != 1 {
				t.Fatalf("ports: %v", portNames(tables.IPv4))
			}
			sp := tables.IPv4.Ports[0]
			for _, c := range []struct {
				what      string
				want, got []string
			}{
				{"all", tt.all, epStrings(sp.AllEndpoints)},
				{"cluster", tt.cluster, epStrings(sp.ClusterEndpoints)},
				{"local", tt.local, epStrings(sp.LocalEndpoints)},
				{"reachable", tt.reach, epStrings(sp.ReachableEndpoints)},
				{"warnings", tt.warnings, warnings},
			} {
				if diff := cmpDiff(c.want, c.got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", c.what, diff)
				}
			}
			if sp.HasEndpoints != tt.hasAny {
				t.Errorf("HasEndpoints = %v, want %v", sp.HasEndpoints, tt.hasAny)
			}
		})
	}
}

const readyOnTwoNodes = `metadata: {name: svc-a, labels: {kubernetes.io/service-name: svc}}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints:
- {addresses: [10.0.0.1], nodeName: node-1}
- {addresses: [10.0.0.2], nodeName: node-2}
`

// sliceDocs puts the type and namespace into each EndpointSlice document.
func sliceDocs(docs string) string {
	var out []string
	for _, d := range strings.Split(docs, "---\n") {
		d = strings.Replace(d, "metadata: {name:", "metadata: {namespace: ns, name:", 1)
		out = append(out, "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n"+d)
	}
	return strings.Join(out, "---\n")
}

func TestBuildNode(t *testing.T) {
	const services = `---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: a}
spec: {cidrs: [10.96.0.0/16, "fd00::/108", 10.96.0.0/16, bad]}
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: b}
spec: {cidrs: [10.0.0.0/24]}
`
	t.Run("not in snapshot", func(t *testing.T) {
		_, _, err := Build(mustDecode(t, nodeYAML), Config{NodeName: "node-9"})
		if err == nil || err.Error() != `node "node-9" not found in snapshot (have: node-1, node-2)` {
			t.Errorf("err = %v", err)
		}
		if !IsNodeNotFound(err) {
			t.Errorf("IsNodeNotFound(%v) = false", err)
		}
	})
	t.Run("no name and several nodes", func(t *testing.T) {
		_, _, err := Build(mustDecode(t, nodeYAML), Config{})
		if err == nil || !strings.Contains(err.Error(), "have: node-1, node-2") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("no name and one node", func(t *testing.T) {
		tables, _ := mustBuild(t, "apiVersion: v1\nkind: Node\nmetadata: {name: only}\nstatus: {addresses: [{type: InternalIP, address: 10.1.1.1}]}\n", Config{})
		if tables.IPv4.Node.Name != "only" || !cmpEqual(tables.IPv4.Node.IPs, addrs("10.1.1.1")) || tables.IPv6.Node.IPs != nil {
			t.Errorf("nodes: %+v %+v", tables.IPv4.Node, tables.IPv6.Node)
		}
	})
	t.Run("no nodes in snapshot", func(t *testing.T) {
		tables, warnings := mustBuild(t, services, Config{NodeName: "n", NodeIPs: addrs("192.0.2.1", "::ffff:192.0.2.2", "2001:db8::1")})
		if diff := cmpDiff([]string{
			"node n: the snapshot has no Node objects: node IPs come only from configuration, and there is no topology zone",
			`servicecidr a: invalid spec.cidrs[3] "bad": ignored`,
		}, warnings); diff != "" {
			t.Errorf("warnings (-want +got):\n%s", diff)
		}
		if want := (nodetable.Node{Name: "n", IPs: addrs("192.0.2.1", "192.0.2.2")}); !cmpEqual(want, tables.IPv4.Node) {
			t.Errorf("IPv4 node = %+v", tables.IPv4.Node)
		}
		if !cmpEqual(tables.IPv6.Node.IPs, addrs("2001:db8::1")) {
			t.Errorf("IPv6 node = %+v", tables.IPv6.Node)
		}
		if !cmpEqual(tables.IPv4.ServiceCIDRs, prefixes("10.0.0.0/24", "10.96.0.0/16")) ||
			!cmpEqual(tables.IPv6.ServiceCIDRs, prefixes("fd00::/108")) {
			t.Errorf("service CIDRs: %v %v", tables.IPv4.ServiceCIDRs, tables.IPv6.ServiceCIDRs)
		}
	})
	t.Run("overrides", func(t *testing.T) {
		tables, _ := mustBuild(t, nodeYAML+services, Config{
			NodeName:     "node-1",
			NodeIPs:      addrs("192.0.2.9"),
			ServiceCIDRs: prefixes("10.100.0.0/16", "fd01::/112"),
		})
		if !cmpEqual(tables.IPv4.Node.IPs, addrs("192.0.2.9")) || tables.IPv6.Node.IPs != nil {
			t.Errorf("node IPs: %v %v", tables.IPv4.Node.IPs, tables.IPv6.Node.IPs)
		}
		if !cmpEqual(tables.IPv4.ServiceCIDRs, prefixes("10.100.0.0/16")) || !cmpEqual(tables.IPv6.ServiceCIDRs, prefixes("fd01::/112")) {
			t.Errorf("service CIDRs: %v %v", tables.IPv4.ServiceCIDRs, tables.IPv6.ServiceCIDRs)
		}
	})
	t.Run("nil snapshot", func(t *testing.T) {
		tables, _, err := Build(nil, Config{NodeName: "n"})
		if err != nil || tables.IPv4 == nil || tables.IPv6 == nil || tables.IPv4.Ports == nil {
			t.Errorf("Build(nil) = %+v, %v", tables, err)
		}
	})
}
