package cli

import (
	"slices"
	"strings"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	applyipvs "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/ipvs"
	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
)

// servicePorts is what a plan does to the Service ports programmed on the
// node, for apply's --max-removal guard: the ports live now, and those of
// them the plan removes. Each mode names a port by what it programs per
// port, so the figures are the mode's own.
type servicePorts struct {
	live, removed []string
}

func (s *servicePorts) add(o servicePorts) {
	s.live = append(s.live, o.live...)
	s.removed = append(s.removed, o.removed...)
}

// keysRemoved returns the keys of live that want lacks, sorted.
func keysRemoved(live, want map[string]bool) servicePorts {
	var s servicePorts
	for k := range live {
		s.live = append(s.live, k)
		if !want[k] {
			s.removed = append(s.removed, k)
		}
	}
	slices.Sort(s.removed)
	return s
}

// iptablesPorts names a port by the "namespace/name:port" that starts the
// comments of its rules in the chains that dispatch to Services:
// KUBE-SERVICES in the iptables mode, the portal chain in userspace mode.
func iptablesPorts(mode Mode) func(*applyipt.Plan) servicePorts {
	chains := []string{render.ChainServices}
	if mode == ModeUserspace {
		chains = []string{userspace.ChainPortalsContainer}
	}
	return func(p *applyipt.Plan) servicePorts {
		return keysRemoved(commentNames(p.Live, chains), commentNames(p.Desired, chains))
	}
}

func commentNames(rs *ipt.Ruleset, chains []string) map[string]bool {
	out := map[string]bool{}
	for _, t := range rs.Tables {
		for _, c := range t.Chains {
			if !slices.Contains(chains, c.Name) {
				continue
			}
			for _, r := range c.Rules {
				if name := commentName(r); name != "" {
					out[name] = true
				}
			}
		}
	}
	return out
}

// commentName returns the first word of a rule's comment when it names a
// Service port ("ns/name:port"), else "".
func commentName(r ipt.Rule) string {
	f := r.Fields()
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "--comment" {
			word, _, _ := strings.Cut(f[i+1], " ")
			if strings.Contains(word, "/") {
				return word
			}
		}
	}
	return ""
}

// nftPorts names a port by its service or local chain, without the prefix.
func nftPorts(p *applynft.Plan) servicePorts {
	names := func(chains []string) map[string]bool {
		out := map[string]bool{}
		for _, c := range chains {
			for _, prefix := range []string{render.NFTPrefixService, render.NFTPrefixLocal} {
				if rest, ok := strings.CutPrefix(c, prefix); ok {
					out[rest] = true
				}
			}
		}
		return out
	}
	var live, want []string
	if p.Live != nil {
		for _, c := range p.Live.Chains {
			live = append(live, c.Name)
		}
	}
	if p.Desired != nil {
		for _, c := range p.Desired.Chains {
			want = append(want, c.Name)
		}
	}
	return keysRemoved(names(live), names(want))
}

// ipvsPorts names a port by its virtual servers: those live and desired,
// and those the plan deletes (foreign ones are neither).
func ipvsPorts(p *applyipvs.Plan) servicePorts {
	var s servicePorts
	for _, vs := range p.Desired.VirtualServers {
		if p.Live.VirtualServer(vs.Protocol, vs.Address, vs.Port) != nil {
			s.live = append(s.live, ipvsKeyText(diff.IPVSKey(vs)))
		}
	}
	for _, c := range p.Changes.Services {
		if c.Verb == diff.IPVSDeleteService {
			k := ipvsKeyText(diff.IPVSKey(&c.Service))
			s.live, s.removed = append(s.live, k), append(s.removed, k)
		}
	}
	slices.Sort(s.removed)
	return s
}

func ipvsKeyText(k diff.IPVSServiceKey) string { return string(k.Protocol) + " " + k.Address.String() }
