package ipvs

import (
	"net/netip"
	"strconv"
	"strings"
)

// Line returns the virtual server's ipvsadm-save line, without its real
// servers: "-A -t 10.96.0.1:443 -s rr -p 10800". Plans and dry-run scripts
// print it (as "ipvsadm -A ..." or, with the verb swapped, "-E ...").
func (vs *VirtualServer) Line() string {
	var b strings.Builder
	b.WriteString("-A " + vs.Service() + " -s " + vs.Scheduler)
	if vs.Flags&FlagPersistent != 0 {
		b.WriteString(" -p " + strconv.FormatUint(uint64(vs.Timeout), 10))
	}
	if names := schedFlagNames(vs.Scheduler, vs.Flags); names != "" {
		b.WriteString(" -b " + names)
	}
	return b.String()
}

// RealServerLine returns the ipvsadm-save line of one of the virtual
// server's real servers: "-a -t 10.96.0.1:443 -r 10.244.0.5:8443 -m -w 1".
func (vs *VirtualServer) RealServerLine(r RealServer) string {
	return "-a " + vs.Service() + " -r " + netip.AddrPortFrom(r.Address, r.Port).String() +
		" -" + string(r.Method) + " -w " + strconv.Itoa(int(r.Weight))
}

// CreateLine returns the set's `ipset save` create line, without the
// leading "create ": "KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536".
func (s *Set) CreateLine() string {
	line := s.Name + " " + string(s.Type)
	if s.Type.IsHash() {
		return line + " family " + s.Family + " hashsize " + strconv.Itoa(s.HashSize) + " maxelem " + strconv.Itoa(s.MaxElem)
	}
	return line + " range " + s.PortRange
}
