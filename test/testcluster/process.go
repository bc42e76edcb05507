package testcluster

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a server a test started: one of the test cluster's, or
// another (test/conformance runs the real kube-proxy with it).
type Process struct {
	name   string
	cmd    *exec.Cmd
	log    string        // the file holding its stdout and stderr
	exited chan struct{} // closed once it has exited
	err    error         // its exit status, valid once exited is closed
}

// StartCommand starts cmd, its output going to logPath. It dies with the
// test binary, even when that is killed; Stop ends it earlier.
func StartCommand(name string, cmd *exec.Cmd, logPath string) (*Process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// startProcess starts bin with args, its output going to logPath, and
// registers a cleanup that stops it by its PID.
func (c *Cluster) startProcess(t testing.TB, name, bin, logPath string, args ...string) *Process {
	t.Helper()
	p, err := StartCommand(name, c.opts.command(bin, args...), logPath)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	t.Cleanup(p.Stop)
	return p
}

// Pid is the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stop ends the process by its PID: SIGTERM, then SIGKILL after 10s.
func (p *Process) Stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// Running returns an error naming the process and quoting its log if it
// has exited.
func (p *Process) Running() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v):\n%s", p.name, p.err, p.Tail(40))
	default:
		return nil
	}
}

// LogContains reports whether the process's log holds s.
func (p *Process) LogContains(s string) bool {
	data, err := os.ReadFile(p.log)
	return err == nil && strings.Contains(string(data), s)
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	data, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePorts returns n distinct TCP ports free on 127.0.0.1, none of which
// it returned before in this process. They are released before the
// servers bind them: another process may still take one in between, a
// small race.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	ports := make([]int, 0, n)
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("testcluster: free port: %v", err)
		}
		defer l.Close()
		port := l.Addr().(*net.TCPAddr).Port
		// The kernel may offer a port again once its listener is closed:
		// two clusters of one test process must never get the same one,
		// or one's clients reach the other's kube-apiserver (a TLS
		// "unknown authority") until its wait gives up.
		if handedOut.ports[port] {
			continue
		}
		handedOut.ports[port] = true
		ports = append(ports, port)
	}
	return ports
}

// handedOut is every port freePorts has returned in this process.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}
