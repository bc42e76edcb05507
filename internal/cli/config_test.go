package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeConfig writes a KubeProxyConfiguration file (apiVersion and kind
// first, then body) to a temporary kp.yaml and returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kp.yaml")
	head := "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"
	if err := os.WriteFile(path, []byte(head+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigFullKubeProxyFile checks that a real kube-proxy config file,
// with every field of the v1alpha1 schema, most of which the tool has no
// use for, is accepted, and that the fields the tool uses apply.
func TestConfigFullKubeProxyFile(t *testing.T) {
	path := filepath.Join("testdata", "kube-proxy-v1alpha1.yaml")
	out, stderr, code := run(t, "", "render", "--example", "--family=ipv4", "--config", path)
	if code != ExitOK {
		t.Fatalf("render --config %s: exit %d, %s", path, code, stderr)
	}
	for _, want := range []string{"! -s 10.244.0.0/16", "--set-xmark 0x2000/0x2000"} {
		if !strings.Contains(out, want) {
			t.Errorf("the config file's clusterCIDR or iptables.masqueradeBit was not applied: output lacks %q", want)
		}
	}
}

// TestConfigStrict checks that the config file is decoded strictly, as
// kube-proxy's strict decoding does: a field that kube-proxy's schema does
// not have (a typo), at any depth, or a field given twice, is an error
// naming the file, the line and the field.
func TestConfigStrict(t *testing.T) {
	for _, tc := range []struct {
		body, want string
	}{
		{"mode: iptables\nclusterCIRD: 10.0.0.0/8\n", `kp.yaml:4: unknown field "clusterCIRD"`},
		{"ClusterCIDR: 10.0.0.0/8\n", `kp.yaml:3: unknown field "ClusterCIDR"`},
		{"iptables:\n  syncPeriod: 30s\n  masqueradeBitt: 12\n", `kp.yaml:5: unknown field "iptables.masqueradeBitt"`},
		{"logging:\n  options:\n    text:\n      splitStreem: true\n", `kp.yaml:6: unknown field "logging.options.text.splitStreem"`},
		{"logging:\n  vmodule:\n  - filePattern: x\n    verbosty: 2\n", `kp.yaml:6: unknown field "logging.vmodule.verbosty"`},
		{"conntrack:\n  maxPerCores: 0\n", `kp.yaml:4: unknown field "conntrack.maxPerCores"`},
		// The internal configuration's fields are not v1alpha1's.
		{"linux:\n  masqueradeAll: true\n", `kp.yaml:3: unknown field "linux"`},
		{"syncPeriod: 30s\n", `kp.yaml:3: unknown field "syncPeriod"`},
		{"mode: iptables\nmode: ipvs\n", `kp.yaml:4: duplicate field "mode"`},
		{"iptables:\n  masqueradeBit: twelve\n", `kp.yaml:4: iptables.masqueradeBit: got a string, want int32`},
	} {
		path := writeConfig(t, tc.body)
		_, stderr, code := run(t, "", "render", "--example", "--config", path)
		if code != ExitError || !strings.Contains(stderr, "--config "+path) || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, %q; want exit %d and %q", tc.body, code, stderr, ExitError, tc.want)
		}
	}
	// Fields the tool does not use but kube-proxy knows are accepted.
	path := writeConfig(t, "bindAddress: 0.0.0.0\noomScoreAdj: -999\nportRange: \"\"\nudpIdleTimeout: 250ms\n")
	if _, stderr, _ := run(t, "", "render", "--example", "--config", path); !strings.Contains(stderr, `unknown field "udpIdleTimeout"`) {
		t.Errorf("udpIdleTimeout, gone from kube-proxy's schema, should be refused: %s", stderr)
	}
	path = writeConfig(t, "bindAddress: 0.0.0.0\noomScoreAdj: -999\nconfigSyncPeriod: 15m\nfeatureGates: {AnyGate: true}\nwinkernel: {enableDSR: false}\n")
	if _, stderr, code := run(t, "", "render", "--example", "--config", path); code != ExitOK {
		t.Errorf("fields kube-proxy knows: exit %d, %s", code, stderr)
	}
}

// TestConfigAPIVersion checks that the file must be kube-proxy v1.37's one
// version of KubeProxyConfiguration, as kube-proxy requires.
func TestConfigAPIVersion(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		file, want string
	}{
		{"kind: KubeProxyConfiguration\nmode: iptables\n", `kp.yaml: apiVersion: "", want kubeproxy.config.k8s.io/v1alpha1`},
		{"apiVersion: kubeproxy.config.k8s.io/v1alpha2\nkind: KubeProxyConfiguration\n", `kp.yaml:1: apiVersion: "kubeproxy.config.k8s.io/v1alpha2", want kubeproxy.config.k8s.io/v1alpha1`},
		{"apiVersion: kubeproxy.config.k8s.io/v1alpha1\n", `kp.yaml: kind: "", want KubeProxyConfiguration`},
		{"", `kind: "", want KubeProxyConfiguration`},
	} {
		path := filepath.Join(dir, "kp.yaml")
		os.WriteFile(path, []byte(tc.file), 0o644)
		_, stderr, code := run(t, "", "render", "--example", "--config", path)
		if code != ExitError || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, %q; want %q", tc.file, code, stderr, tc.want)
		}
	}
}

