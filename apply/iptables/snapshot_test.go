package iptables_test

import (
	"fmt"
	"strings"
)

// svc describes one single-port Service for a test snapshot.
type svc struct {
	name       string
	ip         string
	port       int
	proto      string // "TCP" by default
	targetPort int
	nodePort   int
	endpoints  []string // pod IPs; 10.244.0.x are on node1, others on node2
}

const testNode = `apiVersion: v1
kind: Node
metadata:
  name: node1
spec:
  podCIDRs: [10.244.0.0/24]
status:
  addresses:
  - {type: InternalIP, address: 192.168.77.10}
`

// snapshot renders the Services as a multi-document YAML snapshot.
func snapshot(svcs ...svc) string {
	docs := []string{testNode}
	for _, s := range svcs {
		if s.proto == "" {
			s.proto = "TCP"
		}
		typ, np := "ClusterIP", ""
		if s.nodePort != 0 {
			typ, np = "NodePort", fmt.Sprintf(", nodePort: %d", s.nodePort)
		}
		docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %s, namespace: default}
spec:
  type: %s
  clusterIP: %s
  clusterIPs: [%s]
  ports:
  - {name: p, port: %d, targetPort: %d, protocol: %s%s}
`, s.name, typ, s.ip, s.ip, s.port, s.targetPort, s.proto, np))
		var eps strings.Builder
		for _, ip := range s.endpoints {
			node := "node2"
			if strings.HasPrefix(ip, "10.244.0.") {
				node = "node1"
			}
			fmt.Fprintf(&eps, "- addresses: [%s]\n  conditions: {ready: true}\n  nodeName: %s\n", ip, node)
		}
		if eps.Len() == 0 {
			continue
		}
		docs = append(docs, fmt.Sprintf(`apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %s-1
  namespace: default
  labels: {kubernetes.io/service-name: %s}
addressType: IPv4
ports:
- {name: p, port: %d, protocol: %s}
endpoints:
%s`, s.name, s.name, s.targetPort, s.proto, eps.String()))
	}
	return strings.Join(docs, "---\n")
}

// manyServices returns n filler Services with two endpoints each, which no
// pod serves: they make the tables large without being probed.
func manyServices(n int) []svc {
	out := make([]svc, n)
	for i := range out {
		out[i] = svc{
			name: fmt.Sprintf("filler%d", i), ip: fmt.Sprintf("10.96.%d.%d", 100+i/250, i%250+1),
			port: 80, targetPort: 8080,
			endpoints: []string{fmt.Sprintf("10.245.%d.%d", i/250, i%250+1), fmt.Sprintf("10.246.%d.%d", i/250, i%250+1)},
		}
	}
	return out
}
