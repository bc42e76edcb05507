package nftables

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/textform"
)

// Encode writes rs exactly as `nft list table <family> <name>` prints it
// (nft 1.0.6): the table comment, then every set and map, then every chain,
// one blank line between blocks, elements wrapped as nft wraps them. The
// output is also valid `nft -f` input.
func (rs *Ruleset) Encode(w io.Writer) error {
	return textform.Write(w, func(bw *bufio.Writer) error {
		rs.encode(bw)
		return nil
	})
}

// String returns the listing text of rs.
func (rs *Ruleset) String() string { return textform.String(rs.Encode) }

// EncodeAll writes several tables back to back, as `nft list ruleset` does.
func EncodeAll(w io.Writer, sets []*Ruleset) error { return textform.EncodeAll(w, sets, nil) }

func (rs *Ruleset) encode(w *bufio.Writer) {
	w.WriteString("table " + string(rs.Family) + " " + rs.Table + " {\n")
	if rs.Comment != "" {
		w.WriteString("\tcomment " + quote(rs.Comment) + "\n")
	}
	sep := ""
	for _, s := range rs.Sets {
		w.WriteString(sep)
		s.encode(w)
		sep = "\n"
	}
	for _, c := range rs.Chains {
		w.WriteString(sep)
		c.encode(w)
		sep = "\n"
	}
	w.WriteString("}\n")
}

func (s *Set) encode(w *bufio.Writer) {
	kind := "set"
	if s.IsMap() {
		kind = "map"
	}
	w.WriteString("\t" + kind + " " + s.Name + " {\n\t\t" + s.TypeClause() + "\n")
	if s.Size != 0 {
		w.WriteString("\t\tsize " + strconv.FormatUint(s.Size, 10) + "\n")
	}
	if len(s.Flags) > 0 {
		w.WriteString("\t\tflags ")
		for i, f := range s.Flags {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(string(f))
		}
		w.WriteString("\n")
	}
	if s.Timeout != 0 {
		w.WriteString("\t\ttimeout " + FormatDuration(s.Timeout) + "\n")
	}
	if s.Comment != "" {
		w.WriteString("\t\tcomment " + quote(s.Comment) + "\n")
	}
	if len(s.Elements) > 0 {
		s.encodeElements(w)
	}
	w.WriteString("\t}\n")
}

// elementWrap is what nft prints between two elements that do not share a line.
const elementWrap = ",\n\t\t\t     "

func (s *Set) encodeElements(w *bufio.Writer) {
	perLine := ElementsPerLine(s.Type)
	if s.Typeof {
		perLine = elementsPerLineTypeof(s.Type)
	}
	w.WriteString("\t\telements = { ")
	for i, e := range s.Elements {
		if i > 0 {
			if i%perLine == 0 {
				w.WriteString(elementWrap)
			} else {
				w.WriteString(", ")
			}
		}
		w.WriteString(e.Key)
		if e.Comment != "" {
			w.WriteString(" comment " + quote(e.Comment))
		}
		if e.Value != "" {
			w.WriteString(" : " + e.Value)
		}
	}
	w.WriteString(" }\n")
}

// ElementsPerLine is how many elements nft 1.0.6 prints on one line for a
// set with this key type: two addresses, five small scalars, and a single
// IPv6 address or concatenation.
func ElementsPerLine(keyType string) int {
	if strings.Contains(keyType, " . ") {
		return 1
	}
	switch keyType {
	case "ipv4_addr", "ct_state", "ct_status", "pkttype":
		return 2
	case "nf_proto", "integer", "arp_op", "inet_proto", "inet_service", "tcp_flag",
		"dccp_pkttype", "mark", "iface_index", "classid", "uid", "gid", "ct_dir":
		return 5
	}
	return 1
}

// elementsPerLineTypeof is ElementsPerLine for a key declared by
// expression: nft lays the elements out by the type the expression
// loads (numgen an integer, "ip daddr" an ipv4_addr, "th dport" an
// inet_service).
func elementsPerLineTypeof(key string) int {
	switch {
	case strings.Contains(key, " . "):
		return 1
	case strings.HasPrefix(key, "numgen "):
		return ElementsPerLine("integer")
	case strings.HasPrefix(key, "ip "):
		return ElementsPerLine("ipv4_addr")
	case strings.HasSuffix(key, " dport"), strings.HasSuffix(key, " sport"):
		return ElementsPerLine("inet_service")
	}
	return 1
}

func (c *Chain) encode(w *bufio.Writer) {
	w.WriteString("\tchain " + c.Name + " {\n")
	if c.Comment != "" {
		w.WriteString("\t\tcomment " + quote(c.Comment) + "\n")
	}
	if b := c.Base; b != nil {
		w.WriteString("\t\ttype " + string(b.Type) + " hook " + string(b.Hook) +
			" priority " + string(b.Priority) + "; policy " + string(b.Policy) + ";\n")
	}
	for _, r := range c.Rules {
		w.WriteString("\t\t" + string(r) + "\n")
	}
	w.WriteString("\t}\n")
}

// quote writes s as an nft string. nft strings have no escapes, so a
// comment must not hold a double quote or a newline (Validate checks).
func quote(s string) string { return `"` + s + `"` }

// FormatDuration spells d as nft prints a timeout: days, hours, minutes,
// seconds and milliseconds, zero units left out ("3h", "1m30s", "1d3h46m40s").
func FormatDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	ms := int64(d / time.Millisecond)
	var b strings.Builder
	for _, u := range durationUnits {
		if n := ms / u.ms; n > 0 {
			b.WriteString(strconv.FormatInt(n, 10))
			b.WriteString(u.name)
			ms %= u.ms
		}
	}
	return b.String()
}

var durationUnits = []struct {
	name string
	ms   int64
}{
	{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1},
}

// ParseDuration reads a timeout as nft prints or accepts it ("3h",
// "1d3h46m40s", "10800s", "4m59s992ms").
func ParseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, errBadDuration
	}
	var total int64
	rest := s
	for rest != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i > 12 {
			return 0, errBadDuration
		}
		n, _ := strconv.ParseInt(rest[:i], 10, 64)
		rest = rest[i:]
		unit := -1
		for j, u := range durationUnits {
			if strings.HasPrefix(rest, u.name) && (u.name != "m" || !strings.HasPrefix(rest, "ms")) {
				unit = j
				break
			}
		}
		if unit < 0 {
			return 0, errBadDuration
		}
		rest = rest[len(durationUnits[unit].name):]
		total += n * durationUnits[unit].ms
		if total > int64(1)<<40 {
			return 0, errBadDuration
		}
	}
	return time.Duration(total) * time.Millisecond, nil
}
