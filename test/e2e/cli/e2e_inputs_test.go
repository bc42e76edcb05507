package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostileInterfaceNameIsRefused runs the binary with the probe's
// interface values of issue 33, which once gave every rule matching the
// pod interface "-s 6.6.6.6/32" and applied with exit 0: each is refused
// with exit 2 and the flag, or the config file's line and field, named,
// before any rule is written.
func TestHostileInterfaceNameIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--detect-local-mode=InterfaceNamePrefix", "--pod-interface-name-prefix=veth -s 6.6.6.6 -m comment --comment x"}, `--pod-interface-name-prefix "veth -s 6.6.6.6 -m comment --comment x": must be at most 14 bytes`},
		{[]string{"--detect-local-mode=BridgeInterface", "--pod-bridge-interface=br0 -s 6.6.6.6"}, `--pod-bridge-interface "br0 -s 6.6.6.6": must not hold white space`},
	} {
		for _, cmd := range []string{"render", "apply"} {
			args := append([]string{cmd, "--example"}, tc.args...)
			if cmd == "apply" {
				args = append(args, offTheMachine(t)...)
			}
			stdout, stderr, code := run(t, "", args...)
			if code != ExitError || !strings.Contains(stderr, tc.want) || strings.Contains(stdout, "6.6.6.6") {
				t.Errorf("%q: exit %d, stderr %q, stdout %d bytes; want exit 2 and %q", args, code, stderr, len(stdout), tc.want)
			}
		}
	}
	dir := t.TempDir()
	for _, field := range []string{"bridgeInterface", "interfaceNamePrefix"} {
		path := filepath.Join(dir, field+".yaml")
		body := "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n" +
			"detectLocal:\n  " + field + ": 'v -s 6.6.6.6'\n"
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		want := "--config " + path + `:4: detectLocal.` + field + `: "v -s 6.6.6.6": must not hold white space`
		_, stderr, code := run(t, "", append([]string{"apply", "--example", "--config", path}, offTheMachine(t)...)...)
		if code != ExitError || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, %q; want %q", field, code, stderr, want)
		}
	}
}

// offTheMachine are apply's flags that keep a run that should be refused
// off this machine's kernel and files if it is not: --dry-run, a backend
// that does not exist, and a private lock file and state directory.
func offTheMachine(t *testing.T) []string {
	dir := t.TempDir()
	return []string{"--dry-run", "--iptables-backend=bogus", "--lock-file=" + filepath.Join(dir, "lock"), "--state-dir=" + filepath.Join(dir, "state")}
}

// specialSnapshot is a node, a Service with a loopback externalIP and a
// loopback endpoint, and ServiceCIDRs that together cover all of IPv4.
const specialSnapshot = `apiVersion: v1
kind: Node
metadata: {name: node1}
status: {addresses: [{type: InternalIP, address: 192.168.10.5}]}
---
` + ipv4HalvesServiceCIDRs + defaultServiceCIDR + `apiVersion: v1
kind: Service
metadata: {name: web, namespace: ns}
spec:
  clusterIP: 10.96.0.10
  externalIPs: [127.0.0.1, 203.0.113.5]
  ports: [{port: 80, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: ns, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints: [{addresses: [127.0.0.1]}, {addresses: [10.0.0.9]}]
ports: [{port: 80, protocol: TCP}]
`

// TestAddressesNoServiceCanUseAreSkipped runs the binary on the probe's
// inputs of issue 33: a loopback externalIP and endpoint, and ServiceCIDRs
// 0.0.0.0/1 and 128.0.0.0/1, which made nftables mode drop every packet
// the node sent out. Each is left out with a warning naming its object;
// the rest renders.
func TestAddressesNoServiceCanUseAreSkipped(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"iptables", "nftables"} {
		out, stderr, code := run(t, specialSnapshot, "render", "-f", "-", "--node-name=node1", "--mode="+mode)
		if code != ExitOK {
			t.Fatalf("%s: exit %d: %s", mode, code, stderr)
		}
		for _, bad := range []string{"127.0.0.1", "0.0.0.0/1", "128.0.0.0/1"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: the rules hold %s:\n%s", mode, bad, out)
			}
		}
		for _, want := range []string{"203.0.113.5", "10.0.0.9"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: the rules lack %s", mode, want)
			}
		}
		for _, want := range []string{
			`service ns/web: externalIPs[0] "127.0.0.1" is a loopback address, which the API server refuses: ignored`,
			`endpointslice ns/web-1: endpoints[0].addresses[0] "127.0.0.1" is a loopback address, which the API server refuses: endpoint skipped`,
			"servicecidr low: spec.cidrs[0] 0.0.0.0/1 is wider than /8: ignored",
			"servicecidr high: spec.cidrs[0] 128.0.0.0/1 is wider than /8: ignored",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: no warning %q in:\n%s", mode, want, stderr)
			}
		}
	}
}

// TestSilentLossIsSaid runs the binary on issue 33's inputs that once lost
// something without a word: a proxy port range too small for the Service
// ports, a JSON List with two "items", and a field given twice, whose
// warning said "ignored" of the value that was used.
func TestSilentLossIsSaid(t *testing.T) {
	t.Parallel()
	_, stderr, code := run(t, "", "render", "--example", "--mode=userspace", "--family=ipv4", "--proxy-port-range=100-101")
	if code != ExitOK || strings.Count(stderr, "no proxy port left in the proxy port range 100-101") == 0 {
		t.Errorf("--proxy-port-range=100-101: exit %d, %q", code, stderr)
	}
	svc := func(name, ip string) string {
		return `{"apiVersion":"v1","kind":"Service","metadata":{"name":"` + name + `","namespace":"ns"},"spec":{"clusterIP":"` + ip + `","ports":[{"port":80}]}}`
	}
	list := `{"apiVersion":"v1","kind":"List","items":[` + svc("a", "10.96.0.1") + `],"items":[` + svc("b", "10.96.0.2") + `]}`
	_, stderr, code = run(t, list, "render", "-f", "-", "--node-name=n1")
	if code != ExitError || !strings.Contains(stderr, `duplicate field "items"`) {
		t.Errorf("two items: exit %d, %q", code, stderr)
	}
	dup := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","namespace":"ns"},"spec":{"clusterIP":"10.96.0.1","clusterIP":"10.96.0.9","ports":[{"port":80}]}}`
	out, stderr, code := run(t, dup, "render", "-f", "-", "--node-name=n1", "--family=ipv4")
	if code != ExitOK || !strings.Contains(stderr, `duplicate field "spec.clusterIP": the later value is used`) || !strings.Contains(out, "-d 10.96.0.9/32") {
		t.Errorf("a field given twice: exit %d, %q", code, stderr)
	}
}