// TestConfigErrorsNameTheField checks that a bad value from the config
// file is reported with the file, line and field it came from, never as a
// flag the user did not give; and that the same value given as a flag is
// reported with the flag.
func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		args []string
		body string
		want string
	}{
		{nil, "mode: nftabels\n", `kp.yaml:3: mode: "nftabels": must be iptables, nftables, ipvs or userspace`},
		{nil, "iptables:\n  masqueradeBit: 40\n", `kp.yaml:4: iptables.masqueradeBit: 40: must be between 0 and 31`},
		{nil, "mode: nftables\nnftables:\n  masqueradeBit: -1\n", `kp.yaml:5: nftables.masqueradeBit: -1: must be between 0 and 31`},
		{nil, "clusterCIDR: 10.244.0.0/33\n", `kp.yaml:3: clusterCIDR: "10.244.0.0/33": not a CIDR`},
		{nil, "nodePortAddresses: [primary, nowhere]\n", `kp.yaml:3: nodePortAddresses: "nowhere": neither a CIDR nor primary, localhost or all`},
		{nil, "detectLocalMode: Bridge\n", `kp.yaml:3: detectLocalMode: "Bridge": must be ClusterCIDR`},
		{nil, "detectLocalMode: BridgeInterface\n", `kp.yaml:3: detectLocalMode: BridgeInterface needs detectLocal.bridgeInterface`},
		// A name that would be more than one word in a rule (issue 33).
		{nil, "detectLocalMode: BridgeInterface\ndetectLocal:\n  bridgeInterface: cbr0 -s 6.6.6.6\n", `kp.yaml:5: detectLocal.bridgeInterface: "cbr0 -s 6.6.6.6": must not hold white space`},
		{nil, "detectLocalMode: InterfaceNamePrefix\ndetectLocal:\n  interfaceNamePrefix: 've -s 6.6.6.6'\n", `kp.yaml:5: detectLocal.interfaceNamePrefix: "ve -s 6.6.6.6": must not hold white space`},
		{nil, "detectLocalMode: InterfaceNamePrefix\ndetectLocal:\n  interfaceNamePrefix: 'veth -m comment -j x'\n", `kp.yaml:5: detectLocal.interfaceNamePrefix: "veth -m comment -j x": must be at most 14 bytes`},
		{nil, "detectLocal:\n  interfaceNamePrefix: 've\"th'\n", `kp.yaml:4: detectLocal.interfaceNamePrefix: "ve\"th": must not hold a quote`},
		{nil, "mode: ipvs\nipvs:\n  scheduler: fastest\n", `kp.yaml:5: ipvs.scheduler: "fastest": must be one of`},
		{nil, "mode: userspace\nportRange: 9-1\n", `kp.yaml:4: portRange: port range "9-1"`},
		{[]string{"apply", "--watch"}, "iptables:\n  syncPeriod: soon\n", `kp.yaml:4: iptables.syncPeriod: "soon": time: invalid duration`},
		{[]string{"apply", "--watch", "--kubeconfig=/nonexistent"}, "iptables:\n  syncPeriod: 1s\n  minSyncPeriod: 5s\n", `kp.yaml:5: iptables.minSyncPeriod: 5s: must be between 0 and --config`},
		// (Validate refuses it: apply never reaches the kernel.)
		{[]string{"apply", "--example", "--dry-run"}, "mode: ipvs\nipvs:\n  excludeCIDRs: [10.0.0.0/33]\n", `kp.yaml:5: ipvs.excludeCIDRs: "10.0.0.0/33": not a CIDR`},
	} {
		args := tc.args
		if args == nil {
			args = []string{"render", "--example"}
		}
		path := writeConfig(t, tc.body)
		_, stderr, code := run(t, "", append(args, "--config", path)...)
		if code != ExitError || !strings.Contains(stderr, "--config "+path) || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, %q; want %q", tc.body, code, stderr, tc.want)
		}
		// The message names no flag but --config.
		if rest := strings.ReplaceAll(stderr, "--config", ""); strings.Contains(rest, "--") {
			t.Errorf("%q: the error names a flag that was not given: %q", tc.body, stderr)
		}
	}
	// A flag given on the command line wins over a bad value in the file.
	path := writeConfig(t, "mode: nftabels\n")
	if _, stderr, code := run(t, "", "render", "--example", "--mode=iptables", "--config", path); code != ExitOK {
		t.Errorf("--mode given over a bad mode in the file: exit %d, %s", code, stderr)
	}
}

