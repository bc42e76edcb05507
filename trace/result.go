package trace

import (
	"math"
	"slices"
	"strings"
)

// Verdict is the outcome of a trace.
type Verdict string

const (
	// DNAT: the destination is rewritten to one of Endpoints.
	DNAT Verdict = "dnat"
	// Drop: a rule drops the packet silently.
	Drop Verdict = "drop"
	// Reject: a rule answers with an ICMP error (or TCP reset).
	Reject Verdict = "reject"
	// Accept: the proxy's rules let the packet through unchanged.
	Accept Verdict = "accept"
)

// NotAService is Result.Note when no rule specific to a Service acted.
const NotAService = "not a service address: the proxy's rules do not touch it"

// Endpoint is one destination a DNAT verdict can choose.
type Endpoint struct {
	// Address is "IP:port" ("[IPv6]:port").
	Address string `json:"address"`
	// Probability is the chance that a new connection goes there (rounded
	// to six decimals); with ipvs, the share of the real server's weight.
	Probability float64 `json:"probability"`
	// Masquerade is set when the connection to this endpoint is
	// masqueraded (hairpin traffic can be masqueraded to one endpoint only).
	Masquerade bool `json:"masquerade"`
	// Path is the rules met after the branches parted.
	Path []Step `json:"path"`
}

// Affinity is the session affinity met on the way, in the Service API's
// words: Mode "None", or "ClientIP" with its timeout.
type Affinity struct {
	Mode           string `json:"mode"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
}

// NoAffinity is the Affinity of a packet that met none.
var NoAffinity = Affinity{Mode: "None"}

// On reports whether ClientIP affinity is on.
func (a Affinity) On() bool { return a.Mode == "ClientIP" }

// Result is the outcome of a trace: the contract of `trace -o json`
// (docs/TRACE.md). New fields may be added; none is renamed or removed
// within v1alpha1.
type Result struct {
	Mode   string `json:"mode"`
	Packet Packet `json:"packet"`
	Entry  Entry  `json:"entry"`
	// Verdict is dnat, drop, reject or accept.
	Verdict Verdict `json:"verdict"`
	// Endpoints are the DNAT destinations, sorted by address; empty
	// unless Verdict is dnat.
	Endpoints []Endpoint `json:"endpoints"`
	// Masquerade is set when the packet is masqueraded (to any endpoint).
	Masquerade bool `json:"masquerade"`
	// Affinity is the Service's session affinity.
	Affinity Affinity `json:"affinity"`
	// Path is the rules every branch met, in order; a DNAT's branches
	// continue in each endpoint's Path.
	Path []Step `json:"path"`
	// DecidedBy is the rule that dropped or rejected the packet.
	DecidedBy *Step `json:"decidedBy,omitempty"`
	// Scheduler is the ipvs virtual server's scheduler.
	Scheduler string `json:"scheduler,omitempty"`
	// ProxyPort is the userspace proxy port the portal redirects to.
	ProxyPort string `json:"proxyPort,omitempty"`
	// Note explains an accept verdict, or branches that end differently.
	Note string `json:"note,omitempty"`
}

// Combine merges the branches of one trace into its Result.
func Combine(leaves []*State) *Result {
	r := &Result{Verdict: Accept, Affinity: NoAffinity}
	counts := map[Verdict]float64{}
	byAddr := map[string]*Endpoint{}
	touched := false
	for _, l := range leaves {
		v := leafVerdict(l)
		counts[v] += l.Prob
		touched = touched || l.Touched
		if l.AffinitySeconds > r.Affinity.TimeoutSeconds {
			r.Affinity = Affinity{Mode: "ClientIP", TimeoutSeconds: l.AffinitySeconds}
		}
		if l.Scheduler != "" {
			r.Scheduler = l.Scheduler
		}
		if l.ProxyPort != "" {
			r.ProxyPort = l.ProxyPort
		}
		if v != DNAT {
			if l.DecidedBy != nil && r.DecidedBy == nil {
				r.DecidedBy = l.DecidedBy
			}
			continue
		}
		addr := l.Endpoint.String()
		ep := byAddr[addr]
		if ep == nil {
			ep = &Endpoint{Address: addr, Path: l.Steps}
			byAddr[addr] = ep
		}
		ep.Probability += l.Prob
		ep.Masquerade = ep.Masquerade || l.Masquerade
		r.Masquerade = r.Masquerade || l.Masquerade
	}
	r.Verdict = mainVerdict(counts)
	r.Path = commonPrefix(leaves)
	for _, ep := range byAddr {
		ep.Path = slices.Clone(ep.Path[len(r.Path):])
		ep.Probability = round6(ep.Probability)
		r.Endpoints = append(r.Endpoints, *ep)
	}
	slices.SortFunc(r.Endpoints, func(a, b Endpoint) int { return strings.Compare(a.Address, b.Address) })
	if r.Verdict != DNAT {
		r.Endpoints = nil
		for _, l := range leaves {
			r.Masquerade = r.Masquerade || (l.Masquerade && leafVerdict(l) == r.Verdict)
		}
	}
	if r.Verdict == Accept && !touched {
		r.Note = NotAService
	}
	if len(counts) > 1 {
		r.Note = mixedNote(counts)
	}
	return r
}

func leafVerdict(l *State) Verdict {
	switch {
	case l.Ended():
		return l.Verdict
	case l.DNAT:
		return DNAT
	}
	return Accept
}

// mainVerdict is the verdict of the branches; when they differ, dnat
// wins, then the most likely.
func mainVerdict(counts map[Verdict]float64) Verdict {
	if counts[DNAT] > 0 {
		return DNAT
	}
	best, bestP := Accept, -1.0
	for _, v := range []Verdict{Drop, Reject, Accept} {
		if p, ok := counts[v]; ok && p > bestP {
			best, bestP = v, p
		}
	}
	return best
}

func mixedNote(counts map[Verdict]float64) string {
	var parts []string
	for _, v := range []Verdict{DNAT, Drop, Reject, Accept} {
		if p, ok := counts[v]; ok {
			parts = append(parts, string(v)+" with probability "+formatProb(round6(p)))
		}
	}
	return "branches end differently: " + strings.Join(parts, ", ")
}

func commonPrefix(leaves []*State) []Step {
	if len(leaves) == 0 {
		return nil
	}
	n := len(leaves[0].Steps)
	for _, l := range leaves[1:] {
		n = min(n, len(l.Steps))
		for i := 0; i < n; i++ {
			if l.Steps[i] != leaves[0].Steps[i] {
				n = i
				break
			}
		}
	}
	return slices.Clone(leaves[0].Steps[:n])
}

func round6(p float64) float64 { return math.Round(p*1e6) / 1e6 }
