package nftgen

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Read returns the current generation ID of the calling thread's network namespace.
func Read() (uint32, error) {
	req := nl.NewNetlinkRequest(unix.NFNL_SUBSYS_NFTABLES<<8|unix.NFT_MSG_GETGEN, 0)
	req.AddData(&nl.Nfgenmsg{NfgenFamily: unix.AF_UNSPEC, Version: nl.NFNETLINK_V0})
	msgs, err := req.Execute(unix.NETLINK_NETFILTER, 0)
	if err != nil {
		return 0, fmt.Errorf("read nf_tables generation: %w", err)
	}
	for _, m := range msgs {
		if len(m) < 4 {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[4:])
		if err != nil {
			return 0, fmt.Errorf("read nf_tables generation: %w", err)
		}
		for _, a := range attrs {
			if a.Attr.Type == unix.NFTA_GEN_ID && len(a.Value) >= 4 {
				return binary.BigEndian.Uint32(a.Value), nil
			}
		}
	}
	return 0, fmt.Errorf("read nf_tables generation: no NFTA_GEN_ID in the answer")
}

// NetnsCookie returns the calling thread's network namespace cookie: unlike
// its inode number, it is never reused for another namespace (Linux 5.14+).
func NetnsCookie() (uint64, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	var cookie uint64
	size := uint32(8)
	if err := getsockopt(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE, unsafe.Pointer(&cookie), &size); err != nil {
		return 0, fmt.Errorf("read network namespace cookie: %w", err)
	}
	return cookie, nil
}

func getsockopt(fd, level, opt int, val unsafe.Pointer, size *uint32) error {
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(val), uintptr(unsafe.Pointer(size)), 0)
	if errno != 0 {
		return errno
	}
	return nil
}
