package ipvs

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/textform"
)

type section int

const (
	secNone section = iota
	secIPVS
	secIPSet
	secAddrs
	secIPTables
)

// parser reads the text form line by line.
type parser struct {
	out      []*Ruleset
	cur      *Ruleset
	sec      section
	comment  *string // pending "# " line of the ipset section
	iptLines []string
	iptStart int
}

func (p *parser) line(n int, line string) error {
	perr := func(msg string) error { return &ParseError{Line: n, Text: line, Msg: msg} }
	if strings.HasPrefix(line, "## ") {
		return p.header(n, line, perr)
	}
	switch p.sec {
	case secNone:
		if strings.TrimSpace(line) == "" {
			return nil
		}
		return perr("expected a " + strings.TrimSpace(headerIPVS) + " header")
	case secIPTables:
		p.iptLines = append(p.iptLines, line)
		return nil
	case secIPSet:
		if strings.HasPrefix(line, "#") {
			if p.comment != nil {
				return perr("two comment lines before one create")
			}
			c := strings.TrimPrefix(strings.TrimPrefix(line, "#"), " ")
			p.comment = &c
			return nil
		}
	}
	f := strings.Fields(line)
	if len(f) == 0 {
		return nil
	}
	switch p.sec {
	case secIPVS:
		return p.ipvsLine(f, perr)
	case secIPSet:
		return p.ipsetLine(f, perr)
	default:
		return p.addrLine(f, perr)
	}
}

// header starts a section; "## ipvs FAMILY" also starts a ruleset.
func (p *parser) header(n int, line string, perr func(string) error) error {
	want := map[section]string{secNone: headerIPVS, secIPVS: headerIPSet, secIPSet: headerAddrs, secAddrs: headerIPTables, secIPTables: headerIPVS}[p.sec]
	if strings.HasPrefix(line, headerIPVS) && want == headerIPVS {
		fam := nodetable.Family(strings.TrimPrefix(line, headerIPVS))
		if fam != nodetable.IPv4 && fam != nodetable.IPv6 {
			return perr("family must be IPv4 or IPv6")
		}
		if err := p.finish(n - 1); err != nil {
			return err
		}
		p.cur = &Ruleset{Family: fam}
		p.out = append(p.out, p.cur)
		p.sec = secIPVS
		return nil
	}
	if line != want {
		return perr("expected section header " + strings.TrimSpace(want))
	}
	if p.comment != nil {
		return perr("comment line without a create line")
	}
	p.sec++
	p.iptStart = n + 1
	return nil
}

// finish closes the current ruleset, if any, at line n.
func (p *parser) finish(n int) error {
	if p.cur == nil {
		return nil
	}
	if p.sec != secIPTables {
		return &ParseError{Line: n, Msg: "ruleset ends before its " + strings.TrimSpace(headerIPTables) + " section"}
	}
	rs, err := ipt.Parse([]byte(strings.Join(p.iptLines, "\n")), p.cur.Family)
	if err != nil {
		return textform.Within(err, p.iptStart, "iptables: ")
	}
	p.cur.IPTables = rs
	p.cur, p.sec, p.iptLines = nil, secNone, nil
	return nil
}

var protoOptions = map[string]Protocol{"-t": TCP, "-u": UDP, "--sctp-service": SCTP}

func (p *parser) service(opt, spec string) (Protocol, netip.AddrPort, bool) {
	proto, ok := protoOptions[opt]
	if !ok {
		return "", netip.AddrPort{}, false
	}
	ap, err := netip.ParseAddrPort(spec)
	return proto, ap, err == nil
}

// ipvsLine reads "-A SVC -s SCHED [-p T] [-b FLAGS]" and "-a SVC -r ADDR -m -w W".
func (p *parser) ipvsLine(f []string, perr func(string) error) error {
	if len(f) < 3 {
		return perr("expected -A or -a with a service")
	}
	proto, ap, ok := p.service(f[1], f[2])
	if !ok {
		return perr("bad service " + f[1] + " " + f[2])
	}
	existing := p.cur.VirtualServer(proto, ap.Addr(), ap.Port())
	switch f[0] {
	case "-A":
		if existing != nil {
			return perr("virtual server listed twice")
		}
		vs := &VirtualServer{Protocol: proto, Address: ap.Addr(), Port: ap.Port()}
		if err := parseServiceOptions(vs, f[3:]); err != "" {
			return perr(err)
		}
		p.cur.VirtualServers = append(p.cur.VirtualServers, vs)
	case "-a":
		if existing == nil {
			return perr("real server of an unknown virtual server")
		}
		r, err := parseRealServer(f[3:])
		if err != "" {
			return perr(err)
		}
		for _, o := range existing.RealServers {
			if o.Address == r.Address && o.Port == r.Port {
				return perr("real server listed twice")
			}
		}
		existing.RealServers = append(existing.RealServers, r)
	default:
		return perr("expected -A or -a")
	}
	return nil
}

