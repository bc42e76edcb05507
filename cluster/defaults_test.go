package cluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/yaml"
)

// decodeOne decodes a single object document of the given kind.
func decodeOne(t *testing.T, kind, body string) *Snapshot {
	t.Helper()
	apiVersion := "v1"
	if kind == "EndpointSlice" {
		apiVersion = "discovery.k8s.io/v1"
	}
	return mustDecode(t, "apiVersion: "+apiVersion+"\nkind: "+kind+"\nmetadata: {name: x, namespace: ns}\n"+body)
}

// TestDefaultService: a Service read from a file has the spec the API
// server would store for it. want is the whole stored spec (and status),
// read without defaults.
func TestDefaultService(t *testing.T) {
	tests := []struct {
		name     string
		in       string // the object's spec and status
		want     string // the spec (and status) the API server stores
		warnings []string
	}{{
		name: "everything left out",
		in:   `spec: {clusterIP: 10.96.0.1, ports: [{port: 80}]}`,
		want: `spec: {type: ClusterIP, clusterIP: 10.96.0.1, clusterIPs: [10.96.0.1], ipFamilies: [IPv4], ipFamilyPolicy: SingleStack,
  sessionAffinity: None, internalTrafficPolicy: Cluster, ports: [{port: 80, protocol: TCP, targetPort: 80}]}`,
	}, {
		name: "as the API server returns it: unchanged",
		in: `spec: {type: NodePort, clusterIP: 10.96.0.1, clusterIPs: [10.96.0.1, "fd00::1"], ipFamilies: [IPv4, IPv6],
  ipFamilyPolicy: PreferDualStack, sessionAffinity: ClientIP, sessionAffinityConfig: {clientIP: {timeoutSeconds: 60}},
  externalTrafficPolicy: Local, internalTrafficPolicy: Local,
  ports: [{name: http, port: 80, protocol: UDP, targetPort: http, nodePort: 30080}]}`,
		want: `spec: {type: NodePort, clusterIP: 10.96.0.1, clusterIPs: [10.96.0.1, "fd00::1"], ipFamilies: [IPv4, IPv6],
  ipFamilyPolicy: PreferDualStack, sessionAffinity: ClientIP, sessionAffinityConfig: {clientIP: {timeoutSeconds: 60}},
  externalTrafficPolicy: Local, internalTrafficPolicy: Local,
  ports: [{name: http, port: 80, protocol: UDP, targetPort: http, nodePort: 30080}]}`,
	}, {
		name: "ClientIP affinity without a timeout; NodePort without policies or nodePort",
		in:   `spec: {type: NodePort, clusterIP: 10.96.0.1, sessionAffinity: ClientIP, ports: [{port: 80, targetPort: 0}]}`,
		want: `spec: {type: NodePort, clusterIP: 10.96.0.1, clusterIPs: [10.96.0.1], ipFamilies: [IPv4], ipFamilyPolicy: SingleStack,
  sessionAffinity: ClientIP, sessionAffinityConfig: {clientIP: {timeoutSeconds: 10800}},
  externalTrafficPolicy: Cluster, internalTrafficPolicy: Cluster, ports: [{port: 80, protocol: TCP, targetPort: 80}]}`,
		warnings: []string{"snapshot.yaml: Service ns/x: ports[0] has no nodePort: the API server would allocate one, " +
			"which a file cannot know: no NodePort rules for it"},
	}, {
		name: "None affinity drops its config; ClusterIP with externalIPs is externally accessible",
		in: `spec: {clusterIP: 10.96.0.1, externalIPs: [192.0.2.1], sessionAffinity: None,
  sessionAffinityConfig: {clientIP: {timeoutSeconds: 60}}, ports: [{port: 80, targetPort: ""}]}`,
		want: `spec: {type: ClusterIP, clusterIP: 10.96.0.1, clusterIPs: [10.96.0.1], ipFamilies: [IPv4], ipFamilyPolicy: SingleStack,
  externalIPs: [192.0.2.1], sessionAffinity: None, externalTrafficPolicy: Cluster, internalTrafficPolicy: Cluster,
  ports: [{port: 80, protocol: TCP, targetPort: 80}]}`,
	}, {
		name: "LoadBalancer: allocateLoadBalancerNodePorts and ipMode",
		in: `spec: {type: LoadBalancer, clusterIP: 10.96.0.1, ports: [{port: 80, nodePort: 30080}]}
status: {loadBalancer: {ingress: [{ip: 192.0.2.1}, {hostname: lb.example.com}, {ip: 192.0.2.2, ipMode: Proxy}]}}`,
		want: `spec: {type: LoadBalancer, clusterIP: 10.96.0.1, clusterIPs: [10.96.0.1], ipFamilies: [IPv4], ipFamilyPolicy: SingleStack,
  sessionAffinity: None, externalTrafficPolicy: Cluster, internalTrafficPolicy: Cluster, allocateLoadBalancerNodePorts: true,
  ports: [{port: 80, protocol: TCP, targetPort: 80, nodePort: 30080}]}
status: {loadBalancer: {ingress: [{ip: 192.0.2.1, ipMode: VIP}, {hostname: lb.example.com}, {ip: 192.0.2.2, ipMode: Proxy}]}}`,
	}, {
		name: "LoadBalancer without NodePorts needs none",
		in:   `spec: {type: LoadBalancer, clusterIP: 10.96.0.1, allocateLoadBalancerNodePorts: false, ports: [{port: 80}]}`,
		want: `spec: {type: LoadBalancer, clusterIP: 10.96.0.1, clusterIPs: [10.96.0.1], ipFamilies: [IPv4], ipFamilyPolicy: SingleStack,
  sessionAffinity: None, externalTrafficPolicy: Cluster, internalTrafficPolicy: Cluster, allocateLoadBalancerNodePorts: false,
  ports: [{port: 80, protocol: TCP, targetPort: 80}]}`,
	}, {
		name: "no clusterIP: the API server would allocate one",
		in:   `spec: {ports: [{port: 80}]}`,
		want: `spec: {type: ClusterIP, sessionAffinity: None, internalTrafficPolicy: Cluster, ipFamilyPolicy: SingleStack,
  ports: [{port: 80, protocol: TCP, targetPort: 80}]}`,
		warnings: []string{"snapshot.yaml: Service ns/x: no spec.clusterIP: the API server would allocate one, which a file cannot know: not proxied"},
	}, {
		name: "dual-stack policy with one clusterIP: the API server would allocate the other",
		in:   `spec: {clusterIP: "fd00::1", ipFamilyPolicy: PreferDualStack, ports: [{port: 80}]}`,
		want: `spec: {type: ClusterIP, clusterIP: "fd00::1", clusterIPs: ["fd00::1"], ipFamilies: [IPv6], ipFamilyPolicy: PreferDualStack,
  sessionAffinity: None, internalTrafficPolicy: Cluster, ports: [{port: 80, protocol: TCP, targetPort: 80}]}`,
		warnings: []string{"snapshot.yaml: Service ns/x: ipFamilyPolicy PreferDualStack with one clusterIP: a dual-stack cluster " +
			"would allocate a second one, which a file cannot know: proxied in one family"},
	}, {
		name: "two clusterIPs without a policy default to SingleStack (which the API server then rejects)",
		in:   `spec: {clusterIP: 10.96.0.1, clusterIPs: [10.96.0.1, "fd00::1"], ports: [{port: 80}]}`,
		want: `spec: {type: ClusterIP, clusterIP: 10.96.0.1, clusterIPs: [10.96.0.1, "fd00::1"], ipFamilies: [IPv4, IPv6],
  ipFamilyPolicy: SingleStack, sessionAffinity: None, internalTrafficPolicy: Cluster, ports: [{port: 80, protocol: TCP, targetPort: 80}]}`,
	}, {
		name: "headless without selector: RequireDualStack, no families inferred",
		in:   `spec: {clusterIP: None, ports: [{port: 80}]}`,
		want: `spec: {type: ClusterIP, clusterIP: None, clusterIPs: [None], ipFamilyPolicy: RequireDualStack,
  sessionAffinity: None, internalTrafficPolicy: Cluster, ports: [{port: 80, protocol: TCP, targetPort: 80}]}`,
	}, {
		name: "headless with selector: SingleStack",
		in:   `spec: {clusterIP: None, selector: {app: x}}`,
		want: `spec: {type: ClusterIP, clusterIP: None, clusterIPs: [None], ipFamilyPolicy: SingleStack, selector: {app: x},
  sessionAffinity: None, internalTrafficPolicy: Cluster}`,
	}, {
		name: "ExternalName: no IP fields, no internalTrafficPolicy",
		in:   `spec: {type: ExternalName, externalName: example.com, ports: [{port: 80}]}`,
		want: `spec: {type: ExternalName, externalName: example.com, sessionAffinity: None, ports: [{port: 80, protocol: TCP, targetPort: 80}]}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := decodeOne(t, "Service", tt.in)
			var want corev1.Service
			if err := yaml.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			got := s.Services[0]
			if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want.Status, got.Status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.warnings, warningStrings(s.Warnings)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultEndpointSlice(t *testing.T) {
	s := decodeOne(t, "EndpointSlice", `addressType: IPv4
ports: [{port: 80}, {name: dns, port: 53, protocol: UDP}, {name: "", port: 81, protocol: SCTP}]
endpoints: [{addresses: [10.0.0.1]}]
`)
	var want discoveryv1.EndpointSlice
	if err := yaml.Unmarshal([]byte(`addressType: IPv4
ports: [{name: "", port: 80, protocol: TCP}, {name: dns, port: 53, protocol: UDP}, {name: "", port: 81, protocol: SCTP}]
endpoints: [{addresses: [10.0.0.1]}]
`), &want); err != nil {
		t.Fatal(err)
	}
	got := s.EndpointSlices[0]
	if diff := cmp.Diff(want.Ports, got.Ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
	// Conditions are not defaulted: kube-proxy reads unset as ready and serving.
	if diff := cmp.Diff(want.Endpoints, got.Endpoints); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
}

func TestDefaultNode(t *testing.T) {
	tests := []struct {
		name, in     string
		wantPodCIDR  string
		wantPodCIDRs []string
	}{
		{name: "podCIDR only", in: `{podCIDR: 10.244.0.0/24}`,
			wantPodCIDR: "10.244.0.0/24", wantPodCIDRs: []string{"10.244.0.0/24"}},
		{name: "podCIDRs only", in: `{podCIDRs: [10.244.0.0/24, "fd00:10::/64"]}`,
			wantPodCIDR: "10.244.0.0/24", wantPodCIDRs: []string{"10.244.0.0/24", "fd00:10::/64"}},
		{name: "both, in step", in: `{podCIDR: 10.244.0.0/24, podCIDRs: [10.244.0.0/24, "fd00:10::/64"]}`,
			wantPodCIDR: "10.244.0.0/24", wantPodCIDRs: []string{"10.244.0.0/24", "fd00:10::/64"}},
		{name: "both, differing: podCIDR wins", in: `{podCIDR: 10.244.9.0/24, podCIDRs: [10.244.0.0/24, "fd00:10::/64"]}`,
			wantPodCIDR: "10.244.9.0/24", wantPodCIDRs: []string{"10.244.9.0/24"}},
		{name: "neither", in: `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustDecode(t, "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\nspec: "+tt.in+"\n")
			spec := s.Nodes[0].Spec
			if spec.PodCIDR != tt.wantPodCIDR || !cmp.Equal(spec.PodCIDRs, tt.wantPodCIDRs) {
				t.Errorf("podCIDR %q, podCIDRs %q; want %q, %q", spec.PodCIDR, spec.PodCIDRs, tt.wantPodCIDR, tt.wantPodCIDRs)
			}
		})
	}
}

