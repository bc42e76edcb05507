package iptables

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"strings"
	"syscall"
	"unsafe"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// NFTTables reports whether nf_tables holds a table of family ip or ip6
// named as an iptables table: without one, iptables-nft has no rule and
// no chain. It lists table names only.
func (KernelProbe) NFTTables() (bool, error) {
	req := nl.NewNetlinkRequest(unix.NFNL_SUBSYS_NFTABLES<<8|unix.NFT_MSG_GETTABLE, unix.NLM_F_DUMP)
	req.AddData(&nl.Nfgenmsg{NfgenFamily: unix.AF_UNSPEC, Version: nl.NFNETLINK_V0})
	msgs, err := req.Execute(unix.NETLINK_NETFILTER, 0)
	if err != nil {
		return false, fmt.Errorf("list nf_tables tables: %w", err)
	}
	for _, m := range msgs {
		if len(m) < 4 || (m[0] != unix.AF_INET && m[0] != unix.AF_INET6) {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[4:])
		if err != nil {
			return false, fmt.Errorf("list nf_tables tables: %w", err)
		}
		for _, a := range attrs {
			if a.Attr.Type == unix.NFTA_TABLE_NAME && xtablesNames[string(bytes.TrimRight(a.Value, "\x00"))] {
				return true, nil
			}
		}
	}
	return false, nil
}

// NFTHint reports whether kubelet's hint chain is in iptables-nft's mangle
// table, of family ip or ip6: one lookup of a chain by name each.
func (KernelProbe) NFTHint() (bool, error) {
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		for _, chain := range hintChains {
			req := nl.NewNetlinkRequest(unix.NFNL_SUBSYS_NFTABLES<<8|unix.NFT_MSG_GETCHAIN, 0)
			req.AddData(&nl.Nfgenmsg{NfgenFamily: family, Version: nl.NFNETLINK_V0})
			req.AddData(nl.NewRtAttr(unix.NFTA_CHAIN_TABLE, nl.ZeroTerminated("mangle")))
			req.AddData(nl.NewRtAttr(unix.NFTA_CHAIN_NAME, nl.ZeroTerminated(chain)))
			_, err := req.Execute(unix.NETLINK_NETFILTER, 0)
			switch {
			case err == nil:
				return true, nil
			case !errors.Is(err, unix.ENOENT):
				return false, fmt.Errorf("look up nf_tables chain %s: %w", chain, err)
			}
		}
	}
	return false, nil
}

// LegacyTables reports whether any x_tables table has been instantiated in
// the calling thread's network namespace, without instantiating one: the
// kernel lists them in ip_tables_names and ip6_tables_names. A file that
// is missing (the module is not loaded) lists none.
func (KernelProbe) LegacyTables() (bool, error) {
	for _, f := range []string{"ip_tables_names", "ip6_tables_names"} {
		out, err := os.ReadFile("/proc/thread-self/net/" + f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, err
		}
		if len(bytes.TrimSpace(out)) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// x_tables' getsockopt for a table's summary (IPT_SO_GET_INFO and
// IP6T_SO_GET_INFO, both IPT_BASE_CTL) and its answer, struct
// ipt_getinfo (ip6t_getinfo has the same layout).
const xtSoGetInfo = 64

type xtGetInfo struct {
	name       [32]byte
	validHooks uint32
	hookEntry  [5]uint32
	underflow  [5]uint32
	numEntries uint32
	size       uint32
}

// LegacyInUse reports whether an instantiated x_tables table holds more
// entries than an empty one: a table starts with one entry per built-in
// chain (its policy) and a final one, and every rule adds one, every
// chain of its own two. It asks only for the tables the kernel lists, by
// name, so it creates none.
func (KernelProbe) LegacyInUse() (bool, error) {
	for _, f := range []struct {
		names       string
		domain, lvl int
	}{{"ip_tables_names", unix.AF_INET, unix.IPPROTO_IP}, {"ip6_tables_names", unix.AF_INET6, unix.IPPROTO_IPV6}} {
		out, err := os.ReadFile("/proc/thread-self/net/" + f.names)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, err
		}
		names := strings.Fields(string(out))
		if len(names) == 0 {
			continue
		}
		inUse, err := xtablesInUse(f.domain, f.lvl, names)
		if inUse || err != nil {
			return inUse, err
		}
	}
	return false, nil
}

// xtablesInUse asks for each named table's summary over a raw socket of
// the family.
func xtablesInUse(domain, level int, names []string) (bool, error) {
	fd, err := unix.Socket(domain, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return false, fmt.Errorf("x_tables probe: %w", err)
	}
	defer unix.Close(fd)
	for _, name := range names {
		var info xtGetInfo
		copy(info.name[:len(info.name)-1], name)
		size := uint32(unsafe.Sizeof(info))
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), xtSoGetInfo,
			uintptr(unsafe.Pointer(&info)), uintptr(unsafe.Pointer(&size)), 0)
		if errno != 0 {
			return false, fmt.Errorf("x_tables probe of table %s: %w", name, errno)
		}
		if info.numEntries > uint32(bits.OnesCount32(info.validHooks))+1 {
			return true, nil
		}
	}
	return false, nil
}

// NFTRules names the first of chains that holds a rule in iptables-nft's
// tables, in family ip, then ip6. Each chain is asked for with a rule dump
// limited to it, read only up to its first rule, so a chain of 10k rules
// costs what an empty one does.
func (KernelProbe) NFTRules(chains []TableChain) (string, error) {
	for _, c := range chains {
		for _, f := range []struct {
			af   uint8
			name string
		}{{unix.AF_INET, "IPv4"}, {unix.AF_INET6, "IPv6"}} {
			has, err := nftChainHasRule(f.af, string(c.Table), c.Chain)
			if err != nil {
				return "", fmt.Errorf("look up nf_tables rules of %s %s: %w", c.Table, c.Chain, err)
			}
			if has {
				return f.name + " " + string(c.Table) + " " + c.Chain, nil
			}
		}
	}
	return "", nil
}

// nftChainHasRule sends a rule dump request for one chain and reads its
// first answer: a rule, or the end of an empty (or missing) chain. The
// socket is closed then, which ends the dump in the kernel.
func nftChainHasRule(family uint8, table, chain string) (bool, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 5}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return false, err
	}
	req := nl.NewNetlinkRequest(unix.NFNL_SUBSYS_NFTABLES<<8|unix.NFT_MSG_GETRULE, unix.NLM_F_DUMP)
	req.AddData(&nl.Nfgenmsg{NfgenFamily: family, Version: nl.NFNETLINK_V0})
	req.AddData(nl.NewRtAttr(unix.NFTA_RULE_TABLE, nl.ZeroTerminated(table)))
	req.AddData(nl.NewRtAttr(unix.NFTA_RULE_CHAIN, nl.ZeroTerminated(chain)))
	if err := unix.Sendto(fd, req.Serialize(), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, err
	}
	buf := make([]byte, 64<<10)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return false, err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return false, err
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_NEWRULE:
				return true, nil
			case unix.NLMSG_DONE:
				return false, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) < 4 {
					return false, errors.New("short netlink error")
				}
				errno := -int32(binary.NativeEndian.Uint32(m.Data[:4]))
				if errno == 0 || unix.Errno(errno) == unix.ENOENT {
					return false, nil
				}
				return false, unix.Errno(errno)
			}
		}
	}
}
