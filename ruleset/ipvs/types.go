// Package ipvs models what kube-proxy's ipvs mode programs for one IP
// family as plain data: the IPVS virtual servers and their real servers, the
// ipsets its iptables rules match against, the addresses bound to the
// kube-ipvs0 dummy interface, and the helper iptables chains (an embedded
// iptables.Ruleset). Its one native text form (Encode, Parse) stacks the
// four tools' own formats: ipvsadm-save lines, ipset save lines, ip -batch
// address lines and iptables-save text, each section headed by a "## " line.
package ipvs

import (
	"net/netip"
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// DummyDevice is the dummy interface kube-proxy binds service addresses to.
const DummyDevice = "kube-ipvs0"

// Protocol is an IPVS service protocol, spelled as ipset and iptables spell it.
type Protocol string

const (
	TCP  Protocol = "tcp"
	UDP  Protocol = "udp"
	SCTP Protocol = "sctp"
)

// Flags are IPVS service flags (IP_VS_SVC_F_* in linux/ip_vs.h).
type Flags uint32

const (
	// FlagPersistent is ipvsadm's -p: session affinity, with Timeout seconds.
	FlagPersistent Flags = 0x1
	// FlagSched1 is sh-fallback / mh-fallback (ipvsadm -b, kernel 4.18+ for mh).
	FlagSched1 Flags = 0x8
	// FlagSched2 is sh-port / mh-port: hash the source port too. kube-proxy's
	// FlagSourceHash (0x10), which it sets for the mh scheduler.
	FlagSched2 Flags = 0x10
	// FlagSched3 is the scheduler's third flag ("flag-3").
	FlagSched3 Flags = 0x20
)

// ForwardMethod is how a real server is reached (ipvsadm -m, -g, -i).
type ForwardMethod string

// Masquerade (NAT) is the only method kube-proxy uses.
const Masquerade ForwardMethod = "m"

// RealServer is one destination of a virtual server ("-a ... -r ADDR -m -w W").
type RealServer struct {
	Address netip.Addr    `json:"address"`
	Port    uint16        `json:"port"`
	Method  ForwardMethod `json:"method"`
	Weight  int32         `json:"weight"`
}

// VirtualServer is one IPVS service ("-A -t ADDR:PORT -s SCHED ...").
type VirtualServer struct {
	Protocol  Protocol   `json:"protocol"`
	Address   netip.Addr `json:"address"`
	Port      uint16     `json:"port"`
	Scheduler string     `json:"scheduler"`
	Flags     Flags      `json:"flags,omitempty"`
	// Timeout is the persistence timeout in seconds (-p); set only with FlagPersistent.
	Timeout     uint32       `json:"timeout,omitempty"`
	RealServers []RealServer `json:"realServers,omitempty"`
}

// SetType is an ipset type, spelled as ipset spells it.
type SetType string

const (
	HashIP        SetType = "hash:ip"
	HashIPPort    SetType = "hash:ip,port"
	HashIPPortIP  SetType = "hash:ip,port,ip"
	HashIPPortNet SetType = "hash:ip,port,net"
	BitmapPort    SetType = "bitmap:port"
)

// IsHash reports whether the type takes family, hashsize and maxelem.
func (t SetType) IsHash() bool { return t != BitmapPort }

// Set is one ipset. Hash sets have Family ("inet" or "inet6"), HashSize and
// MaxElem; bitmap:port sets have PortRange ("0-65535") and no family.
type Set struct {
	Name      string  `json:"name"`
	Type      SetType `json:"type"`
	Family    string  `json:"family,omitempty"`
	HashSize  int     `json:"hashsize,omitempty"`
	MaxElem   int     `json:"maxelem,omitempty"`
	PortRange string  `json:"range,omitempty"`
	// Comment is kube-proxy's description of the set, which it writes into
	// the iptables rules matching it. kube-proxy creates sets without the
	// ipset comment extension, so the text form carries it as a "# " line.
	Comment string `json:"comment,omitempty"`
	// Entries are spelled as `ipset save` prints them ("10.96.0.1,tcp:443").
	Entries []string `json:"entries,omitempty"`
}

// Ruleset is everything kube-proxy's ipvs mode programs for one family.
type Ruleset struct {
	Family         nodetable.Family `json:"family"`
	VirtualServers []*VirtualServer `json:"virtualServers"`
	Sets           []*Set           `json:"sets"`
	// Addresses are bound to DummyDevice as host prefixes (/32, /128).
	Addresses []netip.Addr `json:"addresses"`
	IPTables  *ipt.Ruleset `json:"iptables"`
}

// Set returns the named set, or nil.
func (rs *Ruleset) Set(name string) *Set {
	for _, s := range rs.Sets {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// VirtualServer returns the virtual server for proto addr:port, or nil.
func (rs *Ruleset) VirtualServer(proto Protocol, addr netip.Addr, port uint16) *VirtualServer {
	for _, vs := range rs.VirtualServers {
		if vs.Protocol == proto && vs.Address == addr && vs.Port == port {
			return vs
		}
	}
	return nil
}

// Equal reports whether two rulesets hold the same objects in the same order.
func (rs *Ruleset) Equal(o *Ruleset) bool {
	if rs.Family != o.Family || !slices.Equal(rs.Addresses, o.Addresses) {
		return false
	}
	if !slices.EqualFunc(rs.VirtualServers, o.VirtualServers, (*VirtualServer).Equal) {
		return false
	}
	if !slices.EqualFunc(rs.Sets, o.Sets, (*Set).Equal) {
		return false
	}
	if rs.IPTables == nil || o.IPTables == nil {
		return rs.IPTables == o.IPTables
	}
	return rs.IPTables.Equal(o.IPTables)
}

// Equal compares two virtual servers with their real servers.
func (vs *VirtualServer) Equal(o *VirtualServer) bool {
	return vs.Protocol == o.Protocol && vs.Address == o.Address && vs.Port == o.Port &&
		vs.Scheduler == o.Scheduler && vs.Flags == o.Flags && vs.Timeout == o.Timeout &&
		slices.Equal(vs.RealServers, o.RealServers)
}

// Equal compares two sets with their entries.
func (s *Set) Equal(o *Set) bool {
	return s.Name == o.Name && s.Type == o.Type && s.Family == o.Family &&
		s.HashSize == o.HashSize && s.MaxElem == o.MaxElem && s.PortRange == o.PortRange &&
		s.Comment == o.Comment && slices.Equal(s.Entries, o.Entries)
}
