package cluster

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// specialFixture holds every kind of address no Service can use, in every
// field a Service's traffic is sent to or on (issue 33: a loopback
// externalIP once gave "-d 127.0.0.1/32 ... -j KUBE-EXT-...").
const specialFixture = nodeYAML + `---
apiVersion: v1
kind: Service
metadata: {name: lo, namespace: ns}
spec: {clusterIP: 127.0.0.1, ports: [{port: 80, protocol: TCP}]}
---
apiVersion: v1
kind: Service
metadata: {name: mc, namespace: ns}
spec: {clusterIP: 239.1.1.1, ports: [{port: 80, protocol: TCP}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ns}
spec:
  type: LoadBalancer
  clusterIP: 10.96.0.10
  externalIPs: [127.0.0.1, 0.0.0.0, 169.254.1.1, 224.0.0.5, 239.1.1.1, 255.255.255.255, 203.0.113.5]
  ports: [{name: http, port: 80, protocol: TCP, nodePort: 30080}]
status:
  loadBalancer:
    ingress: [{ip: 127.0.0.2, ipMode: VIP}, {ip: 198.51.100.7, ipMode: VIP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: ns, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints:
- {addresses: [127.0.0.1]}
- {addresses: [0.0.0.0]}
- {addresses: [169.254.0.5]}
- {addresses: [224.0.0.1]}
- {addresses: [239.2.2.2]}
- {addresses: [255.255.255.255]}
- {addresses: [10.0.0.9]}
ports: [{name: http, port: 8080, protocol: TCP}]
`

func TestBuildSkipsAddressesNoServiceCanUse(t *testing.T) {
	tables, warnings := mustBuild(t, specialFixture, Config{NodeName: "node-1"})
	if got := portNames(tables.IPv4); !slices.Equal(got, []string{"ns/web:http/TCP"}) {
		t.Errorf("ports = %v, want only ns/web:http/TCP", got)
	}
	sp := tables.IPv4.Ports[0]
	if got := addrStrings(sp.ExternalIPs); !slices.Equal(got, []string{"203.0.113.5"}) {
		t.Errorf("externalIPs = %v", got)
	}
	if got := addrStrings(sp.LoadBalancerVIPs); !slices.Equal(got, []string{"198.51.100.7"}) {
		t.Errorf("load-balancer IPs = %v", got)
	}
	if got := epStrings(sp.AllEndpoints); !slices.Equal(got, []string{"10.0.0.9:8080"}) {
		t.Errorf("endpoints = %v", got)
	}
	for _, want := range []string{
		`service ns/lo: clusterIP "127.0.0.1" is a loopback address, which no Service can use: skipped`,
		`service ns/mc: clusterIP "239.1.1.1" is a multicast address, which no Service can use: skipped`,
		`service ns/web: externalIPs[0] "127.0.0.1" is a loopback address, which the API server refuses: ignored`,
		`service ns/web: externalIPs[1] "0.0.0.0" is unspecified, which the API server refuses: ignored`,
		`service ns/web: externalIPs[2] "169.254.1.1" is a link-local address, which the API server refuses: ignored`,
		`service ns/web: externalIPs[3] "224.0.0.5" is a link-local multicast address, which the API server refuses: ignored`,
		`service ns/web: externalIPs[4] "239.1.1.1" is a multicast address, which no Service can use: ignored`,
		`service ns/web: externalIPs[5] "255.255.255.255" is the broadcast address, which no Service can use: ignored`,
		`service ns/web: status.loadBalancer.ingress[0].ip "127.0.0.2" is a loopback address, which no Service can use: ignored`,
		`endpointslice ns/web-1: endpoints[0].addresses[0] "127.0.0.1" is a loopback address, which the API server refuses: endpoint skipped`,
		`endpointslice ns/web-1: endpoints[1].addresses[0] "0.0.0.0" is unspecified, which the API server refuses: endpoint skipped`,
		`endpointslice ns/web-1: endpoints[2].addresses[0] "169.254.0.5" is a link-local address, which the API server refuses: endpoint skipped`,
		`endpointslice ns/web-1: endpoints[3].addresses[0] "224.0.0.1" is a link-local multicast address, which the API server refuses: endpoint skipped`,
		`endpointslice ns/web-1: endpoints[4].addresses[0] "239.2.2.2" is a multicast address, which no Service can use: endpoint skipped`,
		`endpointslice ns/web-1: endpoints[5].addresses[0] "255.255.255.255" is the broadcast address, which no Service can use: endpoint skipped`,
	} {
		if !slices.Contains(warnings, want) {
			t.Errorf("no warning %q in:\n%s", want, strings.Join(warnings, "\n"))
		}
	}
}