// TestFlagErrorsNameTheFlag checks that a bad flag value is reported with
// the flag, in the same words as the config file's field would be.
func TestFlagErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args, want string
	}{
		{"--masquerade-bit=40", "--masquerade-bit 40: must be between 0 and 31"},
		{"--mode=nftabels", `--mode "nftabels": must be iptables, nftables, ipvs or userspace`},
		{"--detect-local-mode=InterfaceNamePrefix", "--detect-local-mode InterfaceNamePrefix needs --pod-interface-name-prefix"},
		{"--nodeport-addresses=nowhere", `--nodeport-addresses "nowhere": neither a CIDR nor primary, localhost or all`},
		{"--mode=ipvs --ipvs-scheduler=fastest", `--ipvs-scheduler "fastest": must be one of`},
		{"--mode=userspace --bind-address=127.0.0.1", "--bind-address 127.0.0.1: cannot proxy on localhost"},
	} {
		_, stderr, code := run(t, "", append([]string{"render", "--example"}, strings.Fields(tc.args)...)...)
		if code != ExitError || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, %q; want %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestInterfaceFlagsAsTheKernel checks that the pod bridge and the pod
// interface prefix are checked as the kernel checks a device name, with
// the flag named: a value with a space once reached iptables-restore as
// more words of the rule, "-s 6.6.6.6" among them (issue 33).
func TestInterfaceFlagsAsTheKernel(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--detect-local-mode=InterfaceNamePrefix", "--pod-interface-name-prefix=veth -s 6.6.6.6 -m comment --comment x"}, `--pod-interface-name-prefix "veth -s 6.6.6.6 -m comment --comment x": must be at most 14 bytes`},
		{[]string{"--detect-local-mode=InterfaceNamePrefix", "--pod-interface-name-prefix=ve -s 6.6.6.6"}, `--pod-interface-name-prefix "ve -s 6.6.6.6": must not hold white space`},
		{[]string{"--detect-local-mode=BridgeInterface", "--pod-bridge-interface=br0 -s 6.6.6.6"}, `--pod-bridge-interface "br0 -s 6.6.6.6": must not hold white space`},
		{[]string{"--detect-local-mode=BridgeInterface", "--pod-bridge-interface=br0\tx"}, "must not hold white space"},
		{[]string{"--detect-local-mode=BridgeInterface", "--pod-bridge-interface=br\u00a0x"}, "must not hold white space"},
		{[]string{"--detect-local-mode=BridgeInterface", "--pod-bridge-interface=br/0"}, "must not hold / or :"},
		{[]string{"--detect-local-mode=BridgeInterface", "--pod-bridge-interface=br:0"}, "must not hold / or :"},
		{[]string{"--detect-local-mode=BridgeInterface", "--pod-bridge-interface=.."}, "is not a name the kernel takes"},
		{[]string{"--detect-local-mode=BridgeInterface", "--pod-bridge-interface=!"}, "is read by iptables as a negation"},
		{[]string{"--detect-local-mode=BridgeInterface", "--pod-bridge-interface=0123456789abcdef"}, "must be at most 15 bytes"},
		{[]string{"--detect-local-mode=BridgeInterface", `--pod-bridge-interface=br"0`}, "must not hold a quote"},
		{[]string{"--detect-local-mode=BridgeInterface", `--pod-bridge-interface=br\0`}, "must not hold a quote, a backslash"},
		{[]string{"--detect-local-mode=InterfaceNamePrefix", "--pod-interface-name-prefix=0123456789abcde"}, "must be at most 14 bytes"},
		// Given but not used by the mode: still refused.
		{[]string{"--pod-bridge-interface=br0 x"}, `--pod-bridge-interface "br0 x": must not hold white space`},
	} {
		for _, mode := range []string{"iptables", "nftables"} {
			_, stderr, code := run(t, "", append([]string{"render", "--example", "--mode=" + mode}, tc.args...)...)
			if code != ExitError || !strings.Contains(stderr, tc.want) {
				t.Errorf("%s %q: exit %d, %q; want exit 2 and %q", mode, tc.args, code, stderr, tc.want)
			}
		}
	}
	// The longest names the kernel takes are fine.
	for _, args := range [][]string{
		{"--detect-local-mode=BridgeInterface", "--pod-bridge-interface=0123456789abcde"},
		{"--detect-local-mode=InterfaceNamePrefix", "--pod-interface-name-prefix=0123456789abcd"},
	} {
		out, stderr, code := run(t, "", append([]string{"render", "--example", "--family=ipv4"}, args...)...)
		if code != ExitOK || !strings.Contains(out, " -i 0123456789abcd") {
			t.Errorf("%q: exit %d, %s", args, code, stderr)
		}
	}
}

