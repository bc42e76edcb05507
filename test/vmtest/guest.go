package vmtest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Environment variables between the host, the guest's init and the tests.
const (
	// guestEnv is set for the test process inside the VM.
	guestEnv = "VMTEST_GUEST"
	// nonceEnv reaches init from the kernel command line ("vmtestnonce=…":
	// the kernel hands unknown name=value words without a dot to init as
	// environment). It goes into the result line, so that no stray output
	// can pass for it.
	nonceEnv = "vmtestnonce"
	// resultMarker starts the line the guest prints before powering off:
	// "VMTEST-RESULT <nonce> exit=<code>".
	resultMarker = "VMTEST-RESULT"
)

// debugExitPort is the I/O port of qemu's isa-debug-exit device: writing v
// there ends qemu with exit status (v<<1)|1.
const debugExitPort = 0xf4

// Main is for a test package's TestMain. On the host, and for the test
// process inside the VM, it runs the tests as usual. As PID 1 inside the VM
// it is the init: it prepares the guest, runs the same binary as a child
// with the kernel command line's arguments after "--", prints the result
// line and powers the VM off, reporting the exit status through qemu's.
// Running the tests in a child keeps a panicking test from killing init
// (a kernel panic) and lets init reap orphaned processes.
func Main(m *testing.M) {
	if os.Getpid() == 1 {
		initGuest()
	}
	os.Exit(m.Run())
}

// InGuest reports whether this is the test process inside the VM.
func InGuest() bool { return os.Getenv(guestEnv) == "1" && os.Getppid() == 1 }

// RequireGuest skips the test outside the VM. Such tests run when the
// package's host-side test boots the VM (see Run).
//
// The skip is plain, also under CI: on the host it is by design, not a
// missing prerequisite. What must not skip in CI is Run, which boots
// the VM and fails there when it cannot (see unavailable).
func RequireGuest(t testing.TB) {
	t.Helper()
	if !InGuest() {
		t.Skip("vmtest: needs the IPVS test VM; runs inside it through vmtest.Run (hack/vm/README.md)")
	}
}

// initGuest is PID 1. It never returns.
func initGuest() {
	start := time.Now()
	code := 127
	if err := setupGuest(); err != nil {
		fmt.Fprintf(os.Stderr, "vmtest: guest setup: %v\n", err)
	} else {
		fmt.Fprintf(os.Stderr, "vmtest: guest ready in %v (uptime %s)\n",
			time.Since(start).Round(time.Millisecond), uptime())
		code = runChild()
	}
	PowerOff(code)
}

// setupGuest mounts the pseudo file systems, puts the console on fds 0-2,
// loads the kernel modules and brings up the loopback.
func setupGuest() error {
	mounts := []struct{ fstype, target string }{
		{"proc", "/proc"}, {"sysfs", "/sys"}, {"devtmpfs", "/dev"},
		{"tmpfs", "/run"}, {"tmpfs", "/tmp"},
	}
	for _, m := range mounts {
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.fstype, m.target, m.fstype, unix.MS_NOSUID, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("mount %s on %s: %w", m.fstype, m.target, err)
		}
	}
	if c, err := os.OpenFile("/dev/console", os.O_RDWR, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			unix.Dup2(int(c.Fd()), fd)
		}
		c.Close()
	}
	if err := loadModules(guestModuleList); err != nil {
		return err
	}
	lo, err := netlink.LinkByName("lo")
	if err == nil {
		err = netlink.LinkSetUp(lo)
	}
	if err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	return nil
}

// loadModules loads the module files listed in order. A module that fails
// to load is reported, not fatal: the tests that need it will say more.
func loadModules(list string) error {
	f, err := os.Open(list)
	if err != nil {
		return err
	}
	defer f.Close()
	start := time.Now()
	var n int
	var failed []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.TrimSpace(sc.Text())
		if p == "" {
			continue
		}
		if err := finitModule(p); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", moduleName(p), err))
			continue
		}
		n++
	}
	fmt.Fprintf(os.Stderr, "vmtest: loaded %d modules in %v\n", n, time.Since(start).Round(time.Millisecond))
	if len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "vmtest: modules not loaded: %s\n", strings.Join(failed, "; "))
	}
	return sc.Err()
}

func finitModule(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	err = unix.FinitModule(int(f.Fd()), "", 0)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	return err
}

// runChild runs this binary again with init's arguments, as the test
// process, and returns its exit status (128+signal if it was killed). It
// reaps every other process that ends meanwhile.
func runChild() int {
	self, err := os.Executable()
	if err != nil {
		self = "/init"
	}
	env := []string{guestEnv + "=1", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "TMPDIR=/tmp"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != nonceEnv && k != "PATH" && k != "HOME" && k != guestEnv {
			env = append(env, kv)
		}
	}
	pid, err := syscall.ForkExec(self, os.Args, &syscall.ProcAttr{
		Dir:   "/",
		Env:   env,
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "vmtest: start tests: %v\n", err)
		return 127
	}
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "vmtest: wait: %v\n", err)
			return 127
		}
		if got != pid {
			continue
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			return 128 + int(ws.Signal())
		}
	}
}

// PowerOff ends the VM: it prints the result line for the host, waits for
// the console to drain and writes code to isa-debug-exit. Codes above 127
// are reported as 127 (qemu's exit status has 8 bits). If the device is
// missing it powers off plainly, which the host counts as a failure. Only
// the guest's init calls it.
func PowerOff(code int) {
	code = min(max(code, 0), 127)
	fmt.Fprintf(os.Stdout, "\n%s %s exit=%d\n", resultMarker, os.Getenv(nonceEnv), code)
	drainConsole()
	ExitDevice(code)
}

// ExitDevice writes code to isa-debug-exit without a result line; the
// harness's own tests use it to play a broken guest.
func ExitDevice(code int) {
	runtime.LockOSThread() // ioperm is per thread
	if err := writeExitDevice(uint8(code)); err != nil {
		fmt.Fprintf(os.Stderr, "vmtest: isa-debug-exit: %v\n", err)
	}
	drainConsole()
	unix.Sync()
	unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	select {}
}

// drainConsole waits until the serial port has sent what was written
// (tcdrain), so that qemu does not exit before the result line is out.
func drainConsole() {
	for _, fd := range []int{1, 2} {
		unix.IoctlSetInt(fd, unix.TCSBRK, 1)
	}
}

func uptime() string {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0] + "s"
}