func parseServiceOptions(vs *VirtualServer, f []string) string {
	if len(f) < 2 || f[0] != "-s" {
		return "expected -s SCHEDULER"
	}
	vs.Scheduler, f = f[1], f[2:]
	if len(f) >= 2 && f[0] == "-p" {
		t, err := strconv.ParseUint(f[1], 10, 32)
		if err != nil {
			return "bad persistence timeout"
		}
		vs.Flags, vs.Timeout, f = vs.Flags|FlagPersistent, uint32(t), f[2:]
	}
	if len(f) >= 2 && f[0] == "-b" {
		for _, name := range strings.Split(f[1], ",") {
			found := false
			for _, sf := range schedFlags(vs.Scheduler) {
				if sf.name == name {
					vs.Flags, found = vs.Flags|sf.flag, true
				}
			}
			if !found {
				return "unknown scheduler flag " + name
			}
		}
		f = f[2:]
	}
	if len(f) > 0 {
		return "unexpected " + f[0]
	}
	return ""
}

func parseRealServer(f []string) (RealServer, string) {
	if len(f) != 5 || f[0] != "-r" || f[3] != "-w" {
		return RealServer{}, "expected -r ADDR:PORT -m -w WEIGHT"
	}
	ap, err := netip.ParseAddrPort(f[1])
	if err != nil {
		return RealServer{}, "bad real server address"
	}
	var m ForwardMethod
	switch f[2] {
	case "-m", "-g", "-i":
		m = ForwardMethod(f[2][1:])
	default:
		return RealServer{}, "bad forwarding method " + f[2]
	}
	w, err := strconv.ParseInt(f[4], 10, 32)
	if err != nil {
		return RealServer{}, "bad weight"
	}
	return RealServer{Address: ap.Addr(), Port: ap.Port(), Method: m, Weight: int32(w)}, ""
}

// ipsetLine reads "create NAME TYPE ..." and "add NAME ENTRY".
func (p *parser) ipsetLine(f []string, perr func(string) error) error {
	if len(f) < 3 {
		return perr("expected create or add")
	}
	set := p.cur.Set(f[1])
	switch f[0] {
	case "create":
		if set != nil {
			return perr("set created twice")
		}
		s, err := parseCreate(f[1:])
		if err != "" {
			return perr(err)
		}
		if p.comment != nil {
			s.Comment, p.comment = *p.comment, nil
		}
		p.cur.Sets = append(p.cur.Sets, s)
	case "add":
		if set == nil || len(f) != 3 {
			return perr("add needs a created set and one entry")
		}
		if p.comment != nil {
			return perr("comment line before an add line")
		}
		set.Entries = append(set.Entries, f[2])
	default:
		return perr("expected create or add")
	}
	return nil
}

func parseCreate(f []string) (*Set, string) {
	s := &Set{Name: f[0], Type: SetType(f[1])}
	switch s.Type {
	case HashIP, HashIPPort, HashIPPortIP, HashIPPortNet:
		if len(f) != 8 || f[2] != "family" || f[4] != "hashsize" || f[6] != "maxelem" {
			return nil, "expected family F hashsize N maxelem N"
		}
		if f[3] != "inet" && f[3] != "inet6" {
			return nil, "family must be inet or inet6"
		}
		var err1, err2 error
		s.Family = f[3]
		s.HashSize, err1 = strconv.Atoi(f[5])
		s.MaxElem, err2 = strconv.Atoi(f[7])
		if err1 != nil || err2 != nil {
			return nil, "bad hashsize or maxelem"
		}
	case BitmapPort:
		if len(f) != 4 || f[2] != "range" {
			return nil, "expected range A-B"
		}
		s.PortRange = f[3]
	default:
		return nil, "unsupported set type " + f[1]
	}
	return s, ""
}

// addrLine reads "addr add A/32 dev kube-ipvs0".
func (p *parser) addrLine(f []string, perr func(string) error) error {
	if len(f) != 5 || f[0] != "addr" || f[1] != "add" || f[3] != "dev" || f[4] != DummyDevice {
		return perr("expected addr add ADDR dev " + DummyDevice)
	}
	pfx, err := netip.ParsePrefix(f[2])
	if err != nil || pfx.Bits() != pfx.Addr().BitLen() {
		return perr("expected a host prefix")
	}
	p.cur.Addresses = append(p.cur.Addresses, pfx.Addr())
	return nil
}