// TestConfigKubeconfig checks that clientConnection.kubeconfig, where
// kubeadm's kube-proxy ConfigMap (and deploy/base/daemonset.yaml) names the
// kubeconfig, is the one the tool reads, and that --kubeconfig wins over it.
func TestConfigKubeconfig(t *testing.T) {
	dir := t.TempDir()
	fromFile, fromFlag := filepath.Join(dir, "from-config.conf"), filepath.Join(dir, "from-flag.conf")
	path := writeConfig(t, "clientConnection:\n  kubeconfig: "+fromFile+"\n")
	_, stderr, code := run(t, "", "render", "--node-name=node1", "--config", path)
	if code != ExitError || !strings.Contains(stderr, fromFile) {
		t.Errorf("render --config: exit %d, %q; want the error to name %s", code, stderr, fromFile)
	}
	_, stderr, code = run(t, "", "render", "--node-name=node1", "--config", path, "--kubeconfig", fromFlag)
	if code != ExitError || !strings.Contains(stderr, fromFlag) || strings.Contains(stderr, fromFile) {
		t.Errorf("render --config --kubeconfig: exit %d, %q; want the error to name %s only", code, stderr, fromFlag)
	}
}

// TestConfigEnableProfiling: enableProfiling in a config file turns on
// --profiling, as kube-proxy's field does, and false leaves it off.
func TestConfigEnableProfiling(t *testing.T) {
	for _, on := range []bool{true, false} {
		c := &kubeProxyConfiguration{EnableProfiling: on}
		v, set := c.flagValues("nftables")["profiling"]
		if set != on || (on && v.value != "true") {
			t.Errorf("enableProfiling %v: flag value %+v, set %v", on, v, set)
		}
	}
}
