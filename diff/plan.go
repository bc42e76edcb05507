package diff

import (
	"fmt"
	"io"
	"strings"

	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// Summary counts a change set the way plan reports it.
type Summary struct {
	ChainsAdded   int `json:"chainsAdded"`
	ChainsChanged int `json:"chainsChanged"`
	ChainsDeleted int `json:"chainsDeleted"`
	RulesAdded    int `json:"rulesAdded"`
	RulesRemoved  int `json:"rulesRemoved"`
	// nftables sets and maps by their declarations: created, declared
	// anew (the table is rebuilt), deleted. What they hold is counted in
	// elements; a set counted here may hold none.
	SetsAdded   int `json:"setsAdded,omitempty"`
	SetsChanged int `json:"setsChanged,omitempty"`
	SetsDeleted int `json:"setsDeleted,omitempty"`
	// Set and map elements (nftables; ipset entries in ipvs mode).
	ElementsAdded   int `json:"elementsAdded,omitempty"`
	ElementsRemoved int `json:"elementsRemoved,omitempty"`
	// IPVS virtual servers, their real servers, and the addresses on the
	// dummy interface (ipvs mode).
	ServicesAdded        int `json:"servicesAdded,omitempty"`
	ServicesChanged      int `json:"servicesChanged,omitempty"`
	ServicesDeleted      int `json:"servicesDeleted,omitempty"`
	DestinationsAdded    int `json:"destinationsAdded,omitempty"`
	DestinationsChanged  int `json:"destinationsChanged,omitempty"`
	DestinationsDeleted  int `json:"destinationsDeleted,omitempty"`
	DestinationsDraining int `json:"destinationsDraining,omitempty"`
	AddressesAdded       int `json:"addressesAdded,omitempty"`
	AddressesRemoved     int `json:"addressesRemoved,omitempty"`
	// Sysctls changed (docs/OUTPUT.md).
	Sysctls int `json:"sysctls,omitempty"`
}

// Add accumulates another summary.
func (s *Summary) Add(o Summary) {
	s.ChainsAdded += o.ChainsAdded
	s.ChainsChanged += o.ChainsChanged
	s.ChainsDeleted += o.ChainsDeleted
	s.RulesAdded += o.RulesAdded
	s.RulesRemoved += o.RulesRemoved
	s.SetsAdded += o.SetsAdded
	s.SetsChanged += o.SetsChanged
	s.SetsDeleted += o.SetsDeleted
	s.ElementsAdded += o.ElementsAdded
	s.ElementsRemoved += o.ElementsRemoved
	s.ServicesAdded += o.ServicesAdded
	s.ServicesChanged += o.ServicesChanged
	s.ServicesDeleted += o.ServicesDeleted
	s.DestinationsAdded += o.DestinationsAdded
	s.DestinationsChanged += o.DestinationsChanged
	s.DestinationsDeleted += o.DestinationsDeleted
	s.DestinationsDraining += o.DestinationsDraining
	s.AddressesAdded += o.AddressesAdded
	s.AddressesRemoved += o.AddressesRemoved
	s.Sysctls += o.Sysctls
}

// Empty reports whether the summary counts nothing.
func (s Summary) Empty() bool { return s == Summary{} }

// String is the plan's summary line.
func (s Summary) String() string {
	out := fmt.Sprintf("chains +%d ~%d -%d, rules +%d -%d",
		s.ChainsAdded, s.ChainsChanged, s.ChainsDeleted, s.RulesAdded, s.RulesRemoved)
	if s.SetsAdded+s.SetsChanged+s.SetsDeleted > 0 {
		out += fmt.Sprintf(", sets +%d ~%d -%d", s.SetsAdded, s.SetsChanged, s.SetsDeleted)
	}
	if s.ElementsAdded+s.ElementsRemoved > 0 {
		out += fmt.Sprintf(", elements +%d -%d", s.ElementsAdded, s.ElementsRemoved)
	}
	if s.ServicesAdded+s.ServicesChanged+s.ServicesDeleted > 0 {
		out += fmt.Sprintf(", virtual servers +%d ~%d -%d", s.ServicesAdded, s.ServicesChanged, s.ServicesDeleted)
	}
	if s.DestinationsAdded+s.DestinationsChanged+s.DestinationsDeleted+s.DestinationsDraining > 0 {
		out += fmt.Sprintf(", real servers +%d ~%d -%d (draining %d)",
			s.DestinationsAdded, s.DestinationsChanged, s.DestinationsDeleted, s.DestinationsDraining)
	}
	if s.AddressesAdded+s.AddressesRemoved > 0 {
		out += fmt.Sprintf(", addresses +%d -%d", s.AddressesAdded, s.AddressesRemoved)
	}
	if s.Sysctls > 0 {
		out += fmt.Sprintf(", sysctls ~%d", s.Sysctls)
	}
	return out
}

// countChain counts one created, replaced or deleted chain; R is
// iptables' or nftables' rule text.
func countChain[R ~string](s *Summary, verb Verb, old, rules []R) {
	switch verb {
	case CreateChain:
		s.ChainsAdded++
		s.RulesAdded += len(rules)
	case ReplaceChain:
		s.ChainsChanged++
		added, removed := lineDiffCounts(old, rules)
		s.RulesAdded += added
		s.RulesRemoved += removed
	case DeleteChain:
		s.ChainsDeleted++
		s.RulesRemoved += len(old)
	}
}

// Summary counts chains and rules added and removed.
func (cs *IPTablesChangeSet) Summary() Summary {
	var s Summary
	for _, c := range cs.Changes {
		switch c.Verb {
		case CreateChain, ReplaceChain, DeleteChain:
			countChain(&s, c.Verb, c.Old, c.After())
		case InsertJump:
			s.RulesAdded++
		case DeleteJump:
			s.RulesRemoved++
		}
	}
	return s
}

// WriteText writes the change set as a unified diff in iptables-save syntax,
// grouped by table and chain: "-" lines are live rules that go, "+" lines
// are rules that come, " " lines are unchanged rules kept for context.
func (cs *IPTablesChangeSet) WriteText(w io.Writer, liveName string) error {
	var b strings.Builder
	if !cs.Empty() {
		fmt.Fprintf(&b, "--- live %s (%s)\n+++ desired %s\n", cs.Family, liveName, cs.Family)
	}
	for _, c := range cs.Changes {
		writeChange(&b, c)
	}
	for _, k := range cs.Kept {
		fmt.Fprintf(&b, "# kept %s (emptied): not wanted, but a rule the tool does not own still jumps to it\n", k)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeChange(b *strings.Builder, c IPTablesChange) {
	where := string(c.Table) + " " + c.Chain
	switch c.Verb {
	case CreateChain:
		fmt.Fprintf(b, "@@ %s: new chain @@\n+:%s - [0:0]\n", where, c.Chain)
		writeRules(b, "+", c.Chain, c.Rules)
	case DeleteChain:
		fmt.Fprintf(b, "@@ %s: stale chain @@\n-:%s - [0:0]\n", where, c.Chain)
		writeRules(b, "-", c.Chain, c.Old)
	case ReplaceChain:
		fmt.Fprintf(b, "@@ %s: changed @@\n", where)
		writeLineDiff(b, c.Old, c.After(), "-A "+c.Chain+" ", "")
	case InsertJump:
		fmt.Fprintf(b, "@@ %s: missing jump @@\n", where)
		writeRules(b, "+", c.Chain, c.Rules)
	case DeleteJump:
		fmt.Fprintf(b, "@@ %s: stale jump @@\n", where)
		writeRules(b, "-", c.Chain, c.Rules)
	}
}

func writeRules(b *strings.Builder, mark, chain string, rules []ipt.Rule) {
	for _, r := range rules {
		b.WriteString(mark + "-A " + chain + " " + string(r) + "\n")
	}
}

func lineDiffCounts[R ~string](old, new []R) (added, removed int) {
	for _, r := range lineDiff(old, new) {
		switch r.op {
		case addLines:
			added += len(r.lines)
		case removeLines:
			removed += len(r.lines)
		}
	}
	return added, removed
}

// contextLines is how many unchanged rules plan shows around a change.
const contextLines = 3

// writeLineDiff writes a changed chain's rules as a unified diff with
// contextLines of unchanged rules around each change. Each rule is written
// after prefix ("-A CHAIN " in iptables-save syntax, two tabs in nft's
// listing), and cut context as "..." after indent.
func writeLineDiff[R ~string](b *strings.Builder, old, new []R, prefix, indent string) {
	runs := lineDiff(old, new)
	for i, r := range runs {
		mark := map[lineOp]string{keepLines: " ", removeLines: "-", addLines: "+"}[r.op]
		if r.op != keepLines {
			writeMarked(b, mark+prefix, r.lines)
			continue
		}
		head, tail, cut := trimContext(r.lines, i > 0, i < len(runs)-1)
		writeMarked(b, mark+prefix, head)
		if cut {
			b.WriteString(" " + indent + "...\n")
		}
		writeMarked(b, mark+prefix, tail)
	}
}

func writeMarked(b *strings.Builder, lead string, lines []string) {
	for _, line := range lines {
		b.WriteString(lead + line + "\n")
	}
}

// trimContext keeps the unchanged lines next to changes: the first ones
// after a change (head), the last ones before one (tail), and says
// whether lines between them were cut.
func trimContext(lines []string, afterChange, beforeChange bool) (head, tail []string, cut bool) {
	keepHead, keepTail := 0, 0
	if afterChange {
		keepHead = contextLines
	}
	if beforeChange {
		keepTail = contextLines
	}
	if len(lines) <= keepHead+keepTail {
		return lines, nil, false
	}
	return lines[:keepHead], lines[len(lines)-keepTail:], true
}
