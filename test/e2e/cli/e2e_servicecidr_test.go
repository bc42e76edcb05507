package cli

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// ipv4HalvesServiceCIDRs are two ServiceCIDRs that together cover all of
// IPv4, as the probe of issue 33 gave them; defaultServiceCIDR is the API
// server's default one. Each ends with a document separator.
const (
	ipv4HalvesServiceCIDRs = `apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: low}
spec: {cidrs: [0.0.0.0/1]}
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: high}
spec: {cidrs: [128.0.0.0/1]}
---
`
	defaultServiceCIDR = `apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: kubernetes}
spec: {cidrs: [10.96.0.0/16]}
---
`
)

// wholeSpaceSnapshot is the lab's node with ServiceCIDRs that together
// cover all of IPv4, a Service and its endpoint.
var wholeSpaceSnapshot = `apiVersion: v1
kind: Node
metadata: {name: node1}
status: {addresses: [{type: InternalIP, address: ` + netlab.NodeIP.String() + `}]}
---
` + ipv4HalvesServiceCIDRs + `apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: all}
spec: {cidrs: [0.0.0.0/0]}
---
` + defaultServiceCIDR + `apiVersion: v1
kind: Service
metadata: {name: kubernetes, namespace: default}
spec: {clusterIP: 10.96.0.1, ports: [{name: https, port: 443, protocol: TCP}]}
`

// TestE2ENodeKeepsItsTrafficWithWideServiceCIDRs applies nftables mode
// with ServiceCIDRs 0.0.0.0/1 and 128.0.0.0/1, which once made the node
// drop every packet it sent that was not to a Service, and 0.0.0.0/0,
// which the kernel refused: the apply succeeds, the node still reaches
// the client, and the rules drop traffic to unallocated addresses of the
// one ServiceCIDR that is used (issue 33).
func TestE2ENodeKeepsItsTrafficWithWideServiceCIDRs(t *testing.T) {
	t.Parallel()
	n := newE2ENode(t, "nft")
	dst := netip.AddrPortFrom(netlab.ClientIP, 8080)
	if err := n.lab.Client().Serve(netlab.TCP, dst, "client"); err != nil {
		t.Fatal(err)
	}
	if _, err := n.lab.Node().DialTCP(t.Context(), dst, 2*time.Second); err != nil {
		t.Fatalf("before apply, the node does not reach the client: %v", err)
	}
	file := filepath.Join(n.dir, "snapshot.yaml")
	if err := os.WriteFile(file, []byte(wholeSpaceSnapshot), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--mode=nftables", "-f", file, "--node-name=node1", "--family=ipv4"}
	r := n.run("apply", args...)
	if r.code != ExitOK {
		t.Fatalf("apply:\n%s", r)
	}
	for _, want := range []string{"servicecidr low: spec.cidrs[0] 0.0.0.0/1 is wider than /8: ignored", "servicecidr high: spec.cidrs[0] 128.0.0.0/1", "servicecidr all: spec.cidrs[0] 0.0.0.0/0"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("no warning %q:\n%s", want, r)
		}
	}
	if _, err := n.lab.Node().DialTCP(t.Context(), dst, 2*time.Second); err != nil {
		t.Errorf("after apply, the node does not reach the client: %v\n%s", err, n.nft("list", "table", "ip", "kube-proxy"))
	}
	if listing := n.nft("list", "chain", "ip", "kube-proxy", "cluster-ips-check"); !strings.Contains(listing, "ip daddr 10.96.0.0/16 drop") {
		t.Errorf("the used ServiceCIDR is not dropped:\n%s", listing)
	}
}