// TestUnnamedPortWrittenByHand is issue 15: a Service port and its
// EndpointSlice port, both without a name, match, and the endpoints serve.
func TestUnnamedPortWrittenByHand(t *testing.T) {
	in := `apiVersion: v1
kind: Service
metadata: {name: grpc, namespace: ns}
spec:
  clusterIP: 10.96.0.150
  ports: [{port: 50051, targetPort: 50051, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: grpc-1, namespace: ns, labels: {kubernetes.io/service-name: grpc}}
addressType: IPv4
ports: [{port: 50051, protocol: TCP}]
endpoints:
- {addresses: [10.244.1.151], conditions: {ready: true}}
- {addresses: [10.244.2.152], conditions: {ready: true}}
`
	tables, warnings := mustBuild(t, in, Config{NodeName: "node-1"})
	if len(tables.IPv4.Ports) != 1 {
		t.Fatalf("ports: %v", portNames(tables.IPv4))
	}
	if diff := cmpDiff([]string{"10.244.1.151:50051", "10.244.2.152:50051"}, epStrings(tables.IPv4.Ports[0].ClusterEndpoints)); diff != "" {
		t.Errorf("cluster endpoints (-want +got):\n%s", diff)
	}
	for _, w := range warnings {
		if w != "node node-1: the snapshot has no Node objects: node IPs come only from configuration, and there is no topology zone" {
			t.Errorf("unexpected warning: %s", w)
		}
	}
}

