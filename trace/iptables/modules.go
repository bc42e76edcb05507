package iptables

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// moduleOption reads the next "[!] --option", or reports false at the end
// of the module's options.
func (p *parser) moduleOption() (opt string, not, ok bool) {
	w := p.peek()
	if w == "!" && p.i+1 < len(p.words) && strings.HasPrefix(p.words[p.i+1], "--") {
		p.i += 2
		return p.words[p.i-1], true, true
	}
	if strings.HasPrefix(w, "--") {
		p.i++
		return w, false, true
	}
	return "", false, false
}

// module parses "-m NAME" and its options into matchers.
func (p *parser) module() error {
	name, err := p.next()
	if err != nil {
		return err
	}
	for {
		opt, not, ok := p.moduleOption()
		if !ok {
			return nil
		}
		if err := p.moduleOpt(name, opt, not); err != nil {
			return err
		}
	}
}

func (p *parser) moduleOpt(module, opt string, not bool) error {
	switch module {
	case "comment":
		if opt == "--comment" {
			_, err := p.next()
			return err
		}
	case "tcp", "udp", "sctp":
		if opt == "--dport" || opt == "--sport" {
			return p.port(opt == "--dport", not)
		}
	case "conntrack", "state":
		if (module == "conntrack" && opt == "--ctstate") || (module == "state" && opt == "--state") {
			return p.ctstate(not)
		}
	case "addrtype":
		if opt == "--src-type" || opt == "--dst-type" {
			return p.addrtype(opt == "--src-type", not)
		}
	case "mark":
		if opt == "--mark" {
			return p.markMatch(not)
		}
	case "statistic":
		return p.statistic(opt, not)
	case "recent":
		return p.recent(opt, not)
	case "nfacct":
		if opt == "--nfacct-name" && !not {
			_, err := p.next() // counts, matches every packet
			return err
		}
	case "ipvs":
		return p.ipvsMatch(opt, not)
	case "physdev":
		if opt == "--physdev-is-in" {
			// The trace models no bridge: no packet entered through a
			// bridge port.
			p.add(not, func(*trace.State) bool { return false })
			return nil
		}
	case "set":
		if opt == "--match-set" {
			return p.matchSet(not)
		}
	}
	return fmt.Errorf("unknown match \"-m %s %s\"", module, opt)
}

func (p *parser) port(dst, not bool) error {
	v, err := p.next()
	if err != nil {
		return err
	}
	lo, hi, ok := strings.Cut(v, ":")
	from, err1 := strconv.ParseUint(lo, 10, 16)
	to := from
	var err2 error
	if ok {
		to, err2 = strconv.ParseUint(hi, 10, 16)
	}
	if err1 != nil || err2 != nil {
		return fmt.Errorf("bad port %q", v)
	}
	if !dst {
		return fmt.Errorf("--sport is not traced: the trace has no source port")
	}
	p.add(not, func(st *trace.State) bool {
		port := uint64(st.Packet.Port)
		return port >= from && port <= to
	})
	return nil
}

// ctstate matches conntrack states of the first packet of a connection:
// NEW always, DNAT once the destination was translated, never
// ESTABLISHED, RELATED, INVALID, SNAT or UNTRACKED.
func (p *parser) ctstate(not bool) error {
	v, err := p.next()
	if err != nil {
		return err
	}
	var isNew, isDNAT bool
	for _, s := range strings.Split(v, ",") {
		switch s {
		case "NEW":
			isNew = true
		case "DNAT":
			isDNAT = true
		case "ESTABLISHED", "RELATED", "INVALID", "SNAT", "UNTRACKED":
		default:
			return fmt.Errorf("unknown conntrack state %q", s)
		}
	}
	p.add(not, func(st *trace.State) bool { return isNew || (isDNAT && st.DNAT) })
	return nil
}

func (p *parser) addrtype(src, not bool) error {
	v, err := p.next()
	if err != nil {
		return err
	}
	if v != "LOCAL" {
		return fmt.Errorf("unknown address type %q", v)
	}
	node := p.ev.node
	if src {
		p.add(not, func(st *trace.State) bool { return node.IsLocal(st.Packet.Src) })
	} else {
		p.add(not, func(st *trace.State) bool { return node.IsLocal(st.Packet.Dst) })
	}
	return nil
}

