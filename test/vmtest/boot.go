package vmtest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// Config describes one boot of the test VM.
type Config struct {
	// Init is the host path of a static binary that becomes /init,
	// normally a test binary whose TestMain calls Main.
	Init string
	// Args reach Init after "--" on the kernel command line. They must not
	// contain white space or quotes.
	Args []string
	// Files are extra files for the guest: guest path -> host path.
	Files map[string]string
	// Timeout bounds the whole boot; zero means 10 minutes.
	Timeout time.Duration
	// Memory is qemu's -m; empty means 1G.
	Memory string
	// Output receives the serial console, line by line.
	Output io.Writer
	// UserNet gives the guest a virtio NIC on qemu's user-mode network
	// (SLIRP), through which the guest reaches the host's loopback at
	// HostLoopback. The guest test brings it up with SetupUserNet.
	UserNet bool
}

// Result is what a boot reported.
type Result struct {
	// Code is the guest's exit status: the tests' exit status (0 passed,
	// 1 failed, 2 panicked...), as the result line and qemu both said.
	Code int
	// Elapsed is the wall time from starting qemu to its exit.
	Elapsed time.Duration
	// InitrdBytes is the size of the initramfs booted.
	InitrdBytes int64
}

// Boot boots the VM once with cfg.Init as its init. It returns an error
// when the guest's result cannot be trusted: qemu missing or failing, a
// timeout, a kernel panic (qemu then exits 0 because of -no-reboot), no
// result line, or a qemu exit status that disagrees with the result line.
// A guest whose tests failed is not an error: see Result.Code.
func Boot(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		return res, fmt.Errorf("%w: no qemu-system-x86_64 (apt-get install qemu-system-x86)", errUnavailable)
	}
	k, err := findKernel()
	if err != nil {
		return res, err
	}
	nonce := newNonce()
	cmdline, err := kernelCmdline(nonce, cfg.Args)
	if err != nil {
		return res, err
	}
	initrd, err := runInitrd(k, cfg, cfg.Output)
	if err != nil {
		return res, err
	}
	defer os.Remove(initrd)
	if st, err := os.Stat(initrd); err == nil {
		res.InitrdBytes = st.Size()
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	mem := cmp(cfg.Memory, "1G")
	args := []string{"-accel", "tcg", "-M", "pc", "-m", mem, "-smp", "1",
		"-nodefaults", "-display", "none", "-no-reboot",
		"-serial", "stdio", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
		"-kernel", k.vmlinuz(), "-initrd", initrd, "-append", cmdline}
	if cfg.UserNet {
		args = append(args, userNetArgs...)
	}
	cmd := exec.CommandContext(ctx, qemu, args...)
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	code, err := runQemu(cmd, nonce, cfg.Output)
	res.Elapsed = time.Since(start)
	res.Code = code
	if ctx.Err() != nil {
		return res, fmt.Errorf("vmtest: VM timed out after %v", timeout)
	}
	return res, err
}

// kernelCmdline builds the command line: serial console, reboot (that
// is, with -no-reboot, exit) at once on a panic, the nonce for init, CI=true
// under CI (so that a guest test missing a prerequisite fails too, see
// test/testenv) and the arguments after "--".
func kernelCmdline(nonce string, args []string) (string, error) {
	// no_timer_check: under TCG on a loaded host the kernel's IO-APIC
	// timer check can miss its ticks and panic ("IO-APIC + timer doesn't
	// work!"); the emulated timer works, the check is what fails.
	parts := []string{"console=ttyS0", "panic=-1", "oops=panic", "quiet", "loglevel=3", "no_timer_check",
		"mitigations=off", "i8042.noaux", "i8042.nokbd", "i8042.nopnp",
		nonceEnv + "=" + nonce}
	if testenv.InCI() {
		parts = append(parts, testenv.CIEnv+"=true")
	}
	parts = append(parts, "--")
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\") {
			return "", fmt.Errorf("vmtest: argument %q cannot go on the kernel command line", a)
		}
		parts = append(parts, a)
	}
	s := strings.Join(parts, " ")
	if len(s) > 2000 { // x86's COMMAND_LINE_SIZE is 2048
		return "", fmt.Errorf("vmtest: kernel command line too long (%d bytes)", len(s))
	}
	return s, nil
}

// runQemu streams the console to out, watches for the result line and
// checks qemu's exit status against it. It returns the guest's code.
func runQemu(cmd *exec.Cmd, nonce string, out io.Writer) (int, error) {
	if out == nil {
		out = io.Discard
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return -1, err
	}
	cmd.Stderr = cmd.Stdout // qemu's own complaints go to the log too
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("vmtest: start qemu: %w", err)
	}
	code := -1
	var tail []string // the last lines, for the error message
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		fmt.Fprintln(out, line)
		if c, ok := parseResult(line, nonce); ok {
			code = c
		}
		tail = append(tail, line)
		if len(tail) > 5 {
			tail = tail[1:]
		}
	}
	io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	status := cmd.ProcessState.ExitCode()
	switch {
	case code < 0 && status == 0:
		return code, fmt.Errorf("vmtest: the guest died without a result (kernel panic?); last lines: %q", tail)
	case code < 0:
		return code, fmt.Errorf("vmtest: no result line from the guest; qemu: %v; last lines: %q", werr, tail)
	case status != code<<1|1:
		return code, fmt.Errorf("vmtest: guest reported exit=%d but qemu exited with %d, not %d", code, status, code<<1|1)
	}
	return code, nil
}

// parseResult reads "VMTEST-RESULT <nonce> exit=<code>".
func parseResult(line, nonce string) (int, bool) {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != resultMarker || f[1] != nonce || !strings.HasPrefix(f[2], "exit=") {
		return 0, false
	}
	c, err := strconv.Atoi(strings.TrimPrefix(f[2], "exit="))
	return c, err == nil && c >= 0 && c <= 127
}

// runInitrd writes the initramfs for one boot: the cached base archive
// followed by an archive with /init and cfg.Files. It returns a temporary
// file that the caller removes.
func runInitrd(k *kernel, cfg Config, log io.Writer) (string, error) {
	base, notes, err := baseArchive(k)
	if err != nil {
		return "", err
	}
	if len(notes) > 0 && log != nil {
		fmt.Fprintf(log, "vmtest: not on this host, so not in the guest: %s\n", strings.Join(notes, ", "))
	}
	f, err := os.CreateTemp("", "vmtest-initrd-*.cpio")
	if err != nil {
		return "", err
	}
	err = writeInitrd(f, base, cfg)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("vmtest: initramfs: %w", err)
	}
	return f.Name(), nil
}

func writeInitrd(f *os.File, base string, cfg Config) error {
	b, err := os.Open(base)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, b)
	b.Close()
	if err != nil {
		return err
	}
	// Each archive of a concatenation starts 4-byte aligned; the base
	// archive's trailer is padded, so it ends aligned.
	w := bufio.NewWriterSize(f, 1<<20)
	c := newCPIOWriter(w)
	c.CopyFile("/init", cfg.Init, 0o755)
	for guest, host := range cfg.Files {
		c.CopyFile(filepath.Clean("/"+guest), host, 0o755)
	}
	if err := c.Close(); err != nil {
		return err
	}
	return w.Flush()
}

func newNonce() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// IsUnavailable reports that the host cannot boot the VM at all: no qemu,
// or no kernel could be fetched.
func IsUnavailable(err error) bool { return errors.Is(err, errUnavailable) }
