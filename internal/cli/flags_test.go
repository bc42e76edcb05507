package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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
		{"snapshot", []string{"kubeconfig", "filename", "example", "node-name", "config", "output", "output-file"},
			[]string{"mode", "family", "cluster-cidr", "ipvs-scheduler", "proxy-port-range", "bind-address", "iptables-backend"}},
		{"plan", []string{"kubeconfig", "mode", "ipvs-scheduler", "proxy-port-range", "iptables-backend", "state-dir", "ipvs-exclude-cidrs", "ipvs-strict-arp", "lock-file", "lock-wait"},
			[]string{"wait", "dry-run", "udp-timeout"}},
		{"apply", []string{"kubeconfig", "mode", "ipvs-scheduler", "bind-address", "lock-file", "ipvs-strict-arp", "wait", "wait-timeout", "watch", "dry-run"},
			[]string{"udp-timeout", "reload-interval"}},
		// reset takes --node-name, and says it does nothing (TestNoEffectFlagsWarn).
		{"reset", []string{"mode", "family", "config", "iptables-backend", "lock-file", "ipvs-exclude-cidrs", "dry-run", "node-name"},
			[]string{"kubeconfig", "filename", "cluster-cidr", "ipvs-scheduler", "proxy-port-range", "bind-address", "wait"}},
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
	os.WriteFile(cfg, []byte("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: nftables\n"), 0o644)
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
	os.WriteFile(cfg, []byte("apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\nipvs:\n  scheduler: mh\n  excludeCIDRs: [10.0.0.0/8]\n"), 0o644)
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

// TestNodeCommandsShareFlags checks that one set of flags serves the
// commands that run on the node: plan takes every flag apply does but
// apply's own actions, and plan, apply, reset and proxy all take the
// kernel flags, plan saying in the help that it ignores the lock.
func TestNodeCommandsShareFlags(t *testing.T) {
	root := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	find := func(name string) *cobra.Command {
		cmd, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	plan, apply := find("plan"), find("apply")
	// plan's own: its output, its saved plan, and its review of two files
	// (--against, --all-nodes), which apply has no use for.
	planOnly := []string{"output", "out", "against", "all-nodes"}
	plan.Flags().VisitAll(func(f *pflag.Flag) {
		if !slices.Contains(planOnly, f.Name) && apply.Flags().Lookup(f.Name) == nil {
			t.Errorf("plan takes --%s, apply does not", f.Name)
		}
	})
	// What apply does that plan does not: write, wait, watch, guard, take
	// over from kube-proxy.
	applyOnly := append([]string{"dry-run", "wait", "wait-timeout", "watch", "max-removal", "force", "take-over",
		// kube-proxy's names of the watch-only sync periods.
		"iptables-sync-period", "iptables-min-sync-period", "ipvs-sync-period", "ipvs-min-sync-period"}, watchOnlyFlags...)
	apply.Flags().VisitAll(func(f *pflag.Flag) {
		if plan.Flags().Lookup(f.Name) == nil && !slices.Contains(applyOnly, f.Name) {
			t.Errorf("apply takes --%s, plan does not", f.Name)
		}
	})
	for _, name := range []string{"plan", "apply", "reset", "proxy"} {
		for _, flag := range []string{"iptables-backend", "state-dir", "lock-file", "lock-wait"} {
			if find(name).Flags().Lookup(flag) == nil {
				t.Errorf("%s lacks --%s", name, flag)
			}
		}
	}
	for _, flag := range []string{"lock-file", "lock-wait"} {
		if usage := plan.Flags().Lookup(flag).Usage; !strings.HasPrefix(usage, "plan takes no lock; accepted so one set of flags serves plan and apply") {
			t.Errorf("plan --%s: help %q does not say it is ignored", flag, usage)
		}
	}
	// Accepted on the command line: the command goes on to refuse the bad
	// --ipvs-exclude-cidrs, before it reads the kernel.
	_, stderr, code := run(t, "", "plan", "--example", "--mode=ipvs", "--lock-file="+filepath.Join(t.TempDir(), "lock"), "--lock-wait=3s", "--ipvs-exclude-cidrs=bogus")
	if code != ExitError || !strings.Contains(stderr, `--ipvs-exclude-cidrs "bogus": not a CIDR`) {
		t.Errorf("plan with the lock flags: exit %d, %q", code, stderr)
	}
}

// TestNoNamespaceFlag checks that no command takes kubectl's
// -n/--namespace, which would do nothing (Services are read from every
// namespace), and that giving it says so. Other unknown flags keep
// pflag's error. Every flag error points at the command's help, as
// kubectl's do.
func TestNoNamespaceFlag(t *testing.T) {
	root := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	for _, cmd := range root.Commands() {
		if cmd.Flags().Lookup("namespace") != nil || cmd.Flags().ShorthandLookup("n") != nil {
			t.Errorf("%s takes -n/--namespace", cmd.Name())
		}
	}
	const why = "kubectl svcproxy has no -n/--namespace: like kube-proxy, it reads the Services and EndpointSlices of all namespaces"
	for _, tc := range []struct {
		args string
		want string
	}{
		{"render --example -n kube-system", "unknown shorthand flag: 'n' in -n: " + why},
		{"render --example --namespace=kube-system", "unknown flag: --namespace: " + why},
		{"snapshot --example -nkube-system", "unknown shorthand flag: 'n' in -nkube-system: " + why},
		{"plan --example -n default", why},
		{"apply --example -n default", why},
		{"proxy --example --namespace default", why},
		{"reset -n default", why},
		{"version -n default", why},
		{"render --example -x", "unknown shorthand flag: 'x' in -x\nSee 'kubectl svcproxy render --help' for usage.\n"},
		{"render --example --bogus", "unknown flag: --bogus\nSee 'kubectl svcproxy render --help' for usage.\n"},
		{"plan --example -n default", why + "\nSee 'kubectl svcproxy plan --help' for usage.\n"},
		{"render --example --output", "flag needs an argument: --output\nSee 'kubectl svcproxy render --help' for usage.\n"},
	} {
		_, stderr, code := run(t, "", strings.Fields(tc.args)...)
		if code != ExitError || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, %q; want exit %d and %q", tc.args, code, stderr, ExitError, tc.want)
		}
	}
}

// TestNodeNameHelpShowsOneDefault checks that --node-name's help states
// its default once, in words, and that the default is still the
// hostname.
func TestNodeNameHelpShowsOneDefault(t *testing.T) {
	for _, cmd := range []string{"render", "snapshot", "apply", "proxy"} {
		out, _, _ := run(t, "", cmd, "--help")
		line := ""
		for l := range strings.Lines(out) {
			if strings.Contains(l, "--node-name") {
				line = l
			}
		}
		if strings.Count(line, "default") != 1 || !strings.Contains(line, "hostname") {
			t.Errorf("%s --help: --node-name should state one default, the hostname: %q", cmd, line)
		}
	}
	host, _ := os.Hostname()
	if host == "" {
		t.Skip("no hostname")
	}
	// The example has no Node of that name: the error names the hostname.
	_, stderr, code := run(t, "", "render", "-f", filepath.Join("..", "example", "snapshot.yaml"))
	if code != ExitError || !strings.Contains(stderr, strings.ToLower(host)) {
		t.Errorf("render without --node-name: exit %d, %q; want an error naming the hostname %q", code, stderr, host)
	}
}
