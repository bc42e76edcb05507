package vmtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// kernel is an unpacked Debian kernel, as hack/vm/kernel.sh leaves it.
type kernel struct {
	dir     string // holds vmlinuz, kver, lib/modules/<release>
	release string // uname -r inside the guest
}

func (k *kernel) vmlinuz() string { return filepath.Join(k.dir, "vmlinuz") }
func (k *kernel) modDir() string  { return filepath.Join(k.dir, "lib", "modules", k.release) }

// errUnavailable marks a host that cannot boot the VM at all (no qemu, no
// kernel to fetch); outside CI the host-side tests skip on it.
var errUnavailable = errors.New("vmtest: VM unavailable")

// findKernel runs hack/vm/kernel.sh, which downloads and unpacks the
// kernel on first use and prints its cache directory. VMTEST_KERNEL_DIR
// points at such a directory instead.
func findKernel() (*kernel, error) {
	kernelOnce.Do(func() { theKernel, kernelErr = fetchKernel() })
	return theKernel, kernelErr
}

// One process asks apt once.
var (
	kernelOnce sync.Once
	theKernel  *kernel
	kernelErr  error
)

func fetchKernel() (*kernel, error) {
	dir := os.Getenv("VMTEST_KERNEL_DIR")
	if dir == "" {
		script, err := repoFile("hack/vm/kernel.sh")
		if err != nil {
			return nil, err
		}
		var stderr bytes.Buffer
		cmd := exec.Command(script)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v: %s", errUnavailable, script, err, bytes.TrimSpace(stderr.Bytes()))
		}
		dir = strings.TrimSpace(string(out))
	}
	rel, err := os.ReadFile(filepath.Join(dir, "kver"))
	if err != nil {
		return nil, fmt.Errorf("%w: kernel directory %s: %v", errUnavailable, dir, err)
	}
	return &kernel{dir: dir, release: strings.TrimSpace(string(rel))}, nil
}

// repoFile finds rel in the repository that holds the working directory
// (go test runs a test binary in its package's directory).
func repoFile(rel string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("vmtest: %s not found above %s", rel, wd)
		}
	}
}