func (p *parser) markMatch(not bool) error {
	v, err := p.next()
	if err != nil {
		return err
	}
	val, mask, err := parseMark(v, 0xffffffff)
	if err != nil {
		return err
	}
	p.add(not, func(st *trace.State) bool { return st.Mark&mask == val })
	return nil
}

// parseMark reads "value[/mask]".
func parseMark(v string, defMask uint32) (uint32, uint32, error) {
	a, b, hasMask := strings.Cut(v, "/")
	val, err := parseUint32(a)
	mask := defMask
	if err == nil && hasMask {
		mask, err = parseUint32(b)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("bad mark %q", v)
	}
	return val, mask, nil
}

func (p *parser) statistic(opt string, not bool) error {
	v, err := p.next()
	if err != nil {
		return err
	}
	switch {
	case opt == "--mode" && v == "random" && !not:
		return nil
	case opt == "--probability" && !not:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			return fmt.Errorf("bad probability %q", v)
		}
		p.r.prob *= f
		return nil
	}
	return fmt.Errorf("unknown match \"-m statistic %s %s\"", opt, v)
}

// recent: --rcheck (and --update) look a client up in the history that
// earlier connections left: a trace starts from none, so they never match
// and only say that affinity is on; --set records and matches.
func (p *parser) recent(opt string, not bool) error {
	if not {
		return fmt.Errorf("unknown match \"-m recent ! %s\"", opt)
	}
	switch opt {
	case "--rcheck", "--update":
		p.r.rcheck = true
		return nil
	case "--set", "--reap", "--rsource", "--rdest":
		return nil
	case "--seconds":
		v, err := p.next()
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("bad --seconds %q", v)
		}
		p.r.affinity = n
		return nil
	case "--name", "--mask":
		_, err := p.next()
		return err
	}
	return fmt.Errorf("unknown match \"-m recent %s\"", opt)
}

func (p *parser) matchSet(not bool) error {
	name, err := p.next()
	if err != nil {
		return err
	}
	dirs, err := p.next()
	if err != nil {
		return err
	}
	if p.ev.sets == nil {
		return fmt.Errorf("\"-m set --match-set %s\": no ipsets to look it up in", name)
	}
	m, err := p.ev.sets.Matcher(name, strings.Split(dirs, ","))
	if err != nil {
		return err
	}
	p.add(not, m)
	return nil
}

// ipvsMatch: -m ipvs tests what IPVS did to the packet: --ipvs that it
// translated it, --vproto/--vaddr/--vport the virtual service it was for.
func (p *parser) ipvsMatch(opt string, not bool) error {
	if opt == "--ipvs" {
		p.add(not, func(st *trace.State) bool { return st.IPVS })
		return nil
	}
	v, err := p.next()
	if err != nil {
		return err
	}
	var m func(st *trace.State) bool
	switch opt {
	case "--vproto":
		proto := map[string]string{"6": "tcp", "17": "udp", "132": "sctp", "tcp": "tcp", "udp": "udp", "sctp": "sctp"}[v]
		if proto == "" {
			return fmt.Errorf("unknown --vproto %q", v)
		}
		m = func(st *trace.State) bool { return st.Original.Protocol == proto }
	case "--vaddr":
		pfx, err := parsePrefix(v)
		if err != nil {
			return err
		}
		m = func(st *trace.State) bool { return pfx.Contains(st.Original.Dst) }
	case "--vport":
		n, err := strconv.ParseUint(v, 10, 16)
		if err != nil {
			return fmt.Errorf("bad --vport %q", v)
		}
		m = func(st *trace.State) bool { return uint64(st.Original.Port) == n }
	default:
		return fmt.Errorf("unknown match \"-m ipvs %s\"", opt)
	}
	p.add(not, func(st *trace.State) bool { return st.IPVS && m(st) })
	return nil
}
