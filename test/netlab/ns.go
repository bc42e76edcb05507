package netlab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/vishvananda/netns"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nsthread"
)

// NS is one network namespace of a lab. The zero NS is unusable: its
// methods return errors rather than act on the caller's namespace.
type NS struct {
	s   *nsState
	lab *Lab
}

// nsState guards the namespace's file descriptor, so that no method can
// setns through a descriptor number that was closed and reused.
type nsState struct {
	name string
	mu   sync.Mutex
	h    netns.NsHandle // -1 once closed
}

func (s *nsState) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h >= 0 {
		s.h.Close()
		s.h = -1
	}
}

// Name is the namespace's name, as `ip netns exec` and `ip -n` take it.
func (ns NS) Name() string {
	if ns.s == nil {
		return ""
	}
	return ns.s.name
}

// Do runs fn on a locked OS thread that is switched into the namespace,
// then switches the thread back (nsthread.Scoped). Sockets that fn creates
// stay in the namespace for their whole life. Goroutines that fn starts do
// not run in the namespace.
func (ns NS) Do(fn func() error) error {
	if ns.s == nil {
		return errors.New("netlab: zero NS")
	}
	return nsthread.Scoped(func() error {
		if err := ns.s.enter(); err != nil {
			return err
		}
		return fn()
	})
}

func (s *nsState) enter() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h < 0 {
		return fmt.Errorf("netlab: namespace %s is closed", s.name)
	}
	if err := netns.Set(s.h); err != nil {
		return fmt.Errorf("netlab: enter namespace %s: %w", s.name, err)
	}
	return nil
}

// Command returns a command that runs name inside the namespace through
// `ip netns exec`. The caller may set Stdin, Stdout and so on, and Start it.
func (ns NS) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns.Name(), name}, args...)...)
	if ns.s == nil {
		cmd.Err = errors.New("netlab: zero NS")
	}
	return cmd
}

// Run runs a command inside the namespace and returns its stdout. The error
// includes the command's stderr.
func (ns NS) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return ns.RunInput(ctx, nil, name, args...)
}

// RunInput is Run with stdin, e.g. for `iptables-restore` or `nft -f -`.
func (ns NS) RunInput(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := ns.Command(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("netlab: %s %s in %s: %w: %s",
			name, strings.Join(args, " "), ns.Name(), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// sysctl writes key=value pairs ("net.ipv4.ip_forward", "1", ...) inside
// the namespace: /proc/sys/net belongs to the writing thread's namespace.
func (ns NS) sysctl(kv ...string) error {
	return ns.Do(func() error {
		for i := 0; i+1 < len(kv); i += 2 {
			path := "/proc/sys/" + strings.ReplaceAll(kv[i], ".", "/")
			if err := os.WriteFile(path, []byte(kv[i+1]), 0); err != nil {
				return fmt.Errorf("sysctl %s=%s in %s: %w", kv[i], kv[i+1], ns.Name(), err)
			}
		}
		return nil
	})
}

// newNS creates the named namespace l.prefix+role, records it for cleanup,
// brings up its loopback and turns off rp_filter and IPv6 DAD, so that new
// interfaces inherit that.
func (l *Lab) newNS(role string) (NS, error) {
	name := l.prefix + role
	h, err := nsthread.NewNamed(name)
	if err != nil {
		return NS{}, fmt.Errorf("create namespace %s: %w", name, err)
	}
	ns := NS{s: &nsState{name: name, h: h}, lab: l}
	l.mu.Lock()
	closed := l.closed
	if !closed {
		l.nss = append(l.nss, ns)
	}
	l.mu.Unlock()
	if closed {
		ns.s.close()
		netns.DeleteNamed(name)
		return NS{}, errors.New("lab is closed")
	}
	kv := []string{
		"net.ipv4.conf.all.rp_filter", "0",
		"net.ipv4.conf.default.rp_filter", "0",
	}
	if _, err := os.Stat("/proc/sys/net/ipv6"); err == nil {
		kv = append(kv, "net.ipv6.conf.all.accept_dad", "0", "net.ipv6.conf.default.accept_dad", "0")
	}
	if err := ns.sysctl(kv...); err != nil {
		return NS{}, err
	}
	return ns, l.loUp(ns)
}
