package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestFlagsPerCommand checks that each command registers the flag groups
// it uses and no other: the mode-specific flags only where that mode runs,
// the connection flags only where the cluster is read.
func TestFlagsPerCommand(t *testing.T) {
	root := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	for _, tc := range []struct {
		cmd       string
		has, lack []string
	}{
		{"render", []string{"kubeconfig", "filename", "mode", "node-name", "cluster-cidr", "ipvs-scheduler", "proxy-port-range", "bind-address", "config", "output"},
			[]string{"iptables-backend", "lock-file", "ipvs-exclude-cidrs", "wait", "udp-timeout", "dry-run"}},
		{"snapshot", []string{"kubeconfig", "filename", "example", "node-name", "config", "output", "format"},
			[]string{"mode", "family", "cluster-cidr", "ipvs-scheduler", "proxy-port-range", "bind-address", "iptables-backend"}},
		{"plan", []string{"kubeconfig", "mode", "ipvs-scheduler", "proxy-port-range", "iptables-backend", "state-dir", "ipvs-exclude-cidrs", "ipvs-strict-arp"},
			[]string{"lock-file", "lock-wait", "wait", "dry-run", "udp-timeout"}},
		{"apply", []string{"kubeconfig", "mode", "ipvs-scheduler", "bind-address", "lock-file", "ipvs-strict-arp", "wait", "wait-timeout", "watch", "dry-run"},
			[]string{"udp-timeout", "reload-interval"}},
		{"reset", []string{"mode", "family", "config", "iptables-backend", "lock-file", "ipvs-exclude-cidrs", "dry-run"},
			[]string{"kubeconfig", "filename", "node-name", "cluster-cidr", "ipvs-scheduler", "proxy-port-range", "bind-address", "wait"}},
		{"proxy", []string{"kubeconfig", "mode", "node-name", "cluster-cidr", "proxy-port-range", "bind-address", "udp-timeout", "iptables-backend", "lock-wait"},
			[]string{"ipvs-scheduler", "ipvs-exclude-cidrs", "ipvs-strict-arp", "wait", "wait-timeout", "dry-run", "watch"}},
		{"version", nil, []string{"kubeconfig", "mode", "node-name", "config", "proxy-port-range", "ipvs-scheduler"}},
	} {
		cmd, _, err := root.Find([]string{tc.cmd})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range tc.has {
			if cmd.Flags().Lookup(name) == nil {
				t.Errorf("%s lacks --%s", tc.cmd, name)
			}
		}
		for _, name := range tc.lack {
			if cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil {
				t.Errorf("%s has --%s, which it does not use", tc.cmd, name)
			}
		}
	}
	var global []string
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) { global = append(global, f.Name) })
	if !slices.Equal(global, globalFlags) {
		t.Errorf("the root has persistent flags %v, want only %v (how output looks); every command registers its own", global, globalFlags)
	}
}

// TestFlagsOfAnotherMode checks that a flag given for another mode than
// --mode is refused with an error that names the flag and both modes,
// before the kernel is read or written. (The plan, apply and reset cases
// fail in Validate; --dry-run and a bad --iptables-backend, which Validate
// would also refuse, keep them off this machine's kernel even if not.)
func TestFlagsOfAnotherMode(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "kube-proxy.yaml")
	os.WriteFile(cfg, []byte("kind: KubeProxyConfiguration\nmode: nftables\n"), 0o644)
	for _, tc := range []struct {
		args string
		want string
	}{
		{"render --example --ipvs-scheduler=mh", "--ipvs-scheduler applies to --mode=ipvs only, not --mode=iptables"},
		{"render --example --mode=nftables --proxy-port-range=21000-21999", "--proxy-port-range applies to --mode=userspace only, not --mode=nftables"},
		{"render --example --mode=ipvs --bind-address=10.0.0.1", "--bind-address applies to --mode=userspace only, not --mode=ipvs"},
		{"render --example --mode=userspace --ipvs-scheduler=rr", "--ipvs-scheduler applies to --mode=ipvs only, not --mode=userspace"},
		// The mode may come from the config file.
		{"render --example --config " + cfg + " --ipvs-scheduler=mh", "--ipvs-scheduler applies to --mode=ipvs only, not --mode=nftables"},
		{"plan --example --iptables-backend=bogus --ipvs-exclude-cidrs=10.0.0.0/8", "--ipvs-exclude-cidrs applies to --mode=ipvs only, not --mode=iptables"},
		{"apply --example --dry-run --iptables-backend=bogus --wait", "--wait applies to --mode=ipvs only, not --mode=iptables"},
		{"apply --example --dry-run --mode=userspace --iptables-backend=bogus --wait-timeout=1m", "--wait-timeout applies to --mode=ipvs only, not --mode=userspace"},
		{"apply --example --dry-run --mode=userspace --iptables-backend=bogus --ipvs-strict-arp=false", "--ipvs-strict-arp applies to --mode=ipvs only, not --mode=userspace"},
		{"reset --dry-run --mode=userspace --iptables-backend=bogus --ipvs-strict-arp", "--ipvs-strict-arp applies to --mode=ipvs only, not --mode=userspace"},
		// Flags a command does not take at all.
		{"proxy --example --ipvs-scheduler=rr", "unknown flag: --ipvs-scheduler"},
		{"reset --proxy-port-range=21000-21999", "unknown flag: --proxy-port-range"},
		{"snapshot --example --mode=ipvs", "unknown flag: --mode"},
		{"version --kubeconfig=x", "unknown flag: --kubeconfig"},
	} {
		_, stderr, code := run(t, "", strings.Fields(tc.args)...)
		if code != ExitError || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, %q; want exit %d and %q", tc.args, code, stderr, ExitError, tc.want)
		}
	}
}

// TestFlagsOfAnotherModeFromConfig checks that the config file may carry
// another mode's settings, as kube-proxy's files do: only the command line
// is held to --mode.
func TestFlagsOfAnotherModeFromConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "kube-proxy.yaml")
	os.WriteFile(cfg, []byte("kind: KubeProxyConfiguration\nmode: iptables\nipvs:\n  scheduler: mh\n  excludeCIDRs: [10.0.0.0/8]\n"), 0o644)
	out, stderr, code := run(t, "", "render", "--example", "--family=ipv4", "--config", cfg)
	if code != ExitOK || !strings.Contains(out, "*nat") {
		t.Errorf("render with another mode's section in the config file: exit %d, %s", code, stderr)
	}
	// The right mode's flags are accepted on the command line.
	for _, args := range [][]string{
		{"render", "--example", "--mode=ipvs", "--ipvs-scheduler=mh"},
		{"render", "--example", "--mode=userspace", "--proxy-port-range=21000-21999", "--bind-address=10.0.0.1"},
	} {
		if _, stderr, code := run(t, "", args...); code != ExitOK {
			t.Errorf("%s: exit %d, %s", strings.Join(args, " "), code, stderr)
		}
	}
}
