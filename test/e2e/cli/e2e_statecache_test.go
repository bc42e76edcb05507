package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// cacheWarningRE is the one line a cache that cannot be written gives.
var cacheWarningRE = regexp.MustCompile(`(?m)^warning: the state cache was not written \((.*): ([a-z -]+)\); this run is not affected, the next one reads the kernel$`)

// TestE2EUnwritableStateCache: a state directory on a full filesystem and
// one on a read-only filesystem cost apply nothing, and alike: exit 0, the
// rules written, and one warning line naming the cause. Each run gets a
// tmpfs mounted in a mount namespace of its own (unshare), which ends
// with it: the test machine never sees the mount.
func TestE2EUnwritableStateCache(t *testing.T) {
	t.Parallel()
	testenv.RequireTools(t, "unshare", "sh", "nft")
	for _, c := range []struct{ name, opts, cause string }{
		{"full", "size=4k", "no space left on device"},
		{"read-only", "ro", "read-only file system"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			n := newE2ENode(t, "nft")
			state := filepath.Join(n.dir, "state")
			if err := os.Mkdir(state, 0o700); err != nil {
				t.Fatal(err)
			}
			for run := range 2 {
				r := n.runOnTmpfs(state, c.opts, "apply", nftablesArgs...)
				if r.code != ExitOK || !strings.Contains(r.stdout, "Applied (nftables)") {
					t.Fatalf("run %d: want exit %d:\n%s", run, ExitOK, r)
				}
				warned := cacheWarningRE.FindAllStringSubmatch(r.stderr, -1)
				if len(warned) != 1 || warned[0][2] != c.cause || !strings.Contains(warned[0][1], " "+state+"/") {
					t.Fatalf("run %d: want one warning line naming a file in %s and %q:\n%s", run, state, c.cause, r)
				}
				if rest := cacheWarningRE.ReplaceAllString(r.stderr, ""); strings.TrimSpace(rest) != "" {
					t.Fatalf("run %d: more on stderr than the warning:\n%s", run, r)
				}
			}
			if !strings.Contains(n.nft("list", "table", "ip", "kube-proxy"), "chain services") {
				t.Fatal("the rules were not written")
			}
		})
	}
}

// runOnTmpfs runs the binary in the node namespace, as run does, with a
// tmpfs mounted at dir with the given options, in a private mount
// namespace that unshare makes for this run alone.
func (n *e2eNode) runOnTmpfs(dir, opts, sub string, rest ...string) result {
	ctx, cancel := context.WithTimeout(n.t.Context(), cmdTimeout)
	defer cancel()
	inner := n.command(ctx, nil, sub, rest...)
	const script = `mount -t tmpfs -o "mode=0700,$1" svcproxy-test "$0" && shift && exec "$@"`
	args := append([]string{"--mount", "--propagation", "private", "sh", "-c", script, dir, opts}, inner.Args...)
	cmd := exec.CommandContext(ctx, "unshare", args...)
	cmd.Env = inner.Env
	return runCmd(cmd)
}
