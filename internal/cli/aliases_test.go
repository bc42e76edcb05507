package cli

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestAliasesRenderAsTheirFlag checks that each kube-proxy flag name sets
// the tool's setting: the render is byte for byte the one of the tool's
// own flag.
func TestAliasesRenderAsTheirFlag(t *testing.T) {
	snapshot := filepath.Join("..", "example", "snapshot.yaml")
	for _, tc := range []struct{ alias, flag []string }{
		{[]string{"--proxy-mode=nftables"}, []string{"--mode=nftables"}},
		{[]string{"--proxy-mode", "ipvs"}, []string{"--mode=ipvs"}},
		{[]string{"--iptables-masquerade-bit=3"}, []string{"--masquerade-bit=3"}},
		{[]string{"-f", snapshot, "--hostname-override=node1"}, []string{"-f", snapshot, "--node-name=node1"}},
	} {
		base := []string{"render", "--family=ipv4"}
		if tc.alias[0] != "-f" {
			base = append(base, "--example")
		}
		want, stderr, code := run(t, "", append(base, tc.flag...)...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d, %s", tc.flag, code, stderr)
		}
		got, stderr, code := run(t, "", append(base, tc.alias...)...)
		if code != ExitOK || got != want {
			t.Errorf("%v: exit %d, %s; the render differs from %v's", tc.alias, code, stderr, tc.flag)
		}
	}
	// --master is kube-proxy's --server.
	_, stderr, _ := run(t, "", "render", "--master=https://127.0.0.1:1", "--request-timeout=2s")
	if !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("--master did not set the API server: %s", stderr)
	}
}

// TestAliasesOfTheSyncPeriods checks that kube-proxy's per-mode sync
// period flags set --sync-period and --min-sync-period in the mode
// kube-proxy reads them in, and are refused in the others.
func TestAliasesOfTheSyncPeriods(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		sync, minSync string
	}{
		{[]string{"--iptables-sync-period=7s", "--iptables-min-sync-period=2s"}, "7s", "2s"},
		{[]string{"--mode=nftables", "--iptables-sync-period=7s"}, "7s", "1s"},
		{[]string{"--mode=ipvs", "--ipvs-sync-period=1m", "--ipvs-min-sync-period=3s"}, "1m0s", "3s"},
	} {
		cmd := NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
		// --watch with --example fails Validate: nothing is contacted.
		cmd.SetArgs(append([]string{"apply", "--watch", "--example"}, tc.args...))
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--watch cannot be used with --example") {
			t.Fatalf("%v: %v", tc.args, err)
		}
		apply, _, _ := cmd.Find([]string{"apply"})
		if got := apply.Flags().Lookup("sync-period").Value.String(); got != tc.sync {
			t.Errorf("%v: --sync-period is %s, want %s", tc.args, got, tc.sync)
		}
		if got := apply.Flags().Lookup("min-sync-period").Value.String(); got != tc.minSync {
			t.Errorf("%v: --min-sync-period is %s, want %s", tc.args, got, tc.minSync)
		}
	}
	for _, tc := range []struct{ args, want string }{
		{"proxy --example --ipvs-sync-period=3s", "--ipvs-sync-period applies to --mode=ipvs only, not --mode=userspace"},
		{"apply --watch --kubeconfig=/nonexistent --mode=ipvs --iptables-sync-period=3s", "--iptables-sync-period applies to --mode=iptables, nftables or userspace only, not --mode=ipvs"},
		{"apply --example --iptables-sync-period=3s", "--iptables-sync-period needs --watch"},
		{"apply --watch --kubeconfig=/nonexistent --iptables-sync-period=1s --iptables-min-sync-period=5s", "--iptables-min-sync-period 5s: must be between 0 and --iptables-sync-period (1s)"},
	} {
		_, stderr, code := run(t, "", strings.Fields(tc.args)...)
		if code != ExitError || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, %q; want %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestAliasesConflict checks that a flag and its alias given different
// values is an error, whichever comes first, while the same value twice is
// not; and that the alias wins over the config file as the flag does.
func TestAliasesConflict(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"--mode=ipvs --proxy-mode=iptables", "--mode=ipvs and --proxy-mode=iptables conflict"},
		{"--proxy-mode=iptables --mode=ipvs", "--proxy-mode=iptables and --mode=ipvs conflict"},
		{"--hostname-override=node1 --node-name=node2", "--hostname-override=node1 and --node-name=node2 conflict"},
		{"--masquerade-bit=3 --iptables-masquerade-bit=4", "--masquerade-bit=3 and --iptables-masquerade-bit=4 conflict"},
	} {
		_, stderr, code := run(t, "", append([]string{"render", "--example"}, strings.Fields(tc.args)...)...)
		if code != ExitError || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, %q; want %q", tc.args, code, stderr, tc.want)
		}
	}
	_, stderr, code := run(t, "", "apply", "--watch", "--example", "--sync-period=1m", "--iptables-sync-period=60s")
	if strings.Contains(stderr, "conflict") || !strings.Contains(stderr, "--watch cannot be used with --example") {
		t.Errorf("the same period in two spellings: exit %d, %s", code, stderr)
	}
	if _, stderr, code := run(t, "", "render", "--example", "--mode=ipvs", "--proxy-mode=ipvs"); code != ExitOK {
		t.Errorf("the same mode twice: exit %d, %s", code, stderr)
	}
	path := writeConfig(t, "mode: nftables\n")
	out, stderr, code := run(t, "", "render", "--example", "--family=ipv4", "--config", path, "--proxy-mode=iptables")
	if code != ExitOK || !strings.Contains(out, "*nat") {
		t.Errorf("--proxy-mode over the config file's mode: exit %d, %s", code, stderr)
	}
}

// TestAliasesInErrorsAndHelp checks that an error about an alias's value
// names the alias the user typed, and that help lists the aliases under
// the tool's flag rather than as flags of their own.
func TestAliasesInErrorsAndHelp(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"--iptables-masquerade-bit=40", "--iptables-masquerade-bit 40: must be between 0 and 31"},
		{"--proxy-mode=ebpf", `--proxy-mode "ebpf": must be iptables, nftables, ipvs or userspace`},
		{"--proxy-mode=nftables --ipvs-scheduler=mh", "--ipvs-scheduler applies to --mode=ipvs only, not --mode=nftables"},
	} {
		_, stderr, code := run(t, "", append([]string{"render", "--example"}, strings.Fields(tc.args)...)...)
		if code != ExitError || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, %q; want %q", tc.args, code, stderr, tc.want)
		}
	}
	help, _, _ := run(t, "", "apply", "--help")
	for _, alias := range kubeProxyAliases {
		if strings.Contains(help, "      --"+alias.alias+" ") {
			t.Errorf("apply --help lists --%s as a flag of its own", alias.alias)
		}
		if !strings.Contains(help, "--"+alias.alias) {
			t.Errorf("apply --help does not name --%s under --%s", alias.alias, alias.flag)
		}
	}
}
