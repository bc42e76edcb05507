package userspace

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/textform"
)

// Section headers and the column legend of the text form.
const (
	headerPorts    = "## ports "
	headerIPTables = "## iptables"
	portsLegend    = "# service-port protocol portal proxy-port affinity-seconds endpoints"
)

// Encode writes rs in its native text form: a "## ports" section, one line
// per Service port in the order held (the renderer sorts them), then a
// "## iptables" section in iptables-save format, valid iptables-restore
// input. A port line is
//
//	namespace/name[:port] protocol clusterIP:port proxy-port affinity-seconds endpoints
//
// with the endpoints joined by "," and "-" for none.
func (rs *Ruleset) Encode(w io.Writer) error {
	return textform.Write(w, func(bw *bufio.Writer) error {
		bw.WriteString(headerPorts + string(rs.Family) + " listen " + rs.ListenIP.String() + "\n")
		bw.WriteString(portsLegend + "\n")
		var buf []byte
		for i := range rs.Ports {
			buf = rs.Ports[i].appendText(buf[:0])
			bw.Write(buf)
		}
		bw.WriteString(headerIPTables + "\n")
		if rs.IPTables == nil {
			return nil
		}
		return rs.IPTables.Encode(bw)
	})
}

func (p *Port) appendText(b []byte) []byte {
	b = append(b, p.Name.String()...)
	b = append(b, ' ')
	b = append(b, p.Name.Protocol.Lower()...)
	b = append(b, ' ')
	b = p.Portal.AppendTo(b)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(p.ProxyPort), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(p.AffinityTimeoutSeconds), 10)
	b = append(b, ' ')
	if len(p.Endpoints) == 0 {
		b = append(b, '-')
	}
	for i, ep := range p.Endpoints {
		if i > 0 {
			b = append(b, ',')
		}
		b = ep.AppendTo(b)
	}
	return append(b, '\n')
}

// String returns the text form of rs.
func (rs *Ruleset) String() string { return textform.String(rs.Encode) }

// EncodeAll writes several rulesets (one per family) one after the other.
func EncodeAll(w io.Writer, sets []*Ruleset) error { return textform.EncodeAll(w, sets, nil) }

// ParseError reports a line of the text form that could not be read.
type ParseError = textform.ParseError

// Parse reads the text form of one ruleset.
func Parse(data []byte) (*Ruleset, error) {
	return textform.One(ParseAll(data))
}

// ParseAll reads what EncodeAll writes: each "## ports" line starts a ruleset.
func ParseAll(data []byte) ([]*Ruleset, error) {
	var out []*Ruleset
	var cur *Ruleset
	var iptText []byte
	iptStart, inIPT := 0, false
	finish := func(line int) error {
		if cur == nil {
			return nil
		}
		if !inIPT {
			return &ParseError{Line: line, Msg: "missing " + headerIPTables + " section"}
		}
		rs, err := ipt.Parse(iptText, cur.Family)
		if err != nil {
			return textform.Within(err, iptStart, "")
		}
		cur.IPTables = rs
		return nil
	}
	lines := strings.SplitAfter(string(data), "\n")
	for i, raw := range lines {
		line := strings.TrimRight(raw, "\r\n")
		switch {
		case strings.HasPrefix(line, headerPorts):
			if err := finish(i + 1); err != nil {
				return nil, err
			}
			rs, err := parseHeader(line)
			if err != nil {
				return nil, &ParseError{Line: i + 1, Text: line, Msg: err.Error()}
			}
			cur, inIPT, iptText = rs, false, nil
			out = append(out, cur)
		case cur == nil:
			if strings.TrimSpace(line) != "" {
				return nil, &ParseError{Line: i + 1, Text: line, Msg: "expected a " + strings.TrimSpace(headerPorts) + " line"}
			}
		case inIPT:
			iptText = append(iptText, raw...)
		case line == headerIPTables:
			inIPT, iptStart = true, i+2 // the line after this one
		case line == "" || line[0] == '#':
		default:
			p, err := parsePort(line)
			if err != nil {
				return nil, &ParseError{Line: i + 1, Text: line, Msg: err.Error()}
			}
			cur.Ports = append(cur.Ports, p)
		}
	}
	if err := finish(len(lines)); err != nil {
		return nil, err
	}
	return out, nil
}

func parseHeader(line string) (*Ruleset, error) {
	f := strings.Fields(strings.TrimPrefix(line, headerPorts))
	if len(f) != 3 || f[1] != "listen" {
		return nil, fmt.Errorf("want %sFAMILY listen IP", headerPorts)
	}
	family := nodetable.Family(f[0])
	if family != nodetable.IPv4 && family != nodetable.IPv6 {
		return nil, fmt.Errorf("unknown family %q", f[0])
	}
	ip, err := netip.ParseAddr(f[2])
	if err != nil {
		return nil, fmt.Errorf("listen address: %w", err)
	}
	return &Ruleset{Family: family, ListenIP: ip}, nil
}
