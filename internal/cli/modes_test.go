package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestEveryModeFlagRefusedInOtherModes runs every command that takes
// --mode with every mode-specific flag in every mode it supports other
// than the flag's own: each run must fail (exit 2) with an error naming the
// flag and both modes, or, for a flag the command does not take at all,
// with pflag's unknown-flag error. The plan, apply and reset runs fail in
// Validate, before the kernel is read; --dry-run, a bad --iptables-backend
// and a private state directory and lock file keep them off this machine's
// kernel and files even if not.
func TestEveryModeFlagRefusedInOtherModes(t *testing.T) {
	values := map[string]string{
		"ipvs-scheduler": "rr", "ipvs-exclude-cidrs": "10.0.0.0/8", "ipvs-strict-arp": "true",
		"wait": "true", "wait-timeout": "1m", "proxy-port-range": "21000-21999", "bind-address": "10.0.0.1",
	}
	dir := t.TempDir()
	kernel := []string{"--iptables-backend=bogus", "--state-dir=" + filepath.Join(dir, "state"), "--lock-file=" + filepath.Join(dir, "lock")}
	commands := []struct {
		name  string
		args  []string
		modes []Mode
	}{
		{"render", []string{"--example"}, allModes},
		{"plan", append([]string{"--example"}, kernel...), kernelModes},
		{"apply", append([]string{"--example", "--dry-run"}, kernel...), kernelModes},
		{"reset", append([]string{"--dry-run"}, kernel...), kernelModes},
		{"proxy", append([]string{"--example"}, kernel...), []Mode{ModeUserspace}},
	}
	root := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	checked := 0
	for _, c := range commands {
		cmd, _, err := root.Find([]string{c.name})
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range modeOnlyFlags {
			value, ok := values[mf.name]
			if !ok {
				t.Fatalf("--%s: no value to test it with; add one", mf.name)
			}
			registered := cmd.Flags().Lookup(mf.name) != nil
			for _, mode := range c.modes {
				if mode == mf.mode {
					continue
				}
				want := fmt.Sprintf("--%s applies to --mode=%s only, not --mode=%s", mf.name, mf.mode, mode)
				if !registered {
					want = "unknown flag: --" + mf.name
				}
				args := append([]string{c.name, "--mode=" + string(mode), "--" + mf.name + "=" + value}, c.args...)
				_, stderr, code := run(t, "", args...)
				if code != ExitError || !strings.Contains(stderr, want) {
					t.Errorf("%s: exit %d, %q; want exit %d and %q", strings.Join(args, " "), code, stderr, ExitError, want)
				}
				checked++
			}
		}
	}
	if checked < 80 {
		t.Errorf("only %d combinations checked", checked)
	}
}

// TestModeSuggestion: an abbreviated or misspelt mode names the one it is
// likely to mean; a name near none, or near two, suggests nothing.
func TestModeSuggestion(t *testing.T) {
	for name, want := range map[string]string{
		"nft":      `--mode "nft": must be iptables, nftables, ipvs or userspace; did you mean "nftables"?`,
		"nftabels": `--mode "nftabels": must be iptables, nftables, ipvs or userspace; did you mean "nftables"?`,
		"IPVS":     `--mode "IPVS": must be iptables, nftables, ipvs or userspace; did you mean "ipvs"?`,
		"ipt":      `--mode "ipt": must be iptables, nftables, ipvs or userspace; did you mean "iptables"?`,
		"user":     `--mode "user": must be iptables, nftables, ipvs or userspace; did you mean "userspace"?`,
		"ebpf":     `--mode "ebpf": must be iptables, nftables, ipvs or userspace`,
		"ip":       `--mode "ip": must be iptables, nftables, ipvs or userspace`,
	} {
		if _, err := parseMode("--mode", name); err == nil || err.Error() != want {
			t.Errorf("parseMode(%q): %v, want %s", name, err, want)
		}
	}
}
