package iptables

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// x_tables' getsockopt for a table's entries (IPT_SO_GET_ENTRIES and
// IP6T_SO_GET_ENTRIES): struct ipt_get_entries, the table's name and
// size, then its entries as the kernel holds them.
const xtSoGetEntries = 65

// xtFamily is where one family's x_tables live and how its entries are
// laid out: struct ipt_entry or ip6t_entry, whose target_offset and
// next_offset follow the family's address match (84 and 136 bytes) and a
// 32-bit nfcache.
type xtFamily struct {
	name, names        string // "IPv4", "ip_tables_names"
	domain, level      int
	targetOff, nextOff int
}

var xtFamilies = []xtFamily{
	{"IPv4", "ip_tables_names", unix.AF_INET, unix.IPPROTO_IP, 88, 90},
	{"IPv6", "ip6_tables_names", unix.AF_INET6, unix.IPPROTO_IPV6, 140, 142},
}

// LegacyRules names the first of chains that holds a rule in an x_tables
// table the kernel lists, table by table (filter before nat: the smaller
// one first), IPv4 then IPv6. It copies each table it needs from the
// kernel once (what iptables-legacy-save starts with, without printing a
// rule) and creates none.
func (KernelProbe) LegacyRules(chains []TableChain) (string, error) {
	var tables []string
	for _, c := range chains {
		if t := string(c.Table); !slices.Contains(tables, t) {
			tables = append(tables, t)
		}
	}
	for _, t := range tables {
		for _, f := range xtFamilies {
			listed, err := os.ReadFile("/proc/thread-self/net/" + f.names)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return "", err
			}
			if !bytes.Contains(append([]byte("\n"), listed...), []byte("\n"+t+"\n")) {
				continue
			}
			rules, err := xtablesChainRules(f, t)
			if err != nil {
				return "", fmt.Errorf("x_tables probe of %s table %s: %w", f.name, t, err)
			}
			for _, c := range chains {
				if string(c.Table) == t && rules[c.Chain] > 0 {
					return f.name + " " + t + " " + c.Chain, nil
				}
			}
		}
	}
	return "", nil
}

// xtablesChainRules counts the rules of each user-defined chain of one
// table. In the kernel's blob a user-defined chain is an ERROR entry
// naming it, its rules, and a RETURN entry; the table ends with an ERROR
// entry of its own.
func xtablesChainRules(f xtFamily, table string) (map[string]int, error) {
	fd, err := unix.Socket(f.domain, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var blob []byte
	for try := 0; ; try++ {
		var info xtGetInfo
		copy(info.name[:len(info.name)-1], table)
		size := uint32(unsafe.Sizeof(info))
		if err := getsockopt(fd, f.level, xtSoGetInfo, unsafe.Pointer(&info), &size); err != nil {
			return nil, err
		}
		head := (36 + int(unsafe.Alignof(uint64(0))) - 1) &^ (int(unsafe.Alignof(uint64(0))) - 1)
		buf := make([]byte, head+int(info.size))
		copy(buf, table)
		binary.NativeEndian.PutUint32(buf[32:], info.size)
		n := uint32(len(buf))
		err := getsockopt(fd, f.level, xtSoGetEntries, unsafe.Pointer(&buf[0]), &n)
		if errors.Is(err, unix.EAGAIN) && try < 3 {
			continue // the table changed between the two calls
		}
		if err != nil {
			return nil, err
		}
		blob = buf[head:]
		break
	}
	return chainRuleCounts(blob, f)
}

func getsockopt(fd, level, opt int, p unsafe.Pointer, size *uint32) error {
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt),
		uintptr(p), uintptr(unsafe.Pointer(size)), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// chainRuleCounts walks a table's entries.
func chainRuleCounts(blob []byte, f xtFamily) (map[string]int, error) {
	rules := map[string]int{}
	chain, head := "", 0
	for off, i := 0, 0; off < len(blob); i++ {
		if off+f.nextOff+2 > len(blob) {
			return nil, errors.New("entry past the table's end")
		}
		target := off + int(binary.NativeEndian.Uint16(blob[off+f.targetOff:]))
		next := int(binary.NativeEndian.Uint16(blob[off+f.nextOff:]))
		if next == 0 || off+next > len(blob) || target+32 > off+next {
			return nil, errors.New("malformed entry")
		}
		if cString(blob[target+2:target+31]) == "ERROR" {
			if chain != "" {
				rules[chain] = i - head - 2
			}
			chain, head = cString(blob[target+32:off+next]), i
		}
		off += next
	}
	return rules, nil
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
