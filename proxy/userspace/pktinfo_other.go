//go:build !linux

package userspace

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// The proxy serves the portal rules of Linux's iptables; it refuses to
// start elsewhere, so these only let the package build.

func enablePktinfo(*net.UDPConn, bool) error {
	return fmt.Errorf("%w: the userspace proxy needs Linux", errors.ErrUnsupported)
}

func replyPktinfo([]byte, netip.Addr) []byte { return nil }