func TestBuildSkipsSpecialIPv6Addresses(t *testing.T) {
	in := nodeYAML + `---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ns}
spec:
  clusterIP: "fd00:10:96::10"
  externalIPs: ["::1", "fe80::1", "ff02::1", "ff0e::1", "2001:db8::5"]
  ports: [{name: http, port: 80, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: ns, labels: {kubernetes.io/service-name: web}}
addressType: IPv6
endpoints: [{addresses: ["::"]}, {addresses: ["::ffff:127.0.0.1"]}, {addresses: ["ff05::2"]}, {addresses: ["fd00::9"]}]
ports: [{name: http, port: 8080, protocol: TCP}]
`
	tables, warnings := mustBuild(t, in, Config{NodeName: "node-1"})
	if len(tables.IPv6.Ports) != 1 {
		t.Fatalf("IPv6 ports = %v", portNames(tables.IPv6))
	}
	sp := tables.IPv6.Ports[0]
	if got := addrStrings(sp.ExternalIPs); !slices.Equal(got, []string{"2001:db8::5"}) {
		t.Errorf("externalIPs = %v", got)
	}
	if got := epStrings(sp.AllEndpoints); !slices.Equal(got, []string{"[fd00::9]:8080"}) {
		t.Errorf("endpoints = %v\n%s", got, strings.Join(warnings, "\n"))
	}
	if n := countContaining(warnings, "which the API server refuses"); n != 4 {
		t.Errorf("%d warnings of addresses the API server refuses, want 4 (::1, fe80::1, ff02::1, ::):\n%s", n, strings.Join(warnings, "\n"))
	}
	if n := countContaining(warnings, "multicast address, which no Service can use"); n != 2 {
		t.Errorf("%d warnings of global multicast addresses, want 2 (ff0e::1, ff05::2):\n%s", n, strings.Join(warnings, "\n"))
	}
}

// TestBuildSkipsServiceCIDRsThatTakeTheNodesTraffic checks the tool's
// rule for ServiceCIDRs, which the API server takes whatever their size:
// nftables mode drops what is sent into them and is no Service's, so
// 0.0.0.0/1 and 128.0.0.0/1 once cut every packet the node sent out, and
// 0.0.0.0/0 rendered a rule the kernel refused.
func TestBuildSkipsServiceCIDRsThatTakeTheNodesTraffic(t *testing.T) {
	in := nodeYAML + `---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: halves}
spec: {cidrs: [0.0.0.0/1, "::/1"]}
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: halves-2}
spec: {cidrs: [128.0.0.0/1]}
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: all}
spec: {cidrs: [0.0.0.0/0, "::/0"]}
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: nodes}
spec: {cidrs: [172.18.0.0/16, "2001:db8::/64"]}
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: special}
spec: {cidrs: [169.254.0.0/16, "fe80::/64"]}
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: wide6}
spec: {cidrs: ["fd00::/48"]}
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: kubernetes}
spec: {cidrs: [10.96.0.0/12, "fd00:10:96::/64"]}
`
	tables, warnings := mustBuild(t, in, Config{NodeName: "node-1"})
	if got := prefixStrings(tables.IPv4.ServiceCIDRs); !slices.Equal(got, []string{"10.96.0.0/12"}) {
		t.Errorf("IPv4 ServiceCIDRs = %v\n%s", got, strings.Join(warnings, "\n"))
	}
	if got := prefixStrings(tables.IPv6.ServiceCIDRs); !slices.Equal(got, []string{"fd00:10:96::/64"}) {
		t.Errorf("IPv6 ServiceCIDRs = %v\n%s", got, strings.Join(warnings, "\n"))
	}
	for _, want := range []string{
		"servicecidr halves: spec.cidrs[0] 0.0.0.0/1 is wider than /8: ignored, so that the node keeps its own traffic there",
		"servicecidr halves-2: spec.cidrs[0] 128.0.0.0/1 is wider than /8: ignored",
		"servicecidr all: spec.cidrs[0] 0.0.0.0/0 is wider than /8: ignored",
		"servicecidr all: spec.cidrs[1] ::/0 is wider than /64: ignored",
		"servicecidr nodes: spec.cidrs[0] 172.18.0.0/16 holds the node's IP 172.18.0.2: ignored",
		"servicecidr nodes: spec.cidrs[1] 2001:db8::/64 holds the node's IP 2001:db8::1: ignored",
		"servicecidr special: spec.cidrs[0] 169.254.0.0/16 overlaps 169.254.0.0/16 (a link-local address): ignored",
		"servicecidr special: spec.cidrs[1] fe80::/64 overlaps fe80::/10 (a link-local address): ignored",
		"servicecidr wide6: spec.cidrs[0] fd00::/48 is wider than /64: ignored",
	} {
		if countContaining(warnings, want) != 1 {
			t.Errorf("no warning %q in:\n%s", want, strings.Join(warnings, "\n"))
		}
	}
	// The same rule holds for --service-cidr.
	tables, warnings = mustBuild(t, nodeYAML, Config{NodeName: "node-1", ServiceCIDRs: prefixes("0.0.0.0/0", "127.0.0.0/16", "10.96.0.0/16")})
	if got := prefixStrings(tables.IPv4.ServiceCIDRs); !slices.Equal(got, []string{"10.96.0.0/16"}) {
		t.Errorf("--service-cidr: ServiceCIDRs = %v", got)
	}
	if countContaining(warnings, "config: service CIDR 127.0.0.0/16 overlaps 127.0.0.0/8 (a loopback address): ignored") != 1 {
		t.Errorf("warnings:\n%s", strings.Join(warnings, "\n"))
	}
}

func countContaining(list []string, s string) int {
	n := 0
	for _, l := range list {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

func addrStrings(list []netip.Addr) []string {
	var out []string
	for _, a := range list {
		out = append(out, a.String())
	}
	return out
}

func prefixStrings(list []netip.Prefix) []string {
	var out []string
	for _, p := range list {
		out = append(out, p.String())
	}
	return out
}
