package imagetest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// step is one command's result inside inRoot.
type step struct {
	argv []string
	out  string
	code int
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

const marker = "@@imagetest-exit "

// inRoot runs each command from the image's root filesystem, one after
// the other, as the container's process would (chrooted, the image's
// PATH and no other environment), all in one new network, mount and PID
// namespace with /proc mounted inside root: whatever they do to the
// network stays in a namespace that dies with them. The image has no
// shell, so the host's sh sequences the chroots. /dev holds the host's
// null, zero, full, random and urandom, and /sys is mounted read-only, as
// a runtime's are.
func inRoot(t *testing.T, root string, argvs ...[]string) []step {
	t.Helper()
	var script strings.Builder
	// The devices a container runtime gives every container.
	script.WriteString("set -e; for d in null zero full random urandom; do : >" + quote(root) + "/dev/$d; " +
		"mount --bind /dev/$d " + quote(root) + "/dev/$d; done\n")
	// And /sys, as a runtime mounts it, read-only here: the tool reads
	// the conntrack hash size there, and nothing in a test may change the
	// host kernel's module parameters.
	script.WriteString("mkdir -p " + quote(root) + "/sys; mount -t sysfs -o ro sysfs " + quote(root) + "/sys; set +e\n")
	for _, argv := range argvs {
		script.WriteString("chroot " + quote(root))
		for _, a := range argv {
			script.WriteString(" " + quote(a))
		}
		script.WriteString(" 2>&1; code=$?; echo; echo \"" + marker + "$code\"\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--net", "--mount", "--pid", "--fork", "--mount-proc="+root+"/proc",
		"sh", "-c", script.String())
	cmd.Env = []string{imagePath}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("unshare: %v\n%s%s", err, out, stderr.String())
	}
	var steps []step
	rest := string(out)
	for _, argv := range argvs {
		body, after, ok := strings.Cut(rest, "\n"+marker)
		if !ok {
			t.Fatalf("no exit status for %q in:\n%s", argv, out)
		}
		codeText, next, _ := strings.Cut(after, "\n")
		code, err := strconv.Atoi(codeText)
		if err != nil {
			t.Fatalf("exit status %q: %v", codeText, err)
		}
		steps = append(steps, step{argv, body, code})
		rest = next
	}
	return steps
}

func (s step) String() string {
	return fmt.Sprintf("%s: exit %d:\n%s", strings.Join(s.argv, " "), s.code, s.out)
}

// runInRoot runs the image's programs: the binary, both backends' save,
// ipset and conntrack, then on each backend, in a namespace of its own,
// the example cluster's plan (changes: exit 1), apply, and plan again
// (nothing to change: exit 0), which runs the image's iptables-save and
// iptables-restore of that backend through the tool.
func runInRoot(t *testing.T, root string) {
	steps := inRoot(t, root,
		[]string{"kubectl-svcproxy", "version"},
		[]string{"iptables-legacy-save"},
		[]string{"iptables-nft-save"},
		[]string{"ip6tables-legacy-save"},
		[]string{"ip6tables-nft-save"},
		[]string{"ipset", "list"},
		[]string{"conntrack", "--version"},
	)
	if !strings.Contains(steps[0].out, "kubectl-svcproxy") {
		t.Errorf("version printed nothing about kubectl-svcproxy: %s", steps[0])
	}
	for _, s := range steps {
		if s.code != 0 {
			t.Error(s)
		}
	}
	for _, backend := range []string{"legacy", "nft"} {
		args := []string{"--example", "--mode=iptables", "--iptables-backend=" + backend}
		steps := inRoot(t, root,
			append([]string{"kubectl-svcproxy", "plan"}, args...),
			append([]string{"kubectl-svcproxy", "apply"}, args...),
			append([]string{"kubectl-svcproxy", "plan"}, args...),
			[]string{"iptables-" + backend + "-save", "-t", "nat"},
		)
		for i, want := range []int{1, 0, 0, 0} {
			if steps[i].code != want {
				t.Errorf("%s: want exit %d: %s", backend, want, steps[i])
			}
		}
		if !strings.Contains(steps[3].out, ":KUBE-SERVICES") {
			t.Errorf("%s: the nat table has no KUBE-SERVICES after apply: %s", backend, steps[3])
		}
	}
}