// Build keeps its own guard for snapshots built in code, which are not
// defaulted: a slice port without a name is ignored with a warning.
func TestBuildUndefaultedSlicePort(t *testing.T) {
	port := int32(80)
	snap := &Snapshot{
		Services: []corev1.Service{{}},
		EndpointSlices: []discoveryv1.EndpointSlice{{
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Port: &port}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
		}},
	}
	snap.Services[0].Name, snap.Services[0].Namespace, snap.Services[0].Spec.ClusterIP = "svc", "ns", "10.96.0.1"
	snap.Services[0].Spec.Ports = []corev1.ServicePort{{Port: 80}}
	snap.EndpointSlices[0].Name, snap.EndpointSlices[0].Namespace = "svc-1", "ns"
	snap.EndpointSlices[0].Labels = map[string]string{discoveryv1.LabelServiceName: "svc"}
	tables, warnings, err := Build(snap, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := tables.IPv4.Ports[0].AllEndpoints; len(got) != 0 {
		t.Errorf("endpoints %v, want none", got)
	}
	want := "endpointslice ns/svc-1: ports[0] has no name: ignored"
	found := false
	for _, w := range warnings {
		found = found || w.String() == want
	}
	if !found {
		t.Errorf("warnings %v lack %q", warnings, want)
	}
}
