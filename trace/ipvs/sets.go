package ipvs

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// ipsets resolves `-m set --match-set NAME DIRS` against the ruleset's
// ipsets: each entry's parts ("10.96.0.1,tcp:80,10.244.0.0/16") are
// compared with the packet's fields that DIRS name.
type ipsets struct {
	sets map[string]*ipvs.Set
}

// Matcher implements trace/iptables.SetLookup.
func (s *ipsets) Matcher(name string, dirs []string) (func(*trace.State) bool, error) {
	set := s.sets[name]
	if set == nil {
		return nil, fmt.Errorf("\"-m set --match-set %s\": no such ipset", name)
	}
	kinds, err := partKinds(set.Type)
	if err != nil {
		return nil, err
	}
	if len(dirs) != len(kinds) {
		return nil, fmt.Errorf("\"-m set --match-set %s %s\": %s needs %d directions", name, strings.Join(dirs, ","), set.Type, len(kinds))
	}
	for _, d := range dirs {
		if d != "src" && d != "dst" {
			return nil, fmt.Errorf("\"-m set --match-set %s\": unknown direction %q", name, d)
		}
	}
	index := map[string]bool{}
	var nets []string
	for _, e := range set.Entries {
		if strings.Contains(e, "/") {
			nets = append(nets, e)
		} else {
			index[e] = true
		}
	}
	return func(st *trace.State) bool {
		key := entryKey(kinds, dirs, st)
		if index[key] {
			return true
		}
		for _, n := range nets {
			if netEntryMatches(n, key) {
				return true
			}
		}
		return false
	}, nil
}

// partKinds lists what each part of an entry of the type holds.
func partKinds(t ipvs.SetType) ([]string, error) {
	switch t {
	case ipvs.HashIP:
		return []string{"ip"}, nil
	case ipvs.HashIPPort:
		return []string{"ip", "port"}, nil
	case ipvs.HashIPPortIP:
		return []string{"ip", "port", "ip"}, nil
	case ipvs.HashIPPortNet:
		return []string{"ip", "port", "net"}, nil
	case ipvs.BitmapPort:
		return []string{"bport"}, nil
	}
	return nil, fmt.Errorf("unknown ipset type %q", t)
}

// entryKey spells the packet's fields as the set's entries are spelled.
func entryKey(kinds, dirs []string, st *trace.State) string {
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		addr := st.Packet.Dst
		port := st.Packet.Port
		if dirs[i] == "src" {
			addr, port = st.Packet.Src, 0 // the trace has no source port
		}
		switch k {
		case "ip", "net":
			parts[i] = addr.String()
		case "port":
			parts[i] = st.Packet.Protocol + ":" + strconv.Itoa(int(port))
		case "bport":
			parts[i] = strconv.Itoa(int(port))
		}
	}
	return strings.Join(parts, ",")
}

// netEntryMatches compares an entry whose last part is a prefix.
func netEntryMatches(entry, key string) bool {
	i, j := strings.LastIndexByte(entry, ','), strings.LastIndexByte(key, ',')
	if i < 0 || j < 0 || entry[:i] != key[:j] {
		return false
	}
	p, err := netip.ParsePrefix(entry[i+1:])
	a, err2 := netip.ParseAddr(key[j+1:])
	return err == nil && err2 == nil && p.Contains(a)
}
