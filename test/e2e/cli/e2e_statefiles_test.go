package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2EUnsafeStateFiles: a state directory, or a directory the tool
// made in it, that others can write, and a lock file that is a symbolic
// link, stop the command with exit 2 and a message naming the path and
// why; the link's target and the kernel are left alone.
func TestE2EUnsafeStateFiles(t *testing.T) {
	t.Parallel()
	n := newE2ENode(t, "nft")
	state := filepath.Join(n.dir, "state")
	expect(t, n.run("plan", exampleArgs...), ExitChanges)
	nftArgs := append([]string{"--mode=nftables"}, exampleArgs...)
	expect(t, n.run("plan", nftArgs...), ExitChanges)
	sub, _ := filepath.Glob(filepath.Join(state, "netns-*", "nftables"))
	if len(sub) != 1 {
		t.Fatalf("plan --mode=nftables made %q in the state directory, want one netns-*/nftables", sub)
	}
	for _, c := range []struct {
		dir  string
		mode os.FileMode
		args []string
	}{{state, 0o777, exampleArgs}, {sub[0], 0o770, nftArgs}} {
		if err := os.Chmod(c.dir, c.mode); err != nil {
			t.Fatal(err)
		}
		r := n.run("plan", c.args...)
		if want := "refusing " + c.dir + ": it is writable by its group or others"; r.code != ExitError || !strings.Contains(r.stderr, want) {
			t.Fatalf("want exit %d saying %q:\n%s", ExitError, want, r)
		}
		if err := os.Chmod(c.dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}

	target := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(target, []byte("do not touch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, n.lockFile()); err != nil {
		t.Fatal(err)
	}
	before := n.save()
	r := n.run("apply", exampleArgs...)
	if want := "refusing " + n.lockFile() + ": it is a symbolic link"; r.code != ExitError || !strings.Contains(r.stderr, want) {
		t.Fatalf("want exit %d saying %q:\n%s", ExitError, want, r)
	}
	if data, err := os.ReadFile(target); err != nil || string(data) != "do not touch\n" {
		t.Fatalf("the lock file link's target was changed: %q, %v", data, err)
	}
	if after := n.save(); after != before {
		t.Fatalf("apply with a refused lock file changed the kernel:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
