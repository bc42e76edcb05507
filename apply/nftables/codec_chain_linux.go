package nftables

import (
	"strconv"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// stdPriority is one of nft's named base chain priorities (nft 1.0.6,
// src/rule.c std_prios) for the ip and ip6 families.
type stdPriority struct {
	name  string
	value int
	hook  nft.Hook // the only hook it is valid for; "" for all
}

var stdPriorities = []stdPriority{
	{"raw", -300, ""}, {"mangle", -150, ""}, {"dstnat", -100, nft.PreroutingHook},
	{"filter", 0, ""}, {"security", 50, ""}, {"srcnat", 100, nft.PostroutingHook},
}

func (p stdPriority) validFor(h nft.Hook) bool { return p.hook == "" || p.hook == h }

// formatPriority spells a priority as nft 1.0.6 lists it: the first
// standard priority within 10 of the value, if that one is valid for the
// hook, with the offset ("dstnat - 10"); else the number ("-110").
func formatPriority(prio int, hook nft.Hook) nft.Priority {
	for _, p := range stdPriorities {
		off := prio - p.value
		if off < -10 || off > 10 {
			continue
		}
		if !p.validFor(hook) {
			break
		}
		switch {
		case off > 0:
			return nft.Priority(p.name + " + " + strconv.Itoa(off))
		case off < 0:
			return nft.Priority(p.name + " - " + strconv.Itoa(-off))
		}
		return nft.Priority(p.name)
	}
	return nft.Priority(strconv.Itoa(prio))
}

// hookName is the inverse of hookNumbers.
func hookName(n uint32) (nft.Hook, bool) {
	for h, v := range hookNumbers {
		if v == n {
			return h, true
		}
	}
	return "", false
}
