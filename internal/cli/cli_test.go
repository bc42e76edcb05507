package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// run executes the root command in-process and returns stdout, stderr and
// the exit code main would use.
func run(t testing.TB, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}
	cmd := NewRootCommand(streams)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	if err != nil && ExitCode(err) != ExitChanges {
		errOut.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), ExitCode(err)
}

func TestRenderExample(t *testing.T) {
	out, stderr, code := run(t, "", "render", "--example", "--family=ipv4", "--cluster-cidr=10.244.0.0/16")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sets, err := ipt.ParseAll([]byte(out))
	if err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, out)
	}
	nat := sets[0].Table(ipt.NAT)
	if nat == nil || nat.Chain("KUBE-SERVICES") == nil {
		t.Fatalf("no nat KUBE-SERVICES in output:\n%s", out)
	}
	// Every ClusterIP of the example is dispatched (or rejected, for the one without endpoints).
	for _, ip := range []string{"10.96.0.10/32", "10.96.0.53/32", "10.96.0.20/32", "10.96.0.30/32", "10.96.0.40/32"} {
		if !strings.Contains(out, "-d "+ip+" ") {
			t.Errorf("ClusterIP %s missing from the render", ip)
		}
	}
}

func TestRenderJSONReadsBack(t *testing.T) {
	text, _, _ := run(t, "", "render", "--example")
	js, stderr, code := run(t, "", "render", "--example", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var obj struct {
		Rulesets []*ipt.Ruleset `json:"rulesets"`
	}
	if err := json.Unmarshal([]byte(js), &obj); err != nil {
		t.Fatal(err)
	}
	fromJSON := obj.Rulesets
	fromText, err := ipt.ParseAll([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(fromJSON) != 2 || len(fromText) != 2 {
		t.Fatalf("want IPv4 and IPv6 rulesets, got %d (json) and %d (text)", len(fromJSON), len(fromText))
	}
	for i := range fromJSON {
		if !fromJSON[i].Equal(fromText[i]) {
			t.Errorf("ruleset %d: JSON and text forms differ", i)
		}
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"snap.yaml", "snap.json"} {
		path := filepath.Join(dir, name)
		if _, stderr, code := run(t, "", "snapshot", "--example", "--output-file", path); code != 0 {
			t.Fatalf("snapshot: exit %d: %s", code, stderr)
		}
		want, _, _ := run(t, "", "render", "--example")
		got, stderr, code := run(t, "", "render", "-f", path, "--node-name=node1")
		if code != 0 {
			t.Fatalf("render -f %s: exit %d: %s", name, code, stderr)
		}
		if got != want {
			t.Errorf("render of the %s snapshot differs from the render of its source", name)
		}
	}
}

func TestErrorsExitTwo(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: default}\nspec:\n  ports:\n  - port: eighty\n"), 0o644)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"malformed file", []string{"render", "-f", bad}, "bad.yaml"},
		{"missing file", []string{"render", "-f", filepath.Join(dir, "nope.yaml")}, "nope.yaml"},
		{"unknown mode", []string{"render", "--example", "--mode=ebpf"}, "--mode"},
		{"bad cluster cidr", []string{"render", "--example", "--cluster-cidr=10.0.0.0/33"}, "--cluster-cidr"},
		{"bad node ip", []string{"render", "--example", "--node-ip=1.2.3"}, "--node-ip"},
		{"bad output", []string{"render", "--example", "-o", "xml"}, "--output"},
		{"unknown node", []string{"render", "--example", "--node-name=node9"}, "node9"},
		{"unreachable API server", []string{"render", "--server=https://127.0.0.1:1", "--request-timeout=2s"}, "127.0.0.1:1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := run(t, "", tc.args...)
			if code != ExitError {
				t.Fatalf("exit %d, want %d; stdout:\n%s", code, ExitError, out)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("error does not name %q: %s", tc.want, stderr)
			}
		})
	}
}

func TestReadsStdin(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "example", "snapshot.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, stderr, code := run(t, string(data), "render", "-f", "-", "--node-name=node1")
	want, _, _ := run(t, "", "render", "--example")
	if code != 0 || got != want {
		t.Fatalf("render -f - (exit %d, %s) differs from render --example", code, stderr)
	}
}

func TestKubeProxyConfigFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "kube-proxy.yaml")
	os.WriteFile(cfg, []byte(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: 10.244.0.0/16
hostnameOverride: node1
iptables:
  masqueradeBit: 12
  localhostNodePorts: false
`), 0o644)
	out, stderr, code := run(t, "", "render", "--example", "--family=ipv4", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"! -s 10.244.0.0/16", "--set-xmark 0x1000/0x1000", "! -d 127.0.0.0/8"} {
		if !strings.Contains(out, want) {
			t.Errorf("config file not applied: output lacks %q", want)
		}
	}
	// A flag on the command line wins over the file.
	out, _, _ = run(t, "", "render", "--example", "--family=ipv4", "--config", cfg, "--masquerade-bit=13")
	if !strings.Contains(out, "0x2000/0x2000") {
		t.Errorf("--masquerade-bit did not override the config file")
	}

	// nftables mode reads its own section's masquerade bit, as kube-proxy
	// does, and the mode's sync periods reach apply --watch's flags.
	os.WriteFile(cfg, []byte(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clusterCIDR: 10.244.0.0/16
iptables:
  masqueradeBit: 12
  syncPeriod: 45s
nftables:
  masqueradeBit: 10
  syncPeriod: 20s
  minSyncPeriod: 2s
`), 0o644)
	out, stderr, code = run(t, "", "render", "--example", "--family=ipv4", "--config", cfg)
	if code != 0 || !strings.Contains(out, "meta mark set meta mark | 0x00000400") {
		t.Errorf("nftables.masqueradeBit not applied (exit %d, %s):\n%s", code, stderr, out)
	}
	// apply reads the file in Complete; --watch with --example then fails
	// Validate, before anything is contacted.
	cmd := NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	cmd.SetArgs([]string{"apply", "--watch", "--example", "--config", cfg, "--min-sync-period=3s"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--watch cannot be used with --example") {
		t.Fatalf("apply --watch --example: %v", err)
	}
	apply, _, err := cmd.Find([]string{"apply"})
	if err != nil {
		t.Fatal(err)
	}
	if got := apply.Flags().Lookup("sync-period").Value.String(); got != "20s" {
		t.Errorf("nftables.syncPeriod: --sync-period is %s, want 20s", got)
	}
	if got := apply.Flags().Lookup("min-sync-period").Value.String(); got != "3s" {
		t.Errorf("--min-sync-period on the command line should win over the file: got %s", got)
	}
	// kube-proxy's config files carry metricsBindAddress; a one-shot
	// apply with one must not ask for --watch.
	os.WriteFile(cfg, []byte("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: nftables\nmetricsBindAddress: 127.0.0.1:10249\nnftables:\n  syncPeriod: 20s\n"), 0o644)
	// (A bad --ipvs-exclude-cidrs stops the run after flag validation and
	// before anything reads or writes this test machine's kernel.)
	if _, stderr, code := run(t, "", "apply", "--example", "--config", cfg, "--mode=ipvs", "--ipvs-exclude-cidrs=not-a-cidr"); strings.Contains(stderr, "needs --watch") || !strings.Contains(stderr, "--ipvs-exclude-cidrs") {
		t.Errorf("apply --config with metricsBindAddress: exit %d, %s", code, stderr)
	}

	os.WriteFile(cfg, []byte("kind: KubeletConfiguration\n"), 0o644)
	if _, stderr, code := run(t, "", "render", "--example", "--config", cfg); code != ExitError || !strings.Contains(stderr, "KubeProxyConfiguration") {
		t.Errorf("a config file of the wrong kind: exit %d, %s", code, stderr)
	}
}

func TestRenderNFTables(t *testing.T) {
	out, stderr, code := run(t, "", "render", "--example", "--mode=nftables", "--cluster-cidr=10.244.0.0/16")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"table ip kube-proxy {", "table ip6 kube-proxy {", "10.96.0.10 . tcp . 80 : goto service-"} {
		if !strings.Contains(out, want) {
			t.Errorf("nftables render lacks %q", want)
		}
	}
}

func TestRenderIPVS(t *testing.T) {
	out, stderr, code := run(t, "", "render", "--example", "--mode=ipvs", "--family=ipv4", "--ipvs-scheduler=mh")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"-A -t 10.96.0.10:80 -s mh", "-a -t 10.96.0.10:80 -r 10.244.0.11:8080 -m -w 1", "create KUBE-CLUSTER-IP hash:ip,port"} {
		if !strings.Contains(out, want) {
			t.Errorf("ipvs render lacks %q", want)
		}
	}
	if _, stderr, code := run(t, "", "render", "--example", "--mode=ipvs", "--ipvs-scheduler=fastest"); code != ExitError || !strings.Contains(stderr, "--ipvs-scheduler") {
		t.Errorf("an unknown scheduler: exit %d, %s", code, stderr)
	}
}

func TestRenderUserspace(t *testing.T) {
	out, stderr, code := run(t, "", "render", "--example", "--mode=userspace", "--family=ipv4", "--proxy-port-range=21000-21999")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"## ports IPv4", "KUBE-PORTALS-CONTAINER", "REDIRECT --to-ports 21"} {
		if !strings.Contains(out, want) {
			t.Errorf("userspace render lacks %q", want)
		}
	}
	if _, stderr, code := run(t, "", "render", "--example", "--mode=userspace", "--proxy-port-range=9-1"); code != ExitError || !strings.Contains(stderr, "--proxy-port-range") {
		t.Errorf("a bad port range: exit %d, %s", code, stderr)
	}
}
