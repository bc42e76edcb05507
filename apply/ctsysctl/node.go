package ctsysctl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"k8s.io/utils/cpuset"
)

// The sysctls, as paths under /proc/sys, in the order kube-proxy writes
// them.
const (
	MaxSysctl                   = "net/netfilter/nf_conntrack_max"
	TCPEstablishedTimeoutSysctl = "net/netfilter/nf_conntrack_tcp_timeout_established"
	TCPCloseWaitTimeoutSysctl   = "net/netfilter/nf_conntrack_tcp_timeout_close_wait"
	TCPBeLiberalSysctl          = "net/netfilter/nf_conntrack_tcp_be_liberal"
	UDPTimeoutSysctl            = "net/netfilter/nf_conntrack_udp_timeout"
	UDPStreamTimeoutSysctl      = "net/netfilter/nf_conntrack_udp_timeout_stream"
)

// HashsizeFile is the nf_conntrack module's hash size parameter. It is
// not a sysctl: Wanted names it by this absolute path.
const HashsizeFile = "/sys/module/nf_conntrack/parameters/hashsize"

// onlineCPUsFile lists the node's online CPUs ("0-3,8-11").
const onlineCPUsFile = "/sys/devices/system/cpu/online"

// Setting is one value to write: Path is a sysctl's path under /proc/sys,
// or an absolute path (HashsizeFile) for a file that is not a sysctl.
type Setting struct {
	Path  string
	Value string
}

// Node reads a node's conntrack state from the files under Root: "/" on
// the node, a directory laid out as / in tests.
type Node struct {
	Root string
}

func (n Node) file(path string) string {
	if filepath.IsAbs(path) {
		return filepath.Join(n.Root, path)
	}
	return filepath.Join(n.Root, "proc/sys", path)
}

// readInt reads an integer file; a missing file is an error wrapping
// fs.ErrNotExist.
func (n Node) readInt(path string) (int, error) {
	b, err := os.ReadFile(n.file(path))
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", n.file(path), err)
	}
	return v, nil
}

// NumCPU counts the node's online CPUs, as kube-proxy does: the table is
// host-wide, so the process's CPU affinity must not shrink it. When the
// list cannot be read it falls back to the Go runtime's count.
func (n Node) NumCPU() int {
	if b, err := os.ReadFile(n.file(onlineCPUsFile)); err == nil {
		if set, err := cpuset.Parse(strings.TrimSpace(string(b))); err == nil && set.Size() > 0 {
			return set.Size()
		}
	}
	return runtime.NumCPU()
}

// readOnly reports whether path's file has no write permission for
// anyone: the kernel gives nf_conntrack_max mode 0444 in every network
// namespace but the initial one. A file that cannot be examined is not
// read-only here; writing it reports why.
func (n Node) readOnly(path string) bool {
	st, err := os.Stat(n.file(path))
	return err == nil && st.Mode().Perm()&0o222 == 0
}

// seconds is a timeout as the sysctls take it: whole seconds, truncated.
func seconds(d time.Duration) string {
	return strconv.Itoa(int(d / time.Second))
}

// Wanted returns what kube-proxy v1.37 would write for c on this node, in
// its order: nf_conntrack_max only when the node has less than c.Max, the
// hash size only when it is below a quarter of c.Max, and each timeout
// and be_liberal that c sets, whatever the node has (the caller drops
// those that already match). warn is set when the table size is not this
// network namespace's to set: the kernel lets only the initial namespace
// change nf_conntrack_max and the hash size, so they are left out and
// warn says what kube-proxy would have set (and failed to).
func (n Node) Wanted(c Config) (out []Setting, warn string, err error) {
	out, warn, err = n.wantedSize(c)
	if err != nil {
		return nil, "", err
	}
	out = appendTimeouts(out, TCPEstablishedTimeoutSysctl, c.TCPEstablishedTimeout, TCPCloseWaitTimeoutSysctl, c.TCPCloseWaitTimeout)
	if c.TCPBeLiberal {
		out = append(out, Setting{TCPBeLiberalSysctl, "1"})
	}
	out = appendTimeouts(out, UDPTimeoutSysctl, c.UDPTimeout, UDPStreamTimeoutSysctl, c.UDPStreamTimeout)
	return out, warn, nil
}

// wantedSize is the table size and hash size part of Wanted. As in
// kube-proxy, a table size that cannot be read is written, and a hash size
// that cannot be read is an error.
func (n Node) wantedSize(c Config) ([]Setting, string, error) {
	want := c.Max(n.NumCPU())
	if want == 0 {
		return nil, "", nil
	}
	cur, err := n.readInt(MaxSysctl)
	raiseMax := err != nil || cur < want
	hash, err := n.readInt(HashsizeFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("read conntrack hash size: %w (is the nf_conntrack module loaded?)", err)
		}
		return nil, "", err
	}
	raiseHash := hash < want/4
	if n.readOnly(MaxSysctl) {
		if !raiseMax && !raiseHash {
			return nil, "", nil
		}
		return nil, fmt.Sprintf("nf_conntrack_max (%d) and the conntrack hash size (%d) are read-only in this network namespace; kube-proxy would set them to %d and %d, and fail", cur, hash, want, want/4), nil
	}
	var out []Setting
	if raiseMax {
		out = append(out, Setting{MaxSysctl, strconv.Itoa(want)})
	}
	if raiseHash {
		out = append(out, Setting{HashsizeFile, strconv.Itoa(want / 4)})
	}
	return out, "", nil
}

// appendTimeouts appends each of two timeout sysctls that is set (a
// zero leaves the kernel's value), in the order given.
func appendTimeouts(out []Setting, path1 string, d1 time.Duration, path2 string, d2 time.Duration) []Setting {
	for _, s := range []struct {
		path string
		d    time.Duration
	}{{path1, d1}, {path2, d2}} {
		if s.d > 0 {
			out = append(out, Setting{s.path, seconds(s.d)})
		}
	}
	return out
}
