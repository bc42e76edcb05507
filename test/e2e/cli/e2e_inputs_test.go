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
			args := append([]string{cmd, "--example", "--dry-run"}, tc.args...)
			if cmd == "render" {
				args = append([]string{cmd, "--example"}, tc.args...)
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
		_, stderr, code := run(t, "", "apply", "--example", "--dry-run", "--config", path)
		if code != ExitError || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, %q; want %q", field, code, stderr, want)
		}
	}
}
