package diff

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// ipvsDiffSets compares the owned sets: missing ones are created, sets no
// longer desired (only in a reset: a render has them all) are destroyed,
// and entries are added and removed one by one.
func ipvsDiffSets(cs *IPVSChangeSet, desired, live *ipvs.Ruleset, owned []string) {
	for _, d := range desired.Sets {
		l := live.Set(d.Name)
		switch {
		case l == nil:
			cs.Sets = append(cs.Sets, IPVSSetChange{Verb: IPVSCreateSet, Set: ipvsSetAttrs(d), Add: ipvsSortedEntries(d.Entries)})
		case l.Type != d.Type || l.Family != d.Family || l.PortRange != d.PortRange:
			cs.Conflicts = append(cs.Conflicts, fmt.Sprintf("ipset %s is %q in the kernel, want %q: run reset to recreate it",
				d.Name, l.CreateLine(), d.CreateLine()))
		default:
			add, del := ipvsEntryDiff(d.Entries, l.Entries)
			if len(add)+len(del) > 0 {
				cs.Sets = append(cs.Sets, IPVSSetChange{Verb: IPVSFillSet, Set: ipvsSetAttrs(d), Add: add, Del: del})
			}
		}
	}
	for _, l := range live.Sets {
		if desired.Set(l.Name) == nil && slices.Contains(owned, l.Name) {
			cs.Sets = append(cs.Sets, IPVSSetChange{Verb: IPVSDestroySet, Set: ipvsSetAttrs(l), Del: ipvsSortedEntries(l.Entries)})
		}
	}
	slices.SortStableFunc(cs.Sets, func(a, b IPVSSetChange) int { return strings.Compare(a.Set.Name, b.Set.Name) })
}

func ipvsSetAttrs(s *ipvs.Set) ipvs.Set {
	out := *s
	out.Entries = nil
	return out
}

func ipvsSortedEntries(e []string) []string {
	out := slices.Clone(e)
	slices.Sort(out)
	return slices.Compact(out)
}

// ipvsEntryDiff returns the entries to add and to delete, sorted.
func ipvsEntryDiff(desired, live []string) (add, del []string) {
	have := map[string]bool{}
	for _, e := range live {
		have[e] = true
	}
	want := map[string]bool{}
	for _, e := range desired {
		want[e] = true
		if !have[e] {
			add = append(add, e)
		}
	}
	for _, e := range live {
		if !want[e] {
			del = append(del, e)
		}
	}
	return ipvsSortedEntries(add), ipvsSortedEntries(del)
}

// ipvsParsePort reads a bitmap:port entry ("30080").
func ipvsParsePort(e string) (uint16, bool) {
	p, err := strconv.ParseUint(e, 10, 16)
	return uint16(p), err == nil
}

// ipvsParseIPProtoPort reads a hash:ip,port entry ("10.0.0.1,sctp:30080").
func ipvsParseIPProtoPort(e string) (IPVSServiceKey, bool) {
	ip, rest, ok := strings.Cut(e, ",")
	proto, port, ok2 := strings.Cut(rest, ":")
	addr, err := netip.ParseAddr(ip)
	p, ok3 := ipvsParsePort(port)
	if !ok || !ok2 || err != nil || !ok3 {
		return IPVSServiceKey{}, false
	}
	return IPVSServiceKey{ipvs.Protocol(proto), netip.AddrPortFrom(addr, p)}, true
}
