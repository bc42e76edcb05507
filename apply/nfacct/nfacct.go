// Package nfacct creates the extended accounting counters (nfnetlink_acct)
// that kube-proxy's iptables mode counts packets with, over netlink in
// the calling thread's network namespace.
//
// kube-proxy v1.37 probes for nfacct when it starts, by asking for a
// counter that need not exist: an answer, or "no such object", means the
// kernel has it. It then makes sure its two counters exist before every
// full sync, and writes the rules that name a counter only while that
// counter exists. That includes the localhost NodePort rules: on a kernel
// without nfacct, NodePorts do not answer on 127.0.0.1. The counters live
// in the network namespace and stay there after kube-proxy exits; nothing
// deletes them.
package nfacct

import (
	"errors"
	"fmt"
	"syscall"
)

// The counters kube-proxy's iptables mode uses.
const (
	// LocalhostNodePortsAccepted counts NodePort packets accepted on
	// 127.0.0.0/8.
	LocalhostNodePortsAccepted = "localhost_nps_accepted_pkts"
	// CTStateInvalidDropped counts packets KUBE-FORWARD drops as
	// conntrack-INVALID.
	CTStateInvalidDropped = "ct_state_invalid_dropped_pkts"
)

// Counters are the counters kube-proxy ensures.
var Counters = []string{CTStateInvalidDropped, LocalhostNodePortsAccepted}

// maxName is the longest counter name the kernel takes (NFACCT_NAME_MAX
// less the terminating NUL).
const maxName = 31

// The nfnetlink_acct protocol: the subsystem, its messages and the name
// attribute.
const (
	subsysAcct = 7 // NFNL_SUBSYS_ACCT
	msgNew     = 0 // NFNL_MSG_ACCT_NEW
	msgGet     = 1 // NFNL_MSG_ACCT_GET
	attrName   = 1 // NFACCT_NAME
)

// The netlink request flags (NLM_F_*), which x/sys/unix has only on Linux.
const (
	flagAck    = 0x4   // NLM_F_ACK
	flagExcl   = 0x200 // NLM_F_EXCL
	flagCreate = 0x400 // NLM_F_CREATE
)

// ErrNotSupported says the kernel has no nfnetlink_acct.
var ErrNotSupported = errors.New("the kernel has no nfacct (nfnetlink_acct)")

// probeName is a counter looked up only to see whether nfacct answers.
const probeName = "svcproxy-probe"

// Supported reports whether the kernel answers nfacct requests, as
// kube-proxy probes it: a lookup that finds the counter, or reports that
// there is none.
func Supported() bool {
	_, err := Exists(probeName)
	return err == nil
}

// Exists reports whether the named counter exists.
func Exists(name string) (bool, error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	_, err := request(msgGet, flagAck, name)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, syscall.ENOENT):
		return false, nil
	}
	return false, fmt.Errorf("nfacct: get %s: %w", name, unsupported(err))
}

// Ensure creates the named counter unless it exists; it never resets one.
func Ensure(name string) error {
	ok, err := Exists(name)
	if err != nil || ok {
		return err
	}
	_, err = request(msgNew, flagCreate|flagExcl|flagAck, name)
	if err != nil && !errors.Is(err, syscall.EEXIST) && !errors.Is(err, syscall.EBUSY) {
		return fmt.Errorf("nfacct: create %s: %w", name, unsupported(err))
	}
	return nil
}

// unsupported maps the errors of a kernel without the subsystem (no
// handler for it) to ErrNotSupported.
func unsupported(err error) error {
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.EPROTONOSUPPORT) {
		return fmt.Errorf("%w: %v", ErrNotSupported, err)
	}
	return err
}

func checkName(name string) error {
	if name == "" || len(name) > maxName {
		return fmt.Errorf("nfacct: counter name %q: must be 1 to %d bytes", name, maxName)
	}
	return nil
}
