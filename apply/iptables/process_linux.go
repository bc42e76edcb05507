package iptables

import (
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownProcessGroup runs cmd in a process group of its own (see OSExec).
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// memfd returns a new anonymous memory file.
func memfd(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// raiseStackLimit lifts the stack limit that child processes inherit:
// iptables-nft-save recurses deeply enough to overflow the default 8 MiB
// stack on a 10k-Service nat table (it segfaults after about 200 s; with
// the limit raised it completes in about the same time).
var raiseStackLimit = sync.OnceFunc(func() {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_STACK, &lim) == nil && lim.Cur != unix.RLIM_INFINITY && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = unix.Setrlimit(unix.RLIMIT_STACK, &lim)
	}
})
