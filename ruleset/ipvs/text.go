package ipvs

import (
	"bufio"
	"io"
	"net/netip"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/textform"
)

// Section headers of the text form, in the order they appear.
const (
	headerIPVS     = "## ipvs "
	headerIPSet    = "## ipset"
	headerAddrs    = "## " + DummyDevice
	headerIPTables = "## iptables"
)

// Encode writes rs in its native text form, objects in the order they are
// held (the renderer sorts them):
//
//	## ipvs IPv4
//	-A -t 10.96.0.1:443 -s rr -p 10800
//	-a -t 10.96.0.1:443 -r 10.244.0.5:8443 -m -w 1
//	## ipset
//	# Kubernetes service cluster ip + port for masquerade purpose
//	create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536
//	add KUBE-CLUSTER-IP 10.96.0.1,tcp:443
//	## kube-ipvs0
//	addr add 10.96.0.1/32 dev kube-ipvs0
//	## iptables
//	*filter ... COMMIT (iptables-save text)
//
// The ipvs lines are what ipvsadm-save prints, the ipset section is valid
// `ipset restore` input, the address lines are `ip -batch` input.
func (rs *Ruleset) Encode(w io.Writer) error {
	return textform.Write(w, func(bw *bufio.Writer) error {
		bw.WriteString(headerIPVS + string(rs.Family) + "\n")
		for _, vs := range rs.VirtualServers {
			vs.encode(bw)
		}
		bw.WriteString(headerIPSet + "\n")
		for _, s := range rs.Sets {
			s.encode(bw)
		}
		bw.WriteString(headerAddrs + "\n")
		for _, a := range rs.Addresses {
			bw.WriteString("addr add " + netip.PrefixFrom(a, a.BitLen()).String() + " dev " + DummyDevice + "\n")
		}
		bw.WriteString(headerIPTables + "\n")
		if rs.IPTables == nil {
			return nil
		}
		return rs.IPTables.Encode(bw)
	})
}

// String returns the text form of rs.
func (rs *Ruleset) String() string { return textform.String(rs.Encode) }

// EncodeAll writes several rulesets (one per family) one after the other.
func EncodeAll(w io.Writer, sets []*Ruleset) error { return textform.EncodeAll(w, sets, nil) }

// protoOption is ipvsadm's service option for a protocol.
func protoOption(p Protocol) string {
	switch p {
	case TCP:
		return "-t"
	case UDP:
		return "-u"
	case SCTP:
		return "--sctp-service"
	}
	return "--" + string(p) + "-service"
}

// Service returns the virtual server's ipvsadm service spec ("-t 10.96.0.1:443").
func (vs *VirtualServer) Service() string {
	return protoOption(vs.Protocol) + " " + netip.AddrPortFrom(vs.Address, vs.Port).String()
}

func (vs *VirtualServer) encode(w *bufio.Writer) {
	w.WriteString(vs.Line() + "\n")
	for _, r := range vs.RealServers {
		w.WriteString(vs.RealServerLine(r) + "\n")
	}
}

// schedFlags maps the scheduler flags to ipvsadm's names for a scheduler.
func schedFlags(sched string) [3]struct {
	flag Flags
	name string
} {
	names := [3]string{"flag-1", "flag-2", "flag-3"}
	switch sched {
	case "sh", "mh":
		names[0], names[1] = sched+"-fallback", sched+"-port"
	}
	var out [3]struct {
		flag Flags
		name string
	}
	for i, f := range []Flags{FlagSched1, FlagSched2, FlagSched3} {
		out[i].flag, out[i].name = f, names[i]
	}
	return out
}

func schedFlagNames(sched string, flags Flags) string {
	var names []string
	for _, f := range schedFlags(sched) {
		if flags&f.flag != 0 {
			names = append(names, f.name)
		}
	}
	return strings.Join(names, ",")
}

func (s *Set) encode(w *bufio.Writer) {
	if s.Comment != "" {
		w.WriteString("# " + s.Comment + "\n")
	}
	w.WriteString("create " + s.CreateLine() + "\n")
	for _, e := range s.Entries {
		w.WriteString("add " + s.Name + " " + e + "\n")
	}
}

// ParseError reports a line of the text form that could not be read.
type ParseError = textform.ParseError

// Parse reads one ruleset in the text form Encode writes. All four
// sections must be present, in order.
func Parse(data []byte) (*Ruleset, error) {
	return textform.One(ParseAll(data))
}

// ParseAll reads the rulesets EncodeAll writes.
func ParseAll(data []byte) ([]*Ruleset, error) {
	p := &parser{}
	lines := strings.Split(string(data), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	for i, line := range lines {
		if err := p.line(i+1, line); err != nil {
			return nil, err
		}
	}
	if err := p.finish(len(lines)); err != nil {
		return nil, err
	}
	return p.out, nil
}
