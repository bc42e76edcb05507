package vmtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// Run builds the test binary of package pkg (a path as `go test` takes it;
// "." is the calling test's own package) statically, boots it in the VM
// with testArgs (e.g. "-test.run", "^TestIPVS") and fails t if the guest's
// tests fail or the guest gives no trustworthy result. The console,
// including the tests' output, goes to t's log; -test.v is passed on when
// the host test runs verbose.
//
// Run skips t, with the reason, when the host cannot boot the VM (no qemu,
// no kernel) — unless the CI environment variable is set, where that is a
// failure. Inside the VM it skips t, so that the package's host-side test
// does not recurse. VMTEST_ARGS in the environment appends more guest
// arguments.
func Run(t *testing.T, pkg string, testArgs ...string) Result {
	t.Helper()
	return RunWith(t, pkg, nil, testArgs...)
}

// RunWith is Run with extra files for the guest (guest path -> host path,
// as Config.Files), e.g. a program built with BuildProgram that the guest
// tests run.
func RunWith(t *testing.T, pkg string, files map[string]string, testArgs ...string) Result {
	t.Helper()
	return RunOpts(t, pkg, Options{Files: files}, testArgs...)
}

// Options are what RunOpts takes beyond the package and its arguments;
// they go to Config's fields of the same names.
// Timeout, when set, replaces Run's 10-minute cap on the boot (the test's
// deadline still bounds it).
type Options struct {
	Files   map[string]string
	Memory  string
	UserNet bool
	Timeout time.Duration
}

// RunOpts is Run with Options: extra files, more memory, or the user-mode
// NIC through which the guest reaches the host's loopback.
func RunOpts(t *testing.T, pkg string, opts Options, testArgs ...string) Result {
	t.Helper()
	if InGuest() {
		// Not a missing prerequisite: the host-side test must not recurse
		// in the guest. A plain skip, also under CI.
		t.Skip("vmtest: already inside the VM")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		unavailable(t, "no qemu-system-x86_64 (hack/install-deps.sh installs qemu-system-x86)")
	}
	timeout := 10 * time.Minute
	if opts.Timeout > 0 {
		timeout = opts.Timeout
	}
	if dl, ok := t.Deadline(); ok {
		timeout = min(timeout, time.Until(dl)-15*time.Second)
	}
	if timeout < time.Minute {
		t.Fatalf("vmtest: only %v left before the test deadline; give go test a longer -timeout", timeout)
	}
	bin := BuildTest(t, pkg)
	args := []string{"-test.timeout=" + (timeout - 10*time.Second).Round(time.Second).String()}
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	args = append(args, testArgs...)
	// VMTEST_ARGS adds guest arguments by hand, e.g. "-test.run=^TestX$";
	// later flags win.
	args = append(args, strings.Fields(os.Getenv("VMTEST_ARGS"))...)
	res, err := Boot(context.Background(), Config{Init: bin, Args: args, Files: opts.Files, Timeout: timeout,
		Memory: opts.Memory, UserNet: opts.UserNet, Output: t.Output()})
	if IsUnavailable(err) {
		unavailable(t, err.Error())
	}
	t.Logf("vmtest: boot and test took %v, initramfs %.1f MiB", res.Elapsed.Round(10*time.Millisecond), float64(res.InitrdBytes)/(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if res.Code != 0 {
		t.Fatalf("vmtest: the tests in the VM failed (exit status %d); their output is above", res.Code)
	}
	return res
}

// unavailable skips t, or fails it under CI, where the VM must run.
func unavailable(t *testing.T, reason string) {
	t.Helper()
	testenv.SkipOrFail(t, "vmtest: cannot boot the VM here: "+reason)
}

// BuildTest compiles the test binary of pkg statically (CGO_ENABLED=0
// `go test -c`) into a temporary directory of t and returns its path.
func BuildTest(t testing.TB, pkg string) string {
	t.Helper()
	return build(t, "test", "-c", pkg)
}

// BuildProgram compiles the main package pkg statically into a temporary
// directory of t, e.g. a helper command that the guest tests run (pass it
// in Config.Files).
func BuildProgram(t testing.TB, pkg string) string {
	t.Helper()
	return build(t, "build", pkg)
}

// build runs `go <verb> -o <tmp> <args...>` with cgo off.
func build(t testing.TB, verb string, args ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "vmtest.bin")
	goArgs := append([]string{verb, "-o", out}, args...)
	cmd := exec.Command("go", goArgs...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("vmtest: go %v: %v\n%s", goArgs, err, stderr.Bytes())
	}
	t.Logf("vmtest: go %s %s: %v", verb, args[len(args)-1], time.Since(start).Round(10*time.Millisecond))
	return out
}
